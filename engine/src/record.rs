//! `forkbook fix add`: turn edits made in a materialized copy into a new numbered local fix.
//!
//! The usual way to resolve a conflict or adapt the backend: materialize, edit, then record the
//! difference as fix N+1 (a patch in the patch layout, whole files in the files layout) with a
//! new LOCAL_FIXES.md entry whose state the author fills in.

use super::config::Layout;
use super::error::{Error, Result};
use super::overlay::{differences, Image, OverlayState, Records, PATCHES_DIR};
use super::patch;
use super::project::Project;
use super::records;
use super::report_value::{CommandReport, Verdict};
use super::sync::{self, Move};
use super::Cache;
use super::FileMap;
use serde::Serialize;
use std::path::Path;

/// A recorded fix.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub number: usize,
    pub paths: Vec<String>,
    pub planned: Move,
}

/// What `forkbook fix add` recorded: `{"number": N, "paths": [...]}`.
#[derive(Debug, Clone, Serialize)]
pub struct Added {
    pub number: usize,
    pub paths: Vec<String>,
    /// The register's name in the records folder, where its state is filled in.
    #[serde(skip)]
    pub register: String,
}

/// `forkbook fix add`: the difference between the edited copy in `from` (made by `materialize`)
/// and the overlay, recorded as the next local fix titled `title`.
pub fn add_from(
    project: &Project,
    cache: &Cache,
    state: &OverlayState,
    from: &Path,
    title: &str,
) -> Result<Added> {
    let mut edited = super::fsutil::read_tree(from)?;
    // forkbook's own marker from `materialize` is not part of the edit.
    edited.remove(super::fsutil::WRITTEN_MARKER);
    let recorded = add_fix(project, cache, state, title, &edited)?;
    Ok(Added {
        number: recorded.number,
        paths: recorded.paths,
        register: project.record_name(records::FIXES_FILE),
    })
}

impl CommandReport for Added {
    fn text(&self) -> String {
        // A fix may touch thousands of files: name the first ones, count the rest (the entry's
        // `Files:` line and `--json` have them all).
        const SHOWN: usize = 20;
        let mut touching = self.paths[..self.paths.len().min(SHOWN)].join(", ");
        if self.paths.len() > SHOWN {
            touching.push_str(&format!(
                " and {} more files (all {} are named in the entry)",
                self.paths.len() - SHOWN,
                self.paths.len()
            ));
        }
        format!(
            "recorded fix {} touching {touching}\nnote: fill in its state in {}\n",
            self.number, self.register
        )
    }

    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}

/// Records `edited` (a whole materialized overlay, edited) as the next local fix.
pub fn add_fix(
    project: &Project,
    cache: &Cache,
    state: &OverlayState,
    title: &str,
    edited: &FileMap,
) -> Result<Recorded> {
    let mut recorded = plan_fix(project, cache, state, title, edited)?;
    // Written only over the records this fix was made from.
    recorded.planned.read_from = state.records.files.clone();
    sync::write(project, &recorded.planned)?;
    Ok(recorded)
}

/// [`add_fix`] planned and not written: the records with the fix added are
/// `planned.records`, for a command that writes several fixes in one swap (`drift api --draft`).
pub fn plan_fix(
    project: &Project,
    cache: &Cache,
    state: &OverlayState,
    title: &str,
    edited: &FileMap,
) -> Result<Recorded> {
    let changes = differences(&state.overlay, edited);
    if changes.is_empty() {
        return Err(Error::new("the edited folder equals the overlay: there is nothing to record")
            .with_note("materialize with `forkbook materialize --out DIR`, edit there, then `forkbook fix add --from DIR`"));
    }
    let title = title.trim();
    if title.is_empty() || title.contains('\n') {
        return Err(Error::new("a fix needs a one-line title")
            .with_note("pass `--title \"what it fixes\"`"));
    }
    if let Some(c) = forkbook_records::register::control_in_title(title) {
        return Err(Error::new(format!(
            "`--title` holds the control character {}: a title goes into the register's heading and the patch's subject as it is",
            c.escape_unicode()
        ))
        .with_note("pass `--title` plain text, without control characters (escapes, carriage returns, bells)"));
    }
    let number = fix_count(state) + 1;
    let paths: Vec<String> = changes.iter().map(|(p, _, _)| p.clone()).collect();
    let mut files = state.records.files.clone();
    write_change(project, state.layout, &mut files, number, title, &changes)?;
    let register = append_entry(
        &super::text_of(&files, records::FIXES_FILE),
        number,
        title,
        &paths,
    );
    files.insert(records::FIXES_FILE.into(), register.into_bytes().into());
    let records = Records::from_files(project, files)?;
    let new_state = OverlayState::from_records(project, cache, records)?;
    let planned = sync::plan(project, cache, &new_state, new_state.commits)?;
    Ok(Recorded {
        number,
        paths,
        planned,
    })
}

/// Fix `number`'s `changes` written into the records `files`: its patch, or in the files layout
/// the changed files themselves.
fn write_change(
    project: &Project,
    layout: Layout,
    files: &mut FileMap,
    number: usize,
    title: &str,
    changes: &[(String, Image, Image)],
) -> Result<()> {
    if layout == Layout::Files {
        let tree_prefix = project.config.overlay.tree_prefix();
        for (path, _, after) in changes {
            let key = format!("{tree_prefix}{path}");
            match after {
                Some(bytes) => files.insert(key, bytes.clone()),
                None => files.remove(&key),
            };
        }
        return Ok(());
    }
    let side = |pick: fn(&(String, Image, Image)) -> &Image| -> FileMap {
        changes
            .iter()
            .filter_map(|change| Some((change.0.clone(), pick(change).clone()?)))
            .collect()
    };
    let diff = patch::render(&side(|c| &c.1), &side(|c| &c.2))?;
    let name = format!("{number:04}-{}.patch", slug(title));
    let text = format!("From: forkbook <forkbook@localhost>\nSubject: [PATCH] {title}\n\nLocal fix {number} of LOCAL_FIXES.md.\n---\n{diff}");
    files.insert(format!("{PATCHES_DIR}/{name}"), text.into_bytes().into());
    Ok(())
}

/// Fixes so far: the last patch's number in the patch layout (an entry the fork merged keeps
/// its number without a patch, so the count of patches can be less), register entries in the
/// files layout.
fn fix_count(state: &OverlayState) -> usize {
    let entries = records::register_entries(&state.records.model);
    let last_patch = match state.layout {
        Layout::Patch => state.steps.iter().map(|s| s.number()).max().unwrap_or(0),
        Layout::Files => 0,
    };
    last_patch.max(entries)
}

/// A Markdown code span holding `text` exactly, whatever backticks it holds: fenced by one more
/// backtick than its longest run, padded with a space (which the reader strips) when it holds one.
fn code_span(text: &str) -> String {
    if !text.contains('`') {
        return format!("`{text}`");
    }
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    format!("{ticks} {text} {ticks}")
}

/// A new register entry; the author fills in its state. It is written in the register's own
/// form: a numbered list item after the latest list entry when the register is written so,
/// otherwise a `## N. Title` entry at the end. Either way the diff is only the lines it adds.
fn append_entry(register: &str, number: usize, title: &str, paths: &[String]) -> String {
    let files = paths
        .iter()
        .map(|p| code_span(p))
        .collect::<Vec<_>>()
        .join(", ");
    let parsed = crate::register::parse(records::FIXES_FILE, register);
    let latest = parsed.entries.iter().max_by_key(|e| e.number);
    if let Some(latest) =
        latest.filter(|e| matches!(e.form, crate::register::Form::ListItem { .. }))
    {
        let head = format!("{number}. ");
        let indent = " ".repeat(head.len());
        let title = title.trim_end_matches('.');
        let item = format!(
            "{head}**{title}.** Files: {files}. TODO: why this fix exists.\n\
             {indent}{}\n",
            state_placeholder()
        );
        let mut lines: Vec<&str> = register.split_inclusive('\n').collect();
        let at = latest.end_line.min(lines.len());
        let mut out: String = lines.drain(..at).collect();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&item);
        out.extend(lines);
        return out;
    }
    let sep = if register.ends_with("\n\n") || register.is_empty() {
        ""
    } else if register.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    format!(
        "{register}{sep}## {number}. {title}\n\nFiles: {files}\n\nTODO: why this fix exists.\n\n{}\n",
        state_placeholder()
    )
}

/// The state line a new entry gets: a placeholder the gate fails on until it is replaced, naming
/// every state with the field lines `fix-state-complete` will ask of it.
fn state_placeholder() -> String {
    format!(
        "- state: TODO, one of {}",
        forkbook_checks::states_and_fields()
    )
}

/// A file-name slug: lowercase words joined by `-`, at most 48 characters.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for word in title
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if out.len() + word.len() + 1 > 48 {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word.to_ascii_lowercase());
    }
    if out.is_empty() {
        out.push_str("fix");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fix_touching_thousands_of_files_names_the_first_and_counts_the_rest() {
        let added = Added {
            number: 5,
            paths: (0..20_000)
                .map(|i| format!("mlx/backend/rocm/f{i:05}.cpp"))
                .collect(),
            register: "patches-rocm/LOCAL_FIXES.md".into(),
        };
        let text = added.text();
        assert!(text.starts_with("recorded fix 5 touching mlx/backend/rocm/f00000.cpp, "));
        assert!(
            text.contains("f00019.cpp and 19980 more files (all 20000 are named in the entry)\n")
        );
        assert!(!text.contains("f00020.cpp"), "{text}");
        assert!(text.len() < 1000, "{} bytes", text.len());
    }
}
