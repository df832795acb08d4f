//! Finding the tools and running them, with their output kept in a log file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Context, Error, Result};

/// One command that ran: how, how it ended, and where its output is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The command line, for people (arguments joined with spaces).
    pub command: String,
    /// The exit status; None when the process was killed by a signal.
    pub status: Option<i32>,
    pub seconds: f64,
    /// The file holding stdout and stderr, interleaved as printed.
    pub log: PathBuf,
}

impl Step {
    pub fn ok(&self) -> bool {
        self.status == Some(0)
    }
}

/// The path of a tool the build needs, looked for in `search` (a `PATH`-style list), or an error
/// that says how to get it.
pub fn require_in(
    program: &str,
    what: &str,
    note: &str,
    search: &std::ffi::OsStr,
) -> Result<PathBuf> {
    crate::tools::find_program_in(program, search).ok_or_else(|| {
        Error::new(format!("{what} `{program}` not found")).with_note(note.to_string())
    })
}

/// Runs `program args` in `dir` with the C locale (so messages are English with ASCII
/// quotes) and `env` set over forkbook's environment, writing stdout and stderr to `log`, and
/// returns how it went and what it printed.
pub fn run_logged_env(
    program: &Path,
    args: &[String],
    dir: &Path,
    log: &Path,
    env: &[(String, std::ffi::OsString)],
) -> Result<(Step, String)> {
    use crate::process::{run, Output, Spec};
    // Through the one runner: cmake and make in a session of their own, so a timeout of the
    // book step or verify step running `forkbook drift build` stops them too.
    let mut spec = Spec::new(program, dir);
    for (name, value) in env {
        spec = spec.env(name.as_str(), value.clone());
    }
    let done = run(&spec
        .args(args)
        .env("LC_ALL", "C")
        .env("LANG", "C")
        .output(Output::File(log.to_path_buf())))?;
    let step = Step {
        command: command_line(program, args),
        status: done.code(),
        seconds: done.duration.as_secs_f64(),
        log: log.to_path_buf(),
    };
    let bytes =
        std::fs::read(log).with_context(|| format!("failed to read `{}`", log.display()))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if let crate::process::Ended::TimedOut(after) = done.ended {
        return Err(Error::new(format!(
            "`{}` timed out after {} s (it and everything it started were stopped)",
            step.command,
            after.as_secs()
        ))
        .with_note(format!(
            "its output so far is in `{}`; it ends:\n{}",
            log.display(),
            last_lines(&text, 20)
        )));
    }
    Ok((step, text))
}

/// The last `count` lines of `text` (a build log), for a message about a build that stopped.
fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

/// Runs `program args` in `dir` and returns its stdout (stderr is dropped: `nm` warns there
/// about objects without symbols).
pub fn run_capture(program: &Path, args: &[String], dir: &Path) -> Result<String> {
    Ok(output_of(crate::process::Spec::new(program, dir).args(args))?.0)
}

/// Runs `probe` through the one runner with the C locale, and returns what it printed on stdout
/// and on stderr, each whole (`nm`'s symbols of 2,000 objects are more than the runner's
/// default cap).
pub fn output_of(probe: crate::process::Spec) -> Result<(String, String)> {
    use crate::process::Output;
    let probe = probe
        .env("LC_ALL", "C")
        .output(Output::Apart { cap: usize::MAX });
    let done = crate::process::run(&probe)?;
    Ok((done.output, done.stderr))
}

fn command_line(program: &Path, args: &[String]) -> String {
    let shown = |arg: &String| match arg.contains(' ') || arg.contains(';') {
        true => format!("'{arg}'"),
        false => arg.clone(),
    };
    let args = args.iter().map(shown);
    std::iter::once(program.display().to_string())
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}
