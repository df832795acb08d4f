//! The residual: how each core file differs from the pin plus the fork's change (B).
//!
//! Line counts cannot see an overlay that silently dropped half an upstream change; a line-by-line
//! diff against B can. Every hunk here must be explained by a local fix, and each hunk names the
//! fixes that touch its file (in the patch layout, the fixes whose patches change that file).
//!
//! The command's entry point, which may also write the record, is
//! [`crate::residual_record::run`].

use super::base;
use super::base::Commits;
use super::cache::Cache;
use super::config::Layout;
use super::doc::{code, fixes, text, words, Doc};
use super::error::Result;
use super::overlay::{self, FixStep, OverlayState, Records};
use super::patch;
use super::project::Project;
use super::records::sha256_hex;
use super::FileMap;
use crate::markdown::PageLinks;
use crate::report_value::plural;
use forkbook_records::residual_record::{Flavor, RecordedCommits, ResidualRecord};
use serde::Serialize;
use similar::udiff::UnifiedHunkHeader;
use similar::{ChangeTag, TextDiff};

pub use super::records::RESIDUAL_FILE;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    pub file: String,
    /// First line of the hunk in the overlay's file (1-based).
    pub line: usize,
    pub removed: usize,
    pub added: usize,
    /// Fix numbers whose patches change this file (patch layout).
    pub fixes: Vec<usize>,
    /// The hunk in unified form.
    pub text: String,
    /// The residual record's note for the hunk's file, which is what explains it (files
    /// layout: the register item the note names is then the hunk's fix).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<HunkNote>,
}

/// A residual record's note as it explains a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HunkNote {
    /// The register item it names (`LOCAL_FIXES.md item N`), when it names one.
    pub item: Option<u32>,
    pub reason: String,
}

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

    /// The residual: each hunk under its file and line with what explains it (the fixes that
    /// change the file, linked to their register entries on a page, and the record's note), and
    /// on a page its diff. A hunk nothing explains says so.
    pub fn doc(&self, links: &PageLinks) -> Doc {
        let mut doc = Doc::default();
        let files = plural(self.files, "core file", "core files");
        if self.hunks.is_empty() {
            doc.say(format!(
                "residual: {files} equal the pin plus the fork's change"
            ));
            return doc;
        }
        let hunks = plural(self.hunks.len(), "hunk", "hunks");
        doc.say(format!(
            "residual: {hunks} in {} of {files}",
            self.touched_files()
        ));
        let mut last_noted = "";
        for h in &self.hunks {
            let mut line = vec![code(format!("{}:{}", h.file, h.line))];
            line.push(words(format!("  -{} +{}  (", h.removed, h.added)));
            if !h.fixes.is_empty() {
                line.extend([words("explained by "), fixes(links, &h.fixes)]);
            }
            if let Some(note) = &h.note {
                let item = note
                    .item
                    .map_or("noted, no item".to_string(), |n| format!("item {n}"));
                let then = if h.fixes.is_empty() { "" } else { "; " };
                line.push(words(format!("{then}{item}")));
                // The reason once per file: every hunk of a file shares its note.
                if last_noted != h.file {
                    last_noted = &h.file;
                    line.extend([words(": "), text(&note.reason)]);
                }
            } else if h.fixes.is_empty() {
                line.push(words("no fix"));
            }
            line.push(words(")"));
            doc.list(vec![line]).page_code("diff", &h.text);
        }
        doc
    }

    pub fn touched_files(&self) -> usize {
        let mut files: Vec<&str> = self.hunks.iter().map(|h| h.file.as_str()).collect();
        files.dedup();
        files.len()
    }
}

/// Compares every core file of the overlay with B, line by line.
pub fn compute(state: &OverlayState) -> Residual {
    compute_parts(
        &state.core_files,
        &state.base.files,
        &state.overlay,
        &state.steps,
    )
}

/// [`compute`] straight from the records, reading only what the core files need: the core files
/// at the three commits and the backend files the local fixes touch (not the whole backend).
pub fn compute_from_records(project: &Project, cache: &Cache) -> Result<Residual> {
    Ok(compute_with_records(project, cache)?.residual)
}

/// [`compute_from_records`], with what the residual record needs beside it.
pub struct Computed {
    pub residual: Residual,
    pub commits: super::base::Commits,
    pub records: Records,
    /// Each core file of the overlay with its bytes.
    pub core: FileMap,
}

/// [`compute_from_records`], keeping the commits, the records and the overlay's core files.
pub fn compute_with_records(project: &Project, cache: &Cache) -> Result<Computed> {
    let records = Records::read(project)?;
    let commits = records.commits(project, cache)?;
    let layout = project.config.overlay.layout;
    let core_files = overlay::core_files(project, &records, layout);
    let prefix = project.config.overlay.backend_prefix.as_str();
    let mut touched = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for patch_file in &records.patches {
        for path in patch::touched(&patch_file.text, &patch_file.name)? {
            if path.starts_with(prefix) && seen.insert(path.clone()) {
                touched.push(path);
            }
        }
    }
    let base = base::build_core(cache, commits, &core_files, &touched)?;
    let (overlay, steps) = match layout {
        Layout::Patch => overlay::replay(&base.files, &records)?,
        Layout::Files => (records.tree.clone(), Vec::new()),
    };
    Ok(Computed {
        residual: compute_parts(&core_files, &base.files, &overlay, &steps),
        commits,
        core: core_of(&core_files, &overlay),
        records,
    })
}

/// [`compute`] from its parts, for a move that has no [`OverlayState`] yet.
pub fn compute_parts(
    core_files: &[String],
    base: &FileMap,
    overlay: &FileMap,
    steps: &[FixStep],
) -> Residual {
    let mut hunks = Vec::new();
    for path in core_files {
        // Most core files equal B: compare the bytes before making text of them.
        if base.get(path) == overlay.get(path) {
            continue;
        }
        let before = super::text_of(base, path);
        let after = super::text_of(overlay, path);
        if before == after {
            continue;
        }
        let fixes: Vec<usize> = steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.changed_paths().contains(&path.as_str()))
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
/// with its bytes.
pub fn render_record(
    old: Option<&ResidualRecord>,
    flavor: Flavor,
    commits: Commits,
    core: &FileMap,
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
        .map(|(path, bytes)| (path.clone(), sha256_hex(bytes)))
        .collect();
    let commits = RecordedCommits {
        pin: commits.pin.to_string(),
        fork: commits.fork.to_string(),
        base: commits.base.to_string(),
    };
    forkbook_records::residual_record::render(old, flavor, &commits, &hashes, &diffs)
}

/// The records after a move: the residual record the folder keeps (if any) rewritten for the new
/// base tree and overlay. Returns the notes flagged for review.
pub fn rewrite_record_in(
    files: &mut FileMap,
    core_files: &[String],
    commits: Commits,
    base: &FileMap,
    overlay: &FileMap,
) -> Vec<String> {
    let Some(flavor) = Flavor::of(files) else {
        return Vec::new();
    };
    let old = ResidualRecord::parse(&String::from_utf8_lossy(&files[flavor.file()]), flavor);
    let residual = compute_parts(core_files, base, overlay, &[]);
    let (text, flagged) = render_record(
        Some(&old),
        flavor,
        commits,
        &core_of(core_files, overlay),
        &residual,
    );
    files.insert(flavor.file().to_string(), text.into_bytes().into());
    flagged
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
            let residual = compute_parts(&core, &file(&before), &file(&after), &[]);
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
