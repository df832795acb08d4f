//! The state of every pull request or issue of the fork or upstream that the register cites,
//! read from the repositories' pull refs rather than from the register's words.
//!
//! A GitHub repository keeps `refs/pull/N/head` for every pull request (a mirror of it has them;
//! a fetch maps them to `refs/remotes/NAME/pull/N` in the cache). A number with a head ref is
//! `open` unless the branch holds it: its head is an ancestor of the branch, or a commit of the
//! branch names it (`(#N)`, a squash merge's subject; `Merge pull request #N`). A number with
//! no head ref is `absent`: an issue, or a pull request the mirror does not hold; a repository
//! with no pull refs at all says nothing of any number (see [`Pulls::unread`]). For the fork,
//! only its own commits are read for names (upstream's history, which the fork merges, has its
//! own numbers).

use std::collections::{BTreeMap, BTreeSet};

use git2::Oid;
use regex::Regex;

use crate::cache::{Cache, Remote};
use crate::error::Result;
use crate::project::Project;
use crate::register::{Entry, Register};
pub use forkbook_checks::facts::{CitedPull, PullState};

/// A pull request or issue number an entry cites, before its state is read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Citation {
    entry: u32,
    line: usize,
    cited: String,
    remote: Remote,
    number: u32,
    is_link: bool,
}

/// The register's citations with their states, and the repositories whose pull refs could
/// not be read (their citations have no state then: nothing is claimed of them).
#[derive(Debug, Clone, Default)]
pub struct Pulls {
    pub states: Vec<CitedPull>,
    /// Why a remote's citations have no state (`no pull refs of the fork to read: …`).
    pub unread: Vec<String>,
    /// The other repositories the register cites (`lablup/app`), each with how many of its
    /// numbers: neither the fork nor upstream, so no pull refs of theirs are read.
    pub elsewhere: Vec<(String, usize)>,
}

/// Every citation of the register with its state, in entry order; fork and upstream each read
/// once.
pub fn states(project: &Project, cache: &Cache, register: &Register) -> Vec<CitedPull> {
    read(project, cache, register).states
}

/// [`states`], and why a remote's pull refs could not be read.
pub fn read(project: &Project, cache: &Cache, register: &Register) -> Pulls {
    let mut cited = Cited::default();
    register
        .entries
        .iter()
        .for_each(|entry| cited.add(project, entry));
    let (states, unread) = cited.read(cache);
    Pulls {
        states,
        unread,
        elsewhere: elsewhere(project, register),
    }
}

/// The citations of entries handed over one at a time, their states read once for all of
/// them: what `check` keeps of each entry as it reads the register, holding no entry.
#[derive(Debug, Default)]
pub struct Cited(Vec<Citation>);

impl Cited {
    /// Adds the citations of the register's next entry.
    pub fn add(&mut self, project: &Project, entry: &Entry) {
        self.0.extend(citations(project, entry));
    }

    /// Every citation with its state, in entry order ([`states`]).
    pub fn states(self, cache: &Cache) -> Vec<CitedPull> {
        self.read(cache).0
    }

    /// The citations with their states, and why a remote's pull refs could not be read.
    fn read(self, cache: &Cache) -> (Vec<CitedPull>, Vec<String>) {
        let citations = self.0;
        let mut read: BTreeMap<&str, BTreeMap<u32, PullState>> = BTreeMap::new();
        let mut unread = Vec::new();
        for remote in Remote::ALL {
            let numbers: BTreeSet<u32> = (citations.iter())
                .filter(|c| c.remote == remote)
                .map(|c| c.number)
                .collect();
            if numbers.is_empty() {
                continue;
            }
            match remote_states(cache, remote, &numbers) {
                Ok(states) => {
                    read.insert(remote.name(), states);
                }
                Err(e) => unread.push(e.message()),
            }
        }
        let states = citations
            .into_iter()
            .filter_map(|c| {
                let state = read.get(c.remote.name())?.get(&c.number)?.clone();
                Some(CitedPull {
                    entry: c.entry,
                    line: c.line,
                    cited: c.cited,
                    repo: c.remote.name().to_string(),
                    number: c.number,
                    is_link: c.is_link,
                    state,
                })
            })
            .collect();
        (states, unread)
    }
}

/// Each repository the register cites that is neither the fork nor upstream, with how many
/// distinct numbers of it.
fn elsewhere(project: &Project, register: &Register) -> Vec<(String, usize)> {
    let mut numbers: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for entry in &register.entries {
        let written = entry.links.iter().chain(&entry.issues);
        for (repo, number) in written.filter_map(|w| split_reference(w)) {
            if which_remote(project, repo).is_none() {
                let numbers = numbers.entry(repo.to_ascii_lowercase()).or_default();
                numbers.insert(number);
            }
        }
    }
    numbers.into_iter().map(|(r, n)| (r, n.len())).collect()
}

/// The numbers of `remote` and their states.
fn remote_states(
    cache: &Cache,
    remote: Remote,
    numbers: &BTreeSet<u32>,
) -> Result<BTreeMap<u32, PullState>> {
    let (heads, tip) = cache.pull_heads(remote)?;
    let repo = cache.repo();
    let on_branch = |head: Oid| {
        tip.is_some_and(|tip| head == tip || repo.graph_descendant_of(tip, head).unwrap_or(false))
    };
    let named = match tip {
        Some(tip) => named_on_branch(cache, remote, tip, numbers),
        None => BTreeMap::new(),
    };
    let state = |number: &u32| match (heads.get(number), named.get(number)) {
        (Some(&head), _) if on_branch(head) => PullState::Merged {
            commit: head.to_string(),
            head: Some(head.to_string()),
        },
        (head, Some(commit)) => PullState::Merged {
            commit: commit.to_string(),
            head: head.map(Oid::to_string),
        },
        (Some(head), None) => PullState::Open {
            head: head.to_string(),
        },
        (None, None) => PullState::Absent,
    };
    Ok(numbers.iter().map(|n| (*n, state(n))).collect())
}

/// The newest commit of the branch whose message names each number as merged. The fork's own
/// commits only: upstream's branch, when the cache has it, is hidden from the fork's walk.
fn named_on_branch(
    cache: &Cache,
    remote: Remote,
    tip: Oid,
    numbers: &BTreeSet<u32>,
) -> BTreeMap<u32, Oid> {
    let naming = Regex::new(r"\(#(\d+)\)|[Mm]erge pull request #(\d+)").expect("a valid pattern");
    let mut found = BTreeMap::new();
    let Ok(mut walk) = cache.repo().revwalk() else {
        return found;
    };
    if walk.push(tip).is_err() {
        return found;
    }
    if remote == Remote::Fork {
        if let Some(upstream) = cache.pull_heads(Remote::Upstream).ok().and_then(|(_, t)| t) {
            let _ = walk.hide(upstream);
        }
    }
    for oid in walk.flatten() {
        let Ok(commit) = cache.repo().find_commit(oid) else {
            continue;
        };
        let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
        for captures in naming.captures_iter(&message) {
            let number = captures.get(1).or_else(|| captures.get(2));
            if let Some(n) = number.and_then(|m| m.as_str().parse::<u32>().ok()) {
                if numbers.contains(&n) {
                    found.entry(n).or_insert(oid);
                }
            }
        }
        if found.len() == numbers.len() {
            break;
        }
    }
    found
}

/// The pull requests and issues of the fork and upstream an entry cites: its `link` field
/// first, then the web addresses and `owner/repo#N` references of its text, each number once.
fn citations(project: &Project, entry: &Entry) -> Vec<Citation> {
    let link = entry.field("link").filter(|f| !f.value.is_empty());
    let mut written: Vec<(String, usize, bool)> = Vec::new();
    if let Some(field) = link {
        written.push((field.value.trim().to_string(), field.line, true));
    }
    written.extend(entry.links.iter().map(|l| (l.clone(), entry.line, false)));
    written.extend(entry.issues.iter().map(|i| (i.clone(), entry.line, false)));
    let mut out: Vec<Citation> = Vec::new();
    for (cited, line, is_link) in written {
        let Some((repo, number)) = split_reference(&cited) else {
            continue;
        };
        let Some(remote) = which_remote(project, repo) else {
            continue;
        };
        if out.iter().any(|c| c.remote == remote && c.number == number) {
            continue;
        }
        out.push(Citation {
            entry: entry.number,
            line,
            cited,
            remote,
            number,
            is_link,
        });
    }
    out
}

/// `(owner/repo, N)` of `https://host/owner/repo/pull/N[/…]`, `…/issues/N`, or `owner/repo#N`.
fn split_reference(cited: &str) -> Option<(&str, u32)> {
    let cited = cited.trim().trim_start_matches('<').trim_end_matches('>');
    let (repo, number) = match cited.split_once("://") {
        Some((_, rest)) => {
            let rest = rest.split(['#', '?']).next().unwrap_or(rest);
            let (_host, path) = rest.split_once('/')?;
            let (repo, tail) = (path.split_once("/pull/"))
                .or_else(|| path.split_once("/pulls/"))
                .or_else(|| path.split_once("/issues/"))?;
            (repo, tail.split('/').next().unwrap_or(tail))
        }
        None => cited.split_once('#')?,
    };
    let number = number.parse().ok()?;
    (repo.matches('/').count() == 1).then_some((repo, number))
}

/// Whether `owner/repo` is the fork's or upstream's, by `forkbook.toml`'s web addresses.
fn which_remote(project: &Project, repo: &str) -> Option<Remote> {
    let tail = |web: &Option<String>| {
        let web = web.as_deref()?;
        let path = web.split_once("://")?.1.split_once('/')?.1;
        Some(path.eq_ignore_ascii_case(repo))
    };
    match (tail(&project.web_urls.0), tail(&project.web_urls.1)) {
        (Some(true), _) => Some(Remote::Fork),
        (_, Some(true)) => Some(Remote::Upstream),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_split_into_repository_and_number() {
        let pull = "https://github.com/NripeshN/mlx/pull/12/files";
        assert_eq!(split_reference(pull), Some(("NripeshN/mlx", 12)));
        let issue = "<https://github.com/ml-explore/mlx/issues/3947#issuecomment-1>";
        assert_eq!(split_reference(issue), Some(("ml-explore/mlx", 3947)));
        assert_eq!(
            split_reference("ml-explore/mlx#7"),
            Some(("ml-explore/mlx", 7))
        );
        assert_eq!(split_reference("#1876"), None, "the project's own issue");
        assert_eq!(split_reference("https://github.com/o/r/commit/abc"), None);
    }
}
