//! Patches of our own changes, rendered and applied by libgit2 (git's own diff and apply).
//!
//! A fix touches a handful of files, so every operation works on a small tree that holds only
//! those files: their pre-images in, their post-images out. libgit2 applies strictly (no fuzz):
//! a hunk that does not match is an error, never a guess.
//!
//! Those small trees live in an in-memory repository ([`scratch`]), never in the object cache:
//! rendering or checking a patch writes nothing to disk, and libgit2 never "freshens" (touches
//! the mtime of) a mirror's pack that already holds one of the blobs.

use super::error::{Context, Error, Result};
use super::paths::check_relative;
use super::FileMap;
use git2::{Diff, DiffFormat, DiffOptions, Oid, Repository};
use std::collections::BTreeMap;
use std::path::Path;

/// A repository whose objects live in memory only: what `render` and `apply` write goes there
/// and is gone when it drops. Cheap to make (no disk access), so each call makes its own.
pub fn scratch() -> Result<Repository> {
    let odb = git2::Odb::new()?;
    odb.add_new_mempack_backend(1)?;
    Ok(Repository::from_odb(odb)?)
}

/// Writes `files` as a (nested) tree object and returns its id.
fn write_tree(repo: &Repository, files: &FileMap) -> Result<Oid> {
    let mut root = Node::default();
    for (path, bytes) in files {
        check_relative(path)?;
        root.insert(path, repo.blob(bytes)?);
    }
    root.write(repo)
}

#[derive(Default)]
struct Node {
    blobs: BTreeMap<String, Oid>,
    dirs: BTreeMap<String, Node>,
}

impl Node {
    fn insert(&mut self, path: &str, blob: Oid) {
        match path.split_once('/') {
            Some((dir, rest)) => self
                .dirs
                .entry(dir.to_string())
                .or_default()
                .insert(rest, blob),
            None => {
                self.blobs.insert(path.to_string(), blob);
            }
        }
    }

    fn write(&self, repo: &Repository) -> Result<Oid> {
        let mut builder = repo.treebuilder(None)?;
        for (name, blob) in &self.blobs {
            builder.insert(name, *blob, 0o100644)?;
        }
        for (name, dir) in &self.dirs {
            builder.insert(name, dir.write(repo)?, 0o040000)?;
        }
        Ok(builder.write()?)
    }
}

/// The git-style patch that turns `pre` into `post` (a path absent from `post` is deleted, one
/// absent from `pre` is added). Binary changes are written as git binary patches.
pub fn render(pre: &FileMap, post: &FileMap) -> Result<String> {
    let repo = &scratch()?;
    let old = repo.find_tree(write_tree(repo, pre)?)?;
    let new = repo.find_tree(write_tree(repo, post)?)?;
    let mut opts = DiffOptions::new();
    opts.show_binary(true);
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))?;
    let mut text = Vec::new();
    diff.print(DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            text.push(line.origin() as u8);
        }
        text.extend_from_slice(line.content());
        true
    })?;
    let text = String::from_utf8(text).map_err(|_| Error::new("the patch is not UTF-8 text").with_note("non-UTF-8 changes are written as binary patches only when git treats the file as binary"))?;
    Ok(quote_spaced_paths(&text))
}

/// libgit2 writes `diff --git a/x y b/x y` unquoted but cannot read it back for an added or
/// deleted file; git's C-style quoting (`"a/x y"`), which both git and libgit2 read, removes the
/// ambiguity.
fn quote_spaced_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let quoted = if let Some(rest) = body.strip_prefix("diff --git a/") {
            let half = rest.len().saturating_sub(3) / 2;
            // Byte halves of someone's path: `get`, as a half may fall inside a character.
            let (old, new) = (
                rest.get(..half).unwrap_or(""),
                rest.get(half + 3..).unwrap_or(""),
            );
            (old.contains(' ') && rest.get(half..half + 3) == Some(" b/") && old == new)
                .then(|| format!("diff --git \"a/{old}\" \"b/{old}\""))
        } else if let Some(path) = body
            .strip_prefix("--- a/")
            .or_else(|| body.strip_prefix("+++ b/"))
        {
            path.contains(' ')
                .then(|| format!("{}\"{}/{path}\"", &body[..4], &body[4..5]))
        } else {
            None
        };
        match quoted {
            Some(q) if !body.contains('"') => {
                out.push_str(&q);
                out.push_str(&line[body.len()..]);
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// Refuses what libgit2 would silently change: a path without its `a/` or `b/` prefix (an
/// absolute `/etc/x` loses its first component and becomes `etc/x`), and any file mode but a
/// plain file's 100644 (an executable or a link would be written as a plain file, its mode or
/// link lost). Names the patch and line. Only header lines are read (up to each first `@@`),
/// so a removed line that starts `-- ` is not taken for a header.
fn check_headers(patch: &str, name: &str) -> Result<()> {
    let mut in_header = false;
    for (index, line) in patch.lines().enumerate() {
        if line.starts_with("diff --git ") {
            in_header = true;
        } else if line.starts_with("@@") || line.starts_with("GIT binary patch") {
            in_header = false;
        }
        let Some(why) = in_header.then(|| header_problem(line)).flatten() else {
            continue;
        };
        return Err(Error::new(format!("`{name}`:{}: {why}", index + 1)).with_note(
            "forkbook carries plain files with repository-relative paths; fix the patch, or regenerate it with `forkbook fix add`",
        ));
    }
    Ok(())
}

/// What is wrong with one header line of a patch: a path without its side's prefix, or a mode
/// but a plain file's.
fn header_problem(line: &str) -> Option<String> {
    let prefixed = |path: &str, side: &str| {
        path == "/dev/null"
            || path.starts_with(&format!("{side}/"))
            || path.starts_with(&format!("\"{side}/"))
    };
    let shown = line.escape_debug();
    if let Some(rest) = line.strip_prefix("diff --git ") {
        let named = prefixed(rest, "a") && (rest.contains(" b/") || rest.contains(" \"b/"));
        return (!named).then(|| {
            format!("`{shown}` does not name `a/...` and `b/...` paths (an absolute path?)")
        });
    }
    let (side, path) = match (line.strip_prefix("--- "), line.strip_prefix("+++ ")) {
        (Some(path), _) => ("a", path),
        (_, Some(path)) => ("b", path),
        _ => ("", ""),
    };
    if !side.is_empty() && !prefixed(path.trim_end(), side) {
        return Some(format!(
            "`{shown}` names a path without its `{side}/` prefix (an absolute path?)"
        ));
    }
    let mode = [
        "old mode ",
        "new mode ",
        "new file mode ",
        "deleted file mode ",
    ]
    .iter()
    .find_map(|key| line.strip_prefix(key))
    .or_else(|| {
        line.strip_prefix("index ")
            .and_then(|rest| rest.split_whitespace().nth(1))
    });
    let mode = mode.map(str::trim).filter(|mode| *mode != "100644")?;
    let what = match mode {
        "100755" => "an executable file",
        "120000" => "a symbolic link",
        "160000" => "a submodule",
        _ => "an unusual file",
    };
    Some(format!(
        "mode {mode} ({what}) would not be carried: forkbook writes plain files (mode 100644)"
    ))
}

/// Whether a patch holds no change at all: its header and message alone. A move leaves a fix's
/// patch so when the new base already holds the fix (it is droppable); it applies as nothing
/// until its entry is marked merged and the patch removed, which `check` asks for.
pub fn is_empty(patch: &str) -> bool {
    forkbook_records::series::is_empty_patch(patch)
}

/// The paths a patch touches (old and new names), each checked: patches are untrusted text.
pub fn touched(patch: &str, name: &str) -> Result<Vec<String>> {
    check_headers(patch, name)?;
    if is_empty(patch) {
        return Ok(Vec::new());
    }
    let diff = parse(patch, name)?;
    let mut paths = Vec::new();
    // Seen paths in a set: a patch touching 20,000 files compared each with every earlier one.
    let mut seen = std::collections::HashSet::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            let Some(path) = file.path() else { continue };
            let path = path
                .to_str()
                .ok_or_else(|| Error::new(format!("`{name}` names a non-UTF-8 path")))?;
            if path == "/dev/null" || seen.contains(path) {
                continue;
            }
            check_relative(path).map_err(|e| e.context(format!("in `{name}`")))?;
            seen.insert(path.to_string());
            paths.push(path.to_string());
        }
    }
    Ok(paths)
}

/// Parses a patch for libgit2, refusing what libgit2 must never see.
pub fn parse<'a>(patch: &str, name: &str) -> Result<Diff<'a>> {
    // A git patch is text (binary changes are base85), so a NUL byte has no business in one;
    // and libgit2 1.9's apply reads past the end of a hunk line that holds one (found by the
    // `patch` fuzz target under AddressSanitizer), so such a patch never reaches it.
    if let Some(at) = patch.find('\0') {
        let line = patch[..at].matches('\n').count() + 1;
        return Err(
            Error::new(format!("`{name}`:{line}: the patch holds a NUL byte")).with_note(
                "a git patch is text; regenerate it with `forkbook sync` or `forkbook fix add`",
            ),
        );
    }
    Diff::from_buffer(patch.as_bytes())
        .with_context(|| format!("`{name}` is not a patch git can read"))
}

/// Applies `patch` to the pre-images in `pre` and returns the post-images of every touched path
/// (a path missing from the result was deleted).
pub fn apply(patch: &str, name: &str, pre: &FileMap) -> Result<FileMap> {
    apply_in(&scratch()?, patch, name, pre)
}

/// [`apply`] in a given in-memory repository ([`scratch`]): a series applied patch by patch
/// opens one, not one per patch (each reads the user's git configuration).
pub fn apply_in(repo: &Repository, patch: &str, name: &str, pre: &FileMap) -> Result<FileMap> {
    let paths = touched(patch, name)?;
    if is_empty(patch) {
        return Ok(FileMap::new());
    }
    let diff = parse(patch, name)?;
    let tree = repo.find_tree(write_tree(repo, pre)?)?;
    let index = repo.apply_to_tree(&tree, &diff, None).map_err(|e| {
        Error::new(format!("`{name}` does not apply: {}", e.message()))
            .with_note("the files it changes are not what the patch expects; regenerate it with `forkbook sync` or resolve by hand")
    })?;
    let mut post = FileMap::new();
    for path in paths {
        if let Some(entry) = index.get_path(Path::new(&path), 0) {
            post.insert(path, repo.find_blob(entry.id)?.content().to_vec().into());
        }
    }
    Ok(post)
}

#[cfg(test)]
mod tests {
    use super::*;
    /// A `diff --git` line whose halves fall inside a character (a name from someone's tree) is
    /// kept as it is. Fails before: slicing at the byte half panicked.
    #[test]
    fn a_diff_line_split_inside_a_character_is_kept_not_a_panic() {
        let line = "diff --git a/a\u{e4} b/x\n";
        assert_eq!(super::quote_spaced_paths(line), line);
        let spaced = "diff --git a/\u{e4} z b/\u{e4} z\n";
        assert_eq!(
            super::quote_spaced_paths(spaced),
            "diff --git \"a/\u{e4} z\" \"b/\u{e4} z\"\n"
        );
    }

    fn map(items: &[(&str, &str)]) -> FileMap {
        items
            .iter()
            .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec().into()))
            .collect()
    }

    #[test]
    fn render_then_apply_round_trips_modify_add_delete() {
        let pre = map(&[("a/x.cpp", "one\ntwo\nthree\n"), ("a/gone.h", "bye\n")]);
        let post = map(&[("a/x.cpp", "one\nTWO\nthree\n"), ("a/new.h", "hello\n")]);
        let text = render(&pre, &post).unwrap();
        assert!(text.contains("new file mode"), "{text}");
        assert!(text.contains("deleted file mode"), "{text}");
        assert_eq!(
            touched(&text, "t.patch").unwrap(),
            ["a/gone.h", "a/new.h", "a/x.cpp"]
        );
        assert_eq!(apply(&text, "t.patch", &pre).unwrap(), post);
    }

    /// Fails on main before issue 12: the absolute path was rewritten to `etc/passwd` and the
    /// modes dropped, silently.
    #[test]
    fn absolute_paths_links_and_modes_are_refused_naming_patch_and_line() {
        let cases = [
            ("diff --git /etc/passwd /etc/passwd\n--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", 1, "absolute"),
            ("diff --git a/x b/x\n--- /x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", 2, "absolute"),
            ("diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n", 3, "executable"),
            ("diff --git a/l b/l\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+target\n", 2, "symbolic link"),
            ("diff --git a/x b/x\nindex 1111111..2222222 100755\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", 2, "executable"),
        ];
        for (text, line, why) in cases {
            let err = touched(text, "0001-x.patch").unwrap_err();
            assert!(
                err.message().contains(&format!("`0001-x.patch`:{line}:")),
                "{text}: {err}"
            );
            assert!(err.message().contains(why), "{text}: {err}");
        }
        // A removed line that starts with `-- ` inside a hunk is content, not a header.
        let fine = "diff --git a/x b/x\nindex 1111111..2222222 100644\n--- a/x\n+++ b/x\n@@ -1,2 +1,1 @@\n--- not a header\n a\n";
        check_headers(fine, "0001-x.patch").unwrap();
    }

    #[test]
    fn mismatched_context_is_an_error_not_fuzz() {
        let text = render(&map(&[("f", "a\nb\nc\n")]), &map(&[("f", "a\nB\nc\n")])).unwrap();
        let err = apply(&text, "0001-fix.patch", &map(&[("f", "a\nb\nchanged\n")])).unwrap_err();
        assert!(
            err.message().contains("`0001-fix.patch` does not apply"),
            "{err}"
        );
    }

    #[test]
    fn a_patch_with_a_nul_byte_is_refused_before_libgit2_sees_it() {
        // Found by the `patch` fuzz target: applying this made libgit2 read past a heap buffer.
        let text = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\u{1f}\0\0\0\0\0\0\0O\n c\n";
        let err = apply(text, "0001-x.patch", &map(&[("f", "a\nb\nc\n")])).unwrap_err();
        assert!(
            err.message()
                .contains("`0001-x.patch`:7: the patch holds a NUL byte"),
            "{err}"
        );
        assert!(touched(text, "0001-x.patch").is_err());
    }

    #[test]
    fn hostile_patch_paths_are_refused() {
        let text = "diff --git a/../../etc/passwd b/../../etc/passwd\n--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n";
        let err = touched(text, "evil.patch").unwrap_err();
        assert!(err.message().contains(".."), "{err}");
    }
}

/// Pre- and post-images of `count` files, each post-image one line changed: the patch between
/// them touches every file. For tests and benchmarks of large patches.
pub fn wide_change(count: usize) -> (FileMap, FileMap) {
    let mut pre = FileMap::new();
    let mut post = FileMap::new();
    for i in 0..count {
        let path = format!("mlx/backend/rocm/d{:03}/file_{i:05}.cpp", i % 200);
        let body = |line: &str| format!("// file {i}\n#include \"x.h\"\n{line}\nint f{i}();\n");
        pre.insert(path.clone(), body("int a = 1;").into_bytes().into());
        post.insert(path, body("int a = 2;").into_bytes().into());
    }
    (pre, post)
}

#[cfg(test)]
mod wide_tests {
    use super::*;

    /// Not timed: a patch touching 20,000 files renders, lists its paths and applies exactly.
    /// Its paths were kept unique by comparing each with every earlier one (quadratic); see
    /// docs/reliability.md for the figures.
    #[test]
    fn a_patch_touching_twenty_thousand_files_round_trips() {
        let (pre, post) = wide_change(20_000);
        let text = render(&pre, &post).unwrap();
        let paths = touched(&text, "0001-wide.patch").unwrap();
        assert_eq!(paths.len(), 20_000);
        assert!(paths.iter().zip(pre.keys()).all(|(a, b)| a == b));
        assert_eq!(apply(&text, "0001-wide.patch", &pre).unwrap(), post);
    }
}

#[cfg(test)]
mod space_tests {
    use super::*;

    #[test]
    fn a_path_with_spaces_round_trips() {
        let pre: FileMap = [("dir/a b.cpp".to_string(), b"x\n".to_vec().into())].into();
        let post: FileMap = [("dir/a b.cpp".to_string(), b"y\n".to_vec().into())].into();
        let text = render(&pre, &post).unwrap();
        assert_eq!(apply(&text, "t.patch", &pre).unwrap(), post, "{text}");
        let added: FileMap = [("dir/new file.h".to_string(), b"z\n".to_vec().into())].into();
        let text = render(&FileMap::new(), &added).unwrap();
        assert_eq!(
            apply(&text, "t.patch", &FileMap::new()).unwrap(),
            added,
            "{text}"
        );
    }
}
