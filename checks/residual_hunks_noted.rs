//! `residual-hunks-noted`: every hunk of the residual (a local change to a core file) belongs to
//! an entry that names the file.

use crate::facts::{Facts, Hunk, Summary};
use crate::names::{Names, Resolved};
use crate::{pages::residual_hunks_noted as CHECK, Findings};
use forkbook_records::residual_record::ResidualRecord;

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let summary = facts.summary();
    let names = Names::new(facts.tree_files(), &facts.backend_prefix);
    // With a `CORE_RESIDUAL.diff`, the fix is a note there; otherwise an entry of the register.
    let file = match noting_record(facts) {
        Some(record) => record.file.clone(),
        None => facts.register_file(),
    };
    findings.extend(
        facts
            .residual()
            .iter()
            .filter_map(|hunk| problem(hunk, &summary, facts, &names))
            .map(|message| CHECK.finding(&file, None, message)),
    );
}

/// The residual record whose notes tie hunks to entries: a `CORE_RESIDUAL.diff` in the files
/// layout. In the patch layout a hunk's fixes are the patches that change its file, a real tie;
/// in the files layout the entries only mention the file.
fn noting_record(facts: &Facts) -> Option<&ResidualRecord> {
    let files_layout = facts.records.patch_series.is_none();
    let record = facts.records.residual_record.as_ref();
    record.filter(|r| r.core_header() && files_layout)
}

fn problem(hunk: &Hunk, summary: &Summary, facts: &Facts, names: &Names) -> Option<String> {
    // A note of the residual record ties the file to its entry; `residual-notes` checks the note.
    let record = facts.records.residual_record.as_ref();
    if record.is_some_and(|r| r.notes.iter().any(|n| n.path == hunk.file)) {
        return None;
    }
    let place = format!("`{}:{}`", hunk.file, hunk.line);
    if let Some(record) = noting_record(facts) {
        // The record's notes are what ties a hunk to its entry; an entry's passing mention of
        // the file is not.
        return Some(format!(
            "residual hunk at {place} has no note in `{}` naming the entry that explains it",
            record.file
        ));
    }
    if hunk.fixes.is_empty() {
        return Some(format!("residual hunk at {place} belongs to no local fix"));
    }
    unnamed_by_its_fixes(hunk, summary, names).map(|whose| {
        format!(
            "residual hunk at {place} belongs to {whose} name `{}`",
            hunk.file
        )
    })
}

/// When none of the hunk's fixes has an entry that names its file: which fixes those are.
fn unnamed_by_its_fixes(hunk: &Hunk, summary: &Summary, names: &Names) -> Option<String> {
    let names_it = |number: &usize| {
        let entry = u32::try_from(*number).ok().and_then(|n| summary.entry(n));
        entry.is_some_and(|entry| {
            entry
                .files()
                .any(|named| names.resolve(named) == Resolved::File(&hunk.file))
        })
    };
    if hunk.fixes.iter().any(names_it) {
        return None;
    }
    let fixes: Vec<String> = hunk.fixes.iter().map(|n| n.to_string()).collect();
    let whose = if fixes.len() == 1 {
        "fix {}, whose entry does not"
    } else {
        "fixes {}, none of whose entries"
    };
    Some(whose.replace("{}", &fixes.join(", ")))
}
