#!/usr/bin/env bash
# One entry point for a fresh machine: brings Node 22 + pnpm, installs, builds, then runs what was asked.
#   bash scripts/dev.sh demo [demo flags]   replay the demo chat on embedded defaults (local-e2b + memory store)
#   bash scripts/dev.sh test [vitest args]  run the whole test suite (starts Redis on 127.0.0.1:6379 if needed)
#   bash scripts/dev.sh setup               only install and build
#   bash scripts/dev.sh <cmd> ...           run any command with the toolchain on PATH (e.g. pnpm bench)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/ensure-toolchain.sh
. scripts/ensure-toolchain.sh

# First-run noise off: pnpm's update box (also in .npmrc) and Turborepo's telemetry notice.
export npm_config_update_notifier=false
export TURBO_TELEMETRY_DISABLED=1
# Output that goes to a file or a pipe gets no colour codes (vitest, turbo and pnpm all honour these).
if [ ! -t 1 ]; then
  export NO_COLOR=1 FORCE_COLOR=0
  unset CLICOLOR_FORCE
fi

setup() {
  if [ ! -f node_modules/.modules.yaml ] || [ pnpm-lock.yaml -nt node_modules/.modules.yaml ]; then
    echo "dev.sh: installing dependencies (pnpm install --frozen-lockfile)" >&2
    # On a fresh clone the workspace packages' bins point into dist/, which the build below creates: pnpm
    # warns that it cannot link them yet. Nothing uses them before the build, so those warnings are dropped.
    pnpm install --frozen-lockfile 2>&1 | { grep -v 'Failed to create bin' || true; } >&2
  fi
  build
}

# Builds with turbo (`pnpm build`), saying one line per package that is actually built, with its time: a
# fresh clone builds six packages in a minute or two, which one silent line hid. Packages turbo restores from
# its cache print nothing, so an up-to-date tree builds in silence. On a failure the whole log is printed.
build() {
  local log status started=0 built=0 line package ms
  log="$(mktemp -t sandkeep-build.XXXXXX.log)"
  set +e
  pnpm exec turbo run build --output-logs=new-only --log-order=stream 2>&1 | tee "$log" | sed -u 's/\x1b\[[0-9;]*m//g' | {
    while IFS= read -r line; do
      case "$line" in
        *":build: cache miss, executing"* | *":build: cache bypass, force executing"*)
          if [ "$started" = 0 ]; then
            echo "dev.sh: building (pnpm build; a fresh clone takes a minute or two, packages in dependency order)" >&2
            started=$SECONDS
          fi
          echo "dev.sh:   building ${line%%:build:*}" >&2 ;;
        *":build: "*"Build complete in "*ms)
          package="${line%%:build:*}"
          ms="${line##*Build complete in }"; ms="${ms%ms}"
          built=$((built + 1))
          echo "dev.sh:   built ${package} ($((ms / 1000)).$(((ms % 1000) / 100)) s)" >&2 ;;
      esac
    done
    if [ "$built" -gt 0 ]; then echo "dev.sh: built ${built} package(s) in $((SECONDS - started)) s" >&2; fi
  }
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" != 0 ]; then
    echo "dev.sh: the build failed (exit ${status}); its output:" >&2
    cat "$log" >&2
    rm -f "$log"
    return "$status"
  fi
  rm -f "$log"
}

ensure_redis() {
  if redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then return 0; fi
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "dev.sh: redis-server is missing; installing it with apt-get" >&2
    apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
  fi
  echo "dev.sh: starting redis-server on 127.0.0.1:6379" >&2
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "dev.sh: redis did not start" >&2; return 1
}

ensure_bubblewrap() {
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    if ! command -v bwrap >/dev/null 2>&1; then
      echo "dev.sh: installing bubblewrap for sandbox isolation" >&2
      (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null) || echo "dev.sh: bubblewrap could not be installed; local-e2b refuses to start without it unless isolation none is asked for" >&2
    fi
    if ! command -v nft >/dev/null 2>&1; then
      echo "dev.sh: installing nftables to filter sandboxes' internet access" >&2
      (apt-get update -qq && apt-get install -y -qq nftables >/dev/null) || echo "dev.sh: nftables could not be installed; local-e2b refuses allowInternetAccess: true without it" >&2
    fi
  fi
}

# What E2B's code-interpreter template has, from Debian, for the sandboxes' /usr/bin/python3 and /usr/bin/node:
# numpy, pandas, matplotlib, TypeScript's transpiler for typescript cells, and R (with jsonlite) for r cells.
ensure_interpreter_libraries() {
  /usr/bin/python3 -c 'import numpy, pandas, matplotlib' >/dev/null 2>&1 && [ -d /usr/share/nodejs/typescript ] && [ -d /usr/lib/R/site-library/jsonlite ] && return 0
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "dev.sh: installing numpy, pandas, matplotlib, typescript and R for the code interpreter" >&2
    (apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-numpy python3-pandas python3-matplotlib node-typescript r-base-core r-cran-jsonlite >/dev/null) || echo "dev.sh: the code interpreter's libraries could not be installed; charts, DataFrames, typescript and r cells will not work" >&2
  fi
}

# Runs vitest and ends with one plain summary line ("tests: N passed, N failed, N skipped") that any CI can read.
run_tests() {
  local report status
  echo "dev.sh: running the test suite; the whole suite takes 13–20 minutes on 2 cores (pass a file or pattern to run less)" >&2
  report="$(mktemp -t sandkeep-vitest.XXXXXX.json)"
  set +e
  pnpm test --reporter=default --reporter=json --outputFile.json="$report" "$@"
  status=$?
  set -e
  node -e '
    const fs = require("node:fs")
    let r
    try { r = JSON.parse(fs.readFileSync(process.argv[1], "utf8")) } catch { process.exit(0) }
    const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0)
    console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`)
    // Where the time went: the slowest files (each file'"'"'s own wall time; files run side by side).
    const files = (r.testResults ?? []).map((f) => ({ s: ((f.endTime ?? 0) - (f.startTime ?? 0)) / 1000, n: f.name }))
    const root = process.cwd() + "/"
    const slowest = files.sort((x, y) => y.s - x.s).slice(0, 8)
    if (slowest.length) console.log("slowest files: " + slowest.map((f) => `${f.n.replace(root, "")} ${f.s.toFixed(0)} s`).join(", "))
  ' "$report"
  rm -f "$report"
  return "$status"
}

command="${1:-demo}"
[ "$#" -gt 0 ] && shift
case "$command" in
  setup) setup ;;
  demo) ensure_bubblewrap; ensure_interpreter_libraries; setup; exec node packages/cli/dist/bin.js demo "$@" ;;
  test) ensure_bubblewrap; ensure_interpreter_libraries; ensure_redis; setup; bash scripts/build-better-sqlite3.sh >&2; run_tests "$@" ;;
  *) exec "$command" "$@" ;;
esac
