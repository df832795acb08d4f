//! `forkbook adopt`: take on an overlay a project already keeps, as it stands.
//!
//! Run once in an existing folder, it reads the records where they are (whole files beside
//! `UPSTREAM` included), writes only what forkbook must keep beside them (`overlay.lock`; the
//! README's counts block only when asked), and says what it understood: the register's entries by
//! state, the files they name, the files that differ from the base tree and that no entry names,
//! the README's counts, and the residual record's notes. What needs a person's decision is the
//! checks' errors, listed with the rest.

use super::cache::Cache;
use super::check::{add_overlay_facts, gather_record_facts, run_checks, Finding};
use super::error::Result;
use super::fsutil::{replace_file, RunLock};
use super::overlay::{OverlayState, Records};
use super::project::Project;
use super::records::{self, Counts};
use forkbook_checks::names::{Names, Resolved};
use forkbook_checks::register::Entry;
use forkbook_records::readme::{StatedCount, UnreadCount};
use forkbook_records::residual_record::Note;
use serde::Serialize;
use std::collections::BTreeMap;

mod setup;
mod text;
pub use setup::{project_at, AdoptFlags};

/// What to write beyond the lock.
#[derive(Debug, Clone, Default)]
pub struct AdoptRequest {
    /// Add a counts block to the README (the one change to a user's file adopt makes, and only
    /// when asked).
    pub counts: bool,
    /// A `forkbook.toml` to write at the project root before anything else, when the project has
    /// none (the text adopt composed from its flags).
    pub config_text: Option<String>,
}

/// What adopt wrote and what it understood.
#[derive(Debug, Clone, Serialize)]
pub struct Adoption {
    /// The records folder, relative to the project root.
    pub records_dir: String,
    pub layout: String,
    /// Where the whole files sit, relative to the records folder (`.` for the folder itself).
    pub tree: Option<String>,
    /// Files adopt wrote, relative to the project root.
    pub wrote: Vec<String>,
    /// `matches`, `differs (N files)` or `written`.
    pub lock: String,
    pub fork: String,
    pub base: String,
    pub pin: String,
    pub backend_files: usize,
    pub core_files: usize,
    /// Paths that differ from the base tree.
    pub differing: usize,
    pub register: String,
    pub entries: Vec<Entry>,
    /// Entries by state (`none` for entries without one).
    pub states: BTreeMap<String, usize>,
    /// Every file some entry names, resolved to its path where it resolves.
    pub named_files: Vec<String>,
    /// Paths that differ from the base tree and that no entry names.
    pub unnamed: Vec<String>,
    pub readme: String,
    /// The counts the README states, and the true figures beside them.
    pub counts: Vec<StatedCount>,
    pub actual_counts: Counts,
    /// README sentences whose number of files or fixes says no count.
    pub unread_counts: Vec<UnreadCount>,
    /// The residual record, when the folder keeps one.
    pub residual_record: Option<String>,
    pub notes: Vec<Note>,
    /// Core files with a residual and no note.
    pub unnoted: Vec<String>,
    /// Every finding of `forkbook check` after adopting; its errors are the decisions to make.
    pub findings: Vec<Finding>,
}

impl Adoption {
    /// Whether anything needs a person's decision (adopt's exit status 1).
    pub fn needs_decision(&self) -> bool {
        forkbook_checks::has_errors(&self.findings)
            || !self.unnamed.is_empty()
            || self.states.contains_key("none")
            || !self.unread_counts.is_empty()
    }
}

/// `forkbook adopt` in the folder `root`: its project (forkbook.toml, or one composed from
/// `flags` and written first), then [`adopt`]; `counts` adds a counts block to the README.
pub fn run(
    root: &std::path::Path,
    overrides: &super::project::Overrides,
    flags: &AdoptFlags,
    counts: bool,
) -> Result<Adoption> {
    let (project, config_text) = project_at(root, overrides, flags)?;
    let cache = Cache::open(&project)?;
    adopt(
        &project,
        &cache,
        &AdoptRequest {
            counts,
            config_text,
        },
    )
}

/// Adopts the overlay of `project` as it stands; see the module documentation.
pub fn adopt(project: &Project, cache: &Cache, request: &AdoptRequest) -> Result<Adoption> {
    // Read first: records in an unexpected place are one error, and nothing is written.
    let records = Records::read(project)?;
    let mut state = OverlayState::from_records(project, cache, records)?;
    let _lock = RunLock::acquire(&project.root, "overlay")?;
    let mut wrote = Vec::new();
    if let Some(text) = &request.config_text {
        replace_file(
            &project.root.join(super::config::CONFIG_FILE),
            text.as_bytes(),
        )?;
        wrote.push(super::config::CONFIG_FILE.to_string());
    }
    let actual_lock = records::lock_of(&state.overlay);
    let lock = match &state.records.lock {
        Some(lock) => match lock.mismatches(&actual_lock).len() {
            0 => "matches".to_string(),
            n => format!("differs ({n} files)"),
        },
        None => {
            let text = actual_lock.render();
            replace_file(
                &project.records_dir().join(records::LOCK_FILE),
                text.as_bytes(),
            )?;
            state.records.lock = Some(actual_lock);
            state
                .records
                .files
                .insert(records::LOCK_FILE.into(), text.into_bytes().into());
            wrote.push(project.record_name(records::LOCK_FILE));
            "written".to_string()
        }
    };
    if request.counts {
        if let Some(name) = write_counts_block(project, &state)? {
            wrote.push(name);
        }
    }
    let mut facts = gather_record_facts(project)?;
    add_overlay_facts(&mut facts, project, cache, &state)?;
    let findings = run_checks(&facts);
    Ok(summarize(project, &state, &facts, findings, wrote, lock))
}

/// Adds a counts block to the README when it has none; returns its name when it wrote one.
fn write_counts_block(project: &Project, state: &OverlayState) -> Result<Option<String>> {
    let path = project.records_dir().join(records::README_FILE);
    let readme = std::fs::read_to_string(&path).unwrap_or_default();
    if Counts::stated(&readme).is_some() {
        return Ok(None);
    }
    let register = state
        .records
        .files
        .get(records::FIXES_FILE)
        .map(|b| super::register::parse(records::FIXES_FILE, &String::from_utf8_lossy(b)));
    let entries = register.map_or(0, |r| r.entries.len());
    let counts = super::counts::actual(
        &state.overlay,
        &project.config.overlay.backend_prefix,
        entries,
    );
    replace_file(&path, counts.write_into(&readme).as_bytes())?;
    Ok(Some(project.record_name(records::README_FILE)))
}

fn summarize(
    project: &Project,
    state: &OverlayState,
    facts: &forkbook_checks::Facts,
    findings: Vec<Finding>,
    wrote: Vec<String>,
    lock: String,
) -> Adoption {
    let config = &project.config.overlay;
    let prefix = config.backend_prefix.as_str();
    let tree_files = facts.tree_files();
    let differing: Vec<String> = state.differences().into_iter().map(|(p, _, _)| p).collect();
    let mut entries = Vec::new();
    let mut states = BTreeMap::new();
    let mut named_files = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let names = Names::new(tree_files, prefix);
    let mut resolved = Vec::new();
    if let Some(register) = &facts.register {
        for entry in &register.entries {
            let state_name = entry.state().map(|s| s.as_str().to_string());
            *states
                .entry(state_name.unwrap_or_else(|| "none".into()))
                .or_insert(0) += 1;
            entries.push(entry.clone());
            for named in &entry.files {
                let name = match names.resolve(&named.name) {
                    Resolved::File(path) => {
                        resolved.push(path.to_string());
                        path.to_string()
                    }
                    _ => named.name.clone(),
                };
                if seen.insert(name.clone()) {
                    named_files.push(name);
                }
            }
        }
    }
    named_files.sort();
    let unnamed = differing
        .iter()
        .filter(|p| !resolved.contains(p))
        .cloned()
        .collect();
    let (counts, unread_counts) = match &facts.records.readme {
        Some(readme) => (
            readme.counts.clone().unwrap_or_default(),
            readme.unread.clone(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    let record = facts.records.residual_record.as_ref();
    let notes = record.map_or(Vec::new(), |r| r.notes.clone());
    let overlay = facts.overlay.as_ref();
    let residual_files = overlay.map_or(Vec::new(), |o| o.residual_files());
    let unnoted = residual_files
        .into_iter()
        .filter(|p| record.is_some() && !notes.iter().any(|n| n.path == *p))
        .collect();
    let backend = state.backend_count(prefix);
    Adoption {
        records_dir: config.dir.clone(),
        layout: state.layout.name().to_string(),
        tree: (state.layout == super::config::Layout::Files).then(|| {
            let t = config.tree_prefix();
            if t.is_empty() {
                ".".into()
            } else {
                t.trim_end_matches('/').to_string()
            }
        }),
        wrote,
        lock,
        fork: state.commits.fork.to_string(),
        base: state.commits.base.to_string(),
        pin: state.commits.pin.to_string(),
        backend_files: backend,
        core_files: state.overlay.len() - backend,
        differing: differing.len(),
        register: project.record_name(records::FIXES_FILE),
        entries,
        states,
        named_files,
        unnamed,
        readme: project.record_name(records::README_FILE),
        counts,
        actual_counts: overlay.map_or(Counts::default(), |o| o.counts.clone()),
        unread_counts,
        residual_record: record.map(|r| r.file.clone()),
        notes,
        unnoted,
        findings,
    }
}
