# Sourced by the benches that run on the real overlay (side-by-side.sh, same-output.sh):
#
#   . benches/real-project.sh
#   real_project PROJECT BIN      # FORKBOOK_CACHE, FORKBOOK_FORK_URL, FORKBOOK_UPSTREAM_URL set
#
# makes PROJECT the files layout the first user's tool works on, from this repository's records
# (patches-rocm/UPSTREAM: the fork commit, its merge base and the pin): the fork's backend files
# and core files at the fork commit as whole files in the records folder (tree "."), the pin at
# the merge base, so `retarget PIN` moves it the way a pin bump does. It is adopted (overlay.lock)
# and given its residual record and README by BIN. Sets fork, base, pin, prefix and core (the
# core files, one word each) for the caller.

real_project() {
  local project="$1" bin="$2" here records
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  value() { sed -n "s/^$1: *//p" "$here/patches-rocm/UPSTREAM" | head -1; }
  fork="$(value commit)"
  base="$(value fork_upstream_merge_base)"
  pin="$(value retargeted_to_mlx_pin)"
  prefix="$(sed -n 's/^backend_prefix *= *"\(.*\)"/\1/p' "$here/forkbook.toml" | head -1)"
  core="$(sed -n '/^core_files *= *\[/,/\]/p' "$here/forkbook.toml" | grep -o '"[^"]*"' | tr -d '"' | tr '\n' ' ')"
  records="$project/patches-rocm"
  mkdir -p "$records"
  sed -e 's/^layout = "patch"/layout = "files"\ntree = "."/' -e '/^\[\[verify/,$d' "$here/forkbook.toml" >"$project/forkbook.toml"
  (cd "$project" && "$bin" fetch >/dev/null)
  # shellcheck disable=SC2086 # the core files are one word each
  git --git-dir "$FORKBOOK_CACHE" archive "$fork" -- "$prefix" $core | tar -x -C "$records"
  cat >"$records/UPSTREAM" <<UPSTREAM
source: $(value source)
branch: $(value branch)
commit: $fork
fork_upstream_merge_base: $base
retargeted_to_mlx_pin: $base
license: $(value license)
local_fixes: LOCAL_FIXES.md
UPSTREAM
  printf '# Local fixes\n\nNone: the overlay is the fork at its merge base.\n' >"$records/LOCAL_FIXES.md"
  (cd "$project" && { "$bin" adopt >/dev/null || true; } && "$bin" residual --write >/dev/null && "$bin" sync "$fork" >/dev/null)
  (cd "$project" && "$bin" sync --check >/dev/null) ||
    { echo "the project does not reproduce: $(cd "$project" && "$bin" sync --check)" >&2; return 2; }
}
