#!/usr/bin/env bash
# Brings Node.js >= 22 and pnpm 10 onto PATH. Source it (`. scripts/ensure-toolchain.sh`) to keep the PATH,
# or run it with a command (`bash scripts/ensure-toolchain.sh pnpm test`) to run that command with the toolchain.
# Idempotent: when the machine already has both, it only checks versions (a few ms).
# Node comes from the `node` package on the npm registry, pnpm from the `pnpm` package, both installed into
# a cache outside the repository ($SANDKEEP_TOOLCHAIN_DIR, default ~/.cache/sandkeep-node22).

sandkeep_toolchain_dir="${SANDKEEP_TOOLCHAIN_DIR:-$HOME/.cache/sandkeep-node22}"
sandkeep_node_major_wanted=22
sandkeep_pnpm_major_wanted=10
sandkeep_pnpm_version="10.34.9"

sandkeep_log() { printf 'ensure-toolchain: %s\n' "$*" >&2; }

sandkeep_node_major() {
  command -v node >/dev/null 2>&1 || { echo 0; return; }
  node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0
}

sandkeep_ensure_node() {
  if [ "$(sandkeep_node_major)" -ge "$sandkeep_node_major_wanted" ]; then return 0; fi
  local bin="$sandkeep_toolchain_dir/node_modules/node/bin"
  if [ ! -x "$bin/node" ] || [ "$("$bin/node" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt "$sandkeep_node_major_wanted" ]; then
    command -v npm >/dev/null 2>&1 || { sandkeep_log "npm is needed to fetch node@$sandkeep_node_major_wanted"; return 1; }
    sandkeep_log "machine node is $(node --version 2>/dev/null || echo absent); installing node@$sandkeep_node_major_wanted into $sandkeep_toolchain_dir"
    mkdir -p "$sandkeep_toolchain_dir"
    npm install --silent --no-audit --no-fund --prefix "$sandkeep_toolchain_dir" "node@$sandkeep_node_major_wanted" >&2 || return 1
  fi
  export PATH="$bin:$PATH"
  [ "$(sandkeep_node_major)" -ge "$sandkeep_node_major_wanted" ] || { sandkeep_log "node $sandkeep_node_major_wanted still not on PATH"; return 1; }
}

sandkeep_ensure_pnpm() {
  local major=0
  if command -v pnpm >/dev/null 2>&1; then major="$(pnpm --version 2>/dev/null | cut -d. -f1)"; fi
  if [ "${major:-0}" = "$sandkeep_pnpm_major_wanted" ]; then return 0; fi
  local bin="$sandkeep_toolchain_dir/pnpm/node_modules/.bin"
  if [ ! -x "$bin/pnpm" ]; then
    sandkeep_log "installing pnpm@$sandkeep_pnpm_version into $sandkeep_toolchain_dir/pnpm"
    mkdir -p "$sandkeep_toolchain_dir/pnpm"
    npm install --silent --no-audit --no-fund --prefix "$sandkeep_toolchain_dir/pnpm" "pnpm@$sandkeep_pnpm_version" >&2 || return 1
  fi
  export PATH="$bin:$PATH"
}

sandkeep_ensure_node && sandkeep_ensure_pnpm
sandkeep_status=$?
# corepack must not try to fetch another pnpm when package.json pins one.
export COREPACK_ENABLE_STRICT=0

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  [ "$sandkeep_status" -eq 0 ] || exit "$sandkeep_status"
  if [ "$#" -gt 0 ]; then exec "$@"; fi
  printf 'node %s, pnpm %s\n' "$(node --version)" "$(pnpm --version)"
else
  return "$sandkeep_status"
fi
