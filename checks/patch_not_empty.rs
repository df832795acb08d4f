//! `patch-not-empty`: in the patch layout, no patch of the series is empty. A move leaves a
//! fix's patch empty when the new base already holds the fix: the overlay is still right, but
//! the register still says the fix is ours.

use crate::facts::Facts;
use crate::{Chapter, Check, Finding, Needs, Severity};

pub(crate) const CHECK: Check = Check {
    id: "patch-not-empty",
    name: "no patch of the series is empty",
    severity: Severity::Error,
    chapter: Chapter::Register,
    doc: include_str!("patch-not-empty.md"),
    source: file!(),
    needs: Needs::Records,
    run,
};

fn run(facts: &Facts) -> Vec<Finding> {
    let Some(series) = &facts.records.patch_series else {
        return Vec::new();
    };
    series
        .iter()
        .filter(|patch| patch.empty)
        .map(|patch| {
            CHECK
                .finding(
                    &patch.file,
                    None,
                    format!(
                        "the patch of entry {} holds no change: the base tree already holds the fix",
                        patch.number
                    ),
                )
                .with_note(format!(
                    "mark entry {} `merged` (with the commit or pull request that brought it) and remove the patch",
                    patch.number
                ))
        })
        .collect()
}
