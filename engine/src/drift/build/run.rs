//! Finding the tools and running them, with their output kept in a log file.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Serialize;

use crate::error::{Context, Error, Result};

/// One command that ran: how, how it ended, and where its output is.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

pub use crate::tools::find_program;

/// The path of a tool the build needs, or an error that says how to get it.
pub fn require(program: &str, what: &str, note: &str) -> Result<PathBuf> {
    find_program(program).ok_or_else(|| {
        Error::new(format!("{what} `{program}` not found")).with_note(note.to_string())
    })
}

/// Runs `program args` in `dir` with the C locale (so messages are English with ASCII
/// quotes), writing stdout and stderr to `log`, and returns how it went and what it printed.
pub fn run_logged(
    program: &Path,
    args: &[String],
    dir: &Path,
    log: &Path,
) -> Result<(Step, String)> {
    let file =
        File::create(log).with_context(|| format!("failed to create `{}`", log.display()))?;
    let stderr = file.try_clone()?;
    let started = Instant::now();
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env("LANG", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(stderr))
        .status()
        .with_context(|| format!("failed to run `{}`", program.display()))?;
    let step = Step {
        command: command_line(program, args),
        status: status.code(),
        seconds: started.elapsed().as_secs_f64(),
        log: log.to_path_buf(),
    };
    let bytes =
        std::fs::read(log).with_context(|| format!("failed to read `{}`", log.display()))?;
    Ok((step, String::from_utf8_lossy(&bytes).into_owned()))
}

/// Runs `program args` in `dir` and returns its stdout (stderr is dropped: `nm` warns there
/// about objects without symbols).
pub fn run_capture(program: &Path, args: &[String], dir: &Path) -> Result<String> {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .with_context(|| format!("failed to run `{}`", program.display()))?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn command_line(program: &Path, args: &[String]) -> String {
    let mut line = program.display().to_string();
    for arg in args {
        line.push(' ');
        if arg.contains(' ') || arg.contains(';') {
            line.push_str(&format!("'{arg}'"));
        } else {
            line.push_str(arg);
        }
    }
    line
}
