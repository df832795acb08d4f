//! `forkbook status`: one screen with the records, the counts and the lock state.

use super::base::CoreOutcome;
use super::cache::Cache;
use super::config::Layout;
use super::doc::{text, words, Doc};
use super::error::{Error, ErrorKind, Result};
use super::merge::count_conflicts;
use super::overlay::{OverlayState, Records};
use super::project::Project;
use super::records;
use super::report_value::{plural, CommandReport, Verdict};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub layout: Layout,
    pub fork: String,
    pub base: String,
    pub pin: String,
    /// `None` where the overlay is not built here and the records do not hold the files.
    pub backend_files: Option<usize>,
    pub core_files: Option<usize>,
    pub core_conflicts: Vec<String>,
    pub local_fixes: Vec<String>,
    pub differing_files: Option<usize>,
    pub lock: LockState,
    /// Where conflict markers are left in the overlay, `file:line` for each file.
    pub markers: Vec<String>,
    /// Why the overlay is not built here (its commits are not in the object cache) and the
    /// command that gets them: the rest is what the records alone say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_built: Option<String>,
}

/// `forkbook status`: the overlay at its recorded commits. Offline with those commits not in
/// the object cache, what the records alone say (the commits, the fixes, the lock), and the
/// command that gets the rest: a status that cannot see everything still shows what it can.
pub fn run(project: &Project, cache: &Cache) -> Result<Status> {
    match OverlayState::load(project, cache) {
        Ok(state) => Ok(status(project, &state)),
        Err(e) if e.kind == ErrorKind::MissingObject => {
            Ok(from_records(project, &Records::read(project)?, &e))
        }
        Err(e) => Err(e),
    }
}

/// The status the records give without the objects.
fn from_records(project: &Project, records: &Records, missing: &Error) -> Status {
    use super::records::keys;
    let commit = |key: &str| records.upstream.get(key).unwrap_or("?").to_string();
    // The files layout keeps the whole files: their counts need no objects.
    let prefix = &project.config.overlay.backend_prefix;
    let (backend, core) = if records.tree.is_empty() {
        (None, None)
    } else {
        let backend = records
            .tree
            .keys()
            .filter(|p| p.starts_with(prefix.as_str()))
            .count();
        (Some(backend), Some(records.tree.len() - backend))
    };
    let note = missing
        .note
        .as_deref()
        .map_or(String::new(), |note| format!("; {note}"));
    Status {
        layout: project.config.overlay.layout,
        fork: commit(keys::COMMIT),
        base: commit(keys::BASE),
        pin: commit(keys::PIN),
        backend_files: backend,
        core_files: core,
        core_conflicts: Vec::new(),
        local_fixes: local_fixes(
            project,
            records,
            records.patches.iter().map(|p| p.name.clone()).collect(),
        ),
        differing_files: None,
        lock: match records.model.lock {
            Some(_) => LockState::NotCompared,
            None => LockState::Missing,
        },
        markers: Vec::new(),
        not_built: Some(format!("{}{note}", missing.message())),
    }
}

/// What the recorded lock says of the overlay; in JSON its words, as on the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum LockState {
    Matches,
    /// This many files differ from it.
    Differs(usize),
    Missing,
    /// Recorded, and the overlay is not built here to compare it with.
    NotCompared,
}

impl From<LockState> for String {
    fn from(state: LockState) -> String {
        match state {
            LockState::Matches => "matches".into(),
            LockState::Differs(n) => format!("differs ({})", plural(n, "file", "files")),
            LockState::Missing => "missing".into(),
            LockState::NotCompared => {
                "recorded (not compared: the overlay is not built here)".into()
            }
        }
    }
}

/// What a recorded lock says of the overlay's own.
pub(crate) fn lock_agreement(recorded: &records::Lock, actual: &records::Lock) -> LockState {
    match recorded.mismatches(actual).len() {
        0 => LockState::Matches,
        n => LockState::Differs(n),
    }
}

/// `forkbook status`: the entry point (nothing to fetch, nothing written).
pub fn status(project: &Project, state: &OverlayState) -> Status {
    let prefix = &project.config.overlay.backend_prefix;
    let lock = match &state.records.model.lock {
        None => LockState::Missing,
        Some(lock) => lock_agreement(lock, &records::lock_of(&state.overlay)),
    };
    Status {
        layout: state.layout,
        fork: state.commits.fork.to_string(),
        base: state.commits.base.to_string(),
        pin: state.commits.pin.to_string(),
        backend_files: Some(state.backend_count(prefix)),
        core_files: Some(state.overlay.len() - state.backend_count(prefix)),
        core_conflicts: state
            .base
            .core
            .iter()
            .filter(|(_, o)| matches!(o, CoreOutcome::Conflict(_)))
            .map(|(path, _)| {
                let markers = state.overlay.get(path).map_or(0, |b| count_conflicts(b));
                let how = if markers > 0 {
                    "unresolved".to_string()
                } else {
                    resolved_by(state, path)
                };
                format!("{path} ({how})")
            })
            .collect(),
        local_fixes: local_fixes(
            project,
            &state.records,
            state.steps.iter().map(|s| s.patch.name.clone()).collect(),
        ),
        differing_files: Some(state.differences().len()),
        lock,
        markers: super::overlay::marker_places(&state.marked_files()),
        not_built: None,
    }
}

/// The local fixes: the patches in the patch layout; in the files layout, where there are no
/// patches, the register's entries (`7. Event errors (kept-local)`), as the README promises.
fn local_fixes(project: &Project, records: &Records, patches: Vec<String>) -> Vec<String> {
    if project.config.overlay.layout == super::config::Layout::Patch {
        return patches;
    }
    let Some(register) = &records.model.register else {
        return patches;
    };
    register
        .entries
        .iter()
        .map(|entry| {
            let state = entry.state().map_or("no state", |s| s.as_str());
            format!("{}. {} ({state})", entry.number, entry.title)
        })
        .collect()
}

/// "resolved by fix N, M": the fixes whose patches change `path`.
fn resolved_by(state: &OverlayState, path: &str) -> String {
    let fixes = super::report::fixes_touching(state, path);
    let fixes: Vec<String> = fixes.iter().map(|f| f.number.to_string()).collect();
    if fixes.is_empty() {
        "resolved locally".to_string()
    } else {
        format!("resolved by fix {}", fixes.join(", "))
    }
}

impl CommandReport for Status {
    fn text(&self) -> String {
        let sha = |s: &str| words(crate::text::short_id(s));
        let unknown = "not known: the overlay is not built here";
        let files = match (self.backend_files, self.core_files) {
            (Some(backend), Some(core)) => format!("{backend} backend, {core} core"),
            _ => unknown.to_string(),
        };
        let differs = self.differing_files.map_or(unknown.to_string(), |n| {
            format!("{} from the base tree", plural(n, "file", "files"))
        });
        let mut doc = Doc::default();
        doc.field("layout", vec![words(self.layout.name())])
            .field("fork", vec![sha(&self.fork)])
            .field("base", vec![sha(&self.base)])
            .field("pin", vec![sha(&self.pin)])
            .field("files", vec![words(files)])
            .field("lock", vec![words(String::from(self.lock))])
            .field("differs", vec![words(differs)]);
        if !self.core_conflicts.is_empty() {
            let conflicts = text(self.core_conflicts.join(", "));
            doc.line(vec![words("pin/fork conflicts in core files: "), conflicts]);
        }
        let mut out = doc.text();
        // A line a fix, each made and rendered alone: a Doc of every fix of a register of
        // 600,000 entries held a block and two copies of each beside the fixes themselves.
        for fix in &self.local_fixes {
            out.push_str(&Doc::default().field("fix", vec![text(fix)]).text());
        }
        let mut doc = Doc::default();
        if let Some(why) = &self.not_built {
            doc.line(vec![words("not built: "), text(why)]);
        }
        if !self.markers.is_empty() {
            let files = plural(self.markers.len(), "file", "files");
            let markers = text(self.markers.join(", "));
            doc.line(vec![words(format!("CONFLICT markers left in {files}: ")), markers])
                .line(vec![words("note: resolve them and record each resolution as a local fix; `forkbook check` lists every region")]);
        }
        out.push_str(&doc.text());
        out
    }

    /// Markers left in the overlay are a problem whatever else is right.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(!self.markers.is_empty())
    }
}
