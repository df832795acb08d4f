//! Which upstream commit introduced a finding: walk the first-parent commits between the two
//! commits that touch the file, and find where the declaration's text appeared (or, for a
//! removal, disappeared).
//!
//! Text, not `git blame`: the declaration text is what the finding is about, it works the same
//! for additions and removals, and it does not depend on line numbers (the analysis may have
//! read an overlay's own copy of a header, whose lines differ from upstream's).

use super::report::CommitRef;
use crate::error::{Context, Result};
use git2::{Oid, Repository, Sort};
use std::collections::HashMap;
use std::path::Path;

/// A commit and the file's content after it (None: the file does not exist there).
type Version = (Oid, Option<Vec<u8>>);

/// The versions of files between two commits, read once per path.
pub struct History<'r> {
    repo: &'r Repository,
    from: Oid,
    /// First-parent commits after `from` up to `to`, oldest first.
    commits: Vec<Oid>,
    versions: HashMap<String, Vec<Version>>,
}

impl<'r> History<'r> {
    pub fn new(repo: &'r Repository, from: Oid, to: Oid) -> Result<History<'r>> {
        let mut walk = repo.revwalk()?;
        walk.push(to)?;
        walk.hide(from)?;
        walk.simplify_first_parent()?;
        walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)?;
        let commits = walk
            .collect::<std::result::Result<Vec<_>, _>>()
            .context("failed to list upstream commits")?;
        Ok(History {
            repo,
            from,
            commits,
            versions: HashMap::new(),
        })
    }

    /// The file at `from` and after every commit that changed it, oldest first.
    fn versions(&mut self, path: &str) -> Result<&[Version]> {
        if !self.versions.contains_key(path) {
            let mut list: Vec<Version> = Vec::new();
            let mut last_id = None;
            for commit in std::iter::once(self.from).chain(self.commits.clone()) {
                let id = self.entry_id(commit, path)?;
                if list.is_empty() || id != last_id {
                    let blob = id.and_then(|id| self.repo.find_blob(id).ok());
                    list.push((commit, blob.map(|b| b.content().to_vec())));
                    last_id = id;
                }
            }
            self.versions.insert(path.to_string(), list);
        }
        Ok(&self.versions[path])
    }

    fn entry_id(&self, commit: Oid, path: &str) -> Result<Option<Oid>> {
        let tree = self.repo.find_commit(commit)?.tree()?;
        let id = tree.get_path(Path::new(path)).ok().map(|entry| entry.id());
        Ok(id)
    }

    /// The commit after which `path` holds `text` without interruption up to `to`. None when
    /// the text was already there at `from` or is not there at `to`.
    pub fn introduced(&mut self, path: &str, text: &str) -> Result<Option<CommitRef>> {
        let versions = self.versions(path)?;
        let held = versions.iter().rev().take_while(|v| holds(v, text)).count();
        // The first version of the run that holds it up to `to`, unless that is `from`'s.
        let first = versions.len() - held;
        let commit = (held > 0 && first > 0).then(|| versions[first].0);
        commit.map(|id| self.commit_ref(id)).transpose()
    }

    /// The first commit after `from` whose `path` no longer holds `text`. None when `from`
    /// did not hold it or it never went away.
    pub fn removed(&mut self, path: &str, text: &str) -> Result<Option<CommitRef>> {
        let versions = self.versions(path)?;
        if !versions.first().is_some_and(|v| holds(v, text)) {
            return Ok(None);
        }
        let commit = versions.iter().find(|v| !holds(v, text)).map(|v| v.0);
        commit.map(|id| self.commit_ref(id)).transpose()
    }

    fn commit_ref(&self, id: Oid) -> Result<CommitRef> {
        let commit = self.repo.find_commit(id)?;
        let summary =
            String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default()).into_owned();
        Ok(CommitRef {
            sha: id.to_string(),
            summary,
        })
    }
}

/// Whether the file at `version` holds `text`.
fn holds(version: &Version, text: &str) -> bool {
    let content = version.1.as_deref();
    content.is_some_and(|c| super::sources::contains(c, text.as_bytes()))
}

/// The upstream commit in `from..to` that introduced `text` into `path` (see
/// [`History::introduced`]).
pub fn introduced_by(
    repo: &Repository,
    from: Oid,
    to: Oid,
    path: &str,
    text: &str,
) -> Result<Option<CommitRef>> {
    History::new(repo, from, to)?.introduced(path, text)
}
