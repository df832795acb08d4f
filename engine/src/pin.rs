//! The upstream pin: the one rule for whether a commit is upstream's, and the stand-in a run
//! may use for a recorded pin that no mirror has.
//!
//! A pin is the upstream commit the build uses, so it must be one upstream published: reachable
//! from one of upstream's branches, tags or pull request heads (`refs/pull/N/head`). The object
//! cache holds the fork's objects beside upstream's, and a host may serve a fork's commit by its
//! id through the upstream's URL, so being found proves nothing; being reachable from
//! upstream's refs does. `retarget`, `roll --to`, a stand-in and the check `pin-on-upstream` all
//! ask [`upstream_holder`].
//!
//! A stand-in pin (`--stand-in-pin REV`, `[upstream] stand_in_pin`) is a run option, never a
//! record: the records keep their pin, nothing is written under a stand-in
//! ([`crate::project::Project::lock_records`]), and every output says it ran on one
//! ([`stand_in_head`]), each finding on a core file (which depends on the pin) marked
//! [`STAND_IN_MARK`].

use super::cache::{short, Cache, Remote};
use super::error::{Error, Result};
use super::project::Project;
use forkbook_records::register;
use git2::{Oid, Repository};
use std::collections::HashSet;

/// What a finding that depends on the pin says under a stand-in.
pub const STAND_IN_MARK: &str = "(stand-in pin)";

/// What kind of upstream ref holds a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RefKind {
    /// The configured branch (`[upstream] branch`), looked at first.
    Branch,
    /// Any other branch.
    OtherBranch,
    Tag,
    /// A pull request's head (`refs/pull/N/head`).
    PullRequest,
}

/// One ref of upstream's: what it is, its name, and the commit it names.
#[derive(Debug, Clone)]
pub struct UpstreamRef {
    pub kind: RefKind,
    /// The branch or tag name, or the pull request's number.
    pub name: String,
    pub tip: Oid,
}

impl UpstreamRef {
    /// `upstream's branch `main``, `the tag `v1``, `pull request #7 (`refs/pull/7/head`)`.
    pub fn describe(&self) -> String {
        match self.kind {
            RefKind::Branch | RefKind::OtherBranch => format!("upstream's branch `{}`", self.name),
            RefKind::Tag => format!("upstream's tag `{}`", self.name),
            RefKind::PullRequest => format!(
                "upstream's pull request #{0} (`refs/pull/{0}/head`)",
                self.name
            ),
        }
    }
}

/// Upstream's refs as this machine knows them: a mirror's own (read in place), else what the
/// cache fetched from the upstream (`refs/remotes/upstream/…`), with the repository to walk.
/// The configured branch first, then the other branches, the tags and the pull requests.
fn upstream_refs(cache: &Cache) -> Result<(Option<Repository>, Vec<UpstreamRef>)> {
    let (branch, _) = cache.branch_and_url(Remote::Upstream);
    let mirror = match cache.mirror(Remote::Upstream) {
        Some(dir) => Repository::open_bare(&dir)
            .or_else(|_| Repository::open(&dir))
            .ok(),
        None => None,
    };
    let repo = mirror.as_ref().unwrap_or(cache.repo());
    let mut refs = Vec::new();
    for reference in repo.references()?.flatten() {
        let Ok(name) = reference.name() else {
            continue;
        };
        let kind_and_name = match &mirror {
            Some(_) => mirror_ref(name),
            None => cache_ref(name),
        };
        let Some((kind, short_name)) = kind_and_name else {
            continue;
        };
        let Ok(tip) = reference.peel_to_commit().map(|c| c.id()) else {
            continue;
        };
        let kind = match kind {
            RefKind::OtherBranch if short_name == branch => RefKind::Branch,
            kind => kind,
        };
        refs.push(UpstreamRef {
            kind,
            name: short_name.to_string(),
            tip,
        });
    }
    refs.sort_by(|a, b| {
        let number = |r: &UpstreamRef| r.name.parse::<u64>().unwrap_or(u64::MAX);
        (a.kind, number(a), &a.name).cmp(&(b.kind, number(b), &b.name))
    });
    Ok((mirror, refs))
}

/// A ref of a mirror of upstream: its branches, tags and pull request heads, and in a working
/// clone the branches of `origin`, the repository it was cloned from. Nothing else: such a clone
/// may hold other remotes (the fork's among them).
fn mirror_ref(name: &str) -> Option<(RefKind, &str)> {
    let branch = name
        .strip_prefix("refs/heads/")
        .or_else(|| name.strip_prefix("refs/remotes/origin/"));
    if let Some(branch) = branch.filter(|b| *b != "HEAD") {
        return Some((RefKind::OtherBranch, branch));
    }
    if let Some(tag) = name.strip_prefix("refs/tags/") {
        return Some((RefKind::Tag, tag));
    }
    let number = name.strip_prefix("refs/pull/")?.strip_suffix("/head")?;
    Some((RefKind::PullRequest, number))
}

/// A ref the cache fetched from upstream: `refs/remotes/upstream/BRANCH`, `…/tags/TAG` and
/// `…/pull/N` (what [`fetch_upstream_refs`] and the cache's off-branch fetch write).
fn cache_ref(name: &str) -> Option<(RefKind, &str)> {
    let rest = name.strip_prefix("refs/remotes/upstream/")?;
    if let Some(number) = rest.strip_prefix("pull/") {
        return Some((RefKind::PullRequest, number));
    }
    if let Some(tag) = rest.strip_prefix("tags/") {
        return Some((RefKind::Tag, tag));
    }
    Some((RefKind::OtherBranch, rest))
}

/// The first of `refs` (in their order) that `commit` is reachable from. One walk over the
/// history: each commit is visited once, by the first ref that reaches it.
fn first_holding(repo: &Repository, refs: &[UpstreamRef], commit: Oid) -> Option<UpstreamRef> {
    let mut seen = HashSet::new();
    for reference in refs {
        let mut todo = vec![reference.tip];
        while let Some(oid) = todo.pop() {
            if !seen.insert(oid) {
                continue;
            }
            if oid == commit {
                return Some(reference.clone());
            }
            // A mirror may lack old objects (a shallow clone): what it lacks holds nothing.
            if let Ok(found) = repo.find_commit(oid) {
                todo.extend(found.parent_ids());
            }
        }
    }
    None
}

/// The upstream ref that holds `commit`, from the refs this machine knows (no fetch).
pub fn known_holder(cache: &Cache, commit: Oid) -> Result<Option<UpstreamRef>> {
    let (mirror, refs) = upstream_refs(cache)?;
    let repo = mirror.as_ref().unwrap_or(cache.repo());
    Ok(first_holding(repo, &refs, commit))
}

/// The upstream ref that holds `commit`, or the error saying why it is no upstream commit.
/// Where upstream is a URL (not a mirror here) and the run may go online, upstream's branches,
/// tags and pull request heads are fetched before the commit is refused.
pub fn upstream_holder(cache: &Cache, commit: Oid) -> Result<UpstreamRef> {
    if let Some(held) = known_holder(cache, commit)? {
        return Ok(held);
    }
    if cache.mirror(Remote::Upstream).is_none() && !cache.is_offline() {
        fetch_upstream_refs(cache)?;
        if let Some(held) = known_holder(cache, commit)? {
            return Ok(held);
        }
    }
    Err(not_upstream(cache, commit))
}

/// Resolves `rev` as an upstream commit a pin may be: found (fetched where the run may) and
/// reachable from upstream's refs ([`upstream_holder`]), or refused with the reason.
pub fn upstream_commit(cache: &Cache, rev: &str) -> Result<Oid> {
    let commit = cache.commit(rev, Remote::Upstream)?;
    upstream_holder(cache, commit)?;
    Ok(commit)
}

/// Why `commit` is no upstream commit, saying where it does sit when the fork has it.
pub fn not_upstream(cache: &Cache, commit: Oid) -> Error {
    let (branch, url) = cache.branch_and_url(Remote::Upstream);
    let whose = match fork_branch_holds(cache, commit) {
        true => "it is a commit of the fork's branch; ",
        false => "",
    };
    let fetched = match cache.mirror(Remote::Upstream) {
        Some(_) => "",
        None => " (as the object cache last fetched them: `forkbook fetch` brings them)",
    };
    Error::new(format!(
        "`{}` is not upstream's: no branch, tag or pull request head of the upstream `{url}`{fetched} \
         reaches it",
        short(commit)
    ))
    .with_note(format!(
        "{whose}a pin is a commit upstream published: give one on upstream's branch `{branch}`, \
         a tag, or a pull request's head"
    ))
}

/// Whether the fork's branch (as the cache holds it) reaches `commit`.
fn fork_branch_holds(cache: &Cache, commit: Oid) -> bool {
    let (branch, _) = cache.branch_and_url(Remote::Fork);
    let repo = cache.repo();
    let tip = repo
        .find_reference(&format!("refs/remotes/fork/{branch}"))
        .ok()
        .and_then(|r| r.target());
    tip.is_some_and(|tip| cache.is_ancestor(commit, tip).unwrap_or(false))
}

/// Fetches every branch, tag and pull request head of the upstream into the cache, under
/// `refs/remotes/upstream/` (tags under `tags/`, pull requests under `pull/`).
fn fetch_upstream_refs(cache: &Cache) -> Result<()> {
    cache.lock_for_writing()?;
    let args = [
        "fetch",
        "--no-tags",
        "--no-write-fetch-head",
        "--",
        Remote::Upstream.name(),
        "+refs/heads/*:refs/remotes/upstream/*",
        "+refs/tags/*:refs/remotes/upstream/tags/*",
        "+refs/pull/*/head:refs/remotes/upstream/pull/*",
    ];
    super::cache::system_git(cache.dir(), &args)
        .map(|_| ())
        .map_err(|e| e.context("failed to fetch upstream's branches, tags and pull requests"))
}

/// A commit the mirrors do have, offered in place of a missing pin.
#[derive(Debug, Clone)]
pub struct Nearby {
    pub commit: Oid,
    /// What it is: `upstream's pull request #7 (refs/pull/7/head), which entry 1 cites`.
    pub what: String,
}

/// The commits this machine has that could stand in for a missing pin, the one rule every
/// command that offers a stand-in asks (adopt's line, the missing pin's note of `check`,
/// `propose`, `retarget` and the rest, and so the book's skipped steps and its gate): the heads
/// of the upstream pull requests the register cites (each PR the pin may have been taken from),
/// then the tip of upstream's branch (the newest commit it reaches). The register is read here,
/// from the records folder, whatever the caller holds of it (`check` keeps none of its entries),
/// so every command names the same commit for the same project.
pub fn stand_ins(project: &Project, cache: &Cache) -> Vec<Nearby> {
    let Ok((_, refs)) = upstream_refs(cache) else {
        return Vec::new();
    };
    let mut out: Vec<Nearby> = Vec::new();
    for (number, entry) in cited_pulls(project) {
        let found = refs
            .iter()
            .find(|r| r.kind == RefKind::PullRequest && r.name == number.to_string());
        if let Some(reference) = found {
            if out.iter().all(|n| n.commit != reference.tip) {
                out.push(Nearby {
                    commit: reference.tip,
                    what: format!("{}, which entry {entry} cites", reference.describe()),
                });
            }
        }
    }
    if let Some(tip) = refs.iter().find(|r| r.kind == RefKind::Branch) {
        out.push(Nearby {
            commit: tip.tip,
            what: format!(
                "the tip of {}, the newest commit it reaches",
                tip.describe()
            ),
        });
    }
    out
}

/// The stand-in offered first for a missing pin ([`stand_ins`]), `None` where the mirrors have
/// no commit to offer.
pub fn stand_in_offered(project: &Project, cache: &Cache) -> Option<Nearby> {
    stand_ins(project, cache).into_iter().next()
}

/// The upstream pull requests the register (read from the records folder, an entry at a time)
/// cites: `…/pull/N` links to upstream's web address and `owner/repo#N` references to it, each
/// with the first entry citing it. None where the register cannot be read.
fn cited_pulls(project: &Project) -> Vec<(u64, u32)> {
    let Some(web) = &project.web_urls.1 else {
        return Vec::new();
    };
    let path = project.records_dir().join(crate::records::FIXES_FILE);
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let file = project.record_name(crate::records::FIXES_FILE);
    let slug = web.splitn(4, '/').nth(3).unwrap_or("").to_ascii_lowercase();
    let mut out: Vec<(u64, u32)> = Vec::new();
    register::each_entry(&file, &text, |entry| {
        let links = entry.links.iter().filter_map(|link| {
            let rest = link.get(web.len()..)?;
            let number = rest.strip_prefix("/pull/")?;
            link[..web.len()]
                .eq_ignore_ascii_case(web)
                .then_some(number)
        });
        let refs = entry.issues.iter().filter_map(|issue| {
            let (repo, number) = issue.rsplit_once('#')?;
            (!slug.is_empty() && repo.eq_ignore_ascii_case(&slug)).then_some(number)
        });
        for number in links.chain(refs) {
            let digits: String = number.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse::<u64>() {
                if out.iter().all(|(seen, _)| *seen != n) {
                    out.push((n, entry.number));
                }
            }
        }
    });
    out
}

/// The error for a recorded pin no mirror has: the cache's own message, with the commits this
/// machine does have and the option that runs on one of them.
pub fn missing_pin(error: Error, project: &Project, cache: &Cache) -> Error {
    let offered = stand_ins(project, cache);
    let mut note = error.note.clone().unwrap_or_default();
    if let Some(first) = offered.first() {
        // The first line says how to use one, as a flag and for the book: a book's step that
        // is skipped on the missing pin shows this line alone.
        let first = short(first.commit);
        note.push_str(&format!(
            "; or run on a commit the mirrors have, as a stand-in (`--stand-in-pin {first}`, or \
             `stand_in_pin = \"{first}\"` under `[upstream]` in forkbook.toml for the book and \
             CI): a run option, never written into a record (the records keep their pin, and \
             nothing is written under it)"
        ));
        for nearby in &offered {
            note.push_str(&format!(
                "\n  --stand-in-pin {}  {}",
                nearby.commit, nearby.what
            ));
        }
        note.push_str(&format!(
            "\n  e.g. `forkbook --stand-in-pin {} <command>`",
            short(offered[0].commit)
        ));
    }
    let mut error = error.with_note(note);
    error
        .chain
        .insert(0, "the recorded pin is missing".to_string());
    error
}

/// The stand-in pin of this run, resolved: an upstream commit ([`upstream_commit`]).
pub fn stand_in(project: &Project, cache: &Cache) -> Result<Option<Oid>> {
    let Some((rev, origin)) = project.stand_in_pin() else {
        return Ok(None);
    };
    let commit = upstream_commit(cache, rev)
        .map_err(|e| e.context(format!("the stand-in pin `{rev}` (from {origin})")))?;
    Ok(Some(commit))
}

/// What every output of a run under a stand-in says first, `None` without one.
pub fn stand_in_head(project: &Project) -> Option<String> {
    let (rev, origin) = project.stand_in_pin()?;
    Some(format!(
        "stand-in pin `{rev}` (from {origin}) in place of the recorded pin: every finding on a \
         core file depends on the pin and is marked {STAND_IN_MARK}; nothing is written to the \
         records"
    ))
}

/// Whether a finding about `file` saying `message` depends on the pin: it is about one of the
/// `core_files` (the pin's file plus the fork's change), as its file (the records' copy in the
/// files layout) or named in its words. Backend files are the fork's alone.
pub fn depends_on_pin(file: &str, message: &str, core_files: &[String]) -> bool {
    core_files.iter().any(|core| {
        file == core
            || file
                .strip_suffix(core.as_str())
                .is_some_and(|dir| dir.ends_with('/'))
            || message.contains(&format!("`{core}`"))
            || message.contains(&format!("`{core}:"))
    })
}

/// `message` marked as depending on a stand-in pin.
pub fn marked(message: &str) -> String {
    format!("{message} {STAND_IN_MARK}")
}
