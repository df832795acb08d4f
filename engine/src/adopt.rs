//! `forkbook adopt`: take on an overlay a project already keeps, as it stands.
//!
//! Run once in an existing folder, it reads the records where they are (whole files beside
//! `UPSTREAM` included), writes only what forkbook must keep beside them (`overlay.lock`; the
//! README's counts block only when asked), and says what it understood: the register's entries by
//! state, the files they name, the files that differ from the base tree and that no entry names,
//! the README's counts, and the residual record's notes. What needs a person's decision is the
//! checks' errors, listed with the rest.

use super::cache::{Cache, Remote};
use super::check::{gather_facts, record_facts, run_checks, Finding};
use super::config::Layout;
use super::digests::FileDigests;
use super::error::Result;
use super::fsutil::replace_file;
use super::overlay::{OverlayState, Records};
use super::project::Project;
use super::records::{self, Counts};
use super::status::LockState;
use forkbook_checks::names::{named_files, Names};
use forkbook_records::readme::{StatedCount, UnreadCount};
use forkbook_records::register::Entry;
use forkbook_records::residual_record::Note;
use serde::Serialize;
use std::collections::BTreeMap;

mod setup;
mod text;
pub use setup::{project_at, AdoptFlags};

/// What adopt wrote and what it understood.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Adoption {
    /// The records folder, relative to the project root.
    pub records_dir: String,
    pub layout: Layout,
    /// Where the whole files sit, relative to the records folder (`.` for the folder itself).
    pub tree: Option<String>,
    /// Files adopt wrote, relative to the project root.
    pub wrote: Vec<String>,
    pub lock: LockOutcome,
    pub fork: String,
    pub base: String,
    pub pin: String,
    pub backend_files: usize,
    pub core_files: usize,
    /// For a series with neither `[overlay] core_files` nor a lock: the backend prefix outside
    /// which the files its patches touch were taken as the core files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core_files_from_series: Option<String>,
    /// Paths that differ from the base tree.
    pub differing: usize,
    pub register: String,
    pub entries: Vec<Entry>,
    /// Entries by state (`none` for entries without one).
    pub states: BTreeMap<String, usize>,
    /// The overlay files the entries name, once each however they are spelt
    /// (`forkbook_records::names::named_files`, the rule `differing-file-named` reads them by).
    pub named_files: Vec<String>,
    /// Names in the entries that are no one file of the overlay (none, or several), once each.
    pub unresolved_names: Vec<String>,
    /// Paths that differ from the base tree and that no entry names.
    pub unnamed: Vec<String>,
    pub readme: String,
    /// The counts the README states, and the true figures beside them.
    pub counts: Vec<StatedCount>,
    /// The overlay's true figures; none when it could not be built (nothing was counted).
    pub actual_counts: Option<Counts>,
    /// README sentences whose number of files or fixes says no count.
    pub unread_counts: Vec<UnreadCount>,
    /// The residual record, when the folder keeps one.
    pub residual_record: Option<String>,
    pub notes: Vec<Note>,
    /// Core files with a residual and no note.
    pub unnoted: Vec<String>,
    /// Every finding of `forkbook check` after adopting; its errors are the decisions to make.
    pub findings: Vec<Finding>,
    /// The recorded commits no configured URL could give (by branch, by id, or through the
    /// pull request refs): the overlay could not be built, the record checks ran all the same.
    pub missing: Vec<MissingCommit>,
    /// Whether the project has no book yet (`book/book.toml`): adopt then names `forkbook book
    /// init`, which writes one.
    pub no_book: bool,
    /// List every error of the decide list with its note (`--verbose`), not grouped.
    #[serde(skip)]
    pub verbose: bool,
}

/// A recorded commit adopt could not have, and the one command that would get it.
#[derive(Debug, Clone, Serialize)]
pub struct MissingCommit {
    /// The `UPSTREAM` key that records it (`retargeted_to_mlx_pin`).
    pub key: String,
    pub commit: String,
    /// `fork` or `upstream`.
    pub remote: &'static str,
    /// What fetching it said.
    pub why: String,
    pub command: String,
    /// For a missing pin, the command that reads the records on a commit the mirrors have
    /// meanwhile (`--stand-in-pin`), where one can stand in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stand_in: Option<String>,
}

impl Adoption {
    /// Whether anything needs a person's decision (adopt's exit status 1).
    pub fn needs_decision(&self) -> bool {
        forkbook_checks::has_errors(&self.findings)
            || !self.missing.is_empty()
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
    adopt(&project, &cache, counts, config_text.as_deref())
}

/// Adopts the overlay of `project` as it stands; see the module documentation. What it writes
/// beyond the lock: with `counts`, a counts block in the README (the one change to a user's
/// file adopt makes, and only when asked); `config_text`, a `forkbook.toml` at the project
/// root, when the project has none (the text adopt composed from its flags).
pub fn adopt(
    project: &Project,
    cache: &Cache,
    counts: bool,
    config_text: Option<&str>,
) -> Result<Adoption> {
    if let Some((rev, origin)) = project.stand_in_pin() {
        return Err(refused_under_a_stand_in(rev, origin));
    }
    // The lock first, so the records read are the records written over; then read them all
    // before writing: records in an unexpected place are one error, and nothing is written.
    let _lock = project.lock_records()?;
    let records = Records::read(project)?;
    let layout = project.config.overlay.layout;
    let from_series = super::overlay::core_files_from_series(project, &records, layout)
        .then(|| project.config.overlay.backend_prefix.clone());
    let mut state = match OverlayState::from_records(project, cache, records.clone()) {
        Ok(state) => state,
        Err(e) if e.is_missing_object() => {
            return adopt_records_only(project, cache, config_text, &records, e)
        }
        Err(e) => return Err(e),
    };
    // Made before anything is written, so a README it cannot read is refused with nothing done.
    let readme = if counts {
        with_counts_block(project, &state)?
    } else {
        None
    };
    let mut wrote = write_config(project, config_text)?;
    let actual_lock = state.lock();
    let lock = match &state.records.model.lock {
        Some(lock) => LockOutcome::Recorded(super::status::lock_agreement(lock, &actual_lock)),
        None => {
            let text = actual_lock.render();
            wrote.push(write_record(project, &mut state, records::LOCK_FILE, text)?);
            LockOutcome::Written
        }
    };
    if let Some(text) = readme {
        wrote.push(write_record(
            project,
            &mut state,
            records::README_FILE,
            text,
        )?);
    }
    // The records as this run read them under its lock, with what it wrote: not read again.
    state.records.model = records::model(project, &state.records.files)?;
    let facts = gather_facts(project, cache, &state)?;
    let findings = run_checks(&facts);
    let adoption = summarize(project, &state, &facts, findings, wrote, lock);
    Ok(Adoption {
        core_files_from_series: from_series,
        ..adoption
    })
}

/// Adopt writes records, so a stand-in pin refuses it as it refuses every writer; the note says
/// what adopt needs instead, which is not the pin: `forkbook.toml` and a files layout's lock need
/// no commit, and a missing pin is named with its fetch.
fn refused_under_a_stand_in(rev: &str, origin: &str) -> super::error::Error {
    super::error::Error::new(format!(
        "adopt writes records, and nothing is written under the stand-in pin `{rev}` (from {origin})"
    ))
    .with_note(
        "run `forkbook adopt` without it: it writes forkbook.toml and, for whole files, the lock \
         without the pin, and names a missing pin with the command that fetches it; the stand-in \
         is for reading (`check`, `status`, the book)",
    )
}

/// Writes the record `name` of the records folder, and keeps it in `state` as written; returns
/// its name.
fn write_record(
    project: &Project,
    state: &mut OverlayState,
    name: &str,
    text: String,
) -> Result<String> {
    replace_file(&project.records_dir().join(name), text.as_bytes())?;
    let files = &mut state.records.files;
    files.insert(name.to_string(), text.into_bytes().into());
    Ok(project.record_name(name))
}

/// Writes the composed `forkbook.toml`, when adopt composed one; returns what it wrote.
fn write_config(project: &Project, config_text: Option<&str>) -> Result<Vec<String>> {
    let Some(text) = config_text else {
        return Ok(Vec::new());
    };
    replace_file(
        &project.root.join(super::config::CONFIG_FILE),
        text.as_bytes(),
    )?;
    Ok(vec![super::config::CONFIG_FILE.to_string()])
}

/// Adopt when a recorded commit cannot be had: `forkbook.toml` is written (so `fetch`,
/// `check` and `status` can start), and so is the lock of whole files, which needs no commit
/// ([`lock_without_commits`]); the record checks run, and the missing commits are named with
/// the command that gets each. The caller holds the project lock.
fn adopt_records_only(
    project: &Project,
    cache: &Cache,
    config_text: Option<&str>,
    records: &Records,
    error: super::error::Error,
) -> Result<Adoption> {
    let mut wrote = write_config(project, config_text)?;
    let mut records = records.clone();
    let lock = lock_without_commits(project, &mut records, &mut wrote)?;
    let facts = record_facts(project, &records.files, records.model.clone());
    // The whole files the folder holds are the overlay's files the names can resolve to (in the
    // patch layout, none: the overlay is the base tree plus the patches, which could not be built).
    let known: Vec<String> = records.tree.keys().cloned().collect();
    let findings = run_checks(&facts)
        .into_iter()
        .filter(|f| !forkbook_checks::needs_objects(f.check))
        .collect();
    let recorded = |key| records.upstream.get(key).unwrap_or_default().to_string();
    Ok(Adoption {
        lock,
        fork: recorded(records::keys::COMMIT),
        base: recorded(records::keys::BASE),
        pin: recorded(records::keys::PIN),
        missing: missing_commits(project, &records, cache, &error),
        ..summarize_records(project, &facts, findings, wrote, &known)
    })
}

/// The lock while a recorded commit is missing. In the files layout the overlay is the whole
/// files as they stand, so their lock is the one adopt writes with every commit there, and it is
/// written now (kept in `records` as written); a series' lock is its patches applied to the base
/// tree, which needs the commits, so it waits for them.
fn lock_without_commits(
    project: &Project,
    records: &mut Records,
    wrote: &mut Vec<String>,
) -> Result<LockOutcome> {
    if project.config.overlay.layout == Layout::Patch {
        return Ok(LockOutcome::WaitsForCommits);
    }
    let actual = records::lock_knowing(&records.tree, &FileDigests::of(&records.tree));
    if let Some(lock) = &records.model.lock {
        return Ok(LockOutcome::Recorded(super::status::lock_agreement(
            lock, &actual,
        )));
    }
    let text = actual.render();
    replace_file(
        &project.records_dir().join(records::LOCK_FILE),
        text.as_bytes(),
    )?;
    records
        .files
        .insert(records::LOCK_FILE.to_string(), text.into_bytes().into());
    records.model = records::model(project, &records.files)?;
    wrote.push(project.record_name(records::LOCK_FILE));
    Ok(LockOutcome::WrittenWithoutCommits)
}

/// What adopt did with the overlay's lock; in JSON its words, as on the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(into = "String")]
pub enum LockOutcome {
    /// The folder had one: how it agrees with the overlay.
    Recorded(LockState),
    /// Written from the overlay.
    #[default]
    Written,
    /// Written from the whole files while the recorded commits are missing.
    WrittenWithoutCommits,
    /// A series' lock, not written: it waits for the missing commits.
    WaitsForCommits,
}

impl From<LockOutcome> for String {
    fn from(outcome: LockOutcome) -> String {
        match outcome {
            LockOutcome::Recorded(state) => state.into(),
            LockOutcome::Written => "written".into(),
            LockOutcome::WrittenWithoutCommits => {
                "written (the whole files as they stand: their lock needs no commit)".into()
            }
            LockOutcome::WaitsForCommits => {
                "not written: a series' lock is its patches applied to the base tree, which \
                 needs the missing commits; `forkbook adopt` writes it once they are fetched"
                    .into()
            }
        }
    }
}

/// The recorded commits the cache lacks, each with the command that fetches it; when all are
/// there (the error was another object's), the error itself and its note. A missing pin also
/// names the first commit the mirrors have that can stand in for it (`pin::stand_in_offered`, the one rule): the
/// records can be read on it while the pin is being found.
fn missing_commits(
    project: &Project,
    records: &Records,
    cache: &Cache,
    error: &super::error::Error,
) -> Vec<MissingCommit> {
    let recorded = [
        (records::keys::COMMIT, Remote::Fork),
        (records::keys::BASE, Remote::Upstream),
        (records::keys::PIN, Remote::Upstream),
    ];
    let missing: Vec<MissingCommit> = recorded
        .iter()
        .filter_map(|(key, remote)| {
            let commit = records.upstream.get(key)?;
            if cache.find(commit).is_some() {
                return None;
            }
            let command = format!(
                "FORKBOOK_{}_URL=DIR forkbook fetch --{} {commit}   # DIR: a clone or mirror that has it",
                remote.name().to_ascii_uppercase(),
                remote.name()
            );
            let stand_in = (*key == records::keys::PIN)
                .then(|| super::pin::stand_in_offered(project, cache))
                .flatten();
            let stand_in = stand_in.map(|nearby| {
                format!(
                    "forkbook --stand-in-pin {} check   # {}, read only",
                    super::cache::short(nearby.commit),
                    nearby.what
                )
            });
            Some(MissingCommit {
                key: key.to_string(),
                commit: commit.to_string(),
                remote: remote.name(),
                why: error.message(),
                command,
                stand_in,
            })
        })
        .collect();
    if !missing.is_empty() {
        return missing;
    }
    vec![MissingCommit {
        key: String::new(),
        commit: String::new(),
        remote: "upstream",
        why: error.message(),
        command: error
            .note
            .clone()
            .unwrap_or_else(|| "forkbook fetch".into()),
        stand_in: None,
    }]
}

/// What the records alone say (for [`adopt_records_only`], and the start of [`summarize`]):
/// entries and their states, the overlay files they name among `known` (every path of the base
/// tree and the overlay, or what the folder holds when they could not be built), the README's
/// counts as stated, the residual record's notes.
fn summarize_records(
    project: &Project,
    facts: &forkbook_checks::Facts,
    findings: Vec<Finding>,
    wrote: Vec<String>,
    known: &[String],
) -> Adoption {
    let config = &project.config.overlay;
    let entries = facts
        .records
        .register
        .as_ref()
        .map_or(&[][..], |r| &r.entries);
    let mut states = BTreeMap::new();
    for entry in entries {
        let state = entry.state().map_or("none", |s| s.as_str());
        *states.entry(state.to_string()).or_insert(0) += 1;
    }
    let names = Names::new(known, &config.backend_prefix);
    let (named, unresolved) = named_files(entries, &names);
    let readme = facts.records.readme.as_ref();
    let record = facts.records.residual_record.as_ref();
    Adoption {
        records_dir: config.dir.clone(),
        layout: config.layout,
        tree: (config.layout == Layout::Files).then(|| tree_name(config)),
        wrote,
        register: project.record_name(records::FIXES_FILE),
        entries: entries.to_vec(),
        states,
        named_files: named.into_iter().map(String::from).collect(),
        unresolved_names: unresolved.into_iter().map(String::from).collect(),
        readme: project.record_name(records::README_FILE),
        counts: readme.map_or(Vec::new(), |r| r.counts.clone().unwrap_or_default()),
        unread_counts: readme.map_or(Vec::new(), |r| r.unread.clone()),
        residual_record: record.map(|r| r.file.clone()),
        notes: record.map_or(Vec::new(), |r| r.notes.clone()),
        findings,
        no_book: !project.root.join("book").join("book.toml").exists(),
        ..Adoption::default()
    }
}

/// `.` for whole files in the records folder itself, else the tree folder's name.
fn tree_name(config: &super::config::OverlayConfig) -> String {
    let prefix = config.tree_prefix();
    let tree = prefix.trim_end_matches('/');
    if tree.is_empty() { "." } else { tree }.to_string()
}

/// The README with a counts block added, when it has none. One that is not UTF-8 is refused:
/// it would be written back without its bytes.
fn with_counts_block(project: &Project, state: &OverlayState) -> Result<Option<String>> {
    let readme = match state.records.files.get(records::README_FILE) {
        Some(bytes) => records::utf8(project, records::README_FILE, bytes)?.to_string(),
        None => String::new(),
    };
    if Counts::stated(&readme).is_some() {
        return Ok(None);
    }
    let entries = records::register_entries(&state.records.model);
    let counts = super::counts::actual(
        &state.overlay,
        &project.config.overlay.backend_prefix,
        entries,
    );
    Ok(Some(counts.write_into(&readme)))
}

/// What adopt understood with the overlay built: the records' summary, with each named file
/// resolved to its path, the differing files no entry names, the core files no note explains,
/// and the overlay's commits and counts.
fn summarize(
    project: &Project,
    state: &OverlayState,
    facts: &forkbook_checks::Facts,
    findings: Vec<Finding>,
    wrote: Vec<String>,
    lock: LockOutcome,
) -> Adoption {
    // What the checks found of the overlay (the differing files, the residual, the counts) is
    // read from their facts, not computed a second time.
    let no_view = forkbook_checks::facts::OverlayView::default();
    let view = facts.overlay.as_ref().unwrap_or(&no_view);
    let adoption = summarize_records(project, facts, findings, wrote, facts.tree_files());
    let differing = &view.tree.differing;
    let unnamed = differing
        .iter()
        .filter(|p| !adoption.named_files.contains(p))
        .cloned()
        .collect();
    let noted = |path: &String| adoption.notes.iter().any(|n| n.path == *path);
    let unnoted = view
        .residual_files()
        .into_iter()
        .filter(|p| adoption.residual_record.is_some() && !noted(p))
        .collect();
    Adoption {
        lock,
        fork: state.commits.fork.to_string(),
        base: state.commits.base.to_string(),
        pin: state.commits.pin.to_string(),
        backend_files: view.counts.backend_files,
        core_files: view.counts.core_files,
        differing: differing.len(),
        unnamed,
        actual_counts: facts.overlay.as_ref().map(|o| o.counts.clone()),
        unnoted,
        ..adoption
    }
}
