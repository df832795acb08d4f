//! mdBook plumbing for forkbook's executable book.
//!
//! A chapter holds annotated fenced blocks: ```` ```forkbook,gate ```` runs a forkbook command,
//! ```` ```sh,run ```` a shell step (only where book.toml allows it). This crate finds those blocks
//! ([`blocks`]), hands each to a [`StepRunner`] that the application implements, splices the
//! result into the chapter as escaped HTML ([`render`]), caches results ([`cache`]) and decides
//! the gate: a gated step that exits other than expected, or a book-wide [`GateFinding`] from the
//! application, fails the build with a message naming the chapter file and line.
//!
//! It knows nothing of forkbook itself, the way mdBook's own preprocessor crate knows nothing of
//! its renderers: [`ForkbookPreprocessor`] wraps any runner into an mdBook [`Preprocessor`].
//!
//! [`Preprocessor`]: mdbook_preprocessor::Preprocessor

pub mod adapter;
pub mod blocks;
pub mod bounds;
pub mod cache;
mod links;
pub mod render;

pub use adapter::{
    handle_stdio, supports_renderer, ForkbookPreprocessor, GateFailure, Tally, NAME,
};
pub use blocks::{Attrs, StepKind};

use forkbook_records::finding::Finding;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// One annotated block, ready to run: variables substituted, attributes parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Step {
    pub kind: StepKind,
    /// For [`StepKind::Forkbook`] the command line without the leading `forkbook`
    /// (`retarget 846d176 --check`); for [`StepKind::Shell`] the script.
    pub command: String,
    pub attrs: Attrs,
    /// The chapter's file as the book's author sees it (`src/pin-bump.md`).
    pub chapter: PathBuf,
    /// 1-based line of the opening fence in the chapter file.
    pub line: usize,
    /// The folder holding book.toml.
    pub book_root: PathBuf,
    /// The renderer the book is built for: `html`, or `test` for the acceptance gate, where a
    /// runner may be stricter (treat missing objects as a failure rather than a skip).
    pub renderer: String,
}

impl Step {
    /// The command as a reader would type it.
    pub fn display_command(&self) -> String {
        match self.kind {
            StepKind::Forkbook => format!("forkbook {}", self.command),
            StepKind::Shell => self.command.clone(),
        }
    }
}

/// What running a step gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepOutcome {
    /// The step ran: its exit status, how long it took, everything it printed, and its result
    /// as Markdown when the runner has one (a diff, a table with links): the page shows that,
    /// with the printed text folded beneath it.
    Ran {
        exit: i32,
        duration: Duration,
        output: String,
        #[serde(default)]
        view: Option<String>,
    },
    /// The step could not run here (a tool missing, shell steps off); the reason is shown.
    Skipped { reason: String },
}

/// What a step's result depends on besides its own text, and what the page shows it ran against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fingerprint {
    /// Labelled commits, in display order (`("pin", "846d176")`).
    pub commits: Vec<(String, String)>,
    /// The application's version; results from another version are not reused.
    pub tool_version: String,
    /// Anything else that changes results (a digest of the overlay's files, say); not shown.
    pub extra: String,
    /// The tools a step may find on this machine (`("hipcc", "/usr/bin/hipcc ...")`, or `-`
    /// where there is none): a result made with `hipcc` is not replayed without it.
    pub tools: Vec<(String, String)>,
}

impl Fingerprint {
    /// Adds every field to a cache key, each part framed by its length.
    pub fn add_to(&self, key: &mut forkbook_records::cache_entry::KeyBuilder) {
        for list in [&self.commits, &self.tools] {
            key.part((list.len() as u64).to_le_bytes());
            for (name, value) in list {
                key.part(name).part(value);
            }
        }
        key.part(&self.tool_version).part(&self.extra);
    }
}

/// A book-wide gate condition the application found (a check error, an entry without its link,
/// an overlay that does not match its lock): the finding, its note saying what to do about it,
/// and the directive whose chapter shows it (`register`), so the failure can name the chapter
/// and line too. Any of them fails the build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateFinding {
    pub finding: Finding,
    pub shown_by: Option<String>,
}

/// What the application implements: run steps, say what results depend on, render directives.
pub trait StepRunner {
    /// Runs one step. Timeouts and missing `requires=` tools are the runner's to honour.
    fn run(&self, step: &Step) -> StepOutcome;

    /// The commits and tool version results depend on; asked before every step.
    fn fingerprint(&self) -> Fingerprint;

    /// Renders `{{#forkbook NAME ARGS...}}` as Markdown. Raw HTML in it is shown as text (names
    /// from other people's trees may hold `<script>`), so use Markdown tables and code spans.
    /// `Err` fails the build, naming the chapter and line. The text is cached under the
    /// fingerprint like a step's result, so it must depend on nothing the fingerprint misses.
    fn directive(&self, name: &str, args: &[String]) -> Result<String, String>;

    /// The secret that seals the step cache's entries, kept where the book's readers cannot
    /// write. `None` (the default): no result is kept or believed, every step runs.
    fn cache_secret(&self) -> Option<forkbook_records::cache_entry::Secret> {
        None
    }

    /// Book-wide gate conditions; asked once after every chapter has been processed.
    fn gate_findings(&self, _renderer: &str) -> Vec<GateFinding> {
        Vec::new()
    }
}
