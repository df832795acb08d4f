//! What a command found, one type for every command: the check or rule that found it, how bad
//! it is, where (file and line), what, and what to do about it. It lives at the bottom so that
//! the checks, the engine and the book's gate (the preprocessor, which knows nothing of the
//! engine) hold and render the same value.

use std::cell::RefCell;
use std::sync::Arc;

use serde::Serialize;

/// How much a finding matters. Errors fail `forkbook check`, `verify` and the book's gate;
/// warnings are shown and do not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// What a check found: where, how bad, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The id of the check that found it.
    pub check: &'static str,
    pub severity: Severity,
    /// The file the finding is about, relative to the project root (shared: thousands of
    /// findings name the same file).
    pub file: Arc<str>,
    /// 1-based line in `file`, where one applies.
    pub line: Option<usize>,
    pub message: String,
    /// What to do about it (shared, like the file: a check gives most of its findings one
    /// note).
    pub note: Option<Arc<str>>,
}

/// Which of the two lines a finding is printed as: the place first, the way compilers print
/// (`forkbook check`, `verify`), or the severity and check first (the book's gate, which
/// lists findings of every chapter under one heading).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `file:line: severity[check]: message`
    PlaceFirst,
    /// `severity[check]: file:line: message`
    SeverityFirst,
}

impl Finding {
    /// A finding of `check` at `file` and `line`, without a note.
    pub fn new(
        check: &'static str,
        severity: Severity,
        file: &str,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> Finding {
        Finding {
            check,
            severity,
            file: shared(file),
            line,
            message: message.into(),
            note: None,
        }
    }

    pub fn with_note(mut self, note: impl AsRef<str>) -> Finding {
        self.note = Some(shared(note.as_ref()));
        self
    }

    /// [`Finding::with_note`] with a note made once for many findings: a check that gives each
    /// entry of a long register the same note neither writes nor compares it again.
    pub fn with_shared_note(mut self, note: &Arc<str>) -> Finding {
        self.note = Some(note.clone());
        self
    }

    /// `file:line`, or the file alone.
    pub fn place(&self) -> String {
        match self.line {
            Some(line) => format!("{}:{line}", self.file),
            None => self.file.to_string(),
        }
    }

    /// `file:line: severity[check]: message`, the way compilers print, and the note indented.
    pub fn render(&self) -> String {
        self.render_as(Layout::PlaceFirst, "")
    }

    /// The finding's line in `layout`, `after` appended to the message, and the note indented
    /// beneath it.
    pub fn render_as(&self, layout: Layout, after: &str) -> String {
        let (place, severity, check) = (self.place(), self.severity.as_str(), self.check);
        let mut text = match layout {
            Layout::PlaceFirst => format!("{place}: {severity}[{check}]: "),
            Layout::SeverityFirst => format!("{severity}[{check}]: {place}: "),
        };
        text.push_str(&self.message);
        text.push_str(after);
        if let Some(note) = &self.note {
            text.push_str("\n  note: ");
            text.push_str(note);
        }
        text
    }
}

/// How many of the texts given last [`shared`] keeps to hand out again.
const SHARED_RECENT: usize = 16;

thread_local! {
    static RECENT_TEXTS: RefCell<Vec<Arc<str>>> = const { RefCell::new(Vec::new()) };
}

/// `text` as a shared string: the one given out for the same text lately, when there is one.
/// A check gives each of its findings about a register of 600,000 entries the same file and
/// note; each finding with its own copy of both held eight times the register's bytes.
fn shared(text: &str) -> Arc<str> {
    RECENT_TEXTS.with(|recent| {
        let mut recent = recent.borrow_mut();
        if let Some(at) = recent.iter().position(|kept| **kept == *text) {
            let kept = recent.remove(at);
            recent.push(kept.clone());
            return kept;
        }
        if recent.len() == SHARED_RECENT {
            recent.remove(0);
        }
        let made: Arc<str> = Arc::from(text);
        recent.push(made.clone());
        made
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_prints_its_place_first_or_its_severity_first() {
        let finding = Finding::new(
            "register-link",
            Severity::Error,
            "patches-rocm/LOCAL_FIXES.md",
            Some(12),
            "entry 3 has no link",
        )
        .with_note("propose it");
        assert_eq!(
            finding.render(),
            "patches-rocm/LOCAL_FIXES.md:12: error[register-link]: entry 3 has no link\n  note: propose it"
        );
        assert_eq!(
            finding.render_as(Layout::SeverityFirst, " (shown in src/r.md:3)"),
            "error[register-link]: patches-rocm/LOCAL_FIXES.md:12: entry 3 has no link (shown in src/r.md:3)\n  note: propose it"
        );
    }
}
