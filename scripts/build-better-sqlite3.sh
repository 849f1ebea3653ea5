#!/usr/bin/env bash
# Builds better-sqlite3's native module (for @sandkeep/langgraph's SQLite checkpoint tests) from its bundled
# sources, against the headers of the toolchain's own Node, with the node-gyp that ships inside pnpm: no
# download (its install script, which this workspace does not run, fetches prebuilt binaries). Without a
# compiler or the headers it says why and exits 0: the SQLite tests then skip and say so.
#   . scripts/ensure-toolchain.sh && bash scripts/build-better-sqlite3.sh
set -euo pipefail
cd "$(dirname "$0")/.."
module=$(ls -d node_modules/.pnpm/better-sqlite3@*/node_modules/better-sqlite3 2>/dev/null | head -1 || true)
if [ -z "$module" ]; then echo "build-better-sqlite3: better-sqlite3 is not installed"; exit 0; fi
if [ -f "$module/build/Release/better_sqlite3.node" ]; then echo "build-better-sqlite3: already built"; exit 0; fi
node_root=$(cd "$(dirname "$(node -p process.execPath)")/.." && pwd)
headers=""
for candidate in "$node_root" "$node_root"/node_modules/node-*; do
  if [ -f "$candidate/include/node/node_api.h" ]; then headers=$candidate; break; fi
done
gyp=$(find "$(dirname "$(readlink -f "$(command -v pnpm)")")/.." -path '*node_modules/node-gyp/bin/node-gyp.js' 2>/dev/null | head -1 || true)
if [ -z "$headers" ] || [ -z "$gyp" ] || ! command -v make >/dev/null || ! command -v g++ >/dev/null; then
  echo "build-better-sqlite3: skipped (headers: ${headers:-none}, node-gyp: ${gyp:-none}, make/g++ needed)"
  exit 0
fi
(cd "$module" && node "$gyp" rebuild --release --nodedir="$headers" -j 2 >/tmp/build-better-sqlite3.log 2>&1) ||
  { echo "build-better-sqlite3: the build failed (see /tmp/build-better-sqlite3.log)"; exit 0; }
echo "build-better-sqlite3: built $module/build/Release/better_sqlite3.node"
