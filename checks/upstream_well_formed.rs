//! `upstream-well-formed`: the `UPSTREAM` record has every key, once, with full commit SHAs.

use crate::facts::{Facts, Upstream};
use crate::{pages::upstream_well_formed as CHECK, Findings};
use forkbook_records::FIXES_FILE;

/// Keys every `UPSTREAM` must have.
const REQUIRED: &[&str] = &[
    "source",
    "branch",
    "commit",
    "fork_upstream_merge_base",
    "retargeted_to_mlx_pin",
    "license",
];

/// Keys whose value is a commit, written as a full 40-character SHA.
const COMMITS: &[&str] = &[
    "commit",
    "fork_upstream_merge_base",
    "retargeted_to_mlx_pin",
];

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let Some(record) = &facts.records.upstream else {
        let file = facts.record_path("UPSTREAM");
        findings.push(
            CHECK
                .finding(&file, None, "the `UPSTREAM` record is missing")
                .with_note("write it with the fork source, branch, commits and license"),
        );
        return;
    };
    for problem in &record.problems {
        findings.push(CHECK.finding(&record.file, Some(problem.line), &problem.message));
    }
    missing_keys(record, findings);
    duplicate_keys(record, findings);
    bad_values(record, findings);
}

fn missing_keys(record: &Upstream, findings: &mut Findings) {
    for key in REQUIRED {
        if record.pair(key).is_none() {
            findings.push(
                CHECK
                    .finding(&record.file, None, format!("key `{key}` is missing"))
                    .with_note(format!("add a line `{key}: <value>`")),
            );
        }
    }
}

fn duplicate_keys(record: &Upstream, findings: &mut Findings) {
    let lines = record.pairs();
    for (index, line) in lines.iter().enumerate() {
        if let Some(first) = lines[..index].iter().find(|l| l.key == line.key) {
            let message = format!(
                "key `{}` given again (first at line {})",
                line.key, first.line
            );
            findings.push(CHECK.finding(&record.file, Some(line.line), message));
        }
    }
}

fn bad_values(record: &Upstream, findings: &mut Findings) {
    for line in record.pairs() {
        if line.value.trim().is_empty() {
            let message = format!("key `{}` has no value", line.key);
            findings.push(CHECK.finding(&record.file, Some(line.line), message));
        } else if COMMITS.contains(&line.key.as_str()) && !is_full_sha(&line.value) {
            let message = format!(
                "`{}` must be a full 40-character commit SHA, found `{}`",
                line.key, line.value
            );
            findings.push(CHECK.finding(&record.file, Some(line.line), message));
        } else if line.key == "local_fixes" && line.value.trim() != FIXES_FILE {
            let message = format!(
                "`local_fixes` names `{}`, but the register forkbook reads and checks is \
                 `{FIXES_FILE}`",
                line.value.trim()
            );
            let note = format!("write `local_fixes: {FIXES_FILE}`, or drop the line");
            findings.push(
                CHECK
                    .finding(&record.file, Some(line.line), message)
                    .with_note(note),
            );
        }
    }
}

/// A full lowercase hex SHA-1.
pub(crate) fn is_full_sha(value: &str) -> bool {
    value.len() == 40
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
