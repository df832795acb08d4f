#!/usr/bin/env bash
# A cold static drift analysis on a real overlay, beside the blob-read floor and another build
# of forkbook, in one hyperfine run per row, printing hyperfine's summaries:
#
#   FORKBOOK_FORK_URL=<fork mirror> FORKBOOK_UPSTREAM_URL=<upstream mirror> \
#     benches/drift-cold.sh PROJECT [--runs N] [--bin target/release/forkbook] [--other BIN] \
#       [--to REV] [--before REV] [--anchor MLXCEL_CHECKOUT]
#
# PROJECT: a files-layout project (made as `benches/side-by-side.sh` makes one), copied to a
# temporary folder with its object cache (FORKBOOK_CACHE, warm: only the results stores are
# emptied). The rows:
# - `drift api --to REV` cold: `forkbook-drift-api/` and `forkbook-drift-parse/` moved away
#   before each run (moved, not removed, so the file system's reuse of freed inodes is not timed);
# - the same at a new pin: the parse store holds what `drift api --to BEFORE` parsed, the
#   analyses' store is empty (the first run at a new pin);
# - `roll --check` cold, both stores moved away;
# - the floor: one `git cat-file --batch` of every blob the analysis reads (the upstream inputs
#   at the pin and at REV, the backend at the fork commit).
# With --other, each forkbook row also runs that binary. With --anchor (a checkout of
# lablup/mlxcel, copied into the temporary folder with PROJECT's records where it keeps them, as
# `benches/side-by-side.sh` does), the two `drift api` rows also run the anchor's `drift` on the
# same object cache, in the same hyperfine run. Needs hyperfine and git.
set -euo pipefail

project="$(cd "$1" && pwd)"
shift
here="$(cd "$(dirname "$0")/.." && pwd)"
runs=5
bin="$here/target/release/forkbook"
other=""
to=""
before=""
anchor=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --other) other="$2"; shift 2 ;;
    --to) to="$2"; shift 2 ;;
    --before) before="$2"; shift 2 ;;
    --anchor) anchor="$(cd "$2" && pwd)"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
: "${FORKBOOK_CACHE:?set FORKBOOK_CACHE to the object cache of PROJECT}"
value() { sed -n "s/^$1: *//p" "$project/patches-rocm/UPSTREAM" | head -1; }
fork="$(value commit)"
pin="$(value retargeted_to_mlx_pin)"
git_() { git --git-dir "$FORKBOOK_CACHE" "$@"; }
to="$(git_ rev-parse "${to:-$pin}")"
before="$(git_ rev-parse "${before:-$to~1}")"

work="$(mktemp -d -t forkbook-drift-cold.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cp -a "$project" "$work/project"
home="$(dirname "$FORKBOOK_CACHE")"
away="$work/away"
mkdir -p "$away"
clear="for d in forkbook-drift-api forkbook-drift-parse; do [ -e '$home'/\$d ] && mv '$home'/\$d \"\$(mktemp -d '$away/old.XXXXXX')\"/; done; true"
# The parse store after `drift api --to BEFORE`, copied in before each run at the new pin.
eval "$clear"
(cd "$work/project" && "$bin" drift api --to "$before" >/dev/null) || true
cp -a "$home/forkbook-drift-parse" "$work/parses-before"
at_new_pin="$clear; cp -a '$work/parses-before' '$home/forkbook-drift-parse'"

# The floor's blobs: what `upstream_ids` walks with the default [drift.api] settings.
inputs() {
  git_ ls-tree -r --name-only "$1" -- mlx | awk -v c="$1" '
    { hdr = $0 ~ /\.(h|hpp|hh|hxx|cuh|inl|ipp)$/; cpp = hdr || $0 ~ /\.(cpp|cc|cxx|cu|hip)$/
      skip = $0 ~ /^mlx\/backend\/(cuda|metal|rocm)\//
      shared = $0 ~ /^mlx\/backend\/(gpu|common)\//
      ref = $0 ~ /^mlx\/backend\/(cuda|metal|no_gpu|cpu)\//
      if ((hdr && !skip) || (cpp && (shared || ref))) print c ":" $0 }'
}
blobs="$work/blobs"
{ inputs "$pin"; inputs "$to"; git_ ls-tree -r --name-only "$fork" -- mlx/backend/rocm | sed "s|^|$fork:|"; } >"$blobs"
echo "floor: $(wc -l <"$blobs") blobs"

an=""
if [ -n "$anchor" ]; then
  cp -a "$anchor" "$work/anchor"
  records="$work/anchor/src/lib/mlx-cpp/patches-rocm"
  mkdir -p "$(dirname "$records")"
  rm -rf "$records"
  cp -a "$project/patches-rocm" "$records"
  an="cd '$work/anchor' && python3 scripts/mlxcelverse/rocm_overlay.py drift --git-dir '$FORKBOOK_CACHE' --no-fetch >/dev/null"
fi

in_project() { echo "cd '$work/project' && '$1'"; }
row() { # row NAME PREPARE ARGS [ANCHOR]
  local cmds=(-n "forkbook $1" "$(in_project "$bin") $3 >/dev/null")
  [ -n "$other" ] && cmds+=(-n "other $1" "$(in_project "$other") $3 >/dev/null")
  [ -n "${4:-}" ] && cmds+=(-n "anchor drift" "$4")
  hyperfine -i --warmup 1 --runs "$runs" --prepare "$2" "${cmds[@]}"
}
echo "$(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
row "drift api cold" "$clear" "drift api --to $to" "$an"
row "drift api at a new pin" "$at_new_pin" "drift api --to $to" "$an"
row "roll --check cold" "$clear" "roll --check"
hyperfine --warmup 1 --runs "$runs" -n floor "git --git-dir '$FORKBOOK_CACHE' cat-file --batch <'$blobs' >/dev/null"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
