//! How a move (sync or retarget) and a `sync --check` read to a person.

use super::{FileOutcome, FixOutcome, Mismatch, Move, ResolvedConflict, SyncCheck};
use crate::base::CoreOutcome;
use crate::cache::short;
use crate::markdown::{self, PageLinks};
use crate::report_value::{plural, CommandReport, Verdict};
use crate::terminal::quote_path;
use std::fmt::Write;

impl CommandReport for Move {
    fn text(&self) -> String {
        let mut out = String::new();
        let verb = if self.written { "moved" } else { "would move" };
        let _ = writeln!(
            out,
            "{verb} {} -> {}",
            self.old.describe(),
            self.new.describe()
        );
        out.push_str(&self.core_text());
        let base_conflicts: Vec<&str> = self
            .core
            .iter()
            .filter(|(_, o)| matches!(o, CoreOutcome::Conflict(_)))
            .map(|(p, _)| p.as_str())
            .collect();
        for (path, outcome) in &self.files {
            if *outcome == FileOutcome::Taken && base_conflicts.contains(&path.as_str()) {
                continue;
            }
            let _ = writeln!(out, "  {}: {}", quote_path(path), file_words(outcome));
        }
        for fix in &self.fixes {
            let _ = writeln!(
                out,
                "  fix {} ({}): {}",
                fix.number,
                fix.patch,
                fix_words(&fix.outcome)
            );
        }
        if !self.hooks_outside.is_empty() {
            let _ = writeln!(
                out,
                "fork changes outside the overlay ({}):\n  {}",
                self.hooks_outside.len(),
                crate::text::wrap_list(&self.hooks_outside, "  ", 96)
            );
        }
        out.push_str(&self.left_text());
        out
    }

    fn verdict(&self) -> Verdict {
        Verdict::problems_if(self.conflicts() > 0)
    }

    fn markdown(&self, links: &PageLinks) -> Option<String> {
        Some(Move::markdown(self, links))
    }
}

impl Move {
    /// Core files the base tree made without a conflict (merged, or one side's as it is).
    fn merged_cleanly(&self) -> usize {
        self.core
            .iter()
            .filter(|(_, o)| {
                matches!(
                    o,
                    CoreOutcome::Merged | CoreOutcome::Pin | CoreOutcome::ForkOnly
                )
            })
            .count()
    }

    /// Files taken from the new base as they are, a base-tree conflict aside (that is listed).
    fn taken_as_they_are(&self) -> usize {
        let conflicted = |path: &str| {
            self.core
                .iter()
                .any(|(p, c)| p == path && matches!(c, CoreOutcome::Conflict(_)))
        };
        self.files
            .iter()
            .filter(|(path, o)| **o == FileOutcome::Taken && !conflicted(path))
            .count()
    }

    /// The core files and how the base tree made each.
    pub fn core_text(&self) -> String {
        let mut out = String::new();
        let merged = self.merged_cleanly();
        let _ = writeln!(
            out,
            "core files: {merged} of {} merged cleanly",
            self.core.len()
        );
        for (path, outcome) in &self.core {
            let CoreOutcome::Conflict(n) = outcome else {
                continue;
            };
            let regions = plural(*n, "region", "regions");
            let line = match self.resolved.iter().find(|r| &r.path == path) {
                Some(resolved) => format!("pin vs fork ({regions}), {}", resolved_words(resolved)),
                None => format!("CONFLICT ({regions}, pin vs fork)"),
            };
            let _ = writeln!(out, "  {}: {line}", quote_path(path));
        }
        out
    }
}

/// Which fixes resolve a pin-vs-fork conflict, in words.
fn resolved_words(resolved: &ResolvedConflict) -> String {
    match resolved.fixes.as_slice() {
        [] => "resolved in the overlay (no fix names it)".to_string(),
        fixes => {
            let numbers: Vec<String> = fixes.iter().map(|n| n.to_string()).collect();
            format!("resolved by fix {}", numbers.join(", "))
        }
    }
}

/// What happened to one file, in words.
pub fn file_words(outcome: &FileOutcome) -> String {
    match outcome {
        FileOutcome::Taken => "taken".to_string(),
        FileOutcome::Added => "added (new in the fork)".to_string(),
        FileOutcome::Removed => "removed (deleted by the fork)".to_string(),
        FileOutcome::Merged => "merged (local fix carried)".to_string(),
        FileOutcome::Kept => "kept (local fix; base unchanged)".to_string(),
        FileOutcome::Contained => {
            "contained: the new base already holds the local change (its fix is droppable)"
                .to_string()
        }
        FileOutcome::LocalOnly => "kept (local-only file)".to_string(),
        FileOutcome::Conflict { regions, fix, why } => {
            let by = fix.map(|n| format!(", fix {n}")).unwrap_or_default();
            format!(
                "CONFLICT ({}{by}): {why}",
                plural(*regions, "region", "regions")
            )
        }
    }
}

/// What happened to one local fix, in words.
pub fn fix_words(outcome: &FixOutcome) -> String {
    match outcome {
        FixOutcome::Unchanged => "applies as before".to_string(),
        FixOutcome::Carried => "carried onto the new base".to_string(),
        FixOutcome::Droppable => {
            "already in the new base: droppable (mark it merged and remove its patch)".to_string()
        }
        FixOutcome::Conflict { paths } => format!("CONFLICT in {}", paths.join(", ")),
    }
}

impl CommandReport for SyncCheck {
    fn text(&self) -> String {
        let mut out = String::new();
        if self.mismatches.is_empty() {
            let _ = writeln!(
                out,
                "sync --check: {} files and every record of {} reproduced byte for byte at {}",
                self.files,
                self.records,
                self.commits.describe()
            );
            return out;
        }
        let (markers, records): (Vec<&Mismatch>, Vec<&Mismatch>) =
            self.mismatches.iter().partition(|m| m.line.is_some());
        if !records.is_empty() {
            let _ = writeln!(
                out,
                "sync --check: {} differ from what {} gives:",
                plural(records.len(), "record", "records"),
                self.commits.describe()
            );
            for m in &records {
                let _ = writeln!(out, "  {}: {}", quote_path(&m.path), m.why);
            }
        }
        if !markers.is_empty() {
            let _ = writeln!(
                out,
                "sync --check: {} left in the overlay:",
                plural(markers.len(), "conflict region is", "conflict regions are")
            );
            for m in &markers {
                let _ = writeln!(out, "  {}:{}: {}", m.path, m.line.unwrap_or(0), m.why);
            }
        }
        let note = if records.is_empty() {
            "resolve them in a materialized copy and record each resolution as a local fix (`forkbook fix add`)".to_string()
        } else {
            format!(
                "run `forkbook sync {}` to rewrite them, and review the diff",
                short(self.commits.fork)
            )
        };
        let _ = writeln!(out, "\nnote: {note}");
        out
    }

    fn verdict(&self) -> Verdict {
        Verdict::problems_if(!self.mismatches.is_empty())
    }
}

impl Move {
    /// The move as Markdown for the book: the commits, a table of the files that did not come
    /// across unchanged, the local fixes linked to their register entries, what is left.
    pub fn markdown(&self, links: &PageLinks) -> String {
        let verb = if self.written { "Moved" } else { "Would move" };
        let mut out = format!(
            "{verb} {} → {}.\n\n",
            markdown::text(&self.old.describe()),
            markdown::text(&self.new.describe())
        );
        let rows = self.file_rows(links);
        let _ = writeln!(
            out,
            "Core files: {} of {} merged cleanly; {} taken from the new base as they are.\n",
            self.merged_cleanly(),
            self.core.len(),
            plural(self.taken_as_they_are(), "file", "files")
        );
        if !rows.is_empty() {
            out.push_str(&markdown::table(&["file", "what happened"], &rows));
            out.push('\n');
        }
        if !self.fixes.is_empty() {
            let rows: Vec<Vec<String>> = self
                .fixes
                .iter()
                .map(|fix| {
                    vec![
                        links.fix(fix.number),
                        markdown::cell(&markdown::text(&fix.title)),
                        markdown::cell(&markdown::text(&fix_words(&fix.outcome))),
                    ]
                })
                .collect();
            out.push_str(&markdown::table(&["local fix", "title", "outcome"], &rows));
            out.push('\n');
        }
        if !self.hooks_outside.is_empty() {
            let _ = writeln!(
                out,
                "Fork changes outside the overlay: {}.\n",
                plural(self.hooks_outside.len(), "file", "files")
            );
        }
        out.push_str(&self.left_markdown());
        out
    }

    /// The rows of the Markdown's file table: the core files that conflicted between pin and
    /// fork, then the files that did not come across as they are. Files taken from the new base
    /// as they are (no local fix) are counted, not listed.
    fn file_rows(&self, links: &PageLinks) -> Vec<Vec<String>> {
        let mut rows: Vec<Vec<String>> = Vec::new();
        for (path, outcome) in &self.core {
            let CoreOutcome::Conflict(n) = outcome else {
                continue;
            };
            let words = match self.resolved.iter().find(|r| &r.path == path) {
                Some(resolved) => format!(
                    "pin vs fork ({}), resolved by {}",
                    plural(*n, "region", "regions"),
                    links.fixes(&resolved.fixes)
                ),
                None => format!(
                    "**conflict** ({}, pin vs fork)",
                    plural(*n, "region", "regions")
                ),
            };
            rows.push(vec![markdown::code_span(path), words]);
        }
        for (path, outcome) in &self.files {
            if *outcome == FileOutcome::Taken {
                continue;
            }
            let words = match outcome {
                FileOutcome::Conflict { regions, fix, why } => {
                    let by = fix
                        .map(|n| format!(", {}", links.fix(n)))
                        .unwrap_or_default();
                    format!(
                        "**conflict** ({}{by}): {}",
                        plural(*regions, "region", "regions"),
                        markdown::cell(&markdown::text(why))
                    )
                }
                _ => markdown::cell(&markdown::text(&file_words(outcome))),
            };
            rows.push(vec![markdown::code_span(path), words]);
        }
        rows
    }

    /// What the move leaves for a person, for a terminal: the conflict regions and where they
    /// are, or the pin-vs-fork conflicts the fixes resolved.
    fn left_text(&self) -> String {
        let mut out = String::new();
        let conflicts = self.conflicts();
        if conflicts > 0 {
            let places: Vec<String> = self
                .remaining
                .iter()
                .flat_map(|c| c.lines.iter().map(move |l| format!("{}:{l}", c.path)))
                .collect();
            let _ = writeln!(
                out,
                "\n{} left with markers: {}; resolve them and record each resolution as a local fix",
                plural(conflicts, "conflict region", "conflict regions"),
                places.join(", ")
            );
            let _ = writeln!(out, "note: `forkbook materialize --out DIR`, edit, then `forkbook fix add --from DIR --title \"...\"`");
        } else if !self.resolved.is_empty() {
            let resolved = self.resolved_words();
            let _ = writeln!(
                out,
                "\nno conflict left: {resolved} resolved by the overlay's fixes (above)"
            );
        }
        out
    }

    /// How many pin-vs-fork conflicts the fixes resolved, in words.
    fn resolved_words(&self) -> String {
        let n = self.resolved.len();
        plural(n, "pin-vs-fork conflict", "pin-vs-fork conflicts")
    }

    /// What the move leaves for a person, in Markdown.
    fn left_markdown(&self) -> String {
        let mut out = String::new();
        let conflicts = self.conflicts();
        if conflicts > 0 {
            let _ = writeln!(
                out,
                "**{} left with markers**: resolve them and record each resolution as a local fix \
                 (`forkbook materialize --out DIR`, edit, then `forkbook fix add --from DIR`).",
                plural(conflicts, "conflict region", "conflict regions")
            );
        } else if !self.resolved.is_empty() {
            let resolved = self.resolved_words();
            let _ = writeln!(
                out,
                "No conflict left: {resolved} resolved by the overlay's fixes."
            );
        }
        out
    }
}
