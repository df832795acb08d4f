#!/bin/sh
# `forkbook check` on registers of 20,000, 80,000 and 300,000 entries (a benchmark, not a test:
# it prints hyperfine's table and asserts nothing).
#
#   cargo build --release
#   benches/register-scale.sh [--runs N] [--bin PATH] [SIZES...]
#
# The project is the demo's (files layout, no network), in a temporary folder; its register gets
# entries 5..N as `## N. tN` headings (about 14 bytes each, so 300,000 entries are 4 MB), each
# without a state, so every check that reads entries has findings to report for each.
set -eu

runs=3
bin=target/release/forkbook
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --bin) bin="$2"; shift 2 ;;
        *) break ;;
    esac
done
sizes="${*:-20000 80000 300000}"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" demo "$work/demo" --layout files >/dev/null
project="$work/demo/project"
register="$project/patches-rocm/LOCAL_FIXES.md"
cp "$register" "$work/LOCAL_FIXES.md"

for n in $sizes; do
    { cat "$work/LOCAL_FIXES.md"; seq 5 "$n" | sed 's/.*/\n## &. t&/'; } >"$work/reg-$n.md"
done

for n in $sizes; do
    cp "$work/reg-$n.md" "$register"
    printf '%s entries, %s bytes\n' "$n" "$(wc -c <"$register")"
    hyperfine --warmup 1 --runs "$runs" -i \
        --command-name "check, $n entries" \
        "'$bin' --root '$project' --cache '$work/demo/cache.git' check >/dev/null"
done
