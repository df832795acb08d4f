//! `overlay-matches-lock`: the materialized overlay is byte for byte what `overlay.lock` records.

use crate::facts::{Facts, LockMismatch, MismatchKind};
use crate::{pages::overlay_matches_lock as CHECK, Findings};

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let file = facts.record_path("overlay.lock");
    let Some(lock) = &facts.records.lock else {
        // adopt locks the overlay it builds: without the recorded commits it cannot.
        let note = if facts.overlay.is_some() {
            "write it with `forkbook adopt`: it locks the overlay as it stands and changes no \
             other file"
        } else {
            "the overlay cannot be built to lock it: the recorded commits are not in the object \
             cache; get them with `forkbook fetch` (or the mirror that has them), then \
             `forkbook adopt` writes it"
        };
        findings.push(
            CHECK
                .finding(&file, None, "the lock `overlay.lock` is missing")
                .with_note(note),
        );
        return;
    };
    let malformed = lock.problems.iter().map(|p| {
        CHECK
            .finding(&file, Some(p.line), &p.message)
            .with_note("regenerate the lock with `forkbook sync` at the recorded commits")
    });
    findings.extend(
        malformed.chain(
            facts
                .overlay
                .iter()
                .flat_map(|o| &o.lock_mismatches)
                .map(|m| CHECK.finding(&file, m.line, message(m)).with_note(NOTE)),
        ),
    );
}

const NOTE: &str = "the overlay changed outside forkbook, or the lock is stale: \
                    `forkbook sync --check` shows which";

fn message(mismatch: &LockMismatch) -> String {
    let path = &mismatch.path;
    match mismatch.kind {
        MismatchKind::Changed => format!("`{path}` differs from its locked hash"),
        MismatchKind::NotLocked => format!("`{path}` is in the overlay but not in the lock"),
        MismatchKind::Missing => format!("`{path}` is locked but missing from the overlay"),
    }
}
