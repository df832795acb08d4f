//! Failed compiles kept one translation unit at a time, so a rebuild replays a known failure
//! instead of compiling it again (ccache keeps successes only).
//!
//! The compiler CMake is given is then the wrapper script (`write_wrapper`). For each `-c`
//! command it hashes the command's arguments and the compiler's identity (the one
//! [`super::results`] keys a tree by): the command's digest. Only a command that failed before
//! (its digest marked in `commands/`) has anything to replay, so only then does the script
//! preprocess the unit first (`-E`, the output, dependency and `-c` arguments left out) and
//! look for its key, the digest of the command and that output; every other unit goes straight
//! to the compiler (on the real overlay the `-E` is about 40 % of a host-side compile, and all
//! of a ccache hit), and a unit is preprocessed for its key only when it fails. The tree's and
//! the build folder's paths are spelled as placeholders in what is hashed and kept, so a unit
//! laid out alike in another tree (the recorded pin's and the candidate's, `drift build --to`)
//! has the same key and its kept stderr names the files of the tree being built. A unit whose
//! `-E` fails (a missing header) is not kept: its key would not cover its text.
//!
//! The script cannot check a seal. So before a build, forkbook opens every entry of the sealed
//! store and writes those whose seal verifies into the build folder (`kept/`), which the build
//! empties first: a forged or damaged entry is never there and changes no verdict. The script
//! answers a hit from `kept/` (the kept stderr, the kept status) without compiling; on a miss
//! it compiles, and a failure (an exit status below 128, not a signal) goes to `new/`, which
//! forkbook seals into the store after the build. `new/` answers too: the build's own
//! failures, met again by `make -i`'s pass (`build_keeping_going`), are not compiled twice.
//! The build runs the tree's own CMake code, which could write anything the user may; what it
//! writes is never more believed than the build itself.
//!
//! The store is kept to what is still met: the script marks each entry it replays in `hits/`,
//! `keep` dates the store's entry anew, and an entry neither replayed nor kept for
//! [`UNUSED_FOR`] is removed (a failure of a pin left behind is never met again).

use std::path::Path;

use forkbook_records::cache_entry::{Key, Store};

/// The folder in the build folder the wrapper reads (`kept/`) and writes (`new/`).
pub const FOLDER: &str = "forkbook-compile-failures";

/// A store entry's payload and a `kept/` file: `status N`, a line, `command C`, a line (the
/// digest of the command alone), then the unit's stderr.
const STATUS: &str = "status ";
const COMMAND: &str = "command ";

/// How long a kept failure may go unreplayed before `keep` removes it from the store.
pub const UNUSED_FOR: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 60 * 60);

/// The placeholders the tree's and the build folder's paths become in what is kept.
const TREE_MARK: &str = "@FORKBOOK_TREE@";
const BUILD_MARK: &str = "@FORKBOOK_BUILD@";

/// Writes every entry of `store` whose seal verifies into `build_dir`'s `kept/`, and marks its
/// command in `kept/commands/`, where the script looks before it preprocesses a unit.
pub fn stage(store: &Store, build_dir: &Path) {
    let kept = build_dir.join(FOLDER).join("kept");
    let verified = keys_in(store.dir())
        .filter_map(|(key, _)| Some((key, store.load(&key)?)))
        .filter(|(_, payload)| is_failure(payload));
    for (key, payload) in verified {
        let Some(command) = command_of(&payload) else {
            continue;
        };
        let commands = kept.join("commands");
        if std::fs::create_dir_all(&commands).is_ok()
            && std::fs::write(kept.join(key.hex()), &payload).is_ok()
        {
            let _ = std::fs::write(commands.join(command), "");
        }
    }
}

/// Seals what the build's wrapper kept in `new/` into `store`, dates anew the entries it
/// replayed (`hits/`), and removes those unused for [`UNUSED_FOR`]; failing costs the next build
/// its replay only.
pub fn keep(store: &Store, build_dir: &Path) {
    let folder = build_dir.join(FOLDER);
    for (key, path) in keys_in(&folder.join("new")) {
        match std::fs::read(path) {
            Ok(payload) if is_failure(&payload) && command_of(&payload).is_some() => {
                let _ = store.save(&key, &payload);
            }
            _ => {}
        }
    }
    let now = std::time::SystemTime::now();
    for (key, _) in keys_in(&folder.join("hits")) {
        let entry = std::fs::File::open(store.path(&key));
        let _ = entry.and_then(|file| file.set_modified(now));
    }
    for (_, path) in keys_in(store.dir()) {
        let modified = std::fs::metadata(&path).and_then(|m| m.modified());
        let unused = modified.is_ok_and(|m| now.duration_since(m).unwrap_or_default() > UNUSED_FOR);
        if unused {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The files of `dir` named as keys, with their paths; nothing where `dir` cannot be read.
fn keys_in(dir: &Path) -> impl Iterator<Item = (Key, std::path::PathBuf)> {
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    entries.filter_map(|entry| {
        let key = Key::from_hex(entry.file_name().to_str()?)?;
        Some((key, entry.path()))
    })
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

/// The digest of the command on `payload`'s second line: 64 lowercase hex digits, or None.
fn command_of(payload: &[u8]) -> Option<&str> {
    let line = payload.split(|&b| b == b'\n').nth(1)?;
    let digest = std::str::from_utf8(line).ok()?.strip_prefix(COMMAND)?;
    let hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
    (digest.len() == 64 && digest.chars().all(hex)).then_some(digest)
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
    let without_output = without_output_args(&["-c|-MD|-MMD"]);
    Some(format!(
        r#"case " $* " in *' -c '*) ;; *) exec {run} "$@" ;; esac
command -v sha256sum >/dev/null 2>&1 || exec {run} "$@"
failures={folder}
# The command alone: a unit whose command never failed has nothing kept to replay, so it is
# compiled without being preprocessed first.
command=$({{ echo {identity}; printf '%s\n' "$@" | sed {normalize}; }} | sha256sum | cut -d ' ' -f 1)
# The unit's key: the command and its preprocessed text (the output, dependency and -c
# arguments left out); empty where the unit does not preprocess (a missing header).
unit_key() {{
{without_output}  pre=$(mktemp) || return
  if {compiler} "$@" -E >"$pre" 2>/dev/null; then
    {{ echo "$command"; sed {normalize} "$pre"; }} | sha256sum | cut -d ' ' -f 1
  fi
  rm -f "$pre"
}}
key=
if [ -f "$failures/kept/commands/$command" ] || [ -f "$failures/new/commands/$command" ]; then
  key=$(unit_key "$@")
  for kept in "$failures/kept/$key" "$failures/new/$key"; do
    [ -n "$key" ] && [ -f "$kept" ] || continue
    status=$(sed -n '1s/^{STATUS}//p' "$kept")
    case "$status" in
      ''|*[!0-9]*) ;;
      *) mkdir -p "$failures/hits" && : >"$failures/hits/$key"
        sed 1,2d "$kept" | sed {restore} >&2; exit "$status" ;;
    esac
  done
fi
err=$(mktemp) || exec {run} "$@"
{run} "$@" 2>"$err"
status=$?
cat "$err" >&2
if [ "$status" -gt 0 ] && [ "$status" -lt 128 ]; then
  [ -n "$key" ] || key=$(unit_key "$@")
  if [ -n "$key" ] && mkdir -p "$failures/new/commands"; then
    {{ echo "{STATUS}$status"; echo "{COMMAND}$command"; sed {normalize} "$err"; }} >"$failures/new/.$key.$$" &&
      mv -f "$failures/new/.$key.$$" "$failures/new/$key" && : >"$failures/new/commands/$command"
  fi
fi
rm -f "$err"
exit "$status"
"#
    ))
}

/// The shell lines (indented for a block) that take out of `"$@"` the output and dependency
/// arguments with their values, and each argument matching one of the `case` patterns `alone`:
/// the unit's key and the device check both run a unit's command without its outputs.
pub fn without_output_args(alone: &[&str]) -> String {
    let alone: String = alone.iter().map(|p| format!("      {p}) ;;\n")).collect();
    format!(
        r#"  n=$#
  while [ "$n" -gt 0 ]; do
    a=$1
    shift
    n=$((n - 1))
    case "$a" in
      -o|-MF|-MT|-MQ) if [ "$n" -gt 0 ]; then shift; n=$((n - 1)); fi ;;
{alone}      *) set -- "$@" "$a" ;;
    esac
  done
"#
    )
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
    fn only_an_entry_naming_its_command_is_staged() {
        let command = "ab".repeat(32);
        let entry = format!("status 1\ncommand {command}\nerror: x\n");
        assert_eq!(command_of(entry.as_bytes()), Some(command.as_str()));
        assert_eq!(command_of(b"status 1\nerror: x\n"), None, "an older entry");
        let short = format!("status 1\ncommand {}\n", &command[1..]);
        assert_eq!(command_of(short.as_bytes()), None);
        let named = format!("status 1\ncommand ../{}\n", &command[3..]);
        assert_eq!(command_of(named.as_bytes()), None, "a path, not a digest");
    }

    #[test]
    fn paths_are_spelled_literally_in_sed() {
        assert_eq!(sed_pattern("/a.b/[x]|y"), "/a\\.b/\\[x\\]\\|y");
        assert_eq!(sed_replacement("/a&b|c"), "/a\\&b\\|c");
    }
}
