//! `pin-matches-build`: the pin in `UPSTREAM` is the commit the project's build really uses.

use crate::facts::Facts;
use crate::{pages::pin_matches_build as CHECK, Findings};

/// The `UPSTREAM` key holding the pin.
const PIN_KEY: &str = "retargeted_to_mlx_pin";

/// Shortest abbreviation accepted in the build's record.
const MIN_ABBREV: usize = 7;

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let (Some(build), Some(upstream)) = (&facts.records.build_pin, &facts.records.upstream) else {
        return;
    };
    let Some(pin) = upstream.pair(PIN_KEY) else {
        return; // upstream-well-formed reports the missing key
    };
    if build.value.trim().is_empty() {
        let message = format!("`{}` records no upstream commit", build.file);
        let note =
            "write the build's pin there as a full 40-character SHA, or unset `[overlay] pin_file`";
        findings.push(CHECK.finding(&build.file, None, message).with_note(note));
        return;
    }
    let written = build.value.trim().to_ascii_lowercase();
    if written.len() >= MIN_ABBREV && pin.value.starts_with(&written) {
        return;
    }
    let message = format!(
        "the build uses pin `{}` but `{}` records `{}` (line {})",
        build.value, upstream.file, pin.value, pin.line
    );
    findings.push(
        CHECK
            .finding(&build.file, Some(build.line), message)
            .with_note("retarget the overlay to the build's pin, or bump the build's pin to match"),
    );
}
