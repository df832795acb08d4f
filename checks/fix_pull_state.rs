//! `fix-pull-state`: an entry's state agrees with the pull requests it cites, as the fork's and
//! upstream's pull refs say: `merged` cites one that is merged, `to-propose` and `proposed` cite
//! none of the fork's that is already further on.

use crate::facts::{CitedPull, Facts, PullState};
use crate::{pages::fix_pull_state as CHECK, Finding, Findings, OneEntry};
use forkbook_records::register::{Entry, State};
use std::collections::HashMap;

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    one_entry(facts).over_held_entries(facts, findings)
}

pub(crate) fn one_entry(facts: &Facts) -> OneEntry<'_> {
    let (Some(register), Some(overlay)) = (&facts.records.register, &facts.overlay) else {
        return OneEntry::nothing();
    };
    // The pulls each entry cites, in their order, gathered once rather than for each entry.
    let mut cited_by: HashMap<u32, Vec<&CitedPull>> = HashMap::new();
    for pull in &overlay.pulls {
        cited_by.entry(pull.entry).or_default().push(pull);
    }
    OneEntry::new(move |entry, findings| {
        let cited = cited_by.get(&entry.number).map_or(&[][..], Vec::as_slice);
        findings.extend(entry_findings(entry, cited, &register.file));
    })
}

fn entry_findings(entry: &Entry, cited: &[&CitedPull], file: &str) -> Vec<Finding> {
    let n = entry.number;
    match entry.state() {
        Some(State::Merged) => {
            // Its own pull request when it has a link; otherwise any it cites.
            let own: Vec<&CitedPull> = match cited.iter().any(|p| p.is_link) {
                true => cited.iter().copied().filter(|p| p.is_link).collect(),
                false => cited.to_vec(),
            };
            let merged = own
                .iter()
                .any(|p| matches!(p.state, PullState::Merged { .. }));
            let open = own
                .iter()
                .find(|p| matches!(p.state, PullState::Open { .. }));
            match (merged, open) {
                (false, Some(pull)) => vec![CHECK
                    .finding(file, Some(pull.line), format!(
                        "entry {n} is `merged`, but {} is open: its branch holds neither its head nor a commit naming it",
                        name(pull)
                    ))
                    .with_note("`forkbook fetch` brings the branch as it is now; if it is not merged, give the entry the state it has (`proposed`)")],
                _ => Vec::new(),
            }
        }
        Some(state @ (State::ToPropose | State::Proposed)) => (cited.iter())
            .filter(|p| p.repo == "fork" && (p.is_link || state == State::ToPropose))
            .filter_map(|pull| further_on(entry, state, pull, file))
            .collect(),
        _ => Vec::new(),
    }
}

/// A fork pull request that is further on than the entry says: open for `to-propose`, merged
/// for either.
fn further_on(entry: &Entry, state: State, pull: &CitedPull, file: &str) -> Option<Finding> {
    let n = entry.number;
    let said = match state {
        State::ToPropose => "is to be proposed",
        _ => "is `proposed`",
    };
    let (what, note) = match (&pull.state, state) {
        (PullState::Open { .. }, State::ToPropose) => (
            "is already open".to_string(),
            format!("record it: `forkbook propose --record {n} {}`", pull.cited),
        ),
        (PullState::Merged { commit, .. }, _) => (
            format!("is merged at `{}`", &commit[..12.min(commit.len())]),
            format!("mark entry {n} `merged` with `- fork-commit: {commit}`"),
        ),
        _ => return None,
    };
    let message = format!("entry {n} {said}, but {} {what}", name(pull));
    Some(
        CHECK
            .finding(file, Some(pull.line), message)
            .with_note(note),
    )
}

/// `the fork's pull request #12`.
fn name(pull: &CitedPull) -> String {
    format!("the {}'s pull request #{}", pull.repo, pull.number)
}
