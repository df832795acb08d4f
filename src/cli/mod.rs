//! The command line: one file per subcommand, each a thin layer over one engine function.
//!
//! [`run`] is the whole program minus the process: the book runs steps through it in process,
//! so every command writes to the `out` it is given, never to stdout directly.

use crate::engine::{self, Cache, Error, Project};
use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

mod adopt;
mod book;
mod check;
mod ci;
mod demo;
mod drift;
mod fetch;
mod fix;
mod fixes;
mod init;
mod materialize;
mod mdbook;
mod propose;
mod residual;
mod roll;
mod status;
mod sync;
mod verify;

pub use crate::invoke::{argv, FAILED, OK, PROBLEMS};

/// Keeps a vendored fork overlay honest and current from its own documentation.
#[derive(Debug, Parser)]
#[command(name = "forkbook", version, about, long_about = None, max_term_width = 100)]
#[command(after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// The end of `forkbook --help`: where to start, the environment, the exit status.
const AFTER_HELP: &str = "\
New here? `forkbook demo` builds a small fork, upstream and overlay and runs every command on it.

Terms: the base tree is the fork's backend files plus each core file rebuilt as the pin plus the
fork's own change; the overlay is the base tree plus the local fixes (LOCAL_FIXES.md).

Environment:
  FORKBOOK_CACHE         the object cache, as `--cache` (default: ~/.cache/forkbook/objects.git,
                         or $XDG_CACHE_HOME/forkbook/objects.git)
  FORKBOOK_FORK_URL      the fork's URL or a mirror on this machine, as `--fork-url`
  FORKBOOK_UPSTREAM_URL  upstream's URL or a mirror on this machine, as `--upstream-url`
  FORKBOOK_OFFLINE=1     as `--offline`
  FORKBOOK_TOOL_PATH     where tools are looked for and the PATH of the steps, as `--tool-path`
  FORKBOOK_STAND_IN_PIN  an upstream commit to run on in place of a missing pin, as `--stand-in-pin`
  FORKBOOK_LOCK_WAIT=1   wait for another run on the same overlay or cache instead of refusing

Exit status:
  0  nothing wrong
  1  the command ran and found problems (conflicts, mismatches, failed checks, drift)
  2  it could not do its job (bad input, refused, missing object or tool)";

/// The end of every command's `--help`.
const COMMAND_AFTER_HELP: &str = "\
Exit status: 0 nothing wrong, 1 found problems, 2 could not do its job.
`forkbook --help` lists the environment variables; `forkbook demo` shows every command at work.";

/// Options every command takes.
#[derive(Debug, Clone, clap::Args, Default)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The project folder (holding forkbook.toml); default: the nearest one above the current folder
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The object cache (bare git repository) [env: FORKBOOK_CACHE]
    #[arg(long, global = true, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// The fork's URL or a mirror on this machine [env: FORKBOOK_FORK_URL]
    #[arg(long, global = true, value_name = "URL")]
    pub fork_url: Option<String>,
    /// Upstream's URL or a mirror on this machine [env: FORKBOOK_UPSTREAM_URL]
    #[arg(long, global = true, value_name = "URL")]
    pub upstream_url: Option<String>,
    /// Never touch the network; a missing object is an error naming the command that fetches it
    /// [env: FORKBOOK_OFFLINE=1]
    #[arg(long, global = true)]
    pub offline: bool,
    /// Where tools (hipcc, cmake, …) are looked for and the PATH of the steps forkbook runs;
    /// default: PATH [env: FORKBOOK_TOOL_PATH]
    #[arg(long, global = true, value_name = "DIRS")]
    pub tool_path: Option<std::ffi::OsString>,
    /// Run on this upstream commit in place of a recorded pin no mirror has: read only, never
    /// written into a record; findings on core files are marked [env: FORKBOOK_STAND_IN_PIN]
    #[arg(long, global = true, value_name = "REV")]
    pub stand_in_pin: Option<String>,
    /// Machine-readable output (errors too: `{"error": …, "note": …}` on stdout)
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Fetch(fetch::Args),
    Init(init::Args),
    Status(status::Args),
    Materialize(materialize::Args),
    ExportTree(materialize::ExportArgs),
    Sync(sync::SyncArgs),
    Retarget(sync::RetargetArgs),
    Roll(roll::Args),
    Residual(residual::Args),
    Fix(fix::Args),
    Fixes(fixes::Args),
    Check(check::Args),
    Ci(ci::Args),
    Propose(propose::Args),
    Drift(drift::Args),
    Verify(verify::Args),
    Report(verify::ReportArgs),
    Demo(demo::Args),
    Book(book::Args),
    Mdbook(mdbook::Args),
    Adopt(adopt::Args),
}

/// What a command gets: where to print, and the project and cache on demand.
pub struct Ctx<'a> {
    pub out: &'a mut dyn Write,
    pub global: Global,
    /// Set when the book runs the command: [`Ctx::emit`] leaves the result's Markdown here.
    pub page: Option<Page>,
}

/// What the book asks of a command besides its text: the result's Markdown, linked for the page.
#[derive(Debug, Default)]
pub struct Page {
    pub markdown: Option<String>,
}

impl Ctx<'_> {
    pub fn overrides(&self) -> engine::project::Overrides {
        engine::project::Overrides {
            cache: self.global.cache.clone(),
            fork_url: self.global.fork_url.clone(),
            upstream_url: self.global.upstream_url.clone(),
            offline: self.global.offline,
            tool_path: self.global.tool_path.clone(),
            stand_in_pin: self.global.stand_in_pin.clone(),
        }
        .with_env()
    }

    pub fn project(&self) -> engine::Result<Project> {
        let root =
            match &self.global.root {
                Some(root) if !root.is_dir() => return Err(Error::new(format!(
                    "the project folder `{}` (from `--root`) does not exist",
                    root.display()
                ))
                .with_note(
                    "pass `--root` the folder that holds forkbook.toml, or leave it out to use \
                     the nearest one above the current folder (`forkbook demo` makes one to try)",
                )),
                Some(root) => root.clone(),
                None => Project::find_root(&std::env::current_dir()?)?,
            };
        Project::open(&root, &self.overrides())
    }

    /// The project, its cache and the overlay at its recorded commits.
    pub fn load(&self) -> engine::Result<(Project, Cache, engine::overlay::OverlayState)> {
        let (_, project, cache, state) = self.load_to_write(false)?;
        Ok((project, cache, state))
    }

    /// [`Ctx::load`] for a command that writes records when `write` is set: the project's lock
    /// is taken before the records are read and held while the command runs, so what it
    /// writes over is what it read (another writer waits or is refused).
    pub fn load_to_write(
        &self,
        write: bool,
    ) -> engine::Result<(
        Option<engine::fsutil::ProjectLock>,
        Project,
        Cache,
        engine::overlay::OverlayState,
    )> {
        let project = self.project()?;
        let lock = write.then(|| project.lock_records()).transpose()?;
        // A killed sync's stage goes before anything can refuse this run.
        engine::fsutil::clear_dead_stages(&project.records_dir(), lock.is_some());
        let cache = Cache::open(&project)?;
        let state = engine::overlay::OverlayState::load(&project, &cache)?;
        Ok((lock, project, cache, state))
    }

    /// Prints a command's result (JSON with `--json`, otherwise its text) and returns the exit
    /// status it calls for: the one place a result becomes an exit status.
    pub fn emit<R: engine::report_value::CommandReport>(
        &mut self,
        report: &R,
    ) -> engine::Result<i32> {
        // Under a stand-in pin every output says so first (and its JSON in `stand_in_pin`).
        let stand_in = self
            .project()
            .ok()
            .and_then(|project| engine::pin::stand_in_head(&project));
        if self.global.json {
            match &stand_in {
                Some(head) => self.print_json(&with_stand_in(report, head)?)?,
                None => self.print_json(report)?,
            }
        } else {
            if let Some(head) = &stand_in {
                writeln!(self.out, "{head}")?;
            }
            // A report written a piece at a time (`status`, `check --verbose`) is written in
            // large pieces, not a system call a line.
            let mut out = std::io::BufWriter::new(&mut *self.out);
            report.write_text(&mut out)?;
            out.flush()?;
        }
        // A step that asked for JSON shows the JSON it asked for.
        if self.page.is_some() && !self.global.json {
            // Links need the project's configuration; a result without one is shown as text.
            // Upstream as forkbook.toml names it: a mirror given on the command line has no
            // web address.
            let links = self
                .project()
                .ok()
                .map(|project| engine::markdown::PageLinks {
                    upstream_web: engine::markdown::web_base(&project.canonical_urls.1),
                    register_page: Some(crate::invoke::REGISTER_PAGE.to_string()),
                });
            if let (Some(page), Some(links)) = (self.page.as_mut(), links) {
                // Names from other people's trees reach the page as the terminal shows them
                // (`\033`), never as the bytes: every helper escapes them, and this is the net.
                page.markdown = report.markdown(&links).map(|md| {
                    let md = match &stand_in {
                        Some(head) => format!("> {}\n\n{md}", engine::markdown::text(head)),
                        None => md,
                    };
                    engine::terminal::escape_controls(&md).into_owned()
                });
            }
        }
        Ok(match report.verdict() {
            engine::report_value::Verdict::Clean => OK,
            engine::report_value::Verdict::Problems => PROBLEMS,
        })
    }

    /// Prints `value` as pretty JSON.
    /// Written as it is serialized, never held whole: the JSON of a register of 600,000 entries
    /// is larger than the register.
    pub fn print_json<T: serde::Serialize>(&mut self, value: &T) -> engine::Result<()> {
        let mut out = std::io::BufWriter::new(&mut *self.out);
        // An error of the output (a reader that closed it) stays an I/O error, so it ends the
        // command quietly as any other write does.
        serde_json::to_writer_pretty(&mut out, value).map_err(std::io::Error::from)?;
        writeln!(out)?;
        out.flush()?;
        Ok(())
    }
}

/// A report's JSON with `stand_in_pin` beside its own keys (an array or a value is wrapped as
/// `{"stand_in_pin": …, "result": …}`).
fn with_stand_in<R: serde::Serialize>(report: &R, head: &str) -> engine::Result<serde_json::Value> {
    let value = serde_json::to_value(report).map_err(|e| Error::new(e.to_string()))?;
    Ok(match value {
        serde_json::Value::Object(mut map) => {
            map.insert("stand_in_pin".into(), head.into());
            serde_json::Value::Object(map)
        }
        other => serde_json::json!({ "stand_in_pin": head, "result": other }),
    })
}

/// Runs forkbook with `args` (program name first), printing everything to `out`; returns the
/// exit status. This is how the book runs a step in process.
pub fn run(args: Vec<OsString>, out: &mut dyn Write) -> i32 {
    run_split(args, out, None)
}

/// Like [`run`], with errors going to `err` when given (the binary passes stderr).
///
/// With `--json`, an error is a JSON object on `out` (`{"error": …, "note": …}`), with the same
/// exit status. A reader that closes the output early (`forkbook status | head -1`) ends the
/// command quietly with status 0, as git does.
pub fn run_split(args: Vec<OsString>, out: &mut dyn Write, err: Option<&mut dyn Write>) -> i32 {
    run_inner(args, out, err, None).0
}

/// How the book's step runner runs a command ([`crate::invoke::CommandFn`]): output and errors
/// to one writer, and the result's Markdown for the page.
pub fn run_for_book(args: Vec<OsString>, out: &mut dyn Write) -> crate::invoke::Ran {
    let mut page = Page::default();
    let (exit, kind) = run_inner(args, out, None, Some(&mut page));
    crate::invoke::Ran {
        exit,
        kind,
        view: page.markdown,
    }
}

/// [`run_split`], also saying what kind of failure ended the command, if one did (the book
/// skips a step whose objects are missing without reading its text), and leaving the result's
/// Markdown in `page` when one is given.
fn run_inner(
    args: Vec<OsString>,
    out: &mut dyn Write,
    mut err: Option<&mut dyn Write>,
    page: Option<&mut Page>,
) -> (i32, Option<engine::ErrorKind>) {
    let wants_json = args.iter().skip(1).any(|a| a == "--json");
    let cli = match parse(args) {
        Ok(cli) => cli,
        Err(e) => return (write_usage(&e, wants_json, out, err), None),
    };
    let json = cli.global.json;
    // Human output carries names from other people's trees and compilers' messages: every
    // control character in it is shown escaped, never sent to the terminal. JSON escapes its own
    // strings, and `mdbook` speaks JSON to mdBook.
    let raw = json || matches!(cli.command, Command::Mdbook(_));
    let mut safe;
    let out: &mut dyn Write = if raw {
        out
    } else {
        safe = engine::terminal::SafeWriter::new(out);
        &mut safe
    };
    let mut ctx = Ctx {
        out,
        global: cli.global,
        page: page.is_some().then(Page::default),
    };
    let result = dispatch(cli.command, &mut ctx).and_then(|code| {
        ctx.out.flush()?;
        Ok(code)
    });
    if let (Some(page), Some(made)) = (page, ctx.page.take()) {
        *page = made;
    }
    write_notes(json, ctx.out, &mut err);
    match result {
        Ok(code) => (code, None),
        Err(e) if e.kind == engine::ErrorKind::OutputClosed => (OK, None),
        Err(e) => {
            write_error(&e, json, ctx.out, err);
            (FAILED, Some(e.kind))
        }
    }
}

/// What clap said of a command line it refused (or of `--help`, `--version`: status 0, on
/// standard output): as JSON with `--json`, else as clap wrote it. Returns the exit status.
fn write_usage(
    e: &clap::Error,
    wants_json: bool,
    out: &mut dyn Write,
    err: Option<&mut dyn Write>,
) -> i32 {
    let code = if e.use_stderr() { FAILED } else { OK };
    let text = e.render().to_string();
    if code != OK && wants_json {
        let (error, note) = split_clap_error(&text);
        let _ = write_json_error(out, &error, note.as_deref());
        return code;
    }
    let _ = match err {
        Some(err) if code != OK => write!(err, "{text}"),
        _ => write!(out, "{text}"),
    };
    code
}

/// A command's error: as JSON on `out` with `--json`, else as `error: …` (its control
/// characters shown escaped) on `err`, or on `out` where there is no `err`.
/// The notes the command left ([`engine::notice`]), one `note: …` line each: where errors go,
/// and never into JSON on `out` (to standard error then).
fn write_notes(json: bool, out: &mut dyn Write, err: &mut Option<&mut dyn Write>) {
    let notes = engine::notice::take();
    if notes.is_empty() {
        return;
    }
    let text: String = notes.iter().map(|n| format!("note: {n}\n")).collect();
    let text = engine::terminal::escape_controls(&text).into_owned();
    let _ = match (err.as_mut(), json) {
        (Some(err), _) => {
            let _ = out.flush();
            err.write_all(text.as_bytes())
        }
        (None, false) => out.write_all(text.as_bytes()),
        (None, true) => std::io::stderr().write_all(text.as_bytes()),
    };
}

fn write_error(e: &Error, json: bool, out: &mut dyn Write, err: Option<&mut dyn Write>) {
    if json {
        let _ = write_json_error(out, &e.message(), e.note.as_deref());
        return;
    }
    let text = format!("error: {e}\n");
    let text = engine::terminal::escape_controls(&text).into_owned();
    let _ = match err {
        Some(err) => {
            let _ = out.flush();
            err.write_all(text.as_bytes())
        }
        None => out.write_all(text.as_bytes()),
    };
}

/// The command line with every command's help ending in [`COMMAND_AFTER_HELP`].
fn command() -> clap::Command {
    use clap::CommandFactory;
    Cli::command().mut_subcommands(|sub| {
        let sub = sub.after_help(COMMAND_AFTER_HELP);
        sub.mut_subcommands(|leaf| leaf.after_help(COMMAND_AFTER_HELP))
    })
}

fn parse(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    let mut matches = command().try_get_matches_from(args)?;
    Cli::from_arg_matches_mut(&mut matches)
}

/// `{"error": …, "note": …}` on one line.
fn write_json_error(out: &mut dyn Write, error: &str, note: Option<&str>) -> std::io::Result<()> {
    let value = serde_json::json!({ "error": error, "note": note });
    writeln!(out, "{value}")?;
    out.flush()
}

/// clap's rendered error as (message, the rest as a note).
/// A clap error as `(error, note)`: its first paragraph is the error, with the lines that
/// continue it (the missing argument under "the following required arguments were not
/// provided:"); the usage and hint paragraphs after the blank line are the note.
fn split_clap_error(text: &str) -> (String, Option<String>) {
    let text = text.trim();
    let (first, rest) = text.split_once("\n\n").unwrap_or((text, ""));
    let mut error: Vec<&str> = first
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if error.is_empty() {
        error.push("bad arguments");
    }
    let error = error.join(" ").trim_start_matches("error: ").to_string();
    let rest: Vec<&str> = rest
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    (error, (!rest.is_empty()).then(|| rest.join(" ")))
}

#[cfg(test)]
mod clap_error_tests {
    /// Fails before issue 25: the missing `--title <TITLE>` was in the note, the error ended in
    /// a colon.
    #[test]
    fn a_missing_argument_is_part_of_the_error_not_the_note() {
        let text = "error: the following required arguments were not provided:\n  --title <TITLE>\n\n\
                    Usage: forkbook fix add --from <DIR> --title <TITLE>\n\nFor more information, try '--help'.\n";
        let (error, note) = super::split_clap_error(text);
        assert_eq!(
            error,
            "the following required arguments were not provided: --title <TITLE>"
        );
        assert_eq!(
            note.as_deref(),
            Some("Usage: forkbook fix add --from <DIR> --title <TITLE> For more information, try '--help'.")
        );
        let (error, note) = super::split_clap_error("error: unexpected argument '--x' found\n");
        assert_eq!(
            (error.as_str(), note),
            ("unexpected argument '--x' found", None)
        );
    }
}

fn dispatch(command: Command, ctx: &mut Ctx) -> engine::Result<i32> {
    match command {
        Command::Fetch(args) => fetch::run(&args, ctx),
        Command::Init(args) => init::run(&args, ctx),
        Command::Status(args) => status::run(&args, ctx),
        Command::Materialize(args) => materialize::run(&args, ctx),
        Command::ExportTree(args) => materialize::run_export(&args, ctx),
        Command::Sync(args) => sync::run_sync(&args, ctx),
        Command::Retarget(args) => sync::run_retarget(&args, ctx),
        Command::Roll(args) => roll::run(&args, ctx),
        Command::Residual(args) => residual::run(&args, ctx),
        Command::Fix(args) => fix::run(&args, ctx),
        Command::Fixes(args) => fixes::run(&args, ctx),
        Command::Check(args) => check::run(&args, ctx),
        Command::Ci(args) => ci::run(&args, ctx),
        Command::Propose(args) => propose::run(&args, ctx),
        Command::Book(args) => {
            crate::book::steps::refuse_inside_a_step("book")?;
            book::run(&args, ctx)
        }
        Command::Mdbook(args) => {
            crate::book::steps::refuse_inside_a_step("mdbook")?;
            mdbook::run(&args, ctx)
        }
        Command::Drift(args) => drift::run(&args, ctx),
        Command::Verify(args) => verify::run(&args, ctx),
        Command::Report(args) => verify::run_report(&args, ctx),
        Command::Demo(args) => demo::run(&args, ctx),
        Command::Adopt(args) => adopt::run(&args, ctx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
