//! `overlay.lock`: the SHA-256 of every materialized overlay file, `<sha256>  <path>` a line,
//! sorted by path.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::problem::{Problem, RecordError};

/// The SHA-256 of a file's bytes, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::hex::encode(&Sha256::digest(bytes))
}

/// The lock as read (or as computed from an overlay).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Lock {
    /// path -> sha256 hex
    pub files: BTreeMap<String, String>,
    /// The 1-based line that records each path, for a lock that was read.
    #[serde(skip)]
    pub lines: BTreeMap<String, usize>,
    /// Lines that are not `<sha256>  <path>`, paths that climb out of the overlay, paths listed
    /// twice.
    pub problems: Vec<Problem>,
}

/// Two locks are equal when they lock the same files to the same hashes.
impl PartialEq for Lock {
    fn eq(&self, other: &Lock) -> bool {
        self.files == other.files
    }
}

impl Eq for Lock {}

/// What a lock and an overlay disagree on about one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MismatchKind {
    /// The file's hash differs from the locked one.
    Changed,
    /// The overlay has a file the lock does not list.
    NotLocked,
    /// The lock lists a file the overlay does not have.
    Missing,
}

/// One file where the overlay and the lock disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockMismatch {
    pub path: String,
    pub kind: MismatchKind,
    /// The line of the lock that records the path, where it does.
    pub line: Option<usize>,
}

impl Lock {
    /// The lock of these files.
    pub fn of<'a>(files: impl IntoIterator<Item = (&'a String, &'a [u8])>) -> Lock {
        Lock::of_digests(files.into_iter().map(|(p, b)| (p.clone(), sha256_hex(b))))
    }

    /// The lock of files whose SHA-256 (hex) the caller already made: path and digest.
    pub fn of_digests(files: impl IntoIterator<Item = (String, String)>) -> Lock {
        Lock {
            files: files.into_iter().collect(),
            ..Lock::default()
        }
    }

    /// Reads every line; each one that is not a well-formed `<sha256>  <path>` is a problem.
    pub fn read(text: &str) -> Lock {
        let mut lock = Lock::default();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let mut problem = |message: String| {
                lock.problems.push(Problem {
                    line: number,
                    message,
                })
            };
            let Some((hash, path)) = line.split_once("  ") else {
                problem("expected `<sha256>  <path>`".into());
                continue;
            };
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                problem(format!("`{}` is not a SHA-256", hash.escape_debug()));
                continue;
            }
            if let Some(message) = crate::path::refusal_message(path) {
                problem(message);
                continue;
            }
            if lock.files.contains_key(path) {
                problem(format!("`{path}` is listed twice"));
                continue;
            }
            lock.files
                .insert(path.to_string(), hash.to_ascii_lowercase());
            lock.lines.insert(path.to_string(), number);
        }
        lock
    }

    /// Reads the lock for a command that cannot go on with a malformed one.
    pub fn parse(text: &str, file: &str) -> Result<Lock, RecordError> {
        let lock = Lock::read(text);
        lock.check(file)?;
        Ok(lock)
    }

    /// The lock's first problem, if it has one, as an error naming `file` and the line.
    pub fn check(&self, file: &str) -> Result<(), RecordError> {
        match self.problems.first() {
            Some(problem) => Err(RecordError::at(file, Some(problem.line), &problem.message)
                .with_note("regenerate the lock with `forkbook sync` at the recorded commits")),
            None => Ok(()),
        }
    }

    /// The lock as `sync` writes it.
    pub fn render(&self) -> String {
        let mut out = String::from("# SHA-256 of every materialized overlay file; written by forkbook, checked by `forkbook sync --check`\n");
        for (path, hash) in &self.files {
            out.push_str(&format!("{hash}  {path}\n"));
        }
        out
    }

    /// Paths whose hash differs, or that only one side has: (path, locked, actual).
    pub fn mismatches(&self, actual: &Lock) -> Vec<(String, Option<String>, Option<String>)> {
        let mut out = Vec::new();
        let paths: BTreeSet<&String> = self.files.keys().chain(actual.files.keys()).collect();
        for path in paths {
            let (a, b) = (self.files.get(path), actual.files.get(path));
            if a != b {
                out.push((path.clone(), a.cloned(), b.cloned()));
            }
        }
        out
    }

    /// The files where `actual` disagrees with this lock, each with its line here.
    pub fn disagreements(&self, actual: &Lock) -> Vec<LockMismatch> {
        self.mismatches(actual)
            .into_iter()
            .map(|(path, locked, actual)| LockMismatch {
                kind: match (locked, actual) {
                    (Some(_), None) => MismatchKind::Missing,
                    (None, _) => MismatchKind::NotLocked,
                    _ => MismatchKind::Changed,
                },
                line: self.lines.get(&path).copied(),
                path,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_round_trips_and_finds_mismatches() {
        let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        files.insert("a.cpp".into(), b"int a;\n".to_vec());
        files.insert("b/c.h".into(), b"#pragma once\n".to_vec());
        let of = |files: &BTreeMap<String, Vec<u8>>| {
            Lock::of(files.iter().map(|(p, b)| (p, b.as_slice())))
        };
        let lock = of(&files);
        let parsed = Lock::parse(&lock.render(), "overlay.lock").unwrap();
        assert_eq!(parsed, lock);
        assert_eq!(parsed.lines["b/c.h"], 3);
        files.insert("a.cpp".into(), b"int b;\n".to_vec());
        files.remove("b/c.h");
        let found = parsed.disagreements(&of(&files));
        assert_eq!(
            found
                .iter()
                .map(|m| (m.path.as_str(), m.kind, m.line))
                .collect::<Vec<_>>(),
            [
                ("a.cpp", MismatchKind::Changed, Some(2)),
                ("b/c.h", MismatchKind::Missing, Some(3))
            ]
        );
    }

    #[test]
    fn every_bad_line_is_a_problem_with_its_line() {
        let sha = "0".repeat(64);
        let text = format!("# header\n{sha}  ../../etc/passwd\nnot a line\n{sha}  a\n{sha}  a\n");
        let lock = Lock::read(&text);
        let lines: Vec<usize> = lock.problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [2, 3, 5]);
        assert!(
            lock.problems[0].message.contains("`..`"),
            "{:?}",
            lock.problems
        );
        let err = Lock::parse(&text, "patches-rocm/overlay.lock").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("patches-rocm/overlay.lock:2: refusing path"),
            "{err}"
        );
    }
}
