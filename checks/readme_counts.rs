//! `readme-counts`: the counts the overlay's README states are the true ones.

use crate::facts::Facts;
use crate::{pages::readme_counts as CHECK, Finding, Findings};

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let Some(readme) = &facts.records.readme else {
        return;
    };
    let unread = readme.unread.iter().map(|unread| {
        CHECK
            .finding(
                &readme.file,
                Some(unread.line),
                format!("could not tell which count \"{}\" states", unread.sentence),
            )
            .with_note(format!(
                "say which it is (\"the backend has N files\", \"N core files\", \"N local fixes\"), or end the line with `{NOT_A_COUNT}` if it counts something else"
            ))
    });
    let Some(counts) = &readme.counts else {
        let mut unread = unread.peekable();
        if unread.peek().is_none() {
            findings.push(
                CHECK
                    .finding(&readme.file, None, "the README states no counts")
                    .with_note("`forkbook sync` at the recorded commits writes a counts block; `forkbook adopt --counts` adds one"),
            );
        }
        findings.extend(unread);
        return;
    };
    let mut found: Vec<Finding> = unread.collect();
    // Without the overlay each count is taken as stated: records read without their objects
    // (offline, nothing fetched) give no false mismatch.
    let actual = |name: &str| {
        let counts = &facts.overlay.as_ref()?.counts;
        forkbook_records::readme::figure(counts, name).map(|n| n as u64)
    };
    found.extend(counts
        .iter()
        .filter_map(|count| Some((count, actual(&count.name)?)))
        .filter(|(count, actual)| count.stated != *actual)
        .map(|(count, actual)| {
            let message = format!(
                "the README states {} {}, the overlay has {}",
                count.stated, count.name, actual
            );
            CHECK
                .finding(&readme.file, Some(count.line), message)
                .with_note("`forkbook sync` and `forkbook retarget` write the true figures (the counts block, or the numbers in the prose)")
        }));
    found.sort_by_key(|f| f.line);
    findings.extend(found);
}

/// A line holding this comment states no count (the engine's `counts::NOT_A_COUNT`).
use forkbook_records::readme::NOT_A_COUNT;
