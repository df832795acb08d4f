//! The executable book's glue: a [`StepRunner`] that runs the book's steps with this forkbook,
//! checks the tools they require, and renders the book's directives from the engine and the
//! check catalogue. The preprocessor crate does the mdBook side and knows nothing of forkbook;
//! the engine knows nothing of mdBook; this module joins the two.
//!
//! A `forkbook` step runs in process through the [`CommandFn`] it is given, always `--offline`, so the book
//! never touches the network; a step whose objects are not in the cache is shown as skipped with
//! the `forkbook fetch` command that gets them (and fails `book test`, the acceptance gate). Its
//! result comes back with its Markdown where it has one (a residual's diffs, a table of
//! conflicts or findings linked upstream), which the page shows above the printed text. A `sh`
//! step runs `sh -c` in the project folder, in its own process group so that a timeout stops
//! everything it started.

use crate::engine::check::{self, Finding, Severity};
use crate::engine::project::{Overrides, Project};
pub use crate::engine::tools::find_program as find_on_path;
use crate::engine::tools::missing_requirement_in;
use crate::engine::ErrorKind;
use crate::invoke::CommandFn;
use forkbook_preprocessor::{Fingerprint, GateFinding, Step, StepKind, StepOutcome, StepRunner};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod directives;
mod fingerprint;
pub mod init;
pub mod steps;

pub use steps::TIMED_OUT;
use steps::{run_in_process, run_shell};

/// The directives this book knows.
const DIRECTIVES: &[&str] = &["register", "checks", "report"];

/// `(path, contents)` of each named file of the `book/` folder, each path written once.
macro_rules! book_sources {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../book/", $path)))),*]
    };
}

/// The book's sources, embedded so that `forkbook demo` and the tests can build this very book
/// anywhere: (path relative to the book folder, contents).
pub const SOURCES: &[(&str, &str)] = book_sources!(
    "book.toml",
    "forkbook.css",
    ".gitignore",
    "src/SUMMARY.md",
    "src/intro.md",
    "src/pin-bump.md",
    "src/forecast.md",
    "src/fork-sync.md",
    "src/report.md",
    "src/register.md",
    "src/checks.md",
);

/// Writes the book's sources into `dir` (created if needed).
pub fn write_sources(dir: &Path) -> crate::engine::Result<()> {
    for (path, text) in SOURCES {
        crate::engine::fsutil::write_file(&dir.join(path), text.as_bytes())?;
    }
    Ok(())
}

/// Runs the book's steps against the project at `root`.
#[derive(Debug, Clone)]
pub struct BookRunner {
    root: PathBuf,
    overrides: Overrides,
    /// Runs a forkbook step in process (the command line's `run_for_book`).
    command: CommandFn,
    /// The state digest, kept between steps while the records look the same.
    digest: fingerprint::DigestMemo,
    /// [`fingerprint::tools_found`], probed once a build (the search path does not change under
    /// it).
    tools: std::sync::Arc<std::sync::OnceLock<Vec<(String, String)>>>,
}

impl BookRunner {
    /// `overrides` are passed on to every step (`--cache`, the remote URLs); `--offline` always.
    /// `command` runs a step's forkbook command in process.
    pub fn new(root: impl Into<PathBuf>, overrides: Overrides, command: CommandFn) -> BookRunner {
        BookRunner {
            root: root.into(),
            overrides,
            command,
            digest: fingerprint::DigestMemo::default(),
            tools: Default::default(),
        }
    }

    /// The overrides every step runs with: this book's, always `--offline`.
    fn offline(&self) -> Overrides {
        Overrides {
            offline: true,
            ..self.overrides.clone()
        }
    }

    /// A step's command line: always `--offline`, with this book's overrides.
    fn argv<I: IntoIterator<Item = S>, S: Into<OsString>>(&self, command: I) -> Vec<OsString> {
        crate::invoke::argv(&self.root, &self.offline(), command)
    }

    /// The project, offline like the steps.
    fn project(&self) -> crate::engine::Result<Project> {
        Project::open(&self.root, &self.offline())
    }

    fn run_forkbook(&self, step: &Step) -> StepOutcome {
        let Some(words) = split_words(&step.command) else {
            return refused(format!(
                "the command `forkbook {}` has unbalanced quotes",
                step.command
            ));
        };
        // A step that builds a book is refused where books are built (`steps`).
        let args = self.argv(words);
        let started = Instant::now();
        let (ran, output) = run_in_process(self.command, args, step.attrs.timeout);
        let duration = started.elapsed();
        if ran.kind == Some(ErrorKind::MissingObject) && step.renderer != "test" {
            return StepOutcome::Skipped {
                reason: missing_objects_reason(&output),
            };
        }
        StepOutcome::Ran {
            exit: ran.exit,
            duration,
            output,
            view: ran.view,
        }
    }

    fn run_shell(&self, step: &Step) -> StepOutcome {
        let started = Instant::now();
        // The step's `forkbook` works on this book's cache, mirrors and tools, offline.
        let overrides = self.offline();
        let mut env = overrides.child_env();
        env.retain(|(name, _)| name != "PATH");
        env.push((
            "PATH".into(),
            path_with_this_forkbook(overrides.search_path()),
        ));
        match run_shell(&step.command, &self.root, step.attrs.timeout, &env) {
            Ok((exit, output)) => StepOutcome::Ran {
                exit,
                duration: started.elapsed(),
                output,
                view: None,
            },
            Err(e) => refused(format!("failed to start `sh`: {e}")),
        }
    }
}

impl StepRunner for BookRunner {
    fn run(&self, step: &Step) -> StepOutcome {
        let search = self.overrides.search_path();
        if let Some(reason) = missing_requirement_in(&step.attrs.requires, false, &search) {
            return StepOutcome::Skipped { reason };
        }
        match step.kind {
            StepKind::Forkbook => self.run_forkbook(step),
            StepKind::Shell => self.run_shell(step),
        }
    }

    fn fingerprint(&self) -> Fingerprint {
        let project = self.project();
        let tools = self
            .tools
            .get_or_init(|| {
                fingerprint::tools_found(project.as_ref().ok(), &self.overrides.search_path())
            })
            .clone();
        let (commits, extra) = match &project {
            Ok(project) => (
                fingerprint::recorded_commits(project),
                self.digest.digest(project),
            ),
            Err(e) => (Vec::new(), e.message()),
        };
        Fingerprint {
            commits,
            tool_version: fingerprint::tool_version(),
            extra,
            tools,
        }
    }

    /// The results caches' secret beside the object cache, unless that folder is the
    /// checkout's (`engine::cache::results_secret`): then no step result is kept or believed.
    fn cache_secret(&self) -> Option<forkbook_records::cache_entry::Secret> {
        crate::engine::cache::results_secret(&self.project().ok()?)
    }

    /// The directive's Markdown, control characters shown escaped as on a terminal.
    fn directive(&self, name: &str, _args: &[String]) -> Result<String, String> {
        let markdown = match name {
            "checks" => Ok(forkbook_checks::render_catalogue_markdown()),
            "register" => self.register_table(),
            "report" => Ok(self.report()),
            other => Err(format!(
                "unknown directive `{other}` (known: {})",
                DIRECTIVES.join(", ")
            )),
        };
        markdown.map(|md| crate::engine::terminal::escape_controls(&md).into_owned())
    }

    fn gate_findings(&self, renderer: &str) -> Vec<GateFinding> {
        let could_not_run = |message: String, note: Option<String>| GateFinding {
            finding: Finding::new(
                "check",
                Severity::Error,
                crate::engine::config::CONFIG_FILE,
                None,
                format!("the checks could not run: {message}"),
            )
            .with_note(note.as_deref().unwrap_or("run `forkbook check` to see why")),
            shown_by: Some("checks".into()),
        };
        // The same run as `forkbook check`: the record checks always, the overlay checks where
        // the cache can build the overlay.
        let run = match self
            .project()
            .and_then(|project| check::run(&project, check::Kept::Every))
        {
            Ok(run) => run,
            Err(e) => return vec![could_not_run(e.message(), e.note)],
        };
        let findings = match run.findings.to_vec() {
            Ok(findings) => findings,
            Err(e) => return vec![could_not_run(e.message(), e.note)],
        };
        let mut gate: Vec<GateFinding> = findings
            .into_iter()
            .filter(|f| f.severity == Severity::Error)
            .map(directives::gate_finding)
            .collect();
        // Without the objects the overlay checks did not run. A preview build shows the steps'
        // fetch commands; the acceptance gate does not pass what it did not check.
        if let (Some(why), Some(fetch)) = (run.skipped, run.fetch) {
            if renderer == "test" {
                gate.push(could_not_run(why, Some(fetch)));
            }
        }
        gate
    }
}

/// Splits a command line as a POSIX shell does (quotes, backslashes, a `#` word starting a
/// comment): `shlex`'s rule. `None` for an unclosed quote or a trailing backslash.
pub fn split_words(line: &str) -> Option<Vec<String>> {
    shlex::split(line)
}

/// The search path with this executable's folder first, when it is forkbook, so shell steps call
/// this one.
fn path_with_this_forkbook(path: OsString) -> OsString {
    let this = std::env::current_exe().ok().and_then(|exe| {
        let dir = exe.parent()?.to_path_buf();
        dir.join("forkbook").is_file().then_some(dir)
    });
    match this {
        Some(dir) => std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&path)))
            .unwrap_or(path),
        None => path,
    }
}

/// The skip reason for a step whose objects are not in the cache: the error and its note.
fn missing_objects_reason(output: &str) -> String {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let error = lines
        .iter()
        .find(|l| l.starts_with("error:"))
        .copied()
        .unwrap_or("objects are missing");
    let note = lines
        .iter()
        .find(|l| l.starts_with("note:"))
        .copied()
        .unwrap_or("note: run `forkbook fetch`");
    format!(
        "{}; {}",
        error.trim_start_matches("error: "),
        note.trim_start_matches("note: ")
    )
}

fn refused(message: String) -> StepOutcome {
    StepOutcome::Ran {
        exit: crate::invoke::FAILED,
        duration: Duration::ZERO,
        output: format!("error: {message}\n"),
        view: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_like_a_shell() {
        let words =
            split_words(r#"fix add --title "Take the \"size\" arg" --from '/tmp/a b' x\ y"#)
                .unwrap();
        assert_eq!(
            words,
            [
                "fix",
                "add",
                "--title",
                "Take the \"size\" arg",
                "--from",
                "/tmp/a b",
                "x y"
            ]
        );
        assert_eq!(split_words("a ''").unwrap(), ["a", ""]);
        assert_eq!(split_words("a 'open"), None);
        assert_eq!(
            split_words("status # why"),
            Some(vec!["status".to_string()])
        );
    }

    #[test]
    fn missing_object_errors_become_a_reason_naming_fetch() {
        let output = "error: commit `abc123` of the upstream is not in the object cache `/c`\n\n\
                      note: run `forkbook fetch --upstream abc123` (online, or with a mirror as the URL)\n";
        let reason = missing_objects_reason(output);
        assert!(
            reason.starts_with("commit `abc123` of the upstream is not in the object cache"),
            "{reason}"
        );
        assert!(
            reason.contains("; run `forkbook fetch --upstream abc123`"),
            "{reason}"
        );
    }
}
