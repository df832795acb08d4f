//! `residual-record-current`: the residual record's header names the commits `UPSTREAM` records
//! and the SHA-256 of every core file as the overlay has it.

use crate::facts::{Facts, ResidualRecord};
use crate::{pages::residual_record_current as CHECK, Finding, Findings};

const NOTE: &str =
    "`forkbook residual --write` rewrites the header (its notes kept); review the diff it writes";

/// The `UPSTREAM` key each header commit must equal.
fn upstream_key(key: &str) -> &str {
    match key {
        "pin" => "retargeted_to_mlx_pin",
        "fork" => "commit",
        other => other,
    }
}

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let Some(record) = &facts.records.residual_record else {
        return;
    };
    findings.extend(
        (record.problems.iter())
            .map(|p| CHECK.finding(&record.file, Some(p.line), p.message.clone())),
    );
    findings.extend(commit_findings(record, facts));
    if let Some(overlay) = &facts.overlay {
        findings.extend(hash_findings(record, &overlay.core_hashes));
    }
}

fn commit_findings(record: &ResidualRecord, facts: &Facts) -> Vec<Finding> {
    let Some(upstream) = &facts.records.upstream else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for commit in &record.commits {
        let key = upstream_key(&commit.key);
        let expected = upstream.pair(key).or_else(|| {
            (commit.key == "pin")
                .then(|| upstream.pair("fork_upstream_merge_base"))
                .flatten()
        });
        let Some(expected) = expected else { continue };
        if !expected.value.eq_ignore_ascii_case(&commit.value) {
            let message = format!(
                "`{}` is `{}`, but {} records `{key}: {}`",
                commit.key, commit.value, upstream.file, expected.value
            );
            out.push(
                CHECK
                    .finding(&record.file, Some(commit.line), message)
                    .with_note(NOTE),
            );
        }
    }
    if record.core_header() {
        for key in ["pin", "fork", "fork_upstream_merge_base"] {
            if !record.commits.iter().any(|c| c.key == key) {
                out.push(
                    CHECK
                        .finding(
                            &record.file,
                            None,
                            format!("the header has no `# {key}:` line"),
                        )
                        .with_note(NOTE),
                );
            }
        }
    }
    out
}

fn hash_findings(record: &ResidualRecord, actual: &[(String, String)]) -> Vec<Finding> {
    let mut out = Vec::new();
    for hash in &record.hashes {
        let message = match actual.iter().find(|(path, _)| *path == hash.key) {
            Some((_, sha)) if sha.eq_ignore_ascii_case(&hash.value) => continue,
            Some(_) => format!("`{}` no longer has the recorded SHA-256: the core file changed since the residual was reviewed", hash.key),
            None => format!("`{}` is not a core file of the overlay", hash.key),
        };
        out.push(
            CHECK
                .finding(&record.file, Some(hash.line), message)
                .with_note(NOTE),
        );
    }
    if record.core_header() {
        for (path, _) in actual {
            if !record.hashes.iter().any(|h| h.key == *path) {
                let message = format!("core file `{path}` has no `# overlay-sha256:` line");
                out.push(CHECK.finding(&record.file, None, message).with_note(NOTE));
            }
        }
    }
    out
}
