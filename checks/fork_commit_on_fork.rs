//! `fork-commit-on-fork`: every `fork-commit` an entry names is a commit of the fork.

use crate::facts::Facts;
use crate::upstream_well_formed::is_full_sha;
use crate::{pages::fork_commit_on_fork as CHECK, Findings, OneEntry};
use std::collections::HashSet;

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    one_entry(facts).over_held_entries(facts, findings)
}

pub(crate) fn one_entry(facts: &Facts) -> OneEntry<'_> {
    let (Some(register), Some(overlay)) = (&facts.records.register, &facts.overlay) else {
        return OneEntry::nothing();
    };
    let on_fork: HashSet<&str> = overlay.fork_commits.iter().map(String::as_str).collect();
    OneEntry::new(move |entry, findings| {
        let Some(field) = entry.field("fork-commit") else {
            return;
        };
        let sha = field.value.trim();
        // A value that is no full SHA is `fix-state-complete`'s finding.
        if !is_full_sha(sha) || on_fork.contains(sha) {
            return;
        }
        let message = format!(
            "entry {} says the fork holds it at `{sha}`, which is no commit of the fork's history",
            entry.number
        );
        let note = "`forkbook fetch` brings the fork's branch; name the fork commit that holds \
                    the fix, or give the entry the state it has";
        let finding = CHECK.finding(&register.file, Some(field.line), message);
        findings.push(finding.with_note(note));
    })
}
