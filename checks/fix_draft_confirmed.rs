//! `fix-draft-confirmed`: no fix forkbook drafted is left unreviewed.

use crate::facts::Facts;
use crate::{pages::fix_draft_confirmed as CHECK, Findings, OneEntry};

/// The register field `drift api --draft` writes and `fix confirm` removes.
const DRAFT_KEY: &str = "draft";

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    one_entry(facts).over_held_entries(facts, findings)
}

pub(crate) fn one_entry(facts: &Facts) -> OneEntry<'_> {
    let Some(register) = &facts.records.register else {
        return OneEntry::nothing();
    };
    OneEntry::new(move |entry, findings| {
        let Some(mark) = entry.field(DRAFT_KEY) else {
            return;
        };
        let message = format!(
            "entry {} is a draft forkbook wrote from drift api and no person has confirmed it",
            entry.number
        );
        let note = format!(
            "review the fix's patch and its `Still to judge` note; keep it with `forkbook fix confirm {n}`, or edit the fix and then confirm it",
            n = entry.number
        );
        findings.push(
            CHECK
                .finding(&register.file, Some(mark.line), message)
                .with_note(note),
        );
    })
}
