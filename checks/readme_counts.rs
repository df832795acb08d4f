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
    let Some(counts) = &readme.counts else {
        return vec![CHECK
            .finding(&readme.file, None, "the README has no counts block")
            .with_note("`forkbook sync` at the recorded commits writes it")];
    };
    counts
        .iter()
        .filter(|count| count.stated != count.actual)
        .map(|count| {
            let message = format!(
                "the README states {} {}, the overlay has {}",
                count.stated, count.name, count.actual
            );
            CHECK
                .finding(&readme.file, Some(count.line), message)
                .with_note("`forkbook sync` and `forkbook retarget` rewrite the counts block")
        })
        .collect()
}
