#!/bin/sh
# Peak memory (maximum resident set, from `/usr/bin/time -v`) of `forkbook status` and
# `forkbook check` on large registers, beside each register's size: a benchmark, not a test (it
# prints a table and asserts nothing).
#
#   cargo build --release
#   benches/register-memory.sh [--bin PATH]... [PROSE_ENTRIES...]
#   SHORT="600000" benches/register-memory.sh 80000     # one size of each shape
#   COMMANDS="status,check --verbose" benches/register-memory.sh   # the commands, comma-separated
#                                     (default: status, status --json, check, check --json)
#
# With several `--bin`, each register is measured with each binary in turn (a column each, in
# the order given; the last column divides the last binary's peak by the register's size), so
# two builds are compared under the same load.
#
# The project is the demo's (files layout, no network), in a temporary folder. Two shapes:
# - prose: entries of about 600 bytes each (a heading, a paragraph of prose with a link and a
#   code span, a field list), PROSE_ENTRIES of them (default 20000 40000 80000: 12, 24 and 48 MB);
# - short: the shape of benches/register-scale.sh (`## N. tN`, about 20 bytes an entry, no state,
#   so every check that reads entries reports each), SHORT of them (default 150000 300000 600000).
set -eu
commands="${COMMANDS:-status,status --json,check,check --json}"

bins=""
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bins="$bins $(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
        *) break ;;
    esac
done
sizes="${*:-20000 40000 80000}"
bins="${bins:-$(pwd)/target/release/forkbook}"
set -- $bins
bin=$1
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" demo "$work/demo" --layout files >/dev/null
project="$work/demo/project"
register="$project/patches-rocm/LOCAL_FIXES.md"
cp "$register" "$work/LOCAL_FIXES.md"

prose() {
    cat "$work/LOCAL_FIXES.md"
    seq 5 "$1" | awk '{
        printf "\n## %d. Keep the stream of kernel %d alive while the event waits\n\n", $1, $1
        printf "The event held a raw pointer to the stream, and the stream could be freed while a "
        printf "kernel still waited on it; `mlx/backend/rocm/event.cpp` now keeps a reference until "
        printf "the wait returns. Seen as a crash in the test suite on a busy machine, once in a "
        printf "hundred runs; see https://example.org/notes/%d for the trace.\n\n", $1
        printf "- state: kept-local\n- reason: the fork rewrites this file in its next release\n"
        printf "- issue: acme/app#%d\n- files: `mlx/backend/rocm/event.cpp`\n", $1
    }'
}

short() {
    cat "$work/LOCAL_FIXES.md"
    seq 5 "$1" | sed 's/.*/\n## &. t&/'
}

peak() { # binary, command: the peak resident set in KiB
    /usr/bin/time -v "$1" --root "$project" --cache "$work/demo/cache.git" $2 \
        >/dev/null 2>"$work/time.txt" || true
    sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt"
}

measure() { # shape, entries, command
    cp "$work/reg.md" "$register"
    bytes=$(wc -c <"$register")
    kibs=""
    for b in $bins; do kibs="$kibs $(peak "$b" "$3")"; done
    echo "$kibs" | awk -v s="$1" -v n="$2" -v c="$3" -v b="$bytes" '{
        printf "| %s | %d | %.1f MB | %s |", s, n, b / 1e6, c
        for (i = 1; i <= NF; i++) printf " %.0f MiB |", $i / 1024
        printf " %.1f× |\n", $NF * 1024 / b
    }'
}

columns=$(for b in $bins; do printf ' peak RSS |'; done)
rules=$(for b in $bins; do printf ' --- |'; done)
echo "| shape | entries | register | command |$columns × register |"
echo "| --- | --- | --- | --- |$rules --- |"
each_command() { # shape, entries
    echo "$commands" | tr ',' '\n' | while read -r command; do measure "$1" "$2" "$command"; done
}
for n in $sizes; do
    prose "$n" >"$work/reg.md"
    each_command prose "$n"
done
for n in ${SHORT:-150000 300000 600000}; do
    short "$n" >"$work/reg.md"
    each_command short "$n"
done
