//! `no-conflict-markers`: no materialized overlay file, and no record, holds a conflict marker.

use crate::facts::{Facts, MarkedFile};
use crate::{pages::no_conflict_markers as CHECK, Finding, Findings};

const NOTE: &str = "resolve it in a materialized copy (`forkbook materialize --out DIR`, edit), \
                    then record the resolution with `forkbook fix add --from DIR --title \"...\"`";

const RECORD_NOTE: &str = "a merge of the records was left unresolved: edit the record so \
                           that both sides' intent survives, remove the markers, then run \
                           `forkbook check` again";

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let overlay = facts
        .overlay
        .iter()
        .flat_map(|o| &o.markers)
        .flat_map(|marked| findings_in(marked, NOTE));
    let records = facts
        .record_markers
        .iter()
        .flat_map(|marked| findings_in(marked, RECORD_NOTE));
    findings.extend(overlay.chain(records));
}

fn findings_in(marked: &MarkedFile, note: &str) -> Vec<Finding> {
    let regions = marked.regions.iter().map(|region| {
        let message = match region.end {
            Some(end) => format!(
                "conflict left unresolved: markers from line {} to {end}",
                region.start
            ),
            None => format!(
                "conflict left unresolved: `<<<<<<<` at line {} is never closed",
                region.start
            ),
        };
        CHECK
            .finding(&marked.file, Some(region.start), message)
            .with_note(note)
    });
    let stray = marked.stray.iter().map(|marker| {
        CHECK
            .finding(
                &marked.file,
                Some(marker.line),
                format!(
                    "conflict marker `{}` outside any region",
                    marker.kind.text()
                ),
            )
            .with_note(note)
    });
    regions.chain(stray).collect()
}
