//! `fork-commit-on-fork`: every `fork-commit` an entry names is a commit of the fork.

use crate::facts::Facts;
use crate::upstream_well_formed::is_full_sha;
use crate::{Chapter, Check, Finding, Needs, Severity};

pub(crate) const CHECK: Check = Check {
    id: "fork-commit-on-fork",
    name: "every fork commit an entry names is the fork's",
    severity: Severity::Error,
    chapter: Chapter::Register,
    doc: include_str!("fork-commit-on-fork.md"),
    source: file!(),
    needs: Needs::Objects { without: None },
    run,
};

fn run(facts: &Facts) -> Vec<Finding> {
    let (Some(register), Some(overlay)) = (&facts.records.register, &facts.overlay) else {
        return Vec::new();
    };
    let mut findings = Vec::new();
    for entry in &register.entries {
        // A value that is no full SHA is `fix-state-complete`'s finding.
        let Some(field) = entry
            .field("fork-commit")
            .filter(|f| is_full_sha(f.value.trim()))
        else {
            continue;
        };
        if overlay
            .fork_commits
            .iter()
            .any(|sha| sha == field.value.trim())
        {
            continue;
        }
        let message = format!(
            "entry {} says the fork holds it at `{}`, which is no commit of the fork's history",
            entry.number,
            field.value.trim()
        );
        let note = "`forkbook fetch` brings the fork's branch; name the fork commit that holds \
                    the fix, or give the entry the state it has";
        findings.push(
            CHECK
                .finding(&register.file, Some(field.line), message)
                .with_note(note),
        );
    }
    findings
}
