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
use super::doc::{code, fixes, text, words, Doc};
use super::error::Result;
use super::overlay::{self, FixStep, OverlayState, Records};
use super::patch;
use super::project::Project;
use super::residual_diff::residual_of;
use super::FileMap;
use crate::markdown::PageLinks;
use crate::report_value::plural;

pub use super::records::RESIDUAL_FILE;
pub use super::residual_diff::{core_of, Hunk, HunkNote, Residual};

impl Residual {
    /// The residual: each hunk under its file and line with what explains it (the fixes that
    /// change the file, linked to their register entries on a page, and the record's note), and
    /// on a page its diff. A hunk nothing explains says so.
    /// Under a stand-in pin (`stand_in`) each hunk is marked: a core file's residual depends
    /// on the pin.
    pub fn doc(&self, links: &PageLinks, stand_in: bool) -> Doc {
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
            if stand_in {
                line.push(words(format!(" {}", crate::pin::STAND_IN_MARK)));
            }
            doc.list(vec![line]).page_code("diff", &h.text);
        }
        doc
    }
}

/// Compares every core file of the overlay with B, line by line.
pub fn compute(state: &OverlayState) -> Residual {
    residual_of(
        &state.core_files,
        &state.base.files,
        &state.overlay,
        &changed_by_fix(&state.steps),
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
        Layout::Patch => overlay::apply_series(project, &base.files, &records, &core_files)?,
        Layout::Files => (records.tree.clone(), Vec::new()),
    };
    Ok(Computed {
        residual: residual_of(&core_files, &base.files, &overlay, &changed_by_fix(&steps)),
        commits,
        core: core_of(&core_files, &overlay),
        records,
    })
}

/// The paths each fix changes, in series order: what [`residual_of`] names a hunk's fixes by.
fn changed_by_fix(steps: &[FixStep]) -> Vec<Vec<&str>> {
    steps.iter().map(FixStep::changed_paths).collect()
}
