//! `forkbook check`: the records as the bottom crate reads them, one view of the overlay filled
//! from the overlay state, and the check catalogue run over both.
//!
//! The two halves are apart so a broken record is a finding, not a crash: the records need no
//! cache ([`record_facts`]); the base tree, the overlay, the lock's mismatches, the
//! residual, the fork hooks and the true counts come from the overlay state
//! ([`add_overlay_facts`]).

use std::collections::BTreeSet;

use forkbook_checks::facts::{Hunk, MarkedFile, OverlayView, Repos, Summary, TreeFacts};
use forkbook_checks::names::{Names, Resolved};
pub use forkbook_checks::{Facts, Finding, Severity};
use forkbook_records::residual_record::ResidualRecord;

use super::cache::{Cache, Remote};
use super::config::Layout;
use super::error::Result;
use super::overlay::OverlayState;
use super::project::Project;
use super::propose::pulls::Cited;
use super::records::{self, Records};
use super::{residual, FileMap};
use forkbook_records::readme;
use git2::Oid;

mod every;
mod run;
pub use every::EveryFinding;
pub use run::{
    catalogue, explain, render_findings, run, Catalogue, CheckRun, Groups, Kept, Listed, Skipped,
};

/// Every fact: the records the state was read from, then the overlay state's.
pub fn gather_facts(project: &Project, cache: &Cache, state: &OverlayState) -> Result<Facts> {
    let records = &state.records;
    let mut facts = record_facts(project, &records.files, records.model.clone());
    let mut cited = Cited::default();
    let entries = facts.records.register.iter().flat_map(|r| &r.entries);
    entries.for_each(|entry| cited.add(project, entry));
    add_overlay_facts(&mut facts, project, cache, state, cited)?;
    Ok(facts)
}

/// Runs the whole catalogue.
pub fn run_checks(facts: &Facts) -> Vec<Finding> {
    forkbook_checks::run_all(facts)
}

/// The facts that need only the records folder's `files` and their model (as [`records::read`]
/// read them) and the project's settings; the register's entries summed up once when the model
/// holds them.
pub fn record_facts(project: &Project, files: &FileMap, records: Records) -> Facts {
    let repos = Repos {
        fork: project.web_urls.0.clone(),
        upstream: project.web_urls.1.clone(),
        fork_url: project.canonical_urls.0.clone(),
        fork_branch: project.config.fork.branch.clone(),
    };
    let summary = (records.register.as_ref()).map(|register| Summary::of(&register.entries));
    Facts {
        record_markers: record_markers(&records, files),
        repos,
        records,
        backend_prefix: project.config.overlay.backend_prefix.clone(),
        overlay: None,
        summary,
        whole_files: None,
    }
}

/// The records that hold conflict markers: each record forkbook reads, and every patch of the
/// series (message and diff; a diff's own lines start with ` `, `+` or `-`, never a marker).
/// In Markdown a lone `=======` is a heading's underline, so only its region markers count.
fn record_markers(records: &Records, files: &FileMap) -> Vec<MarkedFile> {
    let named = [
        records::FIXES_FILE,
        records::README_FILE,
        records::UPSTREAM_FILE,
        records::LOCK_FILE,
        records::RESIDUAL_FILE,
        records::CORE_RESIDUAL_FILE,
    ];
    let series = records.patch_series.iter().flatten();
    let patches = series.filter_map(|patch| patch.file.strip_prefix(&records.path("")));
    let mut out = Vec::new();
    for name in named.into_iter().chain(patches) {
        let Some(bytes) = files.get(name) else {
            continue;
        };
        let (regions, mut stray) = forkbook_checks::markers::regions(bytes);
        if name.ends_with(".md") {
            stray.retain(|m| m.kind != forkbook_checks::markers::MarkerKind::Separator);
        }
        if !regions.is_empty() || !stray.is_empty() {
            out.push(MarkedFile {
                file: records.path(name),
                regions,
                stray,
            });
        }
    }
    out
}

/// Fills the view of the overlay: trees, lock mismatches, markers, residual, hooks, true counts,
/// and the states of the pulls the entries cite (`cited`, gathered as the entries were read).
/// What it reads of the register's entries is their [`Facts::summary`].
pub fn add_overlay_facts(
    facts: &mut Facts,
    project: &Project,
    cache: &Cache,
    state: &OverlayState,
    cited: Cited,
) -> Result<()> {
    let summary = facts.summary();
    let fork_commits = fork_commits(cache, state, &summary);
    let tree = tree_facts(state);
    let prefix = &project.config.overlay.backend_prefix;
    let residual = residual_hunks(
        state,
        &summary,
        facts.records.residual_record.as_ref(),
        &tree.files,
        prefix,
    );
    let markers = state.marked_files();
    let entries = summary.len();
    drop(summary);
    let core = residual::core_of(&state.core_files, &state.overlay);
    let mut fork_hooks = cache.changed_paths(state.commits.base, state.commits.fork, prefix)?;
    fork_hooks.retain(|p| !state.core_files.contains(p));
    facts.overlay = Some(OverlayView {
        residual,
        tree,
        markers,
        lock_mismatches: state
            .records
            .model
            .lock
            .as_ref()
            .map_or(Vec::new(), |lock| lock.disagreements(&state.lock())),
        fork_hooks,
        counts: readme::actual(state.overlay.keys(), prefix, entries),
        core_hashes: core
            .iter()
            .map(|(path, bytes)| (path.clone(), records::sha256_hex(bytes)))
            .collect(),
        core_files: state.core_files.clone(),
        fork_commits,
        pulls: cited.states(cache),
        pin_not_upstream: pin_not_upstream(cache, state.commits.pin),
    });
    Ok(())
}

/// The register's `fork-commit` SHAs that the fork holds: each is the recorded fork commit, an
/// ancestor of it, or one of the fork's branch as last fetched.
fn fork_commits(cache: &Cache, state: &OverlayState, summary: &Summary) -> Vec<String> {
    let heads: Vec<Oid> = [Some(state.commits.fork), cache.branch_tip(Remote::Fork)]
        .into_iter()
        .flatten()
        .collect();
    let on_fork = |oid: Oid| {
        cache.repo().find_commit(oid).is_ok()
            && heads
                .iter()
                .any(|head| cache.is_ancestor(oid, *head).unwrap_or(false))
    };
    (summary.fork_commits())
        .filter(|sha| Oid::from_str(sha).is_ok_and(on_fork))
        .map(String::from)
        .collect()
}

/// Why `pin` is no upstream commit, by the one rule ([`crate::pin::known_holder`]), from the
/// refs this machine has: a check fetches nothing.
fn pin_not_upstream(cache: &Cache, pin: Oid) -> Option<String> {
    match crate::pin::known_holder(cache, pin) {
        Ok(Some(_)) => None,
        Ok(None) => Some(crate::pin::not_upstream(cache, pin).message()),
        Err(e) => Some(format!(
            "could not be traced to upstream's refs: {}",
            e.message()
        )),
    }
}

/// The files of the base tree and the overlay, and those that differ between them.
fn tree_facts(state: &OverlayState) -> TreeFacts {
    let files: BTreeSet<&String> = state
        .base
        .files
        .keys()
        .chain(state.overlay.keys())
        .collect();
    TreeFacts {
        files: files.into_iter().cloned().collect(),
        differing: state
            .differences()
            .into_iter()
            .map(|(path, _, _)| path)
            .collect(),
    }
}

/// Residual hunks with their fixes: the patches that change the file, or (files layout, where
/// there are no patches) what the residual record's notes tie to the file, or, without a
/// `CORE_RESIDUAL.diff`, the entries that name it. Where the project keeps a record, its notes are what it
/// says explains a hunk: an entry that mentions a core file in passing explains nothing.
fn residual_hunks(
    state: &OverlayState,
    summary: &Summary,
    record: Option<&ResidualRecord>,
    files: &[String],
    prefix: &str,
) -> Vec<Hunk> {
    let names = Names::new(files, prefix);
    let mut hunks = residual::compute(state).hunks;
    if state.layout == Layout::Files {
        for hunk in &mut hunks {
            let items = match record.filter(|r| r.core_header()) {
                Some(record) => noted_items(record, &hunk.file),
                None => naming_entries(summary, &names, &hunk.file),
            };
            hunk.fixes = items.into_iter().map(|n| n as usize).collect();
        }
    }
    hunks
}

/// The register items the record's notes for `path` name.
fn noted_items(record: &ResidualRecord, path: &str) -> Vec<u32> {
    let mut items: Vec<u32> = record
        .notes
        .iter()
        .filter(|n| n.path == path)
        .filter_map(|n| n.item)
        .collect();
    items.dedup();
    items
}

/// The numbers of the entries that name `path`, each name read as `names` reads it.
fn naming_entries(summary: &Summary, names: &Names, path: &str) -> Vec<u32> {
    (summary.entries())
        .filter(|entry| (entry.files()).any(|name| names.resolve(name) == Resolved::File(path)))
        .map(|entry| entry.number)
        .collect()
}
