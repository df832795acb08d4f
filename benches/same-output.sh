#!/usr/bin/env bash
# Whether two forkbook binaries say the same thing: every command of the demo and of its `next:`
# lines, and (with the mirrors given) the read-only commands on the real overlay, run by each
# binary in the same folders, their output and exit codes diffed. A change that should only make
# the code smaller or faster must leave this empty.
#
#   benches/same-output.sh BEFORE_BIN AFTER_BIN
#   FORKBOOK_FORK_URL=<fork mirror> FORKBOOK_UPSTREAM_URL=<upstream mirror> \
#     benches/same-output.sh BEFORE_BIN AFTER_BIN      # the real overlay too
#
# Build the two binaries from the two commits first, e.g. `git worktree add`, `cargo build
# --release` in each. What is normalized before the diff, and only that: the binary's own path
# (the `next:` lines name it) and durations (`(12 ms)`, `in 1.2 s`, `took 3 s`). Exit 0 when
# both said the same, 1 with the diff when not.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: benches/same-output.sh BEFORE_BIN AFTER_BIN" >&2; exit 2; }
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
for b in "$1" "$2"; do [ -x "$b" ] || { echo "no binary at $b" >&2; exit 2; }; done
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/forkbook-same-output.XXXXXX)"
trap 'rm -rf "$work"' EXIT
# Each binary as `forkbook` in a folder of its own, first on PATH while it runs: the demo's
# verify runs `forkbook` from PATH, and its `next:` lines then name it by its name.
mkdir -p "$work/before-bin" "$work/after-bin"
cp "$(abs "$1")" "$work/before-bin/forkbook"
cp "$(abs "$2")" "$work/after-bin/forkbook"
before="$work/before-bin/forkbook"
after="$work/after-bin/forkbook"

normalize() {
  sed -E -e "s#$1#forkbook#g" \
    -e 's/\(([0-9]+(\.[0-9]+)?) ?(ms|s)\)/(… \3)/g' \
    -e 's/(took|in) [0-9]+(\.[0-9]+)? ?(ms|s|min)\b/\1 …/g' \
    -e 's/[0-9]+(\.[0-9]+)? (ms|s) of CPU/… of CPU/g'
}

# run_demo BIN OUT: the demo, then each of its `next:` lines, in one world at $work/world, as a
# user runs them: without the mirrors given for the real overlay below.
run_demo() {
  local bin="$1" out="$2" line n=0
  local PATH="$(dirname "$bin"):$PATH"
  rm -rf "$work/world"
  mkdir -p "$out"
  (cd "$work" && "$bin" demo "$work/world" >"$out/00-demo" 2>&1; echo "(exit $?)" >>"$out/00-demo") || true
  grep '^next: ' "$out/00-demo" | sed 's/^next: //; s/    # .*$//' >"$out/next-lines"
  (
    cd "$work"
    while IFS= read -r line; do
      n=$((n + 1))
      printf '$ %s\n' "$line" >"$out/$(printf '%02d' "$n")-next"
      (eval "$line") >>"$out/$(printf '%02d' "$n")-next" 2>&1 && echo "(exit 0)" >>"$out/$(printf '%02d' "$n")-next" ||
        echo "(exit $?)" >>"$out/$(printf '%02d' "$n")-next"
      case "$line" in cd\ * | export\ *) eval "$line" ;; esac
    done <"$out/next-lines"
  )
  for f in "$out"/*; do normalize "$bin" <"$f" >"$f.n" && mv "$f.n" "$f"; done
}

# run_real BIN OUT: read-only commands on the real overlay, in a project made once (below).
real_commands=(
  "check"
  "status"
  "sync --check"
  "residual"
  "retarget REAL_TO --check"
  "drift api --to REAL_TO"
  "drift api --to REAL_TO --json"
  "roll --check --to REAL_TO"
  "fixes list"
)
run_real() {
  local bin="$1" out="$2" cmd n=0
  local PATH="$(dirname "$bin"):$PATH"
  mkdir -p "$out"
  rm -rf "$work/real" && cp -a "$work/real-pristine" "$work/real"
  for cmd in "${real_commands[@]}"; do
    n=$((n + 1))
    cmd="${cmd//REAL_TO/$real_to}"
    {
      printf '$ forkbook %s\n' "$cmd"
      # shellcheck disable=SC2086 # the command's words
      (cd "$work/real" && FORKBOOK_CACHE="$work/real-cache-$(basename "$out")" "$bin" $cmd 2>&1) && echo "(exit 0)" || echo "(exit $?)"
    } >"$out/$(printf '%02d' "$n")-real" 2>&1
  done
  for f in "$out"/*-real; do normalize "$bin" <"$f" >"$f.n" && mv "$f.n" "$f"; done
}

(unset FORKBOOK_FORK_URL FORKBOOK_UPSTREAM_URL && run_demo "$before" "$work/before")
(unset FORKBOOK_FORK_URL FORKBOOK_UPSTREAM_URL && run_demo "$after" "$work/after")

if [ -n "${FORKBOOK_FORK_URL:-}" ] && [ -n "${FORKBOOK_UPSTREAM_URL:-}" ]; then
  export FORKBOOK_FORK_URL FORKBOOK_UPSTREAM_URL
  # The files-layout project of the real overlay at pin = the fork's merge base, as in
  # benches/side-by-side.sh, and the newest upstream commit as the candidate.
  # shellcheck source=benches/real-project.sh
  . "$here/benches/real-project.sh"
  export FORKBOOK_CACHE="$work/real-cache-make"
  mkdir -p "$work/real-pristine"
  real_project "$work/real-pristine" "$before" || exit 2
  real_to="$(git --git-dir "$FORKBOOK_CACHE" rev-parse refs/remotes/upstream/main)"
  unset FORKBOOK_CACHE
  for side in before after; do
    cp -a "$work/real-cache-make" "$work/real-cache-$side"
  done
  run_real "$before" "$work/before"
  run_real "$after" "$work/after"
fi

if diff -r "$work/before" "$work/after" >"$work/diff"; then
  echo "same output: $(find "$work/before" -type f | wc -l) files compared"
  # What was compared: each command and how it ended, so an empty diff of two failures shows.
  for f in "$work/before"/*-*; do printf '%s\t%s\t%s\n' "$(basename "$f")" "$(tail -1 "$f")" "$(head -1 "$f" | cut -c1-100)"; done
else
  cat "$work/diff"
  exit 1
fi
