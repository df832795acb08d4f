#!/usr/bin/env bash
# The real overlay's differential drift build, as the test of record: this repository's own
# patches-rocm/ and forkbook.toml over mirrors of the fork and of MLX given on the command line.
#
#   benches/drift-real.sh --fork DIR --upstream DIR [--to REV] [--bin target/release/forkbook]
#                         [--jobs N] [--work DIR] [--cache DIR] [--phases cold,rerun,warm]
#                         [--project DIR] [--out DIR] [--device-check ARCH]
#
# The candidate is built as the retarget makes it before the local fixes, against the fork at
# its upstream base (`drift build --without-fixes --with-api --stubs`), so what is new at the
# candidate is what the fixes are for. Phases:
#   cold:  no results cache, no ccache objects, no build folders;
#   rerun: the same command again: every tree's outcome is kept, nothing compiles;
#   warm:  the results cache and the build folders removed, ccache's objects kept.
# Each phase prints wall and CPU time, peak memory and ccache's counters. Then the table: each
# local fix -> the errors and symbols that show it (or the static finding, where no object of
# this toolchain's build shows it), the items no fix answers, and the toolchain's new instances.
#
# --out DIR keeps each phase's report (cold.txt, rerun.txt, warm.txt, report.json) there.
#
# --device-check ARCH adds `device_check = "ARCH"` to the [build] below: the device side's
# semantic check beside each HIP unit's host compile (one architecture, no code generated).
#
# --project DIR uses a project folder made by an earlier run (its forkbook.toml with the [build]
# below), so a rerun's trees, settings and kept outcomes are that run's.
#
# The machine needs hipcc (Debian's 5.2 is what the [build] below is written for), cmake, make,
# nm, ccache, python3, and the CPU backend's libraries (Debian: libopenblas-dev liblapacke-dev
# nlohmann-json3-dev libfmt-dev). The build takes tens of minutes cold on 2 cores.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
bin="$here/target/release/forkbook"
to="846d176"
jobs=2
work=""
cache=""
phases="cold,rerun,warm"
fork=""
upstream=""
project=""
out=""
device_check=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fork) fork="$2"; shift 2 ;;
    --upstream) upstream="$2"; shift 2 ;;
    --to) to="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    --phases) phases="$2"; shift 2 ;;
    --project) project="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --device-check) device_check="$2"; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ -n "$fork" ] && [ -n "$upstream" ] || { echo "needs --fork DIR and --upstream DIR" >&2; exit 2; }
for tool in hipcc cmake ccache python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
work="${work:-$tmp/work}"
cache="${cache:-$tmp/cache}"
mkdir -p "$cache"
if [ -n "$out" ]; then
  mkdir -p "$out"
  trap 'cp "$tmp"/*.txt "$tmp"/*.err "$tmp"/report.json "$out"/ 2>/dev/null; rm -rf "$tmp"' EXIT
fi
# The project: this repository's records and configuration, and the [build] of this machine.
if [ -z "$project" ]; then
project="${out:-$tmp}/project"
# An empty folder for the JSON package CMake would download: kept with the project, so a run
# with --project finds it.
mkdir -p "$project/empty-json"
cp "$here/forkbook.toml" "$project/"
cp -a "$here/patches-rocm" "$project/"
cat >> "$project/forkbook.toml" <<EOF

# Debian 12's hipcc 5.2.3 (clang 15), no network.
[build]
compiler = "hipcc"
arch = "gfx1030"
stubs = "stubs"
drop_flags = ["-parallel-jobs=*"]
add_flags = ["--cuda-host-only", "-O0"]
include_dirs = ["/usr/include/nlohmann"]
cmake_args = [
  "-DMLX_BUILD_ROCM=ON", "-DCMAKE_CXX_COMPILER={compiler}", "-DCMAKE_HIP_COMPILER={compiler}",
  "-DCMAKE_HIP_ARCHITECTURES={arch}", "-DCMAKE_BUILD_TYPE=Release", "-DMLX_BUILD_TESTS=OFF",
  "-DMLX_BUILD_EXAMPLES=OFF", "-DUSE_SYSTEM_FMT=ON", "-DMLX_BUILD_GGUF=OFF",
  "-DFETCHCONTENT_SOURCE_DIR_JSON=$project/empty-json",
]
EOF
[ -z "$device_check" ] || sed -i "/^\[build\]$/a device_check = \"$device_check\"" "$project/forkbook.toml"
fi
export FORKBOOK_FORK_URL="$fork" FORKBOOK_UPSTREAM_URL="$upstream"
export FORKBOOK_CACHE="$cache/cache.git"
results="$cache/forkbook-drift-build-results"
export CCACHE_DIR="$work/ccache"
build=("$bin" --root "$project" drift build --to "$to" --without-fixes --with-api
  --stubs "$project/stubs" --jobs "$jobs" --work "$work")

# One timed run: text report into $tmp/$1.txt, figures on stdout.
timed() {
  local name="$1"
  /usr/bin/time -f "$name: %e s wall, %U s user + %S s system, peak RSS %M KB" \
    -o "$tmp/$name.time" nice -n 10 "${build[@]}" >"$tmp/$name.txt" 2>"$tmp/$name.err" \
    || [ $? -eq 1 ] || { cat "$tmp/$name.err" >&2; exit 1; }
  cat "$tmp/$name.time"
  ccache --print-stats 2>/dev/null | grep -E '^(direct_cache_hit|preprocessed_cache_hit|cache_miss)\s' \
    | tr '\t' ' ' | paste -sd, - | sed "s/^/$name: ccache /" || true
  ccache --zero-stats >/dev/null 2>&1 || true
}

case ",$phases," in *,cold,*)
  rm -rf "$work" "$results"
  mkdir -p "$work"
  timed cold ;;
esac
case ",$phases," in *,rerun,*)
  timed rerun
  if [ -f "$tmp/cold.txt" ]; then
    # The stubs line says what `--stubs` wrote this run: the cold run writes the stubs, a rerun
    # finds them unchanged. Every other line is the differential's.
    stubs='^stubs for what this machine lacks: '
    if cmp -s "$tmp/cold.txt" "$tmp/rerun.txt"; then
      echo "rerun: the same report, byte for byte"
    elif cmp -s <(grep -v "$stubs" "$tmp/cold.txt") <(grep -v "$stubs" "$tmp/rerun.txt"); then
      echo "rerun: the same report, byte for byte, but the stubs line (what --stubs wrote):"
      diff <(grep "$stubs" "$tmp/cold.txt") <(grep "$stubs" "$tmp/rerun.txt") | grep '^[<>]' || true
    else
      echo "rerun: the report DIFFERS from the cold run's"
      diff "$tmp/cold.txt" "$tmp/rerun.txt" | head -20
    fi
  fi ;;
esac
case ",$phases," in *,warm,*)
  rm -rf "$results" "$work"/*/build
  timed warm ;;
esac

# The table, from the JSON of one more run (every outcome kept by now: nothing compiles).
nice -n 10 "$bin" --json --root "$project" "${build[@]:3}" >"$tmp/report.json" || [ $? -eq 1 ]
python3 - "$tmp/report.json" "$project/patches-rocm/patches" <<'EOF'
import json, pathlib, re, sys

report = json.load(open(sys.argv[1]))
diff = report["differential"]
patches = sorted(pathlib.Path(sys.argv[2]).glob("*.patch"))
added = {}
for patch in patches:
    number = int(patch.name.split("-")[0])
    added[number] = "\n".join(l[1:] for l in patch.read_text().splitlines() if l.startswith("+"))

def words(symbol):
    name = re.split(r"[(<]", symbol.split(" for ")[-1])[0]
    parts = [p for p in name.split("::") if p]
    return parts[-2:] if len(parts) > 1 else parts

print()
print("| fix | what shows it |")
print("| --- | --- |")
static = (report.get("confirmation") or {})
static_findings = static.get("confirmed", []) + [
    {"kind": k, "symbol": s} for k, s in static.get("not_seen", [])
]
for number, title in diff.get("fixes", []):
    items = [a for a in diff["answers"] if number in a["fixes"]]
    shown = "; ".join(f"{a['kind']} `{a['subject']}`" for a in items)
    if not shown:
        hits = [f for f in static_findings
                if all(re.search(rf"\b{re.escape(w)}\b", added.get(number, "")) for w in words(f["symbol"]))]
        shown = "; ".join(f"static finding only: {f['kind']} `{f['symbol']}`" for f in hits) \
            or "NOT SHOWN"
    print(f"| {number}. {title} | {shown} |")
unanswered = [a for a in diff["answers"] if not a["fixes"]]
print()
print(f"unanswered drift items: {len(unanswered)}")
for a in unanswered:
    print(f"  {a['kind']} {a['subject']}: {a['item']}")
print(f"toolchain, new instance (not drift): {len(diff['toolchain_new'])}")
for t in diff["toolchain_new"]:
    e = t["error"]
    print(f"  {e['file']}:{e['line']}: {e['message'][:100]} [{t['evidence'][:80]}]")
print(f"undefined after a compile that failed at the candidate (not drift): {len(diff['after_failed_compiles'])}")
print(f"also at the baseline (not drift): {len(diff['known_errors'])} errors, {len(diff['known_undefined'])} undefined symbols")
print(f"missing headers (toolchain): {len(diff['missing_headers'])}")
EOF
