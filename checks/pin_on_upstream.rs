//! `pin-on-upstream`: the pin the overlay is built on is a commit upstream published.

use crate::facts::Facts;
use crate::{pages::pin_on_upstream as CHECK, Findings};

/// The `UPSTREAM` key holding the pin.
const PIN_KEY: &str = "retargeted_to_mlx_pin";

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let (Some(overlay), Some(upstream)) = (&facts.overlay, &facts.records.upstream) else {
        return;
    };
    let Some(why) = &overlay.pin_not_upstream else {
        return;
    };
    let line = upstream.pair(PIN_KEY).map(|pin| pin.line);
    let note = "retarget onto a commit of upstream's branch, a tag or a pull request's head \
                (`forkbook retarget REV`); `forkbook fetch` brings upstream's refs";
    findings.push(
        CHECK
            .finding(&upstream.file, line, format!("the pin {why}"))
            .with_note(note),
    );
}
