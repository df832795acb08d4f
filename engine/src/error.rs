//! One error type for the engine: a message, the chain of causes, and an optional hint.
//!
//! Messages are lowercase with no trailing period and quote values with backticks
//! (`failed to read \`{path}\``). The hint, shown as a `note:` paragraph, says what to do.

use std::fmt;

/// What kind of failure an [`Error`] is, for callers that act on it (the book skips a step
/// whose objects are missing; `check` runs the record checks and names the rest as skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorKind {
    /// Anything else.
    #[default]
    Other,
    /// A commit is in neither the object cache nor a mirror on this machine (or not in the
    /// remote it was fetched from): `forkbook fetch` or another URL gets it.
    MissingObject,
    /// A fetch over the network failed (no route, refused, authentication).
    Network,
    /// The output was closed by the reader (`forkbook status | head -1`): not a failure.
    OutputClosed,
}

/// An engine failure. The command line maps it to exit status 2 ("the tool could not do it"),
/// as opposed to 1 ("it ran and found problems").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong, outermost context first.
    pub chain: Vec<String>,
    /// What the user can do about it.
    pub note: Option<String>,
    /// What kind of failure it is; kept through [`Error::context`].
    pub kind: ErrorKind,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            chain: vec![message.into()],
            note: None,
            kind: ErrorKind::Other,
        }
    }

    /// Marks the kind of failure.
    pub fn with_kind(mut self, kind: ErrorKind) -> Error {
        self.kind = kind;
        self
    }

    /// Whether a commit was missing from the cache and every mirror (nothing else went wrong).
    pub fn is_missing_object(&self) -> bool {
        self.kind == ErrorKind::MissingObject
    }

    /// Adds the hint shown in a `note:` paragraph.
    pub fn with_note(mut self, note: impl Into<String>) -> Error {
        self.note = Some(note.into());
        self
    }

    /// Wraps this error in an outer description of what was being done.
    pub fn context(mut self, outer: impl Into<String>) -> Error {
        self.chain.insert(0, outer.into());
        self
    }

    /// The message without the note, causes joined on one line.
    pub fn message(&self) -> String {
        self.chain.join(": ")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())?;
        if let Some(note) = &self.note {
            write!(f, "\n\nnote: {note}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<forkbook_records::RecordError> for Error {
    fn from(e: forkbook_records::RecordError) -> Error {
        let error = Error::new(e.place_and_message());
        match e.note {
            Some(note) => error.with_note(note),
            None => error,
        }
    }
}

impl From<git2::Error> for Error {
    fn from(e: git2::Error) -> Error {
        Error::new(e.message().to_string())
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        let kind = match e.kind() {
            std::io::ErrorKind::BrokenPipe => ErrorKind::OutputClosed,
            _ => ErrorKind::Other,
        };
        Error::new(e.to_string()).with_kind(kind)
    }
}

/// Adds context to any fallible result, the way `anyhow::Context` does.
pub trait Context<T> {
    fn context(self, outer: impl Into<String>) -> Result<T>;
    fn with_context<S: Into<String>>(self, outer: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, outer: impl Into<String>) -> Result<T> {
        self.map_err(|e| e.into().context(outer))
    }
    fn with_context<S: Into<String>>(self, outer: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| e.into().context(outer()))
    }
}

/// Returns early with an [`Error`] built from a format string.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => { return Err($crate::Error::new(format!($($arg)*))) };
}
