//! `residual-notes`: each note of the residual record ties a core file's residual to a register
//! entry, with a reason, and is still about the hunk it was written for.

use crate::facts::{Facts, ResidualRecord, Summary};
use crate::{pages::residual_notes as CHECK, Finding, Findings};

const FORM: &str = "write it as `# note <path>: LOCAL_FIXES.md item N: <reason>`";

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let Some(record) = &facts.records.residual_record else {
        return;
    };
    findings.extend(note_findings(
        record,
        &facts.summary(),
        &facts.register_file(),
    ));
    for review in &record.reviews {
        let message = format!(
            "the residual of `{}` changed since its note was written",
            review.key
        );
        findings.push(CHECK.finding(&record.file, Some(review.line), message).with_note(
            "read the file's hunk; confirm or update its note, then delete this `# review` line",
        ));
    }
    if let Some(overlay) = &facts.overlay {
        findings.extend(coverage_findings(record, &overlay.residual_files()));
    }
}

fn note_findings(record: &ResidualRecord, summary: &Summary, register_file: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for note in &record.notes {
        let finding = |message: String| CHECK.finding(&record.file, Some(note.line), message);
        match note.item {
            None => out.push(
                finding(format!(
                    "the note for `{}` names no register entry",
                    note.path
                ))
                .with_note(FORM),
            ),
            Some(n) if summary.entry(n).is_none() => out.push(
                finding(format!(
                    "the note for `{}` names LOCAL_FIXES.md item {n}, which {} does not have",
                    note.path, register_file
                ))
                .with_note("name the entry whose fix made the hunk, or add that entry"),
            ),
            Some(_) => {}
        }
        if note.reason.trim().is_empty() {
            out.push(
                finding(format!("the note for `{}` gives no reason", note.path)).with_note(FORM),
            );
        }
    }
    out
}

fn coverage_findings(record: &ResidualRecord, residual: &[String]) -> Vec<Finding> {
    let mut out = Vec::new();
    if record.core_header() {
        for path in residual {
            if !record.notes.iter().any(|n| n.path == *path) {
                out.push(
                    CHECK
                        .finding(
                            &record.file,
                            None,
                            format!("core file `{path}` has a residual and no note"),
                        )
                        .with_note(format!(
                            "add a note saying which entry made it and why: {FORM}"
                        )),
                );
            }
        }
    }
    for note in &record.notes {
        if !residual.contains(&note.path) {
            out.push(
                CHECK
                    .finding(
                        &record.file,
                        Some(note.line),
                        format!(
                            "the note for `{}` explains a residual the file no longer has",
                            note.path
                        ),
                    )
                    .with_note(
                        "the core file now equals the pin plus the fork's change: delete the note",
                    ),
            );
        }
    }
    out
}
