//! A fix's change read from the project's own git history (files layout): the commit that
//! added or changed the entry in the register, and that same commit's changes to the overlay
//! files the entry names.
//!
//! In the files layout the overlay is whole files, so the difference between a file and the
//! base tree holds every fix to that file at once. The commit that wrote an entry usually wrote
//! its change too; where it did, that commit isolates one fix from the others of its file. A
//! commit that adds a file the fork already has (the overlay's first import) isolates nothing
//! and is not taken as evidence.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{Oid, Repository, Sort};

use crate::register::{parse, Entry};
use crate::Bytes;

/// The project's history of its register and overlay files.
pub(super) struct History {
    repo: Repository,
    /// The records folder inside the repository's work tree, with its final `/` (or empty).
    records: String,
    /// Commits that change the register, oldest first, each with the entries it added or
    /// changed (by number, with their titles).
    writes: Vec<(Oid, BTreeMap<u32, String>)>,
}

/// A commit and its change to the files an entry names.
pub(super) struct Found {
    pub commit: Oid,
    pub summary: String,
    /// `(path, before, after)` of each named overlay file the commit changed.
    pub change: Vec<(String, Option<Bytes>, Option<Bytes>)>,
}

impl History {
    /// The history of the git repository holding `records_dir`, when there is one and it has
    /// commits touching `register` (the register's file name in the records folder).
    pub(super) fn open(records_dir: &Path, register: &str) -> Option<History> {
        let repo = Repository::discover(records_dir).ok()?;
        let work = repo.workdir()?.canonicalize().ok()?;
        let dir = records_dir.canonicalize().ok()?;
        let inside = dir.strip_prefix(&work).ok()?;
        let mut records = inside.to_string_lossy().replace('\\', "/");
        if !records.is_empty() {
            records.push('/');
        }
        let mut history = History {
            repo,
            records,
            writes: Vec::new(),
        };
        history.writes = history.register_writes(register)?;
        (!history.writes.is_empty()).then_some(history)
    }

    /// Each commit of HEAD's history that changes the register, oldest first, with the entries
    /// whose text it added or changed. Each version of the register is parsed once.
    fn register_writes(&self, register: &str) -> Option<Vec<(Oid, BTreeMap<u32, String>)>> {
        let path = format!("{}{register}", self.records);
        let mut walk = self.repo.revwalk().ok()?;
        walk.push_head().ok()?;
        walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE).ok()?;
        let mut parsed: BTreeMap<Oid, BTreeMap<u32, (String, String)>> = BTreeMap::new();
        let mut writes = Vec::new();
        for oid in walk.flatten() {
            let commit = self.repo.find_commit(oid).ok()?;
            let now = self.blob_id(&commit, &path);
            let before = commit.parent(0).ok().and_then(|p| self.blob_id(&p, &path));
            if now == before {
                continue;
            }
            let Some(now) = now else { continue };
            let after = self.entries_of(&mut parsed, now);
            let earlier = before.map(|b| self.entries_of(&mut parsed, b));
            let changed: BTreeMap<u32, String> = (after.iter())
                .filter(|(n, text)| earlier.as_ref().and_then(|e| e.get(n)) != Some(text))
                .map(|(n, (title, _))| (*n, title.clone()))
                .collect();
            if !changed.is_empty() {
                writes.push((oid, changed));
            }
        }
        Some(writes)
    }

    /// The entries of one version of the register: number to (title, whole text).
    fn entries_of(
        &self,
        parsed: &mut BTreeMap<Oid, BTreeMap<u32, (String, String)>>,
        blob: Oid,
    ) -> BTreeMap<u32, (String, String)> {
        if let Some(entries) = parsed.get(&blob) {
            return entries.clone();
        }
        let text = self.repo.find_blob(blob).map_or(String::new(), |b| {
            String::from_utf8_lossy(b.content()).into_owned()
        });
        let register = parse("LOCAL_FIXES.md", &text);
        let lines: Vec<&str> = text.lines().collect();
        let entries: BTreeMap<u32, (String, String)> = (register.entries.iter())
            .map(|e| {
                let end = e.end_line.min(lines.len()).max(e.line);
                let body = lines[e.line.saturating_sub(1)..end].join("\n");
                (e.number, (normalize(&e.title), body))
            })
            .collect();
        parsed.insert(blob, entries.clone());
        entries
    }

    fn blob_id(&self, commit: &git2::Commit, path: &str) -> Option<Oid> {
        let tree = commit.tree().ok()?;
        let entry = tree.get_path(Path::new(path)).ok()?;
        Some(entry.id())
    }

    fn read(&self, commit: &git2::Commit, path: &str) -> Option<Bytes> {
        let id = self.blob_id(commit, path)?;
        Some(self.repo.find_blob(id).ok()?.content().to_vec().into())
    }

    /// The oldest commit that added or changed `entry` (same number and title) and changed one
    /// of `paths` (overlay paths, below `tree_prefix` in the records folder), with its change to
    /// them. A file the commit adds is evidence only when the fork has no such file.
    pub(super) fn find(
        &self,
        entry: &Entry,
        paths: &[String],
        tree_prefix: &str,
        fork_has: &dyn Fn(&str) -> bool,
    ) -> Option<Found> {
        let title = normalize(&entry.title);
        let writes = self
            .writes
            .iter()
            .filter(|(_, changed)| changed.get(&entry.number) == Some(&title));
        for (oid, _) in writes {
            let commit = self.repo.find_commit(*oid).ok()?;
            let parent = commit.parent(0).ok();
            let mut change = Vec::new();
            for path in paths {
                let full = format!("{}{tree_prefix}{path}", self.records);
                let after = self.read(&commit, &full);
                let before = parent.as_ref().and_then(|p| self.read(p, &full));
                let imported = before.is_none() && fork_has(path);
                if after != before && !imported {
                    change.push((path.clone(), before, after));
                }
            }
            if !change.is_empty() {
                let summary = commit.summary().ok().flatten().unwrap_or("").to_string();
                return Some(Found {
                    commit: *oid,
                    summary,
                    change,
                });
            }
        }
        None
    }
}

/// A title compared across versions: trimmed, its code marks and final period dropped, lowercase.
fn normalize(title: &str) -> String {
    title
        .replace('`', "")
        .trim()
        .trim_end_matches('.')
        .to_lowercase()
}
