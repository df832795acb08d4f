//! Failed compiles kept one translation unit at a time, so a rebuild replays a known failure
//! instead of compiling it again (ccache keeps successes only).
//!
//! The compiler CMake is given is then the wrapper script (`write_wrapper`), which, for each
//! `-c` command, preprocesses the unit (`-E`, the output, dependency and `-c` arguments left
//! out) and hashes that output, the command's arguments and the compiler's identity (the one
//! [`super::results`] keys a tree by). The tree's and the build folder's paths are spelled as
//! placeholders in what is hashed and kept, so a unit laid out alike in another tree (the
//! recorded pin's and the candidate's, `drift build --to`) has the same key and its kept
//! stderr names the files of the tree being built. A unit whose `-E` fails (a missing header)
//! is compiled as before: its key would not cover its text.
//!
//! The script cannot check a seal. So before a build, forkbook opens every entry of the sealed
//! store and writes those whose seal verifies into the build folder (`kept/`), which the build
//! empties first: a forged or damaged entry is never there and changes no verdict. The script
//! answers a hit from `kept/` (the kept stderr, the kept status) without compiling; on a miss
//! it compiles, and a failure (an exit status below 128, not a signal) goes to `new/`, which
//! forkbook seals into the store after the build. `new/` answers too: the build's own
//! failures, met again by `make -i`'s pass (`build_keeping_going`), are not compiled twice. The build runs the tree's own CMake code,
//! which could write anything the user may; what it writes is never more believed than the
//! build itself.

use std::path::Path;

use forkbook_records::cache_entry::{Key, Store};

/// The folder in the build folder the wrapper reads (`kept/`) and writes (`new/`).
pub const FOLDER: &str = "forkbook-compile-failures";

/// A store entry's payload and a `kept/` file: `status N`, a line, then the unit's stderr.
const STATUS: &str = "status ";

/// The placeholders the tree's and the build folder's paths become in what is kept.
const TREE_MARK: &str = "@FORKBOOK_TREE@";
const BUILD_MARK: &str = "@FORKBOOK_BUILD@";

/// Writes every entry of `store` whose seal verifies into `build_dir`'s `kept/`.
pub fn stage(store: &Store, build_dir: &Path) {
    let kept = build_dir.join(FOLDER).join("kept");
    let Ok(entries) = std::fs::read_dir(store.dir()) else {
        return;
    };
    let verified = (entries.flatten())
        .filter_map(|e| Key::from_hex(e.file_name().to_str()?))
        .filter_map(|key| Some((key, store.load(&key)?)))
        .filter(|(_, payload)| is_failure(payload));
    for (key, payload) in verified {
        if std::fs::create_dir_all(&kept).is_ok() {
            let _ = std::fs::write(kept.join(key.hex()), payload);
        }
    }
}

/// Seals what the build's wrapper kept in `new/` into `store`; failing costs the next build
/// its replay only.
pub fn keep(store: &Store, build_dir: &Path) {
    let new = build_dir.join(FOLDER).join("new");
    let Ok(entries) = std::fs::read_dir(new) else {
        return;
    };
    for entry in entries.flatten() {
        let Some(key) = entry.file_name().to_str().and_then(Key::from_hex) else {
            continue;
        };
        match std::fs::read(entry.path()) {
            Ok(payload) if is_failure(&payload) => {
                let _ = store.save(&key, &payload);
            }
            _ => {}
        }
    }
}

/// Whether `payload` starts with a failing status the script can exit with (1 to 127).
fn is_failure(payload: &[u8]) -> bool {
    let line = payload.split(|&b| b == b'\n').next().unwrap_or_default();
    let status = std::str::from_utf8(line)
        .ok()
        .and_then(|l| l.strip_prefix(STATUS));
    status
        .and_then(|s| s.parse::<u8>().ok())
        .is_some_and(|s| (1..128).contains(&s))
}

/// The wrapper's lines that answer a `-c` command from `kept/` or compile it and keep its
/// failure; `run` is the shell words that run the compiler (through the launcher), `compiler`
/// the compiler alone, `identity` its identity's digest. None where a path cannot be spelled
/// in the script's `sed` programs (a line break in it): the wrapper then just compiles.
pub fn script(
    tree: &Path,
    build_dir: &Path,
    run: &str,
    compiler: &str,
    identity: &str,
) -> Option<String> {
    let (tree, build) = (tree.to_str()?, build_dir.to_str()?);
    if (tree.chars().chain(build.chars())).any(|c| c == '\n' || c == '\r') {
        return None;
    }
    let mut paths = [(tree, TREE_MARK), (build, BUILD_MARK)];
    // The longer first: one may hold the other.
    paths.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    let normalize: String = (paths.iter())
        .map(|(path, mark)| format!("s|{}|{mark}|g;", sed_pattern(path)))
        .collect();
    let restore: String = (paths.iter())
        .map(|(path, mark)| format!("s|{mark}|{}|g;", sed_replacement(path)))
        .collect();
    let folder = shell_quote(&format!("{build}/{FOLDER}"));
    let (normalize, restore) = (shell_quote(&normalize), shell_quote(&restore));
    Some(format!(
        r#"case " $* " in *' -c '*) ;; *) exec {run} "$@" ;; esac
command -v sha256sum >/dev/null 2>&1 || exec {run} "$@"
# The unit preprocessed: the output, dependency and -c arguments left out.
preprocess() {{
  n=$#
  while [ "$n" -gt 0 ]; do
    a=$1
    shift
    n=$((n - 1))
    case "$a" in
      -o|-MF|-MT|-MQ) if [ "$n" -gt 0 ]; then shift; n=$((n - 1)); fi ;;
      -c|-MD|-MMD) ;;
      *) set -- "$@" "$a" ;;
    esac
  done
  {compiler} "$@" -E
}}
failures={folder}
pre=$(mktemp) || exec {run} "$@"
if ! preprocess "$@" >"$pre" 2>/dev/null; then
  rm -f "$pre"
  exec {run} "$@"
fi
key=$({{ echo {identity}; printf '%s\n' "$@" | sed {normalize}; sed {normalize} "$pre"; }} | sha256sum | cut -d ' ' -f 1)
rm -f "$pre"
for kept in "$failures/kept/$key" "$failures/new/$key"; do
  [ -f "$kept" ] || continue
  status=$(sed -n '1s/^{STATUS}//p' "$kept")
  case "$status" in
    ''|*[!0-9]*) ;;
    *) sed 1d "$kept" | sed {restore} >&2; exit "$status" ;;
  esac
done
err=$(mktemp) || exec {run} "$@"
{run} "$@" 2>"$err"
status=$?
cat "$err" >&2
if [ "$status" -gt 0 ] && [ "$status" -lt 128 ] && mkdir -p "$failures/new"; then
  {{ echo "{STATUS}$status"; sed {normalize} "$err"; }} >"$failures/new/.$key.$$" &&
    mv -f "$failures/new/.$key.$$" "$failures/new/$key"
fi
rm -f "$err"
exit "$status"
"#
    ))
}

/// `text` in single quotes for the shell.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `path` as a basic regular expression of `sed`'s `s|…|…|`, matching itself alone.
fn sed_pattern(path: &str) -> String {
    escape(path, "\\|.*[]^$")
}

/// `path` as the replacement of `sed`'s `s|…|…|`.
fn sed_replacement(path: &str) -> String {
    escape(path, "\\|&")
}

fn escape(text: &str, special: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if special.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_failing_status_is_kept_or_staged() {
        assert!(is_failure(b"status 1\nerror: x\n"));
        assert!(!is_failure(b"status 0\n"));
        assert!(!is_failure(b"status 139\n"));
        assert!(!is_failure(b"status x\n"));
        assert!(!is_failure(b""));
    }

    #[test]
    fn paths_are_spelled_literally_in_sed() {
        assert_eq!(sed_pattern("/a.b/[x]|y"), "/a\\.b/\\[x\\]\\|y");
        assert_eq!(sed_replacement("/a&b|c"), "/a\\&b\\|c");
    }
}
