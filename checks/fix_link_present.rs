//! `fix-link-present`: every entry that applies to the fork links to its pull request, and the
//! link really is a pull request of the fork or of upstream.

use crate::facts::{Facts, Repos};
use crate::{pages::fix_link_present as CHECK, Finding, Findings, OneEntry};
use forkbook_records::register::{Entry, State};
use forkbook_records::remote::same_repository;

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    one_entry(facts).over_held_entries(facts, findings)
}

pub(crate) fn one_entry(facts: &Facts) -> OneEntry<'_> {
    let Some(register) = &facts.records.register else {
        return OneEntry::nothing();
    };
    OneEntry::new(move |entry, findings| {
        if entry.applies_to_fork() {
            findings.extend(entry_link(entry, &facts.repos, &register.file));
        }
    })
}

fn entry_link(entry: &Entry, repos: &Repos, file: &str) -> Option<Finding> {
    // The link a field gives, or the one the words that give the state name (one rule with
    // `fix-state-complete` and `fixes migrate`: `Entry::value`).
    let Some(link) = entry.value("link") else {
        return Some(no_link(entry, file));
    };
    if is_pull_request_of(link, repos) {
        return None;
    }
    let line = (entry.field("link").map(|f| f.line))
        .or(entry.stated.as_ref().map(|s| s.line))
        .unwrap_or(entry.line);
    let message = format!(
        "entry {} links `{link}`, which is no pull request of {}",
        entry.number,
        describe(repos)
    );
    Some(
        CHECK.finding(file, Some(line), message).with_note(
            "link the pull request itself, e.g. `https://github.com/OWNER/REPO/pull/12`",
        ),
    )
}

/// An entry with no link: what its state says it is, and how to give it its link.
fn no_link(entry: &Entry, file: &str) -> Finding {
    let said = match (entry.state(), &entry.stated) {
        (Some(State::ToPropose), Some(stated)) if entry.field("state").is_none() => {
            format!("is to be proposed (read from {}) but has", stated.from)
        }
        (Some(State::ToPropose), _) => "is to be proposed but has".to_string(),
        // No state at all: its words never say it applies to the fork, so do not claim so.
        (None, _) => "has no upstream state and".to_string(),
        _ => "applies to the fork but has".to_string(),
    };
    let message = format!("entry {} {said} no upstream link", entry.number);
    let held = entry
        .reason()
        .filter(|_| entry.state() == Some(State::ToPropose))
        .map_or(String::new(), |r| format!(" (its hold: {r})"));
    let note = if entry.state().is_none() {
        "give it its state first (`fix-state-complete` says how); one that applies to the \
         fork then needs the link of its pull request"
            .to_string()
    } else {
        format!(
            "send it with `forkbook propose {n}` and record the pull request with \
             `forkbook propose --record {n} URL`, or mark it `kept-local` with a reason and an issue{held}",
            n = entry.number
        )
    };
    CHECK
        .finding(file, Some(entry.line), message)
        .with_note(note)
}

/// Whether `link` is `<repo>/pull/<n>` (GitHub) or `<repo>/-/merge_requests/<n>` (GitLab) for
/// the fork or upstream. When either web address is unknown (a remote given as a local mirror),
/// any repository's pull request is accepted: the check cannot tell, so it does not guess.
pub(crate) fn is_pull_request_of(link: &str, repos: &Repos) -> bool {
    let link = link.trim().trim_start_matches('<').trim_end_matches('>');
    let Some((repo, number)) = split_pull_request(link) else {
        return false;
    };
    let all_known = repos.fork.is_some() && repos.upstream.is_some();
    let mut known = [&repos.fork, &repos.upstream].into_iter().flatten();
    !number.is_empty() && (!all_known || known.any(|r| same_repository(r, repo)))
}

/// Splits a pull request address into its repository and number.
fn split_pull_request(link: &str) -> Option<(&str, &str)> {
    if !(link.starts_with("https://") || link.starts_with("http://")) {
        return None;
    }
    let link = link.split(['#', '?']).next().unwrap_or(link);
    let (repo, rest) = link
        .split_once("/-/merge_requests/")
        .or_else(|| link.rsplit_once("/pull/"))?;
    let (number, page) = rest.split_once('/').unwrap_or((rest, ""));
    // What follows the number is a page of the pull request (`/files`), never a dot segment or
    // an escape a browser would resolve to another address.
    let plain = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    (number.bytes().all(|b| b.is_ascii_digit()) && page.split('/').all(plain))
        .then_some((repo, number))
}

fn describe(repos: &Repos) -> String {
    let known: Vec<String> = [&repos.fork, &repos.upstream]
        .into_iter()
        .flatten()
        .map(|r| format!("`{r}`"))
        .collect();
    if known.len() < 2 {
        "any repository".to_string()
    } else {
        known.join(" or ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repos() -> Repos {
        Repos {
            fork: Some("https://github.com/NripeshN/mlx".into()),
            upstream: Some("https://github.com/ml-explore/mlx.git".into()),
            ..Repos::default()
        }
    }

    #[test]
    fn pull_requests_of_fork_and_upstream_are_accepted() {
        assert!(is_pull_request_of(
            "https://github.com/NripeshN/mlx/pull/12",
            &repos()
        ));
        assert!(is_pull_request_of(
            "https://github.com/ml-explore/mlx/pull/2700/files#diff",
            &repos()
        ));
    }

    #[test]
    fn other_repositories_issues_and_commits_are_refused() {
        for link in [
            "https://github.com/someone/mlx/pull/12",
            "https://github.com/NripeshN/mlx/issues/12",
            "https://github.com/NripeshN/mlx/commit/abc",
            "https://github.com/NripeshN/mlx/pull/",
            "#12",
            // A browser resolves the dot segments: these lead to another repository.
            "https://github.com/NripeshN/mlx/pull/12/../../../../someone/mlx",
            "https://github.com/NripeshN/mlx/pull/12/%2e%2e/%2E%2e/../../someone/mlx",
            "https://github.com/NripeshN/mlx/pull/12/./../../../../someone/mlx",
            "https://github.com/NripeshN/mlx/pull/12\\..\\..\\someone",
        ] {
            assert!(!is_pull_request_of(link, &repos()), "{link}");
        }
    }

    #[test]
    fn with_a_mirror_for_a_remote_any_pull_request_is_accepted_but_nothing_else() {
        let repos = Repos {
            fork: None,
            upstream: Some("https://github.com/ml-explore/mlx".into()),
            ..Repos::default()
        };
        assert!(is_pull_request_of(
            "https://github.com/NripeshN/mlx/pull/12",
            &repos
        ));
        assert!(!is_pull_request_of(
            "https://github.com/NripeshN/mlx/issues/12",
            &repos
        ));
    }
}
