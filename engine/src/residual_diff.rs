//! The residual as data: each core file's hunks against B (the pin plus the fork's change), and
//! the residual record made from them. File maps in, text out: no cache, no project, no state,
//! so a move hands its pieces down here and the commands above read the result.

use super::digests::FileDigests;
use super::{text_of, FileMap};
use forkbook_records::residual_record::{Flavor, RecordedCommits, ResidualRecord};
pub use forkbook_records::residual_record::{Hunk, HunkNote};
use serde::Serialize;
use similar::udiff::UnifiedHunkHeader;
use similar::{ChangeTag, TextDiff};

#[derive(Debug, Clone, Serialize)]
pub struct Residual {
    pub files: usize,
    pub hunks: Vec<Hunk>,
}

impl Residual {
    /// The record `residual --write` keeps: one unified diff over all core files.
    pub fn render_diff(&self) -> String {
        let mut out = String::new();
        let mut last = "";
        for hunk in &self.hunks {
            if hunk.file != last {
                out.push_str(&format!("--- B/{0}\n+++ overlay/{0}\n", hunk.file));
                last = &hunk.file;
            }
            out.push_str(&hunk.text);
        }
        out
    }

    pub fn touched_files(&self) -> usize {
        let mut files: Vec<&str> = self.hunks.iter().map(|h| h.file.as_str()).collect();
        files.dedup();
        files.len()
    }
}

/// Every core file of `overlay` compared with `base` (B), line by line. `changed_by_fix[i]` are
/// the paths fix `i + 1` changes (patch layout; empty in the files layout): the fixes a hunk
/// names.
pub fn residual_of(
    core_files: &[String],
    base: &FileMap,
    overlay: &FileMap,
    changed_by_fix: &[Vec<&str>],
) -> Residual {
    let mut hunks = Vec::new();
    for path in core_files {
        // Most core files equal B: compare the bytes before making text of them.
        if base.get(path) == overlay.get(path) {
            continue;
        }
        let before = text_of(base, path);
        let after = text_of(overlay, path);
        if before == after {
            continue;
        }
        let fixes: Vec<usize> = changed_by_fix
            .iter()
            .enumerate()
            .filter(|(_, paths)| paths.contains(&path.as_str()))
            .map(|(i, _)| i + 1)
            .collect();
        hunks.extend(hunks_of(path, &before, &after, &fixes));
    }
    Residual {
        files: core_files.len(),
        hunks,
    }
}

/// The hunks (three lines of context) of one core file's residual, each naming `fixes`.
fn hunks_of(path: &str, before: &str, after: &str, fixes: &[usize]) -> Vec<Hunk> {
    let mut hunks = Vec::new();
    let diff = TextDiff::from_lines(before, after);
    for group in diff.grouped_ops(3) {
        let (mut removed, mut added) = (0, 0);
        let mut text = String::new();
        let first = group
            .first()
            .map(|op| op.new_range().start + 1)
            .unwrap_or(1);
        // diff(1)'s header rules (an empty range starts at the line before it, a one-line
        // range has no length), as `similar` writes them.
        text.push_str(&format!("{}\n", UnifiedHunkHeader::new(&group)));
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Delete => {
                        removed += 1;
                        '-'
                    }
                    ChangeTag::Insert => {
                        added += 1;
                        '+'
                    }
                    ChangeTag::Equal => ' ',
                };
                text.push(sign);
                text.push_str(change.value());
                if change.missing_newline() {
                    text.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
        hunks.push(Hunk {
            file: path.to_string(),
            line: first,
            removed,
            added,
            fixes: fixes.to_vec(),
            text,
            note: None,
        });
    }
    hunks
}

/// The record rewritten for `residual` at `commits`, and the notes flagged for review
/// (see `forkbook_records::residual_record::render`). `core` holds each core file of the overlay
/// with its bytes, and the digests the run already made of them.
pub fn render_record(
    old: Option<&ResidualRecord>,
    flavor: Flavor,
    commits: &RecordedCommits,
    (core, digests): (&FileMap, &FileDigests),
    residual: &Residual,
) -> (String, Vec<String>) {
    let mut diffs: Vec<(String, String)> = Vec::new();
    for hunk in &residual.hunks {
        match diffs.last_mut() {
            Some((path, text)) if *path == hunk.file => text.push_str(&hunk.text),
            _ => diffs.push((hunk.file.clone(), hunk.text.clone())),
        }
    }
    let hashes: Vec<(String, String)> = core
        .iter()
        .map(|(path, bytes)| (path.clone(), digests.sha256_hex(path, bytes)))
        .collect();
    forkbook_records::residual_record::render(old, flavor, commits, &hashes, &diffs)
}

/// The core files of `overlay`, sorted by path.
pub fn core_of(core_files: &[String], overlay: &FileMap) -> FileMap {
    core_files
        .iter()
        .filter_map(|p| Some((p.clone(), overlay.get(p)?.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hunk headers `diff -u` writes for the same two texts, context lines and all.
    fn diff_u_headers(before: &str, after: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, before).unwrap();
        std::fs::write(&b, after).unwrap();
        let out = std::process::Command::new("diff")
            .arg("-u")
            .arg(&a)
            .arg(&b)
            .output()
            .expect("diff(1) runs");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("@@ "))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn hunk_headers_are_the_ones_diff_u_writes_also_for_empty_ranges() {
        // Fails on the hand-built header: an empty range was `-1,0` where diff(1) writes `-0,0`,
        // and a one-line range `-3,1` where it writes `-3`.
        let ten: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        let cases = [
            (String::new(), "new\n".to_string()),
            ("old\n".to_string(), String::new()),
            ("a\n".to_string(), "b\n".to_string()),
            (ten.clone(), ten.replace("line 5\n", "")),
            (ten.clone(), ten.replace("line 1\n", "line 1\nadded\n")),
            (ten.clone(), format!("{ten}tail\n")),
        ];
        for (before, after) in cases {
            let core = vec!["f.cpp".to_string()];
            let file = |text: &str| -> FileMap {
                [("f.cpp".to_string(), text.as_bytes().to_vec().into())].into()
            };
            let residual = residual_of(&core, &file(&before), &file(&after), &[]);
            let ours: Vec<String> = residual
                .hunks
                .iter()
                .map(|h| h.text.lines().next().unwrap().to_string())
                .collect();
            assert_eq!(
                ours,
                diff_u_headers(&before, &after),
                "{before:?} -> {after:?}"
            );
        }
    }
}
