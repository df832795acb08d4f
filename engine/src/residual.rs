//! The residual: how each core file differs from the pin plus the fork's change (B).
//!
//! Line counts cannot see an overlay that silently dropped half an upstream change; a line-by-line
//! diff against B can. Every hunk here must be explained by a local fix, and each hunk names the
//! fixes that touch its file (in the patch layout, the fixes whose patches change that file).
//!
//! The command's entry point, which may also write the record, is
//! [`crate::residual_record::run`].

use super::base;
use super::cache::Cache;
use super::config::Layout;
use super::error::Result;
use super::overlay::{self, FixStep, OverlayState, Records};
use super::patch;
use super::project::Project;
use super::FileMap;
use serde::Serialize;
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

    pub fn render_text(&self) -> String {
        if self.hunks.is_empty() {
            return format!(
                "residual: {} core files equal the pin plus the fork's change\n",
                self.files
            );
        }
        let mut out = format!(
            "residual: {} in {} of {}\n",
            super::report_value::plural(self.hunks.len(), "hunk", "hunks"),
            self.touched_files(),
            super::report_value::plural(self.files, "core file", "core files")
        );
        let mut last_noted = "";
        for h in &self.hunks {
            let fixes = if let Some(note) = &h.note {
                let item = note
                    .item
                    .map_or("noted, no item".to_string(), |n| format!("item {n}"));
                // The reason once per file: every hunk of a file shares its note.
                if last_noted == h.file {
                    item
                } else {
                    last_noted = &h.file;
                    format!("{item}: {}", crate::terminal::escape_field(&note.reason))
                }
            } else if h.fixes.is_empty() {
                "no fix".to_string()
            } else {
                h.fixes
                    .iter()
                    .map(|n| format!("fix {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.push_str(&format!(
                "  {}:{}  -{} +{}  ({fixes})\n",
                h.file, h.line, h.removed, h.added
            ));
        }
        out
    }

    /// The residual for the book: each hunk as a diff under its file and line, with the fixes
    /// that explain it linked to their register entries. A hunk no fix explains says so.
    pub fn markdown(&self, links: &crate::markdown::PageLinks) -> String {
        use crate::markdown;
        if self.hunks.is_empty() {
            return format!(
                "All {} equal the pin plus the fork's change.\n",
                super::report_value::plural(self.files, "core file", "core files")
            );
        }
        let mut out = format!(
            "Residual: {} in {} of {}.\n\n",
            super::report_value::plural(self.hunks.len(), "hunk", "hunks"),
            self.touched_files(),
            super::report_value::plural(self.files, "core file", "core files")
        );
        for h in &self.hunks {
            let explained = if let Some(note) = h.note.as_ref().filter(|_| h.fixes.is_empty()) {
                format!("noted: {}", markdown::text(&note.reason))
            } else if h.fixes.is_empty() {
                "**explained by no fix**".to_string()
            } else {
                format!("explained by {}", links.fixes(&h.fixes))
            };
            out.push_str(&format!(
                "{} line {} (−{} +{}), {explained}\n\n{}\n",
                markdown::code_span(&h.file),
                h.line,
                h.removed,
                h.added,
                markdown::code_block("diff", &h.text)
            ));
        }
        out
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
        Layout::Patch => overlay::replay(&base.files, &records.patches, project)?,
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
        let diff = TextDiff::from_lines(&before, &after);
        for group in diff.grouped_ops(3) {
            let (mut removed, mut added) = (0, 0);
            let mut text = String::new();
            let first = group
                .first()
                .map(|op| op.new_range().start + 1)
                .unwrap_or(1);
            let old_range =
                group.first().unwrap().old_range().start..group.last().unwrap().old_range().end;
            let new_range =
                group.first().unwrap().new_range().start..group.last().unwrap().new_range().end;
            text.push_str(&format!(
                "@@ -{},{} +{},{} @@\n",
                old_range.start + 1,
                old_range.len(),
                new_range.start + 1,
                new_range.len()
            ));
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
                file: path.clone(),
                line: first,
                removed,
                added,
                fixes: fixes.clone(),
                text,
                note: None,
            });
        }
    }
    Residual {
        files: core_files.len(),
        hunks,
    }
}

/// The core files of `overlay`, sorted by path.
pub fn core_of(core_files: &[String], overlay: &FileMap) -> FileMap {
    core_files
        .iter()
        .filter_map(|p| Some((p.clone(), overlay.get(p)?.clone())))
        .collect()
}
