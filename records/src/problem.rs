//! What can be wrong with a record, as data: a line and a message, or (for a strict read) the
//! first such problem with the file it is in and what to do about it.

use serde::Serialize;

/// A problem at a line of a record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// 1-based line.
    pub line: usize,
    pub message: String,
}

/// A record that a command cannot go on with: the file, the line where there is one, what is
/// wrong and what to do. The engine turns it into its own error; the checks read the
/// [`Problem`]s instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    /// The record, relative to the project root (`patches-rocm/UPSTREAM`).
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
    pub note: Option<String>,
}

impl RecordError {
    pub fn at(file: &str, line: Option<usize>, message: impl Into<String>) -> RecordError {
        RecordError {
            file: file.to_string(),
            line,
            message: message.into(),
            note: None,
        }
    }

    pub fn with_note(mut self, note: impl Into<String>) -> RecordError {
        self.note = Some(note.into());
        self
    }

    /// `file:line: message`, the way compilers print.
    pub fn place_and_message(&self) -> String {
        match self.line {
            Some(line) => format!("{}:{line}: {}", self.file, self.message),
            None => format!("{}: {}", self.file, self.message),
        }
    }
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.place_and_message())
    }
}

impl std::error::Error for RecordError {}
