//! The residual record a project keeps: the first user's `CORE_RESIDUAL.diff`, or forkbook's own
//! `residual.diff`. Both carry notes; forkbook reads either and rewrites it in its own format.
//!
//! `CORE_RESIDUAL.diff` opens with a header of `#` lines: prose, the three commits
//! (`# pin:`, `# fork:`, `# fork_upstream_merge_base:`), one `# overlay-sha256: <sha256> <path>`
//! per core file, and one `# note <path>: LOCAL_FIXES.md item N: <reason>` per explained file;
//! then plain diffs (`--- a/` / `+++ b/`) of each core file against the base tree. forkbook's own
//! `residual.diff` is the notes (if any) and diffs `--- B/` / `+++ overlay/`.
//!
//! A rewrite keeps every header line as written, sets the commits and hashes, and never drops a
//! note: a note whose file's residual changed gets a `# review <path>:` line under it, which
//! stays until a person has read the hunk and deleted it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::problem::Problem;
use crate::{CORE_RESIDUAL_FILE, RESIDUAL_FILE};

/// One hunk of the residual: a local change to a core file, against B (the pin plus the fork's
/// change).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// The core file, repository-relative.
    pub file: String,
    /// First line of the hunk in the overlay's file (1-based).
    pub line: usize,
    pub removed: usize,
    pub added: usize,
    /// The fixes that explain it: the fixes whose patches change the file (patch layout); in the
    /// files layout, the items the record's notes name for it, or the entries that name it.
    /// Empty: no fix explains it.
    pub fixes: Vec<usize>,
    /// The hunk in unified form.
    pub text: String,
    /// The residual record's note for the hunk's file, which is what explains it (files
    /// layout: the register item the note names is then the hunk's fix).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<HunkNote>,
}

/// A residual record's note as it explains a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HunkNote {
    /// The register item it names (`LOCAL_FIXES.md item N`), when it names one.
    pub item: Option<u32>,
    pub reason: String,
}

/// Header keys of the three commits, in the order the record lists them.
pub const COMMIT_KEYS: [&str; 3] = ["pin", "fork", "fork_upstream_merge_base"];

const HASH_KEY: &str = "overlay-sha256:";
const NOTE_KEY: &str = "note ";
const REVIEW_KEY: &str = "review ";
const ITEM_PREFIX: &str = "LOCAL_FIXES.md item ";

/// Which of the two records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Flavor {
    /// `CORE_RESIDUAL.diff`: commits, hashes and notes in the header; `a/` and `b/` diffs.
    Core,
    /// forkbook's own `residual.diff`: notes, then `B/` and `overlay/` diffs.
    #[default]
    Own,
}

impl Flavor {
    pub fn file(self) -> &'static str {
        match self {
            Flavor::Core => CORE_RESIDUAL_FILE,
            Flavor::Own => RESIDUAL_FILE,
        }
    }

    pub fn diff_header(self, path: &str) -> String {
        match self {
            Flavor::Core => format!("--- a/{path}\n+++ b/{path}\n"),
            Flavor::Own => format!("--- B/{path}\n+++ overlay/{path}\n"),
        }
    }

    /// The record a records folder keeps: `CORE_RESIDUAL.diff` where it has one.
    pub fn of<V>(files: &BTreeMap<String, V>) -> Option<Flavor> {
        if files.contains_key(CORE_RESIDUAL_FILE) {
            Some(Flavor::Core)
        } else if files.contains_key(RESIDUAL_FILE) {
            Some(Flavor::Own)
        } else {
            None
        }
    }
}

/// A value written on a line of the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recorded {
    /// The commit key, or the path a hash is for.
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// `# note <path>: LOCAL_FIXES.md item N: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    pub path: String,
    /// The register entry; `None` when the note does not say `LOCAL_FIXES.md item N`.
    pub item: Option<u32>,
    pub reason: String,
    pub line: usize,
}

/// The record as read.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ResidualRecord {
    /// The record, relative to the project root; empty when read without a name.
    pub file: String,
    pub flavor: Flavor,
    pub commits: Vec<Recorded>,
    pub hashes: Vec<Recorded>,
    pub notes: Vec<Note>,
    /// `# review <path>:` lines: notes flagged because their file's residual changed.
    pub reviews: Vec<Recorded>,
    pub problems: Vec<Problem>,
    /// Every line before the first diff, as written.
    #[serde(skip)]
    header: Vec<String>,
    /// Each file's diff as recorded: its hunks, without the `---` / `+++` lines.
    #[serde(skip)]
    pub diffs: BTreeMap<String, String>,
}

impl ResidualRecord {
    /// Reads the record `file` (as findings name it).
    pub fn read(file: &str, text: &str, flavor: Flavor) -> ResidualRecord {
        ResidualRecord {
            file: file.to_string(),
            ..ResidualRecord::parse(text, flavor)
        }
    }

    /// Whether the record carries the three commits and a hash per core file in its header
    /// (`CORE_RESIDUAL.diff`) and so needs a note for every core file with a residual.
    pub fn core_header(&self) -> bool {
        self.flavor == Flavor::Core
    }

    pub fn parse(text: &str, flavor: Flavor) -> ResidualRecord {
        let mut record = ResidualRecord {
            flavor,
            ..ResidualRecord::default()
        };
        let mut current: Option<String> = None;
        let mut in_header = true;
        let lines: Vec<&str> = text.lines().collect();
        let mut index = 0;
        while index < lines.len() {
            let line = lines[index].trim_end_matches('\r');
            let number = index + 1;
            index += 1;
            if in_header && (line.starts_with("--- ") || line.starts_with("diff --git ")) {
                in_header = false;
            }
            if in_header {
                record.header.push(line.to_string());
                record.read_header_line(line, number);
                continue;
            }
            if line.starts_with("diff --git ") {
                continue;
            }
            if let Some(old) = line.strip_prefix("--- ") {
                let new = lines
                    .get(index)
                    .and_then(|l| l.trim_end_matches('\r').strip_prefix("+++ "));
                if let Some(new) = new {
                    index += 1;
                    let side = if new.trim() == "/dev/null" { old } else { new };
                    let path = strip_side(side.trim());
                    record.diffs.entry(path.clone()).or_default();
                    current = Some(path);
                    continue;
                }
            }
            if let Some(path) = &current {
                let diff = record.diffs.entry(path.clone()).or_default();
                diff.push_str(line);
                diff.push('\n');
            }
        }
        record
    }

    fn read_header_line(&mut self, line: &str, number: usize) {
        let Some(rest) = line.strip_prefix('#').map(str::trim_start) else {
            if !line.trim().is_empty() {
                self.problems.push(Problem {
                    line: number,
                    message: format!("`{}` is neither a `#` line nor a diff", line.escape_debug()),
                });
            }
            return;
        };
        for key in COMMIT_KEYS {
            if let Some(value) = rest.strip_prefix(key).and_then(|r| r.strip_prefix(':')) {
                self.commits.push(Recorded {
                    key: key.to_string(),
                    value: value.trim().to_string(),
                    line: number,
                });
                return;
            }
        }
        if let Some(value) = rest.strip_prefix(HASH_KEY) {
            let mut words = value.split_whitespace();
            match (words.next(), words.next()) {
                (Some(sha), Some(path)) => self.hashes.push(Recorded {
                    key: path.to_string(),
                    value: sha.to_ascii_lowercase(),
                    line: number,
                }),
                _ => self.problems.push(Problem {
                    line: number,
                    message: "expected `# overlay-sha256: <sha256> <path>`".into(),
                }),
            }
        } else if let Some(value) = rest.strip_prefix(NOTE_KEY) {
            match read_note(value, number) {
                Ok(note) => self.notes.push(note),
                Err(problem) => self.problems.push(problem),
            }
        } else if let Some(value) = rest.strip_prefix(REVIEW_KEY) {
            let path = value.split_once(':').map_or(value, |(p, _)| p).trim();
            self.reviews.push(Recorded {
                key: path.to_string(),
                value: String::new(),
                line: number,
            });
        }
    }

    /// The note for `path`, if any.
    pub fn note(&self, path: &str) -> Option<&Note> {
        self.notes.iter().find(|n| n.path == path)
    }
}

/// `<path>: LOCAL_FIXES.md item N: <reason>` (after `# note `).
fn read_note(text: &str, line: usize) -> Result<Note, Problem> {
    let problem = |message: &str| Problem {
        line,
        message: message.to_string(),
    };
    let Some((path, rest)) = text.split_once(": ") else {
        return Err(problem(
            "expected `# note <path>: LOCAL_FIXES.md item N: <reason>`",
        ));
    };
    let rest = rest.trim();
    let (item, reason) = match rest.strip_prefix(ITEM_PREFIX) {
        Some(tail) => {
            let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
            let after = tail[digits.len()..].trim_start_matches(':').trim();
            (digits.parse().ok(), after.to_string())
        }
        None => (None, rest.to_string()),
    };
    Ok(Note {
        path: path.trim().to_string(),
        item,
        reason,
        line,
    })
}

/// `a/path`, `B/path`, `overlay/path` -> `path`.
fn strip_side(side: &str) -> String {
    let side = side.split('\t').next().unwrap_or(side);
    match side.split_once('/') {
        Some(("a" | "b" | "B" | "overlay", rest)) => rest.to_string(),
        _ => side.to_string(),
    }
}

/// What a diff changes, as the lines it removes and the lines it adds, conflict-marker labels
/// dropped, each sorted: what a note is about. Line numbers and context move with every bump, the
/// labels name commits or tools, and two diff programs align the same change differently (a line
/// one shows as context another shows removed and added again): a line both removed and added is
/// no change, so it is cancelled out. Hunks are matched by content, not by place: a hunk that
/// only moved (above another one, or to another offset) changes nothing.
fn changed_lines(diff: &str) -> (Vec<String>, Vec<String>) {
    let mut removed = Vec::new();
    let mut added = Vec::new();
    for line in diff.lines() {
        let Some(sign) = line.chars().next().filter(|c| *c == '+' || *c == '-') else {
            continue;
        };
        let body = &line[1..];
        let body = ["<<<<<<<", "|||||||", ">>>>>>>"]
            .into_iter()
            .find(|m| body.starts_with(m))
            .map_or(body.trim_end(), |m| m);
        if sign == '-' {
            &mut removed
        } else {
            &mut added
        }
        .push(body.to_string());
    }
    let mut kept_removed = Vec::new();
    for line in removed {
        match added.iter().position(|a| *a == line) {
            Some(at) => {
                added.remove(at);
            }
            None => kept_removed.push(line),
        }
    }
    kept_removed.sort_unstable();
    added.sort_unstable();
    (kept_removed, added)
}

/// Whether the record writes conflict-marker labels bare (`<<<<<<< pin`, no commit after the
/// label), as a hand-kept record does: a rewrite then keeps them so.
fn bare_labels(record: &ResidualRecord) -> bool {
    record.diffs.values().flat_map(|d| d.lines()).any(|line| {
        let body = line.get(1..).unwrap_or("");
        ["<<<<<<< ", ">>>>>>> ", "||||||| "].iter().any(|m| {
            body.strip_prefix(m)
                .is_some_and(|label| !label.trim().is_empty() && !label.trim().contains(' '))
        })
    })
}

/// A diff's conflict-marker labels without the commit after them (`<<<<<<< pin 846d1762` ->
/// `<<<<<<< pin`).
fn strip_label_commits(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len());
    for line in diff.split_inclusive('\n') {
        let (sign, body) = line.split_at(line.len().min(1));
        let marker = ["<<<<<<< ", ">>>>>>> ", "||||||| "]
            .into_iter()
            .find(|m| body.starts_with(m));
        match marker {
            Some(m) => {
                let label = body[m.len()..].split_whitespace().next().unwrap_or("");
                let end = if body.ends_with('\n') { "\n" } else { "" };
                out.push_str(&format!("{sign}{m}{label}{end}"));
            }
            None => out.push_str(line),
        }
    }
    out
}

/// The three commits the record's header names, as hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedCommits {
    pub pin: String,
    pub fork: String,
    pub base: String,
}

impl RecordedCommits {
    /// The commit a header key names (`pin`, `fork`, else the fork base).
    fn value(&self, key: &str) -> &str {
        match key {
            "pin" => &self.pin,
            "fork" => &self.fork,
            _ => &self.base,
        }
    }
}

/// The record rewritten for `residual` at `commits`, and the notes flagged for review.
///
/// `core_hashes` holds each core file of the overlay with its SHA-256, `diffs` each core file
/// with a residual and its hunks. Every header line of `old` is
/// kept, the commits and hashes are set, and each note stays where it was written.
pub fn render(
    old: Option<&ResidualRecord>,
    flavor: Flavor,
    commits: &RecordedCommits,
    core_hashes: &[(String, String)],
    diffs: &[(String, String)],
) -> (String, Vec<String>) {
    let empty = ResidualRecord::default();
    let old = old.unwrap_or(&empty);
    // A hand-kept record writes its labels bare; a rewrite keeps them so.
    let diffs: Vec<(String, String)> = if bare_labels(old) {
        diffs
            .iter()
            .map(|(path, text)| (path.clone(), strip_label_commits(text)))
            .collect()
    } else {
        diffs.to_vec()
    };
    let flagged = changed_notes(old, &diffs);
    let header = rewrite_header(old, flavor, commits, core_hashes, &flagged);
    let mut out: String = header.iter().map(|line| format!("{line}\n")).collect();
    if !diffs.is_empty() && header.last().is_some_and(|l| !l.trim().is_empty()) {
        out.push('\n');
    }
    for (path, text) in &diffs {
        out.push_str(&flavor.diff_header(path));
        out.push_str(text);
    }
    (out, flagged)
}

/// The files whose note was not flagged for review yet and whose residual's changed lines
/// differ from the ones the note was written against.
fn changed_notes(old: &ResidualRecord, diffs: &[(String, String)]) -> Vec<String> {
    let new_diff = |path: &str| {
        diffs
            .iter()
            .find(|(p, _)| p == path)
            .map_or(String::new(), |(_, t)| t.clone())
    };
    old.notes
        .iter()
        .filter(|n| !old.reviews.iter().any(|r| r.key == n.path))
        .filter(|n| {
            let before = old.diffs.get(&n.path).map_or(String::new(), String::clone);
            changed_lines(&before) != changed_lines(&new_diff(&n.path))
        })
        .map(|n| n.path.clone())
        .collect()
}

/// The old header's lines with the commits and hashes set, a review line under each `flagged`
/// note, and (a core record) the commit and hash lines it lacked after its last line.
fn rewrite_header(
    old: &ResidualRecord,
    flavor: Flavor,
    commits: &RecordedCommits,
    core_hashes: &[(String, String)],
    flagged: &[String],
) -> Vec<String> {
    let commit_value = |key: &str| commits.value(key).to_string();
    let hash_lines: Vec<String> = core_hashes
        .iter()
        .map(|(path, sha)| format!("# {HASH_KEY} {sha} {path}"))
        .collect();
    let mut header: Vec<String> = Vec::new();
    let mut hashes_written = false;
    for (index, line) in old.header.iter().enumerate() {
        let number = index + 1;
        if let Some(commit) = old.commits.iter().find(|c| c.line == number) {
            header.push(format!("# {}: {}", commit.key, commit_value(&commit.key)));
        } else if old.hashes.iter().any(|h| h.line == number) {
            if !hashes_written {
                header.extend(hash_lines.iter().cloned());
                hashes_written = true;
            }
        } else {
            header.push(line.clone());
            let note = old.notes.iter().find(|n| n.line == number);
            if let Some(note) = note.filter(|n| flagged.contains(&n.path)) {
                header.push(format!("# {REVIEW_KEY}{}: the residual changed since this note was written; read the hunk, confirm or update the note, then delete this line", note.path));
            }
        }
    }
    if flavor == Flavor::Core {
        let at = header
            .iter()
            .rposition(|l| !l.trim().is_empty())
            .map_or(0, |i| i + 1);
        let mut missing: Vec<String> = COMMIT_KEYS
            .iter()
            .filter(|k| !old.commits.iter().any(|c| c.key == **k))
            .map(|k| format!("# {k}: {}", commit_value(k)))
            .collect();
        if !hashes_written {
            missing.extend(hash_lines);
        }
        header.splice(at..at, missing);
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = "\
# RESIDUAL: what our core files carry beyond the pin plus the fork.
#
# pin: 1111111111111111111111111111111111111111
# fork: 2222222222222222222222222222222222222222
# fork_upstream_merge_base: 3333333333333333333333333333333333333333
# overlay-sha256: aaaa a.cpp
# overlay-sha256: bbbb b.cpp
# note a.cpp: LOCAL_FIXES.md item 2: keeps both sides of the hook.
# note b.cpp: no item here

--- a/a.cpp
+++ b/a.cpp
@@ -1,2 +1,2 @@
-<<<<<<< pin
+int a;
 end
";

    #[test]
    fn the_header_notes_and_diffs_are_read() {
        let record = ResidualRecord::parse(RECORD, Flavor::Core);
        assert_eq!(record.commits.len(), 3);
        assert_eq!(record.commits[0].key, "pin");
        assert_eq!(record.hashes[1].key, "b.cpp");
        assert_eq!(record.notes[0].item, Some(2));
        assert_eq!(record.notes[0].reason, "keeps both sides of the hook.");
        assert_eq!(record.notes[1].item, None);
        assert_eq!(
            record.diffs["a.cpp"],
            "@@ -1,2 +1,2 @@\n-<<<<<<< pin\n+int a;\n end\n"
        );
        assert!(record.problems.is_empty(), "{:?}", record.problems);
    }

    #[test]
    fn changed_lines_ignore_marker_labels_and_line_numbers() {
        assert_eq!(
            changed_lines("@@ -1 +1 @@\n-<<<<<<< pin\n+x\n"),
            changed_lines("@@ -9 +9 @@\n-<<<<<<< pin 846d176\n+x\n ctx\n")
        );
    }

    #[test]
    fn the_same_change_aligned_differently_is_no_change_and_a_new_line_is() {
        let one = "@@ -1,3 +1,3 @@\n-a\n-b\n+a\n+c\n";
        let other = "@@ -1,3 +1,3 @@\n a\n-b\n+c\n";
        assert_eq!(changed_lines(one), changed_lines(other));
        assert_ne!(
            changed_lines(one),
            changed_lines("@@ -1 +1 @@\n a\n-b\n+d\n")
        );
    }

    /// Issue 39.4: fails before, when the changed lines were compared in diff order: the two
    /// hunks of `a.cpp` written the other way round (one moved above the other, at other
    /// offsets) asked for a review of a note whose change is the same.
    #[test]
    fn a_hunk_that_only_moved_keeps_its_note_unflagged() {
        let old = ResidualRecord::parse(RECORD, Flavor::Core);
        let commits = RecordedCommits {
            pin: "1".repeat(40),
            fork: "2".repeat(40),
            base: "3".repeat(40),
        };
        let record = |diff: &str| {
            let text = format!(
                "# note a.cpp: LOCAL_FIXES.md item 2: ours.\n\n--- a/a.cpp\n+++ b/a.cpp\n{diff}"
            );
            ResidualRecord::parse(&text, Flavor::Core)
        };
        let first = "@@ -3,2 +3,3 @@\n ctx\n+int a;\n end\n@@ -40,2 +41,2 @@\n-old b\n+int b;\n";
        let moved = "@@ -10,2 +10,2 @@\n-old b\n+int b;\n@@ -52,2 +52,3 @@\n ctx\n+int a;\n more\n";
        let hashes = [("a.cpp".to_string(), "aaaa".to_string())];
        let diffs = |d: &str| vec![("a.cpp".to_string(), d.to_string())];
        let (_, flagged) = render(
            Some(&record(first)),
            Flavor::Core,
            &commits,
            &hashes,
            &diffs(moved),
        );
        assert!(flagged.is_empty(), "{flagged:?}");
        let changed = moved.replace("+int b;", "+int c;");
        let (_, flagged) = render(
            Some(&record(first)),
            Flavor::Core,
            &commits,
            &hashes,
            &diffs(&changed),
        );
        assert_eq!(flagged, ["a.cpp"]);
        assert!(!old.notes.is_empty());
    }

    #[test]
    fn bare_labels_are_kept_bare() {
        let record = ResidualRecord::parse(
            "# pin: x\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-<<<<<<< pin\n+x\n",
            Flavor::Core,
        );
        assert!(bare_labels(&record));
        assert_eq!(
            strip_label_commits("-<<<<<<< pin 846d1762\n x\n+>>>>>>> fork 75915908\n"),
            "-<<<<<<< pin\n x\n+>>>>>>> fork\n"
        );
    }
}
