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
use super::Bytes;
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
    pub local_fixes: FixLines,
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
///
/// The register is left unparsed: its entries are read one at a time as the fixes' lines are
/// written ([`FixLines`]), so a register of 600,000 entries is never held as entries or lines.
pub fn run(project: &Project, cache: &Cache) -> Result<Status> {
    let (files, model) = records::read_register_unparsed(project)?;
    let records = Records::from_folder(project, files, model)?;
    match OverlayState::from_records(project, cache, records) {
        Ok(state) => Ok(status(project, &state)),
        Err(e) if e.kind == ErrorKind::MissingObject => {
            // The records again (the state took them), the register still unparsed: the missing
            // pin's note reads the pull requests it cites from the records folder itself
            // (`pin::stand_ins`).
            let (files, model) = records::read_register_unparsed(project)?;
            let records = Records::from_folder(project, files, model)?;
            let missing = match records.commits(project, cache) {
                Err(whole) if whole.kind == ErrorKind::MissingObject => whole,
                Err(whole) => return Err(whole),
                Ok(_) => e,
            };
            Ok(from_records(project, &records, &missing))
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
        Some(lock) => lock_agreement(lock, &state.lock()),
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
fn local_fixes(project: &Project, records: &Records, patches: Vec<String>) -> FixLines {
    match (
        project.config.overlay.layout,
        records.files.get(records::FIXES_FILE),
    ) {
        (Layout::Files, Some(register)) => FixLines::Register {
            file: project.record_name(records::FIXES_FILE),
            text: register.clone(),
        },
        _ => FixLines::Patches(patches),
    }
}

/// The local fixes' lines. The register's are made as they are written, each from its entry
/// read again from the register's text (which the records hold anyway): held as lines, the
/// 600,000 of a register of as many entries took more than the register. In JSON, a list of
/// strings.
#[derive(Debug, Clone)]
pub enum FixLines {
    /// The patches' names.
    Patches(Vec<String>),
    /// The register's entries, one line each.
    Register { file: String, text: Bytes },
}

impl FixLines {
    /// Hands each line to `line`, in order, until `line` fails.
    pub fn each<E>(
        &self,
        mut line: impl FnMut(&str) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        match self {
            FixLines::Patches(names) => names.iter().try_for_each(|name| line(name)),
            FixLines::Register { file, text } => {
                let text = String::from_utf8_lossy(text);
                let mut outcome = Ok(());
                let mut made = String::new();
                forkbook_records::register::each_entry(file, &text, |entry| {
                    if outcome.is_err() {
                        return;
                    }
                    use std::fmt::Write;
                    made.clear();
                    let state = entry.state().map_or("no state", |s| s.as_str());
                    // Writing into a String does not fail.
                    let _ = write!(made, "{}. {} ({state})", entry.number, entry.title);
                    outcome = line(&made);
                });
                outcome
            }
        }
    }
}

impl Serialize for FixLines {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(None)?;
        self.each(|line| seq.serialize_element(line))?;
        seq.end()
    }
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

impl Status {
    /// The text in the pieces it is made of, each handed to `piece`: the fields, a line a fix,
    /// and what follows. A line a fix, each made and rendered alone: a Doc of every fix of a
    /// register of 600,000 entries held a block and two copies of each beside the fixes.
    fn each_piece(
        &self,
        mut piece: impl FnMut(&str) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
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
        piece(&doc.text())?;
        (self.local_fixes)
            .each(|fix| piece(&Doc::default().field("fix", vec![text(fix)]).text()))?;
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
        piece(&doc.text())
    }
}

impl CommandReport for Status {
    fn text(&self) -> String {
        let mut out = String::new();
        let _ = self.each_piece(|piece| {
            out.push_str(piece);
            Ok(())
        });
        out
    }

    fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.each_piece(|piece| out.write_all(piece.as_bytes()))
    }

    /// Markers left in the overlay are a problem whatever else is right.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(!self.markers.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::FixLines;

    fn lines(fixes: &FixLines) -> Vec<String> {
        let mut out = Vec::new();
        let _ = fixes.each(|line| -> Result<(), ()> {
            out.push(line.to_string());
            Ok(())
        });
        out
    }

    #[test]
    fn status_fix_lines_of_a_register_are_its_entries_and_a_list_of_strings_in_json() {
        let register = "# Fixes\n\n## 1. Keep it\n\n- state: merged\n\n## 2. A title\n\nWhy.\n";
        let fixes = FixLines::Register {
            file: "FIXES.md".into(),
            text: std::sync::Arc::new(register.as_bytes().to_vec()),
        };
        let written = ["1. Keep it (merged)", "2. A title (no state)"];
        assert_eq!(lines(&fixes), written);
        let json = serde_json::to_string(&fixes).unwrap();
        assert_eq!(json, serde_json::to_string(&written).unwrap());
        let patches = FixLines::Patches(vec!["0001-a.patch".into()]);
        assert_eq!(
            serde_json::to_string(&patches).unwrap(),
            r#"["0001-a.patch"]"#
        );
    }
}
