#!/usr/bin/env bash
# Whole-process benchmark of forkbook on a real overlay, beside two shell baselines doing the same
# work, all in one hyperfine run each, printing the ratios.
#
#   FORKBOOK_FORK_URL=<fork mirror> FORKBOOK_UPSTREAM_URL=<upstream mirror> \
#     benches/whole-process.sh [--runs N] [--bin target/release/forkbook] [--project DIR]
#
# The project (default: this repository: forkbook.toml, patches-rocm/, book/) is copied to a
# temporary folder, so nothing of it is touched; the object cache is FORKBOOK_CACHE or a fresh
# one in that folder, filled from the mirrors before anything is timed. Needs hyperfine, git,
# tar, sha256sum and diff.
#
# The baselines, both in bash (see `baseline_*` below):
# - near-limit: the least a script can do. The backend at the fork and the core files at the
#   base, pin and fork each come out of one `git archive | tar -x`, one `git merge-file -p` per core
#   file the fork changed, one `git apply` of the whole series, one `sha256sum -c` of the lock.
#   It does not re-render the patches or compare the other records, so it is a lower bound.
# - per-blob: what a script that treats every file alike does: one `git cat-file blob` per file
#   at each of fork, base and pin, one `git merge-file -p` per core file, one `git apply` per
#   patch, `sha256sum` over every file.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
self="$here/benches/$(basename "$0")"

if [ "${1:-}" = "baseline" ]; then
  # Invoked by hyperfine: `whole-process.sh baseline NAME WORK`.
  name="$2"
  work="$3"
  # shellcheck source=/dev/null
  . "$work/env.sh"
  git_() { git --git-dir "$FORKBOOK_CACHE" "$@"; }
  out="$work/out"
  rm -rf "$out"
  mkdir -p "$out"
  core_merge() { # core_merge DIR_BASE DIR_PIN DIR_FORK DEST: B's core files
    for f in $CORE; do
      [ -f "$3/$f" ] || continue # deleted by the fork
      mkdir -p "$(dirname "$4/$f")"
      if [ -f "$1/$f" ] && cmp -s "$1/$f" "$3/$f"; then
        if [ -f "$2/$f" ]; then cp "$2/$f" "$4/$f"; fi
      else
        [ -f "$1/$f" ] || : >"$1/$f"
        [ -f "$2/$f" ] || : >"$2/$f"
        git merge-file -p -L "pin ${PIN:0:8}" -L "base ${BASE:0:8}" -L "fork ${FORK:0:8}" "$2/$f" "$1/$f" "$3/$f" >"$4/$f" 2>/dev/null || true
      fi
    done
  }
  case "$name" in
    near-sync-check | near-status)
      for side in base pin fork; do mkdir -p "$out/$side"; done
      git_ archive "$FORK" -- "$PREFIX" $CORE_AT_FORK | tar -x -C "$out/fork"
      git_ archive "$BASE" -- $CORE_AT_BASE | tar -x -C "$out/base"
      git_ archive "$PIN" -- $CORE_AT_PIN | tar -x -C "$out/pin"
      mkdir -p "$out/tree/$PREFIX"
      cp -r "$out/fork/$PREFIX." "$out/tree/$PREFIX"
      core_merge "$out/base" "$out/pin" "$out/fork" "$out/tree"
      (cd "$out/tree" && git apply --whitespace=nowarn "$RECORDS"/patches/*.patch)
      (cd "$out/tree" && grep -v '^#' "$RECORDS/overlay.lock" | sha256sum -c --quiet)
      ;;
    near-residual)
      for side in base pin fork; do mkdir -p "$out/$side"; done
      git_ archive "$FORK" -- $CORE_AT_FORK $TOUCHED_BACKEND | tar -x -C "$out/fork"
      git_ archive "$BASE" -- $CORE_AT_BASE | tar -x -C "$out/base"
      git_ archive "$PIN" -- $CORE_AT_PIN | tar -x -C "$out/pin"
      mkdir -p "$out/b" "$out/tree"
      core_merge "$out/base" "$out/pin" "$out/fork" "$out/b"
      cp -r "$out/b/." "$out/tree/"
      (cd "$out/fork" && tar -c $TOUCHED_BACKEND) | tar -x -C "$out/tree"
      (cd "$out/tree" && git apply --whitespace=nowarn "$RECORDS"/patches/*.patch)
      diff -r -u "$out/b" "$out/tree" >/dev/null || true
      ;;
    blob-sync-check)
      mkdir -p "$out/tree" "$out/side"
      for f in $(git_ ls-tree -r --name-only "$FORK" -- "$PREFIX"); do
        mkdir -p "$out/tree/$(dirname "$f")"
        git_ cat-file blob "$FORK:$f" >"$out/tree/$f"
        git_ cat-file blob "$BASE:$f" >"$out/side/b" 2>/dev/null || true
        git_ cat-file blob "$PIN:$f" >"$out/side/p" 2>/dev/null || true
      done
      for f in $CORE; do
        mkdir -p "$out/tree/$(dirname "$f")"
        git_ cat-file blob "$BASE:$f" >"$out/side/b" 2>/dev/null || : >"$out/side/b"
        git_ cat-file blob "$PIN:$f" >"$out/side/p" 2>/dev/null || : >"$out/side/p"
        git_ cat-file blob "$FORK:$f" >"$out/side/f" 2>/dev/null || : >"$out/side/f"
        git merge-file -p -L "pin ${PIN:0:8}" -L "base ${BASE:0:8}" -L "fork ${FORK:0:8}" "$out/side/p" "$out/side/b" "$out/side/f" >"$out/tree/$f" 2>/dev/null || true
      done
      for p in "$RECORDS"/patches/*.patch; do
        (cd "$out/tree" && git apply --whitespace=nowarn "$p")
      done
      (cd "$out/tree" && find . -type f -print0 | sort -z | xargs -0 sha256sum >"$out/sums")
      ;;
    blob-residual)
      mkdir -p "$out/b" "$out/tree" "$out/side"
      for f in $CORE; do
        mkdir -p "$out/b/$(dirname "$f")"
        git_ cat-file blob "$BASE:$f" >"$out/side/b" 2>/dev/null || : >"$out/side/b"
        git_ cat-file blob "$PIN:$f" >"$out/side/p" 2>/dev/null || : >"$out/side/p"
        git_ cat-file blob "$FORK:$f" >"$out/side/f" 2>/dev/null || : >"$out/side/f"
        git merge-file -p -L "pin ${PIN:0:8}" -L "base ${BASE:0:8}" -L "fork ${FORK:0:8}" "$out/side/p" "$out/side/b" "$out/side/f" >"$out/b/$f" 2>/dev/null || true
      done
      cp -r "$out/b/." "$out/tree/"
      for f in $TOUCHED_BACKEND; do
        mkdir -p "$out/tree/$(dirname "$f")"
        git_ cat-file blob "$FORK:$f" >"$out/tree/$f"
      done
      for p in "$RECORDS"/patches/*.patch; do
        (cd "$out/tree" && git apply --whitespace=nowarn "$p")
      done
      for f in $CORE; do
        git diff --no-index -- "$out/b/$f" "$out/tree/$f" >/dev/null || true
      done
      ;;
    *) echo "unknown baseline $name" >&2; exit 2 ;;
  esac
  exit 0
fi

runs=10
bin="$here/target/release/forkbook"
project="$here"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --project) project="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
: "${FORKBOOK_FORK_URL:?set FORKBOOK_FORK_URL to the fork mirror}"
: "${FORKBOOK_UPSTREAM_URL:?set FORKBOOK_UPSTREAM_URL to the upstream mirror}"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
[ -x "$bin" ] || { echo "no forkbook binary at $bin (cargo build --release)" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 2; }

work="$(mktemp -d /tmp/forkbook-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/project"
mkdir -p "$root"
cp -a "$project/forkbook.toml" "$root/"
records_name="$(sed -n 's/^dir *= *"\(.*\)"/\1/p' "$project/forkbook.toml" | head -1)"
cp -a "$project/$records_name" "$root/"
[ -d "$project/book" ] && cp -a "$project/book" "$root/"
rm -rf "$root/book/.step-cache" "$root/book/book"
export FORKBOOK_CACHE="${FORKBOOK_CACHE:-$work/cache.git}"
export FORKBOOK_FORK_URL FORKBOOK_UPSTREAM_URL
fb() { (cd "$root" && "$bin" "$@"); }
fb fetch >/dev/null

records="$root/$records_name"
value() { sed -n "s/^$1: *//p" "$records/UPSTREAM" | head -1; }
fork="$(value commit)"
base="$(value fork_upstream_merge_base)"
pin="$(value retargeted_to_mlx_pin)"
[ -n "$pin" ] || pin="$base"
prefix="$(sed -n 's/^backend_prefix *= *"\(.*\)"/\1/p' "$root/forkbook.toml" | head -1)"
core="$(sed -n '/^core_files *= *\[/,/\]/p' "$root/forkbook.toml" | grep -o '"[^"]*"' | tr -d '"' | tr '\n' ' ')"
present() { for f in $core; do git --git-dir "$FORKBOOK_CACHE" cat-file -e "$1:$f" 2>/dev/null && printf '%s ' "$f"; done; }
touched="$(grep -h '^+++ b/' "$records"/patches/*.patch | sed 's|^+++ b/||; s|^"b/||; s|"$||' | grep "^$prefix" | sort -u | tr '\n' ' ')"
cat >"$work/env.sh" <<EOF
FORKBOOK_CACHE='$FORKBOOK_CACHE'
FORK='$fork'; BASE='$base'; PIN='$pin'; PREFIX='$prefix'; RECORDS='$records'
CORE='$core'
CORE_AT_BASE='$(present "$base")'
CORE_AT_PIN='$(present "$pin")'
CORE_AT_FORK='$(present "$fork")'
TOUCHED_BACKEND='$touched'
EOF
# The baselines must do the job: the series applies and the lock matches.
for b in near-sync-check near-residual blob-sync-check blob-residual; do
  bash "$self" baseline "$b" "$work" || { echo "baseline $b failed" >&2; exit 2; }
done
store="$(dirname "$FORKBOOK_CACHE")/forkbook-drift-api"
fb drift api >/dev/null || true
fb verify >/dev/null || true

json="$work/json"
mkdir -p "$json"
# hyperfine NAME CMD...: mean seconds into $json/NAME
bench() {
  local name="$1"
  shift
  hyperfine -N --warmup 2 --runs "$runs" --export-json "$json/$name.json" "$@" >/dev/null 2>&1 \
    || hyperfine --warmup 2 --runs "$runs" --export-json "$json/$name.json" "$@" >/dev/null
}
cd "$root"
bench sync-check "$bin sync --check" "bash $self baseline near-sync-check $work" "bash $self baseline blob-sync-check $work"
bench status "$bin status" "bash $self baseline near-status $work"
bench residual "$bin residual" "bash $self baseline near-residual $work" "bash $self baseline blob-residual $work"
bench check "$bin check"
bench drift-cold --prepare "rm -rf $store" "$bin drift api"
bench drift-warm "$bin drift api"
bench verify "$bin verify"
fb book build --dir "$root/book" >/dev/null 2>&1 || true
bench book-cached "$bin book build --dir $root/book"
hyperfine --runs 3 --export-json "$json/book-rerun.json" --prepare "rm -rf $store" "$bin book build --dir $root/book --rerun" >/dev/null 2>&1 || true
bench version "$bin --version"

python3 - "$json" <<'PY'
import json, os, sys
d = sys.argv[1]
def res(name):
    path = os.path.join(d, name + ".json")
    if not os.path.exists(path):
        return []
    return json.load(open(path))["results"]
def ms(r): return r["mean"] * 1000
def fmt(r): return f"{ms(r):.1f} ± {r['stddev']*1000:.1f} ms (user {r['user']*1000:.1f}, sys {r['system']*1000:.1f})"
print("| command | forkbook, whole process | near-limit shell | forkbook / near-limit | per-blob shell | per-blob / forkbook |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for name, label in [("sync-check", "sync --check"), ("status", "status"), ("residual", "residual"), ("check", "check"),
                    ("drift-cold", "drift api (empty drift cache)"), ("drift-warm", "drift api (second run)"),
                    ("verify", "verify (warm drift cache)"), ("book-cached", "book build (every step cached)"),
                    ("book-rerun", "book build --rerun (empty drift cache)"), ("version", "--version (process floor)")]:
    r = res(name)
    if not r:
        continue
    fb = r[0]
    near = next((x for x in r[1:] if "near-" in x["command"]), None)
    blob = next((x for x in r[1:] if "blob-" in x["command"]), None)
    cells = [f"`{label}`", fmt(fb)]
    cells += [f"{ms(near):.1f} ms", f"{ms(fb)/ms(near):.2f}×"] if near else ["—", "—"]
    cells += [f"{ms(blob):.1f} ms", f"{ms(blob)/ms(fb):.1f}×"] if blob else ["—", "—"]
    print("| " + " | ".join(cells) + " |")
sc, dc, dw, vf, bc = (res(n) for n in ["sync-check", "drift-cold", "drift-warm", "verify", "book-cached"])
if sc and dc and dw:
    print(f"\nsecond drift api / first: {ms(dw[0])/ms(dc[0]):.3f}")
if sc and vf:
    print(f"verify (warm drift cache) / sync --check: {ms(vf[0])/ms(sc[0]):.2f}")
if sc and bc:
    print(f"book build (cached) / sync --check: {ms(bc[0])/ms(sc[0]):.2f}")
PY
