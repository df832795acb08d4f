//! `overlay-matches-lock`: the materialized overlay is byte for byte what `overlay.lock` records.
//! Whole files (the files layout) are the overlay as they stand: they are compared with the lock
//! without the recorded commits too.

use crate::facts::{Facts, LockMismatch, MismatchKind};
use crate::{pages::overlay_matches_lock as CHECK, Findings};

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let file = facts.record_path("overlay.lock");
    let Some(lock) = &facts.records.lock else {
        // adopt locks the overlay as it stands: whole files need no commit, a series does.
        let note = match (&facts.overlay, &facts.whole_files) {
            (Some(_), _) => {
                "write it with `forkbook adopt`: it locks the overlay as it stands and changes no \
                 other file"
            }
            (None, Some(_)) => {
                "write it with `forkbook adopt`: it locks the whole files as they stand, which \
                 needs no commit, and changes no other file"
            }
            (None, None) => {
                "the overlay could not be built to lock it: a series' lock is its patches applied \
                 to the base tree, which needs the recorded commits; get them with `forkbook \
                 fetch` (or the mirror that has them), then `forkbook adopt` writes it"
            }
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
    findings.extend(malformed);
    // Without the overlay, the whole files against a well-formed lock: they need no commit.
    let whole: Vec<LockMismatch>;
    let (mismatches, note): (&[LockMismatch], &str) = match (&facts.overlay, &facts.whole_files) {
        (Some(overlay), _) => (&overlay.lock_mismatches, NOTE),
        (None, Some(files)) if lock.problems.is_empty() => {
            whole = lock.disagreements(files);
            (&whole, WHOLE_FILES_NOTE)
        }
        (None, _) => (&[], NOTE),
    };
    findings.extend(
        (mismatches.iter()).map(|m| CHECK.finding(&file, m.line, message(m)).with_note(note)),
    );
}

const NOTE: &str = "the overlay changed outside forkbook, or the lock is stale: \
                    `forkbook sync --check` shows which";

/// The note of a whole file that disagrees with the lock while the recorded commits are
/// missing: `sync --check` needs them, adopt does not.
const WHOLE_FILES_NOTE: &str = "a whole file changed after the lock was written: put it back as \
                                the lock has it, or keep the change as a local fix (name the \
                                file in an entry of LOCAL_FIXES.md) and lock the files again \
                                (delete `overlay.lock` and run `forkbook adopt`, which locks the \
                                whole files as they stand without the commits)";

fn message(mismatch: &LockMismatch) -> String {
    let path = &mismatch.path;
    match mismatch.kind {
        MismatchKind::Changed => format!("`{path}` differs from its locked hash"),
        MismatchKind::NotLocked => format!("`{path}` is in the overlay but not in the lock"),
        MismatchKind::Missing => format!("`{path}` is locked but missing from the overlay"),
    }
}
