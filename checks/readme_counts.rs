//! `readme-counts`: the counts the overlay's README states are the true ones.

use crate::facts::Facts;
use crate::{Chapter, Check, Finding, Severity};

pub(crate) const CHECK: Check = Check {
    id: "readme-counts",
    name: "README counts are true",
    severity: Severity::Error,
    chapter: Chapter::Checks,
    doc: include_str!("readme-counts.md"),
    source: file!(),
    run,
};

fn run(facts: &Facts) -> Vec<Finding> {
    let Some(readme) = &facts.readme else {
        return Vec::new();
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
        let mut findings: Vec<Finding> = unread.collect();
        if findings.is_empty() {
            findings.push(
                CHECK
                    .finding(&readme.file, None, "the README states no counts")
                    .with_note("`forkbook sync` at the recorded commits writes a counts block; `forkbook adopt --counts` adds one"),
            );
        }
        return findings;
    };
    let mut findings: Vec<Finding> = unread.collect();
    findings.extend(counts
        .iter()
        .filter(|count| count.stated != count.actual)
        .map(|count| {
            let message = format!(
                "the README states {} {}, the overlay has {}",
                count.stated, count.name, count.actual
            );
            CHECK
                .finding(&readme.file, Some(count.line), message)
                .with_note("`forkbook sync` and `forkbook retarget` write the true figures (the counts block, or the numbers in the prose)")
        }));
    findings.sort_by_key(|f| f.line);
    findings
}

/// A line holding this comment states no count (the engine's `counts::NOT_A_COUNT`).
const NOT_A_COUNT: &str = "<!-- forkbook:not-a-count -->";
