//! How a move (sync or retarget) and a `sync --check` read to a person: one [`Doc`] for the
//! terminal and the book's page.

use super::{FileOutcome, FixOutcome, Move, SyncCheck};
use crate::base::CoreOutcome;
use crate::cache::short;
use crate::doc::{either, fixes, path, separated, text, words, Described, Doc, Span};
use crate::markdown::PageLinks;
use crate::report_value::{plural, CommandReport, Verdict};
use forkbook_records::Finding;

impl Described for Move {
    /// The move: the commits, the core files, every file and local fix and what happened to it
    /// (on a page the files taken from the new base as they are only counted, the fixes linked
    /// to their register entries), the fork's changes outside the overlay, what is left.
    fn doc(&self, links: &PageLinks) -> Doc {
        let mut doc = Doc::default();
        let verb = if self.written {
            "moved "
        } else {
            "would move "
        };
        doc.line(vec![
            words(verb),
            text(self.old.describe()),
            either(" -> ", " → "),
            text(self.new.describe()),
        ]);
        self.core_doc(&mut doc, links);
        for (file, outcome) in &self.files {
            if *outcome == FileOutcome::Taken && self.base_conflict(file) {
                continue;
            }
            let mut item = vec![path(file), words(": ")];
            item.extend(file_spans(outcome, links));
            self.mark_stand_in(&mut item, file);
            doc.list(vec![item]);
            if *outcome == FileOutcome::Taken {
                doc.terminal_only();
            }
        }
        let fix_items = self.fixes.iter().map(|fix| {
            let mut item = vec![fixes(links, &[fix.number]), words(" (")];
            item.extend([text(&fix.patch), words("): ")]);
            item.extend(fix_spans(&fix.outcome));
            item
        });
        doc.list(fix_items.collect());
        if !self.hooks_outside.is_empty() {
            let n = self.hooks_outside.len();
            doc.line(vec![words(format!(
                "fork changes outside the overlay ({n}):"
            ))])
            .paths(&self.hooks_outside);
        }
        self.left_doc(&mut doc);
        doc
    }

    fn found_problems(&self) -> bool {
        self.conflicts() > 0
    }
}

impl Move {
    /// Whether the base tree made `file` with a pin-vs-fork conflict.
    fn base_conflict(&self, file: &str) -> bool {
        let conflicted = |c: &CoreOutcome| matches!(c, CoreOutcome::Conflict(_));
        self.core.iter().any(|(p, c)| p == file && conflicted(c))
    }

    /// The core files: how many the base tree made without a conflict (on a page, and how many
    /// files are taken from the new base as they are), then each conflict and what resolves it.
    pub fn core_doc(&self, doc: &mut Doc, links: &PageLinks) {
        let merged = self.core.iter().filter(|(_, o)| {
            matches!(
                o,
                CoreOutcome::Merged | CoreOutcome::Pin | CoreOutcome::ForkOnly
            )
        });
        let (merged, all) = (merged.count(), self.core.len());
        let taken = self
            .files
            .iter()
            .filter(|(file, o)| **o == FileOutcome::Taken && !self.base_conflict(file));
        let taken = plural(taken.count(), "file", "files");
        doc.line(vec![
            words(format!("core files: {merged} of {all} merged cleanly")),
            either("", format!("; {taken} taken from the new base as they are")),
        ]);
        for (file, outcome) in &self.core {
            let CoreOutcome::Conflict(n) = outcome else {
                continue;
            };
            let regions = plural(*n, "region", "regions");
            let mut item = vec![path(file), words(": ")];
            let resolved = self.resolved.iter().find(|r| &r.path == file);
            match resolved.map(|r| r.fixes.as_slice()) {
                Some([]) => item.push(words(format!(
                    "pin vs fork ({regions}), resolved in the overlay (no fix names it)"
                ))),
                Some(numbers) => item.extend([
                    words(format!("pin vs fork ({regions}), resolved by ")),
                    fixes(links, numbers),
                ]),
                None => item.push(words(format!("CONFLICT ({regions}, pin vs fork)"))),
            }
            self.mark_stand_in(&mut item, file);
            doc.list(vec![item]);
        }
    }

    /// Marks `item`, about `file`, when the move started from a stand-in pin and the file is a
    /// core file: what it became depends on the pin.
    fn mark_stand_in(&self, item: &mut Vec<Span>, file: &str) {
        if self.stand_in_core.iter().any(|core| core == file) {
            item.push(words(format!(" {}", crate::pin::STAND_IN_MARK)));
        }
    }

    /// What the move leaves for a person: the conflict regions and where they are, or the
    /// pin-vs-fork conflicts the fixes resolved.
    fn left_doc(&self, doc: &mut Doc) {
        let conflicts = self.conflicts();
        if conflicts > 0 {
            let places = self.remaining.iter().flat_map(|c| {
                let at = |l: &usize| text(format!("{}:{l}", c.path));
                c.lines.iter().map(at).collect::<Vec<_>>()
            });
            let regions = plural(conflicts, "conflict region", "conflict regions");
            let mut line = vec![words(format!("{regions} left with markers: "))];
            line.extend(separated(places, ", "));
            line.push(words(
                "; resolve them and record each resolution as a local fix",
            ));
            doc.gap().line(line).line(vec![words(
                "note: `forkbook materialize --out DIR`, edit, then `forkbook fix add --from DIR --title \"...\"`",
            )]);
        } else if !self.resolved.is_empty() {
            let n = self.resolved.len();
            let resolved = plural(n, "pin-vs-fork conflict", "pin-vs-fork conflicts");
            doc.gap().line(vec![words(format!(
                "no conflict left: {resolved} resolved by the overlay's fixes (above)"
            ))]);
        }
    }
}

/// What happened to one file.
fn file_spans(outcome: &FileOutcome, links: &PageLinks) -> Vec<Span> {
    let said = match outcome {
        FileOutcome::Taken => "taken",
        FileOutcome::Added => "added (new in the fork)",
        FileOutcome::Removed => "removed (deleted by the fork)",
        FileOutcome::Merged => "merged (local fix carried)",
        FileOutcome::Kept => "kept (local fix; base unchanged)",
        FileOutcome::Contained => {
            "contained: the new base already holds the local change (its fix is droppable)"
        }
        FileOutcome::LocalOnly => "kept (local-only file)",
        FileOutcome::Conflict { regions, fix, why } => {
            let regions = plural(*regions, "region", "regions");
            let mut spans = vec![words(format!("CONFLICT ({regions}"))];
            if let Some(n) = fix {
                spans.extend([words(", "), fixes(links, &[*n])]);
            }
            spans.extend([words("): "), text(why)]);
            return spans;
        }
    };
    vec![words(said)]
}

/// What happened to one local fix.
fn fix_spans(outcome: &FixOutcome) -> Vec<Span> {
    let said = match outcome {
        FixOutcome::Unchanged => "applies as before",
        FixOutcome::Carried => "carried onto the new base",
        FixOutcome::Droppable => {
            "already in the new base: droppable (mark it merged and remove its patch)"
        }
        FixOutcome::Conflict { paths } => {
            let mut spans = vec![words("CONFLICT in ")];
            spans.extend(separated(paths.iter().map(path), ", "));
            return spans;
        }
    };
    vec![words(said)]
}

/// How many differences `sync --check` lists on a terminal; the JSON has them all.
const LISTED: usize = 20;
const MORE: &str = "more (`--json` lists them all)";

impl CommandReport for SyncCheck {
    fn text(&self) -> String {
        let mut doc = Doc::default();
        let commits = self.commits.describe();
        if self.mismatches.is_empty() {
            let (files, records) = (self.files, &self.records);
            doc.line(vec![
                words(format!("sync --check: {files} files and every record of ")),
                text(records),
                words(format!(" reproduced byte for byte at {commits}")),
            ]);
            return doc.text();
        }
        let (markers, records): (Vec<_>, Vec<_>) =
            self.mismatches.iter().partition(|m| m.line.is_some());
        if !records.is_empty() {
            let differ = plural(records.len(), "record", "records");
            doc.line(vec![words(format!(
                "sync --check: {differ} differ from what {commits} gives:"
            ))]);
            let item = |m: &&Finding| {
                let mut item = vec![path(&*m.file), words(": "), text(&m.message)];
                self.mark_stand_in(&mut item, m);
                item
            };
            doc.list_first(records.iter().map(item).collect(), LISTED, MORE);
        }
        if !markers.is_empty() {
            let left = plural(markers.len(), "conflict region is", "conflict regions are");
            doc.line(vec![words(format!(
                "sync --check: {left} left in the overlay:"
            ))]);
            let item = |m: &&Finding| {
                let mut item = vec![text(format!("{}: ", m.place())), text(&m.message)];
                self.mark_stand_in(&mut item, m);
                item
            };
            doc.list_first(markers.iter().map(item).collect(), LISTED, MORE);
        }
        let note = if records.is_empty() {
            "resolve them in a materialized copy and record each resolution as a local fix (`forkbook fix add`)".to_string()
        } else {
            format!(
                "run `forkbook sync {}` to rewrite them, and review the diff",
                short(self.commits.fork)
            )
        };
        doc.gap().line(vec![words(format!("note: {note}"))]);
        doc.text()
    }

    fn verdict(&self) -> Verdict {
        Verdict::problems_if(!self.mismatches.is_empty())
    }
}

impl SyncCheck {
    /// Marks `item`, about the mismatch `m`, when the check ran on a stand-in pin and what it
    /// is about depends on the pin (a core file, by its path or in its words).
    fn mark_stand_in(&self, item: &mut Vec<Span>, m: &Finding) {
        // The residual record is the core files' residual: all of it depends on the pin.
        let residual_record = [
            crate::records::RESIDUAL_FILE,
            crate::records::CORE_RESIDUAL_FILE,
        ]
        .iter()
        .any(|name| m.file.ends_with(&format!("/{name}")));
        let core = crate::pin::depends_on_pin(&m.file, &m.message, &self.stand_in_core);
        if !self.stand_in_core.is_empty() && (core || residual_record) {
            item.push(words(format!(" {}", crate::pin::STAND_IN_MARK)));
        }
    }
}
