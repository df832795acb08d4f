#!/usr/bin/env bash
# Whole-process benchmark of forkbook on a real overlay, beside two shell baselines doing the same
# work, all in one hyperfine run each, printing the ratios.
#
#   FORKBOOK_FORK_URL=<fork mirror> FORKBOOK_UPSTREAM_URL=<upstream mirror> \
#     benches/whole-process.sh [--runs N] [--bin target/release/forkbook] [--project DIR] [--only NAMES]
#
# `--only sync-check,residual` times only those benches (names as in the table's JSON files:
# sync-check status residual check sync-check-cold residual-cold drift-cold drift-warm verify
# book-cached book-rerun version).
#
# The project (default: this repository: forkbook.toml, patches-rocm/, book/) is copied to a
# temporary folder, so nothing of it is touched; the object cache is FORKBOOK_CACHE or a fresh
# one in that folder, filled from the mirrors before anything is timed. Needs hyperfine, git,
# tar, sha256sum and diff.
#
# The baselines, both in bash (see `baseline_*` below):
# - near-limit: the least a script can do. The backend at the fork and the core files at each of
#   base, pin and fork come out of one `git archive | tar -x` each (git's own batch read), one
#   `git diff --name-only` finds the core files the fork changed, one `git merge-file -p` for each of
#   those, one `cp` of the others from the pin, one `git apply` of the whole series, one
#   `sha256sum -c` of the lock. It does not re-render the patches or compare the other records,
#   so it is a lower bound of `sync --check`'s work.
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
  dirs_of() { # the folders holding files $2... below $1, for one `mkdir -p`
    local d="$1"; shift
    for f in "$@"; do case "$f" in */*) printf '%s\n' "$d/${f%/*}" ;; esac; done | sort -u
  }
  core_merge() { # core_merge DIR_BASE DIR_PIN DIR_FORK DEST: B's core files
    local changed f
    # The files the fork changed (one process); the others are the pin's.
    changed=" $(git_ diff --name-only "$BASE" "$FORK" -- $CORE | tr '\n' ' ') "
    mkdir -p "$4" $(dirs_of "$4" $CORE)
    for f in $CORE; do
      case "$changed" in
        *" $f "*)
          [ -f "$3/$f" ] || continue # deleted by the fork
          [ -f "$1/$f" ] || : >"$1/$f"
          [ -f "$2/$f" ] || : >"$2/$f"
          git merge-file -p -L "pin ${PIN:0:8}" -L "base ${BASE:0:8}" -L "fork ${FORK:0:8}" "$2/$f" "$1/$f" "$3/$f" >"$4/$f" 2>/dev/null || true
          ;;
      esac
    done
    (cd "$2" && for f in $CORE; do case "$changed" in *" $f "*) ;; *) [ -f "$f" ] && printf '%s\0' "$f" ;; esac; done | xargs -0 -r cp --parents -t "$4")
  }
  case "$name" in
    near-sync-check | near-status)
      mkdir -p "$out/base" "$out/pin" "$out/fork" "$out/tree"
      git_ archive "$FORK" -- "$PREFIX" | tar -x -C "$out/tree"
      git_ archive "$FORK" -- $CORE_AT_FORK | tar -x -C "$out/fork"
      git_ archive "$BASE" -- $CORE_AT_BASE | tar -x -C "$out/base"
      git_ archive "$PIN" -- $CORE_AT_PIN | tar -x -C "$out/pin"
      core_merge "$out/base" "$out/pin" "$out/fork" "$out/tree"
      (cd "$out/tree" && git apply --whitespace=nowarn "$RECORDS"/patches/*.patch)
      (cd "$out/tree" && grep -v '^#' "$RECORDS/overlay.lock" | sha256sum -c --quiet)
      ;;
    near-residual)
      mkdir -p "$out/base" "$out/pin" "$out/fork" "$out/tree"
      git_ archive "$FORK" -- $CORE_AT_FORK $TOUCHED_BACKEND | tar -x -C "$out/fork"
      git_ archive "$BASE" -- $CORE_AT_BASE | tar -x -C "$out/base"
      git_ archive "$PIN" -- $CORE_AT_PIN | tar -x -C "$out/pin"
      core_merge "$out/base" "$out/pin" "$out/fork" "$out/b"
      cp -r "$out/b/." "$out/tree/"
      (cd "$out/fork" && cp --parents -t "$out/tree" $TOUCHED_BACKEND)
      (cd "$out/tree" && git apply --whitespace=nowarn "$RECORDS"/patches/*.patch)
      diff -r -u "$out/b" "$out/tree" >/dev/null || true
      ;;
    blob-sync-check)
      mkdir -p "$out/tree" "$out/side"
      files="$(git_ ls-tree -r --name-only "$FORK" -- "$PREFIX")"
      mkdir -p $(dirs_of "$out/tree" $files $CORE)
      for f in $files; do
        git_ cat-file blob "$FORK:$f" >"$out/tree/$f"
        git_ cat-file blob "$BASE:$f" >"$out/side/b" 2>/dev/null || true
        git_ cat-file blob "$PIN:$f" >"$out/side/p" 2>/dev/null || true
      done
      for f in $CORE; do
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
      mkdir -p "$out/b" "$out/tree" "$out/side" $(dirs_of "$out/b" $CORE) $(dirs_of "$out/tree" $TOUCHED_BACKEND)
      for f in $CORE; do
        git_ cat-file blob "$BASE:$f" >"$out/side/b" 2>/dev/null || : >"$out/side/b"
        git_ cat-file blob "$PIN:$f" >"$out/side/p" 2>/dev/null || : >"$out/side/p"
        git_ cat-file blob "$FORK:$f" >"$out/side/f" 2>/dev/null || : >"$out/side/f"
        git merge-file -p -L "pin ${PIN:0:8}" -L "base ${BASE:0:8}" -L "fork ${FORK:0:8}" "$out/side/p" "$out/side/b" "$out/side/f" >"$out/b/$f" 2>/dev/null || true
      done
      cp -r "$out/b/." "$out/tree/"
      for f in $TOUCHED_BACKEND; do
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
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --project) project="$2"; shift 2 ;;
    --only) only=",$2,"; shift 2 ;;
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
echo "forkbook $("$bin" --version 2>/dev/null | head -1), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
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
wants() { case "$only" in "" | *",$1,"*) return 0 ;; *) return 1 ;; esac; }
if wants drift-warm || wants verify || wants book-cached; then
  fb drift api >/dev/null || true
  fb verify >/dev/null || true
fi

json="$work/json"
mkdir -p "$json"
# hyperfine NAME CMD...: mean seconds into $json/NAME
bench() {
  local name="$1"
  shift
  wants "$name" || return 0
  hyperfine -N --warmup 2 --runs "$runs" --export-json "$json/$name.json" "$@" >/dev/null 2>&1 \
    || hyperfine --warmup 2 --runs "$runs" --export-json "$json/$name.json" "$@" >/dev/null
}
cd "$root"
bench sync-check "$bin sync --check" "bash $self baseline near-sync-check $work" "bash $self baseline blob-sync-check $work"
bench status "$bin status" "bash $self baseline near-status $work"
bench residual "$bin residual" "bash $self baseline near-residual $work" "bash $self baseline blob-residual $work"
bench check "$bin check"
# The first run at new commits: the core merges are made again (`forkbook-merges/` emptied first).
merges="$(dirname "$FORKBOOK_CACHE")/forkbook-merges"
bench sync-check-cold --prepare "rm -rf $merges" "$bin sync --check" "bash $self baseline blob-sync-check $work"
bench residual-cold --prepare "rm -rf $merges" "$bin residual" "bash $self baseline blob-residual $work"
bench drift-cold --prepare "rm -rf $store" "$bin drift api"
bench drift-warm "$bin drift api"
bench verify "$bin verify"
if wants book-cached; then fb book build --dir "$root/book" >/dev/null 2>&1 || true; fi
bench book-cached "$bin book build --dir $root/book"
if wants book-rerun; then
  hyperfine --runs 3 --export-json "$json/book-rerun.json" --prepare "rm -rf $store" "$bin book build --dir $root/book --rerun" >/dev/null 2>&1 || true
fi
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
def cpu(r): return (r["user"] + r["system"]) * 1000
def fmt(r): return f"{ms(r):.1f} ± {r['stddev']*1000:.1f} ms (CPU {cpu(r):.1f})"
def other(r): return f"{ms(r):.1f} ms (CPU {cpu(r):.1f})"
def ratio(a, b): return f"{a/b:.2f}×" if a / b < 10 else f"{a/b:.0f}×"
print("Mean wall time of each whole process (± standard deviation), its CPU time (user + system, children")
print("included) in brackets; ratios as wall / CPU.\n")
print("| command | forkbook | near-limit shell | forkbook / near-limit | per-blob shell | per-blob / forkbook |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for name, label in [("sync-check", "sync --check"), ("status", "status"), ("residual", "residual"), ("check", "check"),
                    ("sync-check-cold", "sync --check (empty merge cache)"), ("residual-cold", "residual (empty merge cache)"),
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
    cells += [other(near), f"{ratio(ms(fb), ms(near))} / {ratio(cpu(fb), cpu(near))}"] if near else ["—", "—"]
    cells += [other(blob), f"{ratio(ms(blob), ms(fb))} / {ratio(cpu(blob), cpu(fb))}"] if blob else ["—", "—"]
    print("| " + " | ".join(cells) + " |")
sc, dc, dw, vf, bc = (res(n) for n in ["sync-check", "drift-cold", "drift-warm", "verify", "book-cached"])
print()
if dc and dw:
    print(f"second drift api / first: {ratio(ms(dw[0]), ms(dc[0]))} wall, {ratio(cpu(dw[0]), cpu(dc[0]))} CPU")
if sc and vf:
    print(f"verify (warm drift cache) / sync --check: {ratio(ms(vf[0]), ms(sc[0]))} wall, {ratio(cpu(vf[0]), cpu(sc[0]))} CPU")
if sc and bc:
    print(f"book build (cached) / sync --check: {ratio(ms(bc[0]), ms(sc[0]))} wall, {ratio(cpu(bc[0]), cpu(sc[0]))} CPU")
PY
