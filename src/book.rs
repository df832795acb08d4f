//! The executable book's glue: a [`StepRunner`] that runs the book's steps with this forkbook,
//! checks the tools they require, and renders the book's directives from the engine and the
//! check catalogue. The preprocessor crate does the mdBook side and knows nothing of forkbook;
//! the engine knows nothing of mdBook; this module joins the two.
//!
//! A `forkbook` step runs in process through the [`CommandFn`] it is given, always `--offline`, so the book
//! never touches the network; a step whose objects are not in the cache is shown as skipped with
//! the `forkbook fetch` command that gets them (and fails `book test`, the acceptance gate). A
//! `sh` step runs `sh -c` in the project folder, in its own process group so that a timeout
//! stops everything it started.

use crate::engine::cache::Cache;
use crate::engine::check::{self, Finding, Severity};
use crate::engine::overlay::OverlayState;
use crate::engine::project::{Overrides, Project};
use crate::engine::records::{self, keys};
pub use crate::engine::tools::find_program as find_on_path;
use crate::engine::tools::missing_requirement;
use crate::engine::ErrorKind;
use crate::invoke::CommandFn;
use forkbook_preprocessor::{Fingerprint, GateFinding, Step, StepKind, StepOutcome, StepRunner};
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use crate::book_steps::TIMED_OUT;
use crate::book_steps::{run_in_process, run_shell};

/// The directives this book knows.
const DIRECTIVES: &[&str] = &["register", "checks", "report"];

/// The book's sources, embedded so that `forkbook demo` and the tests can build this very book
/// anywhere: (path relative to the book folder, contents).
pub const SOURCES: &[(&str, &str)] = &[
    ("book.toml", include_str!("../book/book.toml")),
    ("forkbook.css", include_str!("../book/forkbook.css")),
    (".gitignore", include_str!("../book/.gitignore")),
    ("src/SUMMARY.md", include_str!("../book/src/SUMMARY.md")),
    ("src/intro.md", include_str!("../book/src/intro.md")),
    ("src/pin-bump.md", include_str!("../book/src/pin-bump.md")),
    ("src/fork-sync.md", include_str!("../book/src/fork-sync.md")),
    ("src/report.md", include_str!("../book/src/report.md")),
    ("src/register.md", include_str!("../book/src/register.md")),
    ("src/checks.md", include_str!("../book/src/checks.md")),
];

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
}

impl BookRunner {
    /// `overrides` are passed on to every step (`--cache`, the remote URLs); `--offline` always.
    /// `command` runs a step's forkbook command in process.
    pub fn new(root: impl Into<PathBuf>, overrides: Overrides, command: CommandFn) -> BookRunner {
        BookRunner {
            root: root.into(),
            overrides,
            command,
        }
    }

    /// A step's command line: always `--offline`, with this book's overrides.
    fn argv<I: IntoIterator<Item = S>, S: Into<OsString>>(&self, command: I) -> Vec<OsString> {
        let offline = Overrides {
            offline: true,
            ..self.overrides.clone()
        };
        crate::invoke::argv(&self.root, &offline, command)
    }

    /// The project, offline like the steps.
    fn project(&self) -> crate::engine::Result<Project> {
        let overrides = Overrides {
            offline: true,
            ..self.overrides.clone()
        };
        Project::open(&self.root, &overrides)
    }

    fn run_forkbook(&self, step: &Step) -> StepOutcome {
        let Some(words) = split_words(&step.command) else {
            return refused(format!(
                "the command `forkbook {}` has unbalanced quotes",
                step.command
            ));
        };
        // A step that builds a book is refused where books are built (`book_steps`).
        let args = self.argv(words);
        let started = Instant::now();
        let (exit, kind, output) = run_in_process(self.command, args, step.attrs.timeout);
        let duration = started.elapsed();
        if kind == Some(ErrorKind::MissingObject) && step.renderer != "test" {
            return StepOutcome::Skipped {
                reason: missing_objects_reason(&output),
            };
        }
        StepOutcome::Ran {
            exit,
            duration,
            output,
        }
    }

    fn run_shell(&self, step: &Step) -> StepOutcome {
        let started = Instant::now();
        match run_shell(
            &step.command,
            &self.root,
            step.attrs.timeout,
            path_with_this_forkbook(),
        ) {
            Ok((exit, output)) => StepOutcome::Ran {
                exit,
                duration: started.elapsed(),
                output,
            },
            Err(e) => refused(format!("failed to start `sh`: {e}")),
        }
    }

    /// The recorded commits, for the page: `fork 75915908`, `base 39886de4`, `pin 846d1762`.
    fn recorded_commits(&self, project: &Project) -> Vec<(String, String)> {
        let path = project.records_dir().join(records::UPSTREAM_FILE);
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Vec::new();
        };
        let Ok(upstream) = records::Upstream::parse(&text, records::UPSTREAM_FILE) else {
            return Vec::new();
        };
        [
            ("fork", keys::COMMIT),
            ("base", keys::BASE),
            ("pin", keys::PIN),
        ]
        .into_iter()
        .filter_map(|(label, key)| {
            upstream
                .get(key)
                .map(|v| (label.to_string(), v.chars().take(8).collect()))
        })
        .collect()
    }

    fn register_table(&self) -> Result<String, String> {
        let project = self.project().map_err(|e| e.message())?;
        let path = project.records_dir().join(records::FIXES_FILE);
        let label = project.record_name(records::FIXES_FILE);
        if !path.exists() {
            return Ok(format!(
                "*There is no `{label}`: the overlay has no local fixes yet.*\n"
            ));
        }
        let register = crate::engine::register::load(&path, &label).map_err(|e| e.message())?;
        Ok(render_register(&register, &label))
    }

    fn report(&self) -> String {
        let args = self.argv(["report", "--pr-body"]);
        let (exit, _, output) = run_in_process(self.command, args, None);
        if exit == crate::invoke::FAILED {
            let reason = output
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no output");
            return format!(
                "> The report could not be made here: {}\n",
                reason.trim_start_matches("error: ")
            );
        }
        output
    }

    /// Every finding of the catalogue, as `forkbook check` makes them: the record checks always,
    /// the overlay checks where the overlay can be built from the cache.
    fn check_findings(&self) -> crate::engine::Result<Vec<Finding>> {
        let project = self.project()?;
        let mut facts = check::gather_record_facts(&project)?;
        let overlay = Cache::open(&project).and_then(|cache| {
            let state = OverlayState::load(&project, &cache)?;
            check::add_overlay_facts(&mut facts, &project, &cache, &state)
        });
        let findings = check::run_checks(&facts);
        match overlay {
            // A broken record explains why the overlay could not be built: its finding says so.
            Err(e) if !forkbook_checks::has_errors(&findings) => Err(e),
            _ => Ok(findings),
        }
    }
}

impl StepRunner for BookRunner {
    fn run(&self, step: &Step) -> StepOutcome {
        if let Some(reason) = missing_requirement(&step.attrs.requires, false) {
            return StepOutcome::Skipped { reason };
        }
        match step.kind {
            StepKind::Forkbook => self.run_forkbook(step),
            StepKind::Shell => self.run_shell(step),
        }
    }

    fn fingerprint(&self) -> Fingerprint {
        let project = match self.project() {
            Ok(project) => project,
            Err(e) => {
                return Fingerprint {
                    extra: e.message(),
                    tool_version: tool_version(),
                    ..Default::default()
                }
            }
        };
        Fingerprint {
            commits: self.recorded_commits(&project),
            tool_version: tool_version(),
            extra: state_digest(&project),
        }
    }

    fn directive(&self, name: &str, _args: &[String]) -> Result<String, String> {
        match name {
            "checks" => Ok(forkbook_checks::render_catalogue_markdown()),
            "register" => self.register_table(),
            "report" => Ok(self.report()),
            other => Err(format!(
                "unknown directive `{other}` (known: {})",
                DIRECTIVES.join(", ")
            )),
        }
    }

    fn gate_findings(&self, renderer: &str) -> Vec<GateFinding> {
        match self.check_findings() {
            Ok(findings) => findings
                .into_iter()
                .filter(|f| f.severity == Severity::Error)
                .map(gate_finding)
                .collect(),
            // Offline without the objects: the steps already say so, with the fetch command.
            Err(e) if e.kind == ErrorKind::MissingObject && renderer != "test" => Vec::new(),
            Err(e) => vec![GateFinding {
                check: "check".into(),
                location: crate::engine::config::CONFIG_FILE.into(),
                message: format!("the checks could not run: {}", e.message()),
                help: e
                    .note
                    .unwrap_or_else(|| "run `forkbook check` to see why".into()),
                shown_by: Some("checks".into()),
            }],
        }
    }
}

fn gate_finding(finding: Finding) -> GateFinding {
    let location = match finding.line {
        Some(line) => format!("{}:{line}", finding.file),
        None => finding.file.clone(),
    };
    let explain = format!(
        "`forkbook check --explain {}` says what the check wants",
        finding.check
    );
    let help = finding
        .note
        .map_or(explain.clone(), |note| format!("{note}; {explain}"));
    // Each check declares the chapter that shows its subject.
    let shown_by = forkbook_checks::find(&finding.check)
        .map_or(forkbook_checks::Chapter::Checks, |check| check.chapter)
        .as_str();
    GateFinding {
        check: finding.check,
        location,
        message: finding.message,
        help,
        shown_by: Some(shown_by.into()),
    }
}

/// The register as one card per entry: a heading (anchor `fix-N`, so other pages can link to
/// the entry), its state, link and package on one line, and the files it names. A five-column
/// table hid the state, link and package off the right edge of mdBook's column.
fn render_register(register: &crate::engine::register::Register, label: &str) -> String {
    let mut text = format!(
        "{} in `{label}`.\n\n",
        crate::engine::report_value::plural(register.entries.len(), "entry", "entries")
    );
    for entry in &register.entries {
        let files: Vec<String> = entry.files.iter().map(|f| code_span(&f.name)).collect();
        // The same reading as `check` and `fixes list`: a state the words give is marked so.
        let said = entry.field("state").is_none() && entry.stated.is_some();
        let state = entry.state().map_or("*no state*".to_string(), |s| {
            let from_words = if said { " (from its words)" } else { "" };
            format!("`{}`{from_words}", s.as_str())
        });
        let link = entry
            .value("link")
            .map_or("no link yet".to_string(), link_cell);
        // The package's file name: its folder is the same for all.
        let package = entry.value("package").map_or(String::new(), |p| {
            format!(
                " · package {}",
                code_span(p.rsplit('/').next().unwrap_or(p))
            )
        });
        let files = if files.is_empty() {
            "*names no file*".to_string()
        } else {
            files.join(", ")
        };
        text.push_str(&format!(
            "### {}. {} {{#fix-{}}}\n\n**state** {state} · **link** {link}{package}\\\n**files** {files}\n\n",
            entry.number,
            heading_text(&entry.title),
            entry.number,
        ));
    }
    text
}

/// Text safe as a heading: one line, no trailing `{…}` that would read as attributes, and no
/// leading `#` that would change the level.
fn heading_text(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
        .replace('{', "\\{")
        .replace('}', "\\}")
        .trim()
        .trim_start_matches('#')
        .to_string()
}

/// Text safe inside a table cell.
fn cell(text: &str) -> String {
    text.replace('\n', " ").replace('|', "\\|")
}

/// A code span holding `text` whatever backticks it contains.
fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    cell(&format!("{ticks} {text} {ticks}"))
}

/// A link for a plain web address (`NripeshN/mlx#12` for a GitHub pull request), else code.
fn link_cell(url: &str) -> String {
    let plain = url.starts_with("https://")
        && !url.contains(|c: char| c.is_whitespace() || "<>()[]|`".contains(c));
    if !plain {
        return code_span(url);
    }
    let text = match url
        .trim_start_matches("https://github.com/")
        .split('/')
        .collect::<Vec<_>>()[..]
    {
        [owner, repo, "pull", number] if url.starts_with("https://github.com/") => {
            format!("{owner}/{repo}#{number}")
        }
        _ => url.to_string(),
    };
    format!("[{text}]({url})")
}

/// Splits a command line the way a POSIX shell does for plain words: whitespace separates,
/// single quotes keep everything, double quotes keep all but `\"`, `\\`, `\$` and `` \` ``, and a
/// backslash outside quotes keeps the next character. `None` for an unclosed quote.
pub fn split_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => current.push(c),
                    }
                }
            }
            '"' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => current.push(c),
                            c => current.extend(['\\', c]),
                        },
                        c => current.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Some(words)
}

/// PATH with this executable's folder first, when it is forkbook, so shell steps call this one.
fn path_with_this_forkbook() -> OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
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
    }
}

/// This build of forkbook: its version and when its executable was written, so a rebuilt
/// forkbook does not reuse results of the old one.
fn tool_version() -> String {
    let built = std::env::current_exe()
        .and_then(|exe| exe.metadata())
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    format!("{}+{built}", env!("CARGO_PKG_VERSION"))
}

/// A digest of what step results depend on besides the commits: the configuration, the
/// records folder, the build's pin file, and the branch tips in the object cache.
fn state_digest(project: &Project) -> String {
    let mut hash = Sha256::new();
    let mut add = |name: &str, bytes: &[u8]| {
        hash.update(name.as_bytes());
        hash.update([0]);
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    add(
        "forkbook.toml",
        &std::fs::read(project.root.join(crate::engine::config::CONFIG_FILE)).unwrap_or_default(),
    );
    if let Some(pin_file) = &project.config.overlay.pin_file {
        add(
            pin_file,
            &crate::engine::fsutil::read_regular_file(&project.root.join(pin_file), "pin file")
                .ok()
                .flatten()
                .unwrap_or_default(),
        );
    }
    match crate::engine::fsutil::read_tree(&project.records_dir()) {
        Ok(files) => files.iter().for_each(|(path, bytes)| add(path, bytes)),
        Err(e) => add("records", e.message().as_bytes()),
    }
    for (name, target) in cache_refs(&project.cache_dir()) {
        add(&name, target.as_bytes());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The remote branch tips of the object cache, read without taking its lock.
fn cache_refs(dir: &Path) -> Vec<(String, String)> {
    let Ok(repo) = git2::Repository::open_bare(dir) else {
        return Vec::new();
    };
    let Ok(refs) = repo.references_glob("refs/remotes/*") else {
        return Vec::new();
    };
    let mut tips: Vec<(String, String)> = refs
        .flatten()
        .filter_map(|r| Some((r.name().ok()?.to_string(), r.target()?.to_string())))
        .collect();
    tips.sort();
    tips
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

    #[test]
    fn findings_become_gate_findings_shown_by_their_chapter() {
        let finding = |check: &str| Finding {
            check: check.into(),
            severity: Severity::Error,
            file: "p/LOCAL_FIXES.md".into(),
            line: Some(4),
            message: "m".into(),
            note: Some("add the link".into()),
        };
        let gate = gate_finding(finding("fix-link-present"));
        assert_eq!(
            (gate.location.as_str(), gate.shown_by.as_deref()),
            ("p/LOCAL_FIXES.md:4", Some("register"))
        );
        assert!(gate
            .help
            .starts_with("add the link; `forkbook check --explain fix-link-present`"));
        assert_eq!(
            gate_finding(finding("overlay-matches-lock"))
                .shown_by
                .as_deref(),
            Some("checks")
        );
    }

    #[test]
    fn table_cells_survive_pipes_backticks_and_odd_links() {
        assert_eq!(code_span("a|b`c"), "``` a\\|b`c ```".replace("```", "``"));
        assert_eq!(
            link_cell("https://github.com/NripeshN/mlx/pull/12"),
            "[NripeshN/mlx#12](https://github.com/NripeshN/mlx/pull/12)"
        );
        assert_eq!(
            link_cell("javascript:alert(1)"),
            "`` javascript:alert(1) ``".replace("``", "`")
        );
    }
}
