//! `patch-not-empty`: in the patch layout, no patch of the series is empty. A move leaves a
//! fix's patch empty when the new base already holds the fix: the overlay is still right, but
//! the register still says the fix is ours.

use crate::facts::Facts;
use crate::{pages::patch_not_empty as CHECK, Findings};

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let Some(series) = &facts.records.patch_series else {
        return;
    };
    findings.extend(
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
    );
}
