//! How forkbook runs one of its own commands in process: the argument vector, the exit
//! statuses, and the type of the function that runs a command. The command line implements it
//! (`cli::run_for_book`); the book's step runner is handed one, so the book never calls the
//! command line itself and the two do not depend on each other.

use crate::engine::project::Overrides;
use crate::engine::ErrorKind;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

/// Exit status: the command ran and found nothing wrong.
pub const OK: i32 = 0;
/// Exit status: the command ran and found problems (conflicts, breaks, failed checks).
pub const PROBLEMS: i32 = 1;
/// Exit status: the command could not do its job (bad input, refused, missing tool).
pub const FAILED: i32 = 2;

/// The page that shows the register's entries, each under the anchor `fix-N`: a result's
/// Markdown links a fix there.
pub const REGISTER_PAGE: &str = "register.md";

/// How a command run in process for the book ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ran {
    pub exit: i32,
    /// What kind of failure ended it, if one did.
    pub kind: Option<ErrorKind>,
    /// Its result as Markdown for the page, when the result has one (see
    /// `CommandReport::markdown`).
    pub view: Option<String>,
}

/// Runs a forkbook command (program name first) printing to the writer, as the book runs a
/// step: the exit status, the kind of failure, the result's Markdown.
pub type CommandFn = fn(Vec<OsString>, &mut dyn Write) -> Ran;

/// The argument vector of `forkbook --root ROOT [--offline] [--cache ..] [--fork-url ..]
/// [--upstream-url ..] COMMAND...`: how the book, the demo and the tests run a command in process
/// against one project with the same overrides.
pub fn argv<I, S>(root: &Path, overrides: &Overrides, command: I) -> Vec<OsString>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut args: Vec<OsString> = vec!["forkbook".into(), "--root".into(), root.into()];
    if overrides.offline {
        args.push("--offline".into());
    }
    if let Some(cache) = &overrides.cache {
        args.extend(["--cache".into(), cache.into()]);
    }
    if let Some(url) = &overrides.fork_url {
        args.extend(["--fork-url".into(), url.into()]);
    }
    if let Some(url) = &overrides.upstream_url {
        args.extend(["--upstream-url".into(), url.into()]);
    }
    if let Some(tool_path) = &overrides.tool_path {
        args.extend(["--tool-path".into(), tool_path.clone()]);
    }
    if let Some(rev) = &overrides.stand_in_pin {
        args.extend(["--stand-in-pin".into(), rev.into()]);
    }
    args.extend(command.into_iter().map(Into::into));
    args
}
