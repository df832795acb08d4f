//! How the book runs a step's process, and the one rule that a step never builds a book.
//!
//! `sh` steps go through the engine's one process runner ([`crate::engine::process`]): a session
//! of their own, killed with everything they started (a `setsid` child included) at the timeout.
//! `forkbook` steps run in process on a thread of their own; their timeout is that thread's
//! deadline, which every program the command starts (cmake, make) obeys, so a timed-out
//! `forkbook drift build` stops its build and lets go of the cache lock before the book goes on.
//!
//! A step that builds, tests or serves a book (`forkbook --json book build`, a `sh` step running
//! `forkbook book test` or `mdbook build`) would build the book inside itself without end. The
//! rule is kept where a book is built, not where a command line is read: `book` and `mdbook`
//! refuse to run inside a step, whatever the flags' order or the way the step reached them.

use crate::invoke::{CommandFn, Ran};
use std::cell::Cell;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// The exit status reported for a step stopped by its timeout (as `timeout(1)` does).
pub const TIMED_OUT: i32 = 124;

/// Set in the environment of every `sh` step (and so of everything it runs).
pub const INSIDE_STEP_ENV: &str = "FORKBOOK_INSIDE_BOOK_STEP";

/// A step keeps at most this much of its output (page and cache alike); the rest is dropped
/// with a marker saying how much.
pub const STEP_OUTPUT_CAP: usize = 1 << 20;

/// How long an in-process step may take to come back after its deadline (its programs are
/// killed at the deadline; this covers the command noticing).
const GRACE: Duration = Duration::from_secs(10);

thread_local! {
    static INSIDE_STEP: Cell<bool> = const { Cell::new(false) };
}

/// Whether this code runs on behalf of a book step (in process, or in a `sh` step's children).
pub fn inside_a_step() -> bool {
    INSIDE_STEP.with(Cell::get) || std::env::var_os(INSIDE_STEP_ENV).is_some()
}

/// The one rule: `what` (`book build`, `mdbook`) may not run inside a book step.
pub fn refuse_inside_a_step(what: &str) -> crate::engine::Result<()> {
    if inside_a_step() {
        return Err(crate::engine::Error::new(format!(
            "a book step cannot run `forkbook {what}`: the book would build itself"
        ))
        .with_note(
            "build, test or serve the book from outside it; a step may run any other command",
        ));
    }
    Ok(())
}

/// A writer many threads can share: what an in-process step printed so far, up to
/// [`STEP_OUTPUT_CAP`] bytes, and how many bytes were dropped after that.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<(Vec<u8>, u64)>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let room = STEP_OUTPUT_CAP.saturating_sub(kept.0.len()).min(buf.len());
        kept.0.extend_from_slice(&buf[..room]);
        kept.1 += (buf.len() - room) as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut text = String::from_utf8_lossy(&kept.0).into_owned();
        if kept.1 > 0 {
            text.push_str(&crate::engine::process::cut_marker(kept.1));
        }
        text
    }
}

/// Runs forkbook with `args` in process through `command`, on a thread of its own, marked as
/// inside a step, with `timeout` as the thread's deadline. Returns how it ended and its output;
/// a timeout gives [`TIMED_OUT`] with what it printed so far.
pub fn run_in_process(
    command: CommandFn,
    args: Vec<OsString>,
    timeout: Option<Duration>,
) -> (Ran, String) {
    let (tx, rx) = mpsc::channel();
    let out = Shared::default();
    let deadline = timeout.map(|t| Instant::now() + t);
    {
        let mut out = out.clone();
        std::thread::spawn(move || {
            INSIDE_STEP.with(|s| s.set(true));
            let run = || command(args, &mut out);
            let ran = match deadline {
                Some(deadline) => crate::engine::process::with_deadline(deadline, run),
                None => run(),
            };
            let _ = tx.send(ran);
        });
    }
    let received = match timeout {
        Some(limit) => rx.recv_timeout(limit).map_err(|_| limit),
        None => rx.recv().map_err(|_| Duration::ZERO),
    };
    match received {
        Ok(ran) => (ran, out.text()),
        Err(limit) if limit > Duration::ZERO => {
            // Its programs die at the deadline; give the command a moment to return and drop
            // its locks, so the next step does not find them held.
            let abandoned = match rx.recv_timeout(GRACE) {
                Ok(_) => "",
                Err(_) => " (the command did not stop and was abandoned)",
            };
            let seconds = limit.as_secs_f64();
            let text = format!("{}\ntimed out after {seconds} s{abandoned}", out.text());
            let ran = Ran {
                exit: TIMED_OUT,
                ..Ran::default()
            };
            (ran, text)
        }
        Err(_) => (
            Ran {
                exit: 101,
                ..Ran::default()
            },
            "forkbook panicked while running this step".to_string(),
        ),
    }
}

/// Runs `sh -c script` in `dir` through the engine's runner, stdout and stderr in one stream,
/// with the variables of `env` (`PATH` among them) set over forkbook's environment. A timeout
/// gives [`TIMED_OUT`] and the output so far.
pub fn run_shell(
    script: &str,
    dir: &Path,
    timeout: Option<Duration>,
    env: &[(OsString, OsString)],
) -> crate::engine::Result<(i32, String)> {
    use crate::engine::process::{run, Ended, Output, Spec};
    let mut spec = Spec::new("sh", dir).arg("-c").arg(script);
    for (name, value) in env {
        spec = spec.env(name.clone(), value.clone());
    }
    let done = run(&spec
        .env(INSIDE_STEP_ENV, "1")
        .timeout(timeout)
        .output(Output::Capture {
            cap: STEP_OUTPUT_CAP,
        }))?;
    let mut output = done.output.clone();
    Ok(match done.ended {
        Ended::TimedOut(after) => {
            output.push_str(&format!("\ntimed out after {} s", after.as_secs_f64()));
            (TIMED_OUT, output)
        }
        _ => (done.code().unwrap_or(-1), output),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_steps_merge_streams_and_report_exit() {
        let (exit, output) = run_shell(
            "echo out; echo err >&2; exit 3",
            Path::new("."),
            None,
            &[("PATH".into(), "/usr/bin:/bin".into())],
        )
        .unwrap();
        assert_eq!(exit, 3);
        assert_eq!(output, "out\nerr\n");
    }

    #[test]
    fn shell_timeout_kills_the_whole_group() {
        let started = Instant::now();
        let (exit, output) = run_shell(
            "sleep 30 & echo so far; sleep 30; echo never",
            Path::new("."),
            Some(Duration::from_millis(300)),
            &[("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
        )
        .unwrap();
        assert_eq!(exit, TIMED_OUT);
        assert!(output.starts_with("so far\n"), "{output}");
        assert!(output.contains("timed out after 0.3 s"), "{output}");
        assert!(started.elapsed() < Duration::from_secs(25));
    }

    /// Fails on main before issue 12: one 50 MB line gave a 50 MB page and cache entry.
    #[test]
    fn step_output_is_cut_at_the_cap_with_a_marker() {
        let (exit, output) = run_shell(
            "head -c 5000000 /dev/zero | tr '\\0' x; echo",
            Path::new("."),
            None,
            &[("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
        )
        .unwrap();
        assert_eq!(exit, 0);
        assert!(output.len() < STEP_OUTPUT_CAP + 200, "{}", output.len());
        assert!(
            output.ends_with(&crate::engine::process::cut_marker(
                5_000_001 - STEP_OUTPUT_CAP as u64
            )),
            "{}",
            &output[STEP_OUTPUT_CAP..]
        );
        let mut shared = Shared::default();
        shared.write_all(&vec![b'y'; STEP_OUTPUT_CAP + 10]).unwrap();
        assert!(shared
            .text()
            .ends_with(&crate::engine::process::cut_marker(10)));
    }
}
