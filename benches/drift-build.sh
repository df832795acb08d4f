#!/usr/bin/env bash
# The differential drift build on the demo world, cold, warm and rerun, with hyperfine:
#
#   benches/drift-build.sh [--bin target/release/forkbook] [--compiler hipcc] [--runs N]
#
# cold:  a fresh work folder and no kept outcomes or compile failures: the recorded pin's tree
#        and the candidate's are both compiled, the second one reusing through ccache what it
#        shares with the first (and replaying the failures it shares).
# warm:  the kept outcomes and the build folders removed, ccache's objects and the kept compile
#        failures kept.
# rerun: the same command again, nothing removed: each tree's outcome is kept, nothing compiles.
# Peak memory of one cold run is printed too (GNU time's maximum resident set size: forkbook
# and its largest child). Needs hyperfine, ccache, cmake, make, nm and the compiler.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
bin="$here/target/release/forkbook"
compiler="c++"
runs=3
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --compiler) compiler="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
command -v ccache >/dev/null || { echo "needs ccache" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The demo world and its project (the demo's own run builds its book too; only its project and
# cache are used here).
"$bin" demo "$tmp/demo" >/dev/null
project="$tmp/demo/project"
cache="$tmp/demo/cache.git"
# pin2, the candidate: the upstream's main.
pin2="$(git -C "$(find "$tmp/demo/world" -maxdepth 1 -type d -name '*upstream*' | head -n 1)" rev-parse main)"
work="$tmp/work"
build=("$bin" --root "$project" --cache "$cache" drift build --to "$pin2"
  --compiler "$compiler" --jobs 2 --work "$work")
run_build="${build[*]@Q} >/dev/null || test \$? -eq 1"
results="$tmp/demo/forkbook-drift-build-results"
failures="$tmp/demo/forkbook-drift-build-failures"

hyperfine --runs "$runs" --export-json "$tmp/cold.json" \
  --prepare "rm -rf '$work' '$results' '$failures'" -n cold "$run_build"
hyperfine --runs "$runs" --export-json "$tmp/warm.json" \
  --setup "$run_build" --prepare "rm -rf '$results' '$work'/*/build" -n warm "$run_build"
hyperfine --runs "$runs" --export-json "$tmp/rerun.json" \
  --setup "$run_build" -n rerun "$run_build"
rm -rf "$work" "$results" "$failures"
/usr/bin/time -f 'peak memory (cold, max RSS): %M KB' "${build[@]}" >/dev/null || true
