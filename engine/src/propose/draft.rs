//! What each entry's package holds: its change, where the change came from, and the groups of
//! entries whose changes cannot be told apart.
//!
//! The patch layout has one patch per entry. The files layout has whole files, so an entry's
//! change is the commit of the project's history that added or changed the entry (its change
//! to the files the entry names), or, without one, the named files against the base tree. Two
//! entries with no commit of their own that name the same file hold the same difference: they
//! are one package, which says so.

use std::collections::BTreeSet;

use super::history::History;
use super::{carry_onto, touched_lines, Change, Draft, Drafted, Evidence};
use crate::bail;
use crate::cache::{short, Cache};
use crate::config::Layout;
use crate::error::{Error, Result};
use crate::overlay::OverlayState;
use crate::project::Project;
use crate::records::FIXES_FILE;
use crate::register::{Entry, Register};
use forkbook_checks::names::{Names, Resolved};

/// What drafting every entry reads once: the trees, the names, the project's history.
pub(super) struct Drafting<'a> {
    cache: &'a Cache,
    state: &'a OverlayState,
    register: &'a Register,
    files: Vec<String>,
    prefix: String,
    differing: Vec<Change>,
    history: Option<History>,
    /// Why the core files have no base tree, when the state holds the backend files alone
    /// ([`OverlayState::backend_only`]): the missing pin's error, which a fix naming a core
    /// file is refused with.
    without_pin: Option<&'a Error>,
}

impl<'a> Drafting<'a> {
    pub(super) fn new(
        project: &Project,
        cache: &'a Cache,
        state: &'a OverlayState,
        register: &'a Register,
        without_pin: Option<&'a Error>,
    ) -> Drafting<'a> {
        // Without the pin the base tree has no core file: a name still resolves to one.
        let core = without_pin.map(|_| &state.core_files).into_iter().flatten();
        let files: BTreeSet<String> = (state.base.files.keys())
            .chain(state.overlay.keys())
            .chain(core)
            .cloned()
            .collect();
        let history = (state.layout == Layout::Files)
            .then(|| History::open(&project.records_dir(), FIXES_FILE))
            .flatten();
        Drafting {
            cache,
            state,
            register,
            files: files.into_iter().collect(),
            prefix: project.config.overlay.backend_prefix.clone(),
            differing: state.differences(),
            history,
            without_pin,
        }
    }

    /// The entry's draft: its change carried onto the fork commit, or why there is nothing to
    /// send, or (an error) why it cannot be packaged and what to add.
    pub(super) fn draft<'e>(&self, entry: &'e Entry) -> Result<Drafted<'e>> {
        let fork = self.state.commits.fork;
        let note = "mark the entry `merged` with the fork commit that contains it".to_string();
        let Some((change, evidence)) = self.change_of(entry)? else {
            return Ok(Drafted::Contained {
                reason: format!(
                    "the files it names equal the base tree ({}): the change is already there",
                    self.base_described()
                ),
                note,
            });
        };
        let on_fork = carry_onto(self.cache.repo(), fork, &change)?;
        if on_fork.iter().all(|(_, before, after)| before == after) {
            return Ok(Drafted::Contained {
                reason: format!("fork commit `{}` already contains this change", short(fork)),
                note,
            });
        }
        Ok(Drafted::Ready(Draft {
            entries: vec![entry],
            change,
            touched: touched_lines(&on_fork),
            evidence,
            shared: Vec::new(),
        }))
    }

    /// The entry's change and its evidence; `None` when the files it names equal the base tree.
    fn change_of(&self, entry: &Entry) -> Result<Option<(Vec<Change>, Evidence)>> {
        if self.state.layout == Layout::Patch {
            let Some(step) =
                (self.state.steps.iter()).find(|s| s.number() == entry.number as usize)
            else {
                bail!("the series has no patch for entry {}", entry.number);
            };
            let change = (step.changed_paths().into_iter())
                .map(|p| (p.to_string(), step.pre[p].clone(), step.post[p].clone()))
                .collect();
            return Ok(Some((change, Evidence::Patch)));
        }
        let paths = self.named_paths(entry)?;
        if let Some(missing) = self.without_pin {
            let core = paths.iter().find(|p| self.state.core_files.contains(p));
            if let Some(core) = core {
                return Err(missing.clone().context(format!(
                    "it names the core file `{core}`, whose base is the pin's file plus the \
                     fork's change, so its package needs the pin"
                )));
            }
        }
        let base = &self.state.base.files;
        let in_history = self.history.as_ref().and_then(|history| {
            let prefix = &self.state.records.tree_prefix;
            history.find(entry, &paths, prefix, &|path: &str| base.contains_key(path))
        });
        if let Some(found) = in_history {
            let evidence = Evidence::Commit {
                commit: found.commit.to_string(),
                summary: found.summary,
            };
            return Ok(Some((found.change, evidence)));
        }
        let change: Vec<Change> = (paths.iter())
            .filter_map(|path| self.differing.iter().find(|d| &d.0 == path).cloned())
            .collect();
        Ok((!change.is_empty()).then_some((change, Evidence::Files)))
    }

    /// The commits the base tree was made from: the fork commit alone without the pin.
    fn base_described(&self) -> String {
        let commits = &self.state.commits;
        match self.without_pin {
            Some(_) => format!("fork {}", short(commits.fork)),
            None => commits.describe(),
        }
    }

    /// The overlay paths the entry names, each once in the order it first names them; an error
    /// saying what to add when it names none.
    fn named_paths(&self, entry: &Entry) -> Result<Vec<String>> {
        let n = entry.number;
        if entry.files.is_empty() {
            return Err(
                Error::new(format!("entry {n} names no file")).with_note(format!(
                "add the files it changes to its text (`mlx/backend/rocm/…` in backticks) or a \
                 `- files:` line to entry {n} of `{}`",
                self.register.file
            )),
            );
        }
        let names = Names::new(&self.files, &self.prefix);
        let mut paths: Vec<String> = Vec::new();
        let mut unknown: Vec<String> = Vec::new();
        for named in &entry.files {
            match names.resolve(&named.name) {
                Resolved::File(path) if !paths.iter().any(|p| p == path) => {
                    paths.push(path.to_string())
                }
                Resolved::File(_) => {}
                Resolved::Ambiguous(_) | Resolved::NotFound => unknown.push(named.name.clone()),
            }
        }
        if paths.is_empty() {
            let unknown: Vec<String> = unknown.iter().map(|u| format!("`{u}`")).collect();
            return Err(Error::new(format!(
                "entry {n} names {}, which is no one file of the overlay or the base tree",
                unknown.join(", ")
            ))
            .with_note(format!(
                "name each file by its path in a `- files:` line of entry {n} of `{}`",
                self.register.file
            )));
        }
        Ok(paths)
    }

    /// The entries not asked for whose files the asked drafts' whole-file differences hold: a
    /// draft of the files against the base tree carries their change too, so they join its
    /// package (which says so) rather than ride along unnamed.
    pub(super) fn companions(&self, drafts: &[Draft], asked: &[u32]) -> Vec<&'a Entry> {
        let loose: BTreeSet<&str> = (drafts.iter())
            .filter(|d| d.evidence == Evidence::Files)
            .flat_map(|d| d.change.iter().map(|c| c.0.as_str()))
            .collect();
        if loose.is_empty() {
            return Vec::new();
        }
        (self.register.entries.iter())
            .filter(|e| e.applies_to_fork() && !asked.contains(&e.number))
            .filter(|e| {
                self.named_paths(e)
                    .is_ok_and(|paths| paths.iter().any(|p| loose.contains(p.as_str())))
            })
            .collect()
    }

    /// The drafts with the entries that share a file made one: each group's change is its
    /// files against the base tree, carried onto the fork commit. A draft whose change a commit
    /// isolates joins a group only when a draft with no commit names one of its files (that
    /// one's difference holds both). The groups that cannot be carried come back as errors.
    pub(super) fn group_shared<'e>(
        &self,
        drafts: Vec<Draft<'e>>,
    ) -> (Vec<Draft<'e>>, Vec<(Vec<&'e Entry>, Error)>) {
        let mut group: Vec<usize> = (0..drafts.len()).collect();
        for later in 0..drafts.len() {
            for earlier in 0..later {
                let (a, b) = (&drafts[earlier], &drafts[later]);
                let loose = a.evidence == Evidence::Files || b.evidence == Evidence::Files;
                if loose && !shared_paths(&[a, b]).is_empty() {
                    let (ra, rb) = (super::root(&group, earlier), super::root(&group, later));
                    group[ra.max(rb)] = ra.min(rb);
                }
            }
        }
        let roots: Vec<usize> = (0..drafts.len()).map(|i| super::root(&group, i)).collect();
        let mut members: Vec<Vec<Draft<'e>>> = (0..drafts.len()).map(|_| Vec::new()).collect();
        for (draft, root) in drafts.into_iter().zip(&roots) {
            members[*root].push(draft);
        }
        let mut out = Vec::new();
        let mut failed = Vec::new();
        for mut members in members.into_iter().filter(|m| !m.is_empty()) {
            if members.len() == 1 {
                out.extend(members.pop());
                continue;
            }
            let mut entries: Vec<&'e Entry> =
                members.iter().flat_map(|d| d.entries.clone()).collect();
            entries.sort_by_key(|e| e.number);
            match self.grouped(&members, entries.clone()) {
                Ok(draft) => out.push(draft),
                Err(e) => failed.push((entries, e)),
            }
        }
        out.sort_by_key(|d| d.entries[0].number);
        (out, failed)
    }

    /// One draft for entries sharing files: every file any of them changes, against the base tree.
    fn grouped<'e>(&self, members: &[Draft<'e>], entries: Vec<&'e Entry>) -> Result<Draft<'e>> {
        let all: Vec<&Draft> = members.iter().collect();
        let shared = shared_paths(&all);
        let mut paths: Vec<&str> = Vec::new();
        for draft in members {
            for (path, _, _) in &draft.change {
                if !paths.contains(&path.as_str()) {
                    paths.push(path);
                }
            }
        }
        let change: Vec<Change> = (paths.iter())
            .filter_map(|path| self.differing.iter().find(|d| d.0 == *path).cloned())
            .collect();
        let numbers: Vec<String> = entries.iter().map(|e| e.number.to_string()).collect();
        let on_fork =
            carry_onto(self.cache.repo(), self.state.commits.fork, &change).map_err(|e| {
                e.context(format!(
                    "entries {} share `{}`",
                    numbers.join(", "),
                    shared.join("`, `")
                ))
            })?;
        Ok(Draft {
            entries,
            change,
            touched: touched_lines(&on_fork),
            evidence: Evidence::Files,
            shared,
        })
    }
}

/// The paths that more than one of `drafts` changes, in path order.
fn shared_paths(drafts: &[&Draft]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut shared = BTreeSet::new();
    for draft in drafts {
        let own: BTreeSet<&String> = draft.change.iter().map(|c| &c.0).collect();
        for path in own {
            if !seen.insert(path.clone()) {
                shared.insert(path.clone());
            }
        }
    }
    shared.into_iter().collect()
}
