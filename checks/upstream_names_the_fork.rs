//! `upstream-names-the-fork`: `UPSTREAM` names the fork and branch the overlay is read from.

use crate::facts::{Facts, KeyValueLine, Repos};
use crate::{pages::upstream_names_the_fork as CHECK, Findings};
use forkbook_records::remote::same_repository;
use forkbook_records::upstream::keys;

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    // Without a configured fork (the facts of a test) there is nothing to compare with.
    let Some(record) = facts
        .records
        .upstream
        .as_ref()
        .filter(|_| !facts.repos.fork_url.is_empty())
    else {
        return;
    };
    findings.extend(
        record
            .pairs()
            .into_iter()
            .filter_map(|pair| differs(pair, &facts.repos))
            .map(|(line, message, note)| {
                CHECK
                    .finding(&record.file, Some(line), message)
                    .with_note(note)
            }),
    );
}

/// A `source` or `branch` line that names another fork or branch than `[fork]` does.
fn differs(pair: &KeyValueLine, repos: &Repos) -> Option<(usize, String, String)> {
    let value = pair.value.trim();
    let (configured, what) = match pair.key.as_str() {
        keys::SOURCE if !same_repository(value, &repos.fork_url) => (&repos.fork_url, "url"),
        keys::BRANCH if value != repos.fork_branch => (&repos.fork_branch, "branch"),
        _ => return None,
    };
    let key = &pair.key;
    let message = format!(
        "`{key}` names `{value}`, but the checks read the fork from `{configured}` \
         (forkbook.toml's `[fork] {what}`)"
    );
    let note = format!(
        "write `{key}: {configured}` here, or set `[fork] {what}` to the fork the records name \
         and run `forkbook sync`"
    );
    Some((pair.line, message, note))
}
