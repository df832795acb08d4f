//! How forkbook runs one of its own commands in process: the argument vector, the exit
//! statuses, and the type of the function that runs a command. The command line implements it
//! (`cli::run_with_kind`); the book's step runner is handed one, so the book never calls the
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

/// Runs a forkbook command (program name first) printing to the writer; returns the exit
/// status and what kind of failure ended it, if one did.
pub type CommandFn = fn(Vec<OsString>, &mut dyn Write) -> (i32, Option<ErrorKind>);

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
    args.extend(command.into_iter().map(Into::into));
    args
}
