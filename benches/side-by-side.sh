#!/usr/bin/env bash
# forkbook beside the first user's own tool (the "anchor": lablup/mlxcel's
# scripts/mlxcelverse/rocm_overlay.py) and beside the floor of each command, on the real overlay
# in the files layout, one hyperfine run per row, printing a Markdown table:
#
#   FORKBOOK_FORK_URL=<fork mirror> FORKBOOK_UPSTREAM_URL=<upstream mirror> \
#     benches/side-by-side.sh [--anchor MLXCEL_CHECKOUT] [--runs N] [--bin target/release/forkbook]
#
# The project: the files layout the anchor works on, made in a temporary folder from this
# repository's records (patches-rocm/UPSTREAM: the fork commit, its merge base and the pin): the
# fork's backend files and core files at the fork commit as whole files in the records folder
# (tree "."), the pin at the merge base, so `retarget PIN` moves it the way a pin bump does. It
# is adopted (overlay.lock), given its residual record and README by forkbook first.
#
# --anchor: a checkout of lablup/mlxcel. It is copied once into the temporary folder and the
# project's records folder is put where the anchor keeps it (src/lib/mlx-cpp/patches-rocm/);
# the anchor runs with `--git-dir` on forkbook's object cache and `--no-fetch`. Nothing of the
# anchor is kept in this repository; without --anchor its column says "not given". The anchor's
# command lines below follow its documentation (retarget --to, sync --check, records, drift).
#
# The rows:
# - `retarget PIN` (writes): the project copied afresh before each run; floor: forkbook's own
#   `retarget PIN --check`, the same move without the write (the write's target is <= 1.5x).
# - `retarget PIN --check`: floor: one `git cat-file --batch` of the blobs the move reads (the
#   backend at the fork, the core files at the base, the old and the new pin, the fork).
# - `sync --check`, `check`, `residual`: floor: one `git cat-file --batch` of the blobs the
#   overlay is made of; `sync --check` also beside one `git cat-file blob` process per blob.
# - `sync --check` (first run): the same with `forkbook-blob-digests/` emptied before each run,
#   as at new commits, where each file is told from its blob by git's hash and the digests kept.
# Needs hyperfine, git, tar and python3.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
runs=10
bin="$here/target/release/forkbook"
anchor=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --anchor) anchor="$(cd "$2" && pwd)"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
: "${FORKBOOK_FORK_URL:?set FORKBOOK_FORK_URL to the fork mirror}"
: "${FORKBOOK_UPSTREAM_URL:?set FORKBOOK_UPSTREAM_URL to the upstream mirror}"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
[ -x "$bin" ] || { echo "no forkbook binary at $bin (cargo build --release)" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 2; }
anchor_script="scripts/mlxcelverse/rocm_overlay.py"
if [ -n "$anchor" ] && [ ! -f "$anchor/$anchor_script" ]; then
  echo "--anchor $anchor holds no $anchor_script" >&2
  exit 2
fi

work="$(mktemp -d /tmp/forkbook-side-by-side.XXXXXX)"
trap 'rm -rf "$work"' EXIT
export FORKBOOK_CACHE="${FORKBOOK_CACHE:-$work/cache.git}"
export FORKBOOK_FORK_URL FORKBOOK_UPSTREAM_URL
# The files-layout project at pin = base.
# shellcheck source=benches/real-project.sh
. "$here/benches/real-project.sh"
project="$work/project"
mkdir -p "$project"
real_project "$project" "$bin" || exit 2
git_() { git --git-dir "$FORKBOOK_CACHE" "$@"; }
pristine="$work/pristine"
cp -a "$project" "$pristine"

if [ -n "$anchor" ]; then
  cp -a "$anchor" "$work/anchor"
  anchor_records="$work/anchor/src/lib/mlx-cpp/patches-rocm"
  mkdir -p "$(dirname "$anchor_records")"
  fresh_anchor="rm -rf '$anchor_records' && cp -a '$pristine/patches-rocm' '$anchor_records'"
  eval "$fresh_anchor"
  an="cd '$work/anchor' && python3 $anchor_script"
  git_opts="--git-dir '$FORKBOOK_CACHE' --no-fetch"
fi

# The floors: the blobs each command reads, through one `git cat-file --batch`.
blobs="$work/blobs"
{
  git_ ls-tree -r --name-only "$fork" -- "$prefix" | sed "s|^|$fork:|"
  for rev in "$fork" "$base" "$pin"; do
    for f in $core; do git_ cat-file -e "$rev:$f" 2>/dev/null && printf '%s:%s\n' "$rev" "$f"; done
  done
} >"$blobs"
batch="git --git-dir '$FORKBOOK_CACHE' cat-file --batch <'$blobs' >/dev/null"
per_blob="while read -r b; do git --git-dir '$FORKBOOK_CACHE' cat-file blob \"\$b\" >/dev/null; done <'$blobs'"

json="$work/json"
mkdir -p "$json"
# row NAME PREPARE FORKBOOK FLOOR [ANCHOR] [PER_BLOB]: one hyperfine run into $json/NAME.json.
row() {
  local name="$1" prepare="$2" forkbook="$3" floor="$4" anchor_cmd="${5:-}" blob="${6:-}"
  local cmds=(-n forkbook "$forkbook" -n floor "$floor")
  [ -n "$anchor_cmd" ] && cmds+=(-n anchor "$anchor_cmd")
  [ -n "$blob" ] && cmds+=(-n per-blob "$blob")
  hyperfine -i --warmup 1 --runs "$runs" --prepare "$prepare" --export-json "$json/$name.json" \
    "${cmds[@]}" >/dev/null 2>&1
}
fresh="rm -rf '$project' && cp -a '$pristine' '$project'"
in_project="cd '$project' && '$bin'"
echo "forkbook $("$bin" --version | head -1); $(nproc) cores ($(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)); load before: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
row retarget "$fresh${anchor:+ && $fresh_anchor}" "$in_project retarget $pin" "$in_project retarget $pin --check" \
  "${anchor:+$an retarget --to $pin $git_opts}"
row retarget-check "$fresh" "$in_project retarget $pin --check" "$batch"
row sync-check true "$in_project sync --check" "$batch" \
  "${anchor:+$an sync --check --fork-commit $fork $git_opts}" "$per_blob"
no_digests="rm -rf '$(dirname "$FORKBOOK_CACHE")/forkbook-blob-digests'"
row sync-check-first "$no_digests" "$in_project sync --check" "$batch" "" "$per_blob"
row check true "$in_project check" "$batch" "${anchor:+$an records}"
row residual true "$in_project residual" "$batch" "${anchor:+$an drift $git_opts}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$anchor" ] || echo "anchor: not given (--anchor MLXCEL_CHECKOUT), its column is empty"

python3 - "$json" <<'PY'
import json, os, sys
d = sys.argv[1]
def by_name(name):
    path = os.path.join(d, name + ".json")
    return {r["command"]: r for r in json.load(open(path))["results"]} if os.path.exists(path) else {}
def cell(r):
    return f"{r['mean']*1000:.1f} ± {r['stddev']*1000:.1f} ms (CPU {(r['user']+r['system'])*1000:.1f})" if r else "—"
def ratio(a, b):  # wall / CPU
    cpu = lambda r: r["user"] + r["system"]
    return f"{a['mean']/b['mean']:.2f}× / {cpu(a)/cpu(b):.2f}×" if a and b else "—"
print("Mean wall time ± standard deviation, CPU (user + system, children included) in brackets;")
print("ratios as wall / CPU.\n")
print("| command | anchor | forkbook | floor | forkbook / floor | anchor / forkbook | per-blob shell / forkbook |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for name, label, floor in [("retarget", "retarget PIN (writes)", "retarget PIN --check"),
                           ("retarget-check", "retarget PIN --check", "one cat-file --batch"),
                           ("sync-check", "sync --check", "one cat-file --batch"),
                           ("sync-check-first", "sync --check (first run)", "one cat-file --batch"),
                           ("check", "check (anchor: records)", "one cat-file --batch"),
                           ("residual", "residual (anchor: drift)", "one cat-file --batch")]:
    r = by_name(name)
    fb, fl, an, pb = (r.get(k) for k in ["forkbook", "floor", "anchor", "per-blob"])
    print(f"| `{label}` | {cell(an)} | {cell(fb)} | {cell(fl)} ({floor}) | {ratio(fb, fl)} | {ratio(an, fb)} | {ratio(pb, fb)} |")
PY
