//! What a file name in the register means: a full path, a path relative to the backend folder
//! (or to a tail of it: `rocm/eval.cpp` and `backend/rocm/eval.cpp` are the backend folder
//! `mlx/backend/rocm/` written shorter), or a bare file name, the last only where exactly one
//! file of the overlay carries it.
//!
//! Any other suffix matching is deliberately not allowed: `cuda/eval.cpp` must not quietly match
//! `mlx/backend/cuda/eval.cpp` and something else tomorrow.

use crate::register::{Entry, Register};
use std::collections::BTreeSet;

/// What a name resolves to among the known files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved<'a> {
    File(&'a str),
    /// A bare name that several files carry.
    Ambiguous(Vec<&'a str>),
    NotFound,
}

/// Resolves `name` among `files` (every path of the base tree and the overlay), in one pass
/// over them. To resolve many names among the same files, index them once with [`Names`].
pub fn resolve<'a>(name: &str, files: &'a [String], backend_prefix: &str) -> Resolved<'a> {
    let name = name.trim().trim_start_matches("./");
    if let Some(file) = files.iter().find(|f| f.as_str() == name) {
        return Resolved::File(file);
    }
    let prefix = backend_prefix.trim_end_matches('/');
    for under_backend in under_backend(prefix, name) {
        if let Some(file) = files.iter().find(|f| **f == under_backend) {
            return Resolved::File(file);
        }
    }
    if name.contains('/') {
        return Resolved::NotFound;
    }
    let matches: Vec<&str> = files
        .iter()
        .filter(|f| base_name(f) == name)
        .map(String::as_str)
        .collect();
    match matches.len() {
        0 => Resolved::NotFound,
        1 => Resolved::File(matches[0]),
        _ => Resolved::Ambiguous(matches),
    }
}

/// The known files indexed by path and by bare name, so each name resolves in one lookup: a
/// register naming 20,000 files compared each name with every file (and checks did that for
/// every differing file).
pub struct Names<'a> {
    paths: std::collections::HashSet<&'a str>,
    by_base_name: std::collections::HashMap<&'a str, Vec<&'a str>>,
    prefix: String,
}

impl<'a> Names<'a> {
    pub fn new(files: &'a [String], backend_prefix: &str) -> Names<'a> {
        let mut by_base_name: std::collections::HashMap<&str, Vec<&str>> = Default::default();
        for file in files {
            by_base_name.entry(base_name(file)).or_default().push(file);
        }
        Names {
            paths: files.iter().map(String::as_str).collect(),
            by_base_name,
            prefix: backend_prefix.trim_end_matches('/').to_string(),
        }
    }

    /// What `name` means: the full path, else the path under the backend folder, else the one
    /// file with that bare name.
    pub fn resolve(&self, name: &str) -> Resolved<'a> {
        let name = name.trim().trim_start_matches("./");
        if let Some(file) = self.paths.get(name) {
            return Resolved::File(file);
        }
        for under_backend in under_backend(&self.prefix, name) {
            if let Some(file) = self.paths.get(under_backend.as_str()) {
                return Resolved::File(file);
            }
        }
        if name.contains('/') {
            return Resolved::NotFound;
        }
        match self.by_base_name.get(name).map(Vec::as_slice) {
            None | Some([]) => Resolved::NotFound,
            Some([file]) => Resolved::File(file),
            Some(files) => Resolved::Ambiguous(files.to_vec()),
        }
    }
}

/// Where `name` lies under the backend folder `prefix` (no trailing `/`): `prefix/name`, and
/// where `name` opens with a tail of the prefix's components (`rocm/…`, `backend/rocm/…` for
/// `mlx/backend/rocm`), the prefix's head put before it.
fn under_backend(prefix: &str, name: &str) -> Vec<String> {
    if prefix.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!("{prefix}/{name}")];
    let parts: Vec<&str> = prefix.split('/').collect();
    for start in 1..parts.len() {
        let tail = parts[start..].join("/");
        if let Some(rest) = name.strip_prefix(&tail).and_then(|r| r.strip_prefix('/')) {
            out.push(format!("{prefix}/{rest}"));
        }
    }
    out
}

/// The files the entries name, read as `names` reads each name: the distinct paths the names
/// resolve to (two spellings of one file are one file), and the names that resolve to no one
/// file (none, or several), each once. Every count of "files named by the register" is this
/// (adopt's count, `differing-file-named`); one entry's files are [`Entry::named_files`].
pub fn named_files<'a, 'e>(
    entries: impl IntoIterator<Item = &'e Entry>,
    names: &Names<'a>,
) -> (BTreeSet<&'a str>, BTreeSet<&'e str>) {
    let (mut files, mut unresolved) = (BTreeSet::new(), BTreeSet::new());
    for named in entries.into_iter().flat_map(|e| &e.files) {
        match names.resolve(&named.name) {
            Resolved::File(path) => files.insert(path),
            _ => unresolved.insert(named.name.as_str()),
        };
    }
    (files, unresolved)
}

impl Entry {
    /// The files this entry names, each once, as repository paths: the one answer to "which
    /// spellings in an entry are files" (`fixes list`, adopt's count of files named).
    ///
    /// With the overlay's files known (`overlay`), a name counts when it resolves to one of
    /// them ([`Names::resolve`]: the path, the path under the backend folder or a tail of it,
    /// the one file with that bare name), as that path; a prose mention of another tree's file
    /// (`mlx/backend/cuda/eval.cpp`) or an ambiguous bare name is none. Without them, a name
    /// counts when it looks like a path (`register::looks_like_path`), written under the
    /// backend folder where it opens with a tail of it, and a name that ends another name of
    /// the entry at a `/` (`foo.hip` beside `mlx/backend/rocm/foo.hip`) is that file again.
    pub fn named_files(&self, overlay: Option<&Names>, backend_prefix: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let written = self
            .files
            .iter()
            .map(|f| f.name.trim().trim_start_matches("./"));
        match overlay {
            Some(names) => {
                for name in written {
                    if let Resolved::File(path) = names.resolve(name) {
                        if !out.iter().any(|p| p == path) {
                            out.push(path.to_string());
                        }
                    }
                }
            }
            None => {
                let prefix = backend_prefix.trim_end_matches('/');
                let paths: Vec<String> = written
                    .filter(|name| crate::register::looks_like_path(name))
                    .map(|name| {
                        let tails = under_backend(prefix, name).into_iter().skip(1);
                        tails.last().unwrap_or_else(|| name.to_string())
                    })
                    .collect();
                let longer_ends_with = |path: &str| {
                    paths.iter().any(|other| {
                        other.len() > path.len() && other.ends_with(&format!("/{path}"))
                    })
                };
                for path in &paths {
                    if !longer_ends_with(path) && !out.contains(path) {
                        out.push(path.clone());
                    }
                }
            }
        }
        out
    }
}

/// The last component of a path.
pub fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The numbers of the register's entries whose `Files:` name `path`, each name read as `names`
/// reads it (a path, a file name, a folder).
pub fn entries_naming(register: &Register, names: &Names, path: &str) -> Vec<u32> {
    register
        .entries
        .iter()
        .filter(|e| {
            e.files
                .iter()
                .any(|n| names.resolve(&n.name) == Resolved::File(path))
        })
        .map(|e| e.number)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<String> {
        [
            "mlx/device.cpp",
            "mlx/backend/rocm/eval.cpp",
            "mlx/backend/cuda/eval.cpp",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn full_backend_relative_and_unique_bare_names_resolve() {
        let files = files();
        let prefix = "mlx/backend/rocm/";
        assert_eq!(
            resolve("mlx/device.cpp", &files, prefix),
            Resolved::File("mlx/device.cpp")
        );
        assert_eq!(
            resolve("eval.cpp", &files, prefix),
            Resolved::File("mlx/backend/rocm/eval.cpp")
        );
        assert_eq!(
            resolve("device.cpp", &files, prefix),
            Resolved::File("mlx/device.cpp")
        );
    }

    #[test]
    fn the_index_resolves_every_name_as_the_scan_does() {
        let files = files();
        for prefix in ["mlx/backend/rocm/", ""] {
            let names = Names::new(&files, prefix);
            for name in [
                "mlx/device.cpp",
                " ./mlx/device.cpp ",
                "eval.cpp",
                "device.cpp",
                "rocm/eval.cpp",
                "missing.cpp",
                "backend/rocm/eval.cpp",
                "cuda/eval.cpp",
            ] {
                assert_eq!(names.resolve(name), resolve(name, &files, prefix), "{name}");
            }
        }
    }

    /// Issue 39.4: fails before, when an entry's files were its spellings: three spellings of
    /// one file were three files, and a prose path of another tree was one of them.
    #[test]
    fn an_entry_names_each_file_once_and_only_files() {
        let text = "## 1. Fix\n\n`mlx/backend/rocm/eval.cpp`, `backend/rocm/eval.cpp`, \
                    `eval.cpp` and `mlx/device.cpp`; compare `mlx/backend/cuda/eval.cpp`.\n";
        let entry = crate::register::parse("f", text).entries.remove(0);
        assert_eq!(entry.files.len(), 5);
        let files = files();
        let names = Names::new(&files, "mlx/backend/rocm/");
        assert_eq!(
            entry.named_files(Some(&names), "mlx/backend/rocm/"),
            [
                "mlx/backend/rocm/eval.cpp",
                "mlx/device.cpp",
                "mlx/backend/cuda/eval.cpp"
            ]
        );
        let only_rocm: Vec<String> = files
            .iter()
            .filter(|f| !f.contains("cuda"))
            .cloned()
            .collect();
        let names = Names::new(&only_rocm, "mlx/backend/rocm/");
        assert_eq!(
            entry.named_files(Some(&names), "mlx/backend/rocm/"),
            ["mlx/backend/rocm/eval.cpp", "mlx/device.cpp"]
        );
        assert_eq!(
            entry.named_files(None, "mlx/backend/rocm/"),
            [
                "mlx/backend/rocm/eval.cpp",
                "mlx/device.cpp",
                "mlx/backend/cuda/eval.cpp"
            ]
        );
    }

    #[test]
    fn ambiguous_bare_names_and_suffixes_do_not_resolve() {
        let files = files();
        assert_eq!(
            resolve("eval.cpp", &files, ""),
            Resolved::Ambiguous(vec![
                "mlx/backend/rocm/eval.cpp",
                "mlx/backend/cuda/eval.cpp"
            ])
        );
        assert_eq!(resolve("rocm/eval.cpp", &files, ""), Resolved::NotFound);
    }
}
