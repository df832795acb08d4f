//! The way forkbook runs another program: the book's `sh` steps, `verify`'s steps, `git fetch`
//! and `git push`, `rocminfo`, `propose`'s `git apply --check`, and `drift build`'s cmake and
//! make, and its short probes of its tools, which read stdout and stderr apart (docs/architecture.md
//! names the one exception and why).
//!
//! Each child starts in a session (and process group) of its own, tagged by an environment
//! variable that everything it starts inherits. At its timeout (or when it exits) the whole
//! group is killed, and so is every process that left the group (`setsid`, a double fork) but
//! still carries the tag or holds the child's output pipe: nothing a step started outlives it,
//! and any lock such a process held is released. A timed-out run reports "timed out" with what
//! it printed so far.
//!
//! A timeout also reaches runs nested inside an in-process step: [`with_deadline`] sets a
//! deadline for the current thread, and every run on that thread stops at it, so a
//! `forkbook drift build` step abandoned by the book stops its cmake too.

use super::error::{Context, Result};
use std::cell::Cell;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The environment variable prefix of a run's tag (`FORKBOOK_RUN_<pid>_<n>=1`).
const TAG_PREFIX: &str = "FORKBOOK_RUN_";

/// Output kept in memory beyond this many bytes is cut, with a marker saying so.
pub const DEFAULT_OUTPUT_CAP: usize = 4 << 20;

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Runs `f` with every [`run`] on this thread stopped at `deadline` at the latest.
pub fn with_deadline<T>(deadline: Instant, f: impl FnOnce() -> T) -> T {
    let before = DEADLINE.with(|d| d.replace(Some(deadline)));
    let result = f();
    DEADLINE.with(|d| d.set(before));
    result
}

/// Where a child's stdout and stderr go.
#[derive(Debug, Clone)]
pub enum Output {
    /// Kept in memory together, interleaved as printed, up to `cap` bytes.
    Capture { cap: usize },
    /// Kept in memory apart, up to `cap` bytes each: for a probe that answers on one stream and
    /// warns on the other (a compiler's search list is on stderr, `nm`'s symbols on stdout).
    Apart { cap: usize },
    /// Written to this file.
    File(PathBuf),
}

/// One program to run.
#[derive(Debug, Clone)]
pub struct Spec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub dir: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Option<Duration>,
    pub output: Output,
}

impl Spec {
    pub fn new(program: impl Into<PathBuf>, dir: &Path) -> Spec {
        Spec {
            program: program.into(),
            args: Vec::new(),
            dir: dir.to_path_buf(),
            env: Vec::new(),
            timeout: None,
            output: Output::Capture {
                cap: DEFAULT_OUTPUT_CAP,
            },
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Spec {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Spec {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Spec {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn timeout(mut self, timeout: Option<Duration>) -> Spec {
        self.timeout = timeout;
        self
    }

    pub fn output(mut self, output: Output) -> Spec {
        self.output = output;
        self
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it (not one of ours).
    Signaled(i32),
    /// Its timeout passed (the seconds allowed); it and everything it started were killed.
    TimedOut(Duration),
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct Finished {
    pub ended: Ended,
    /// What it printed (captured runs; its stdout alone with [`Output::Apart`]), cut at the cap
    /// with a marker; empty for file output.
    pub output: String,
    /// What it printed on stderr with [`Output::Apart`]; empty otherwise.
    pub stderr: String,
    pub duration: Duration,
}

impl Finished {
    /// The exit status a shell would report: the status, or 128 + the signal; `None` on timeout.
    pub fn code(&self) -> Option<i32> {
        match self.ended {
            Ended::Exited(code) => Some(code),
            Ended::Signaled(signal) => Some(128 + signal),
            Ended::TimedOut(_) => None,
        }
    }
}

/// Runs `spec` to its end (or its timeout, or this thread's [`with_deadline`]).
pub fn run(spec: &Spec) -> Result<Finished> {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let tag = format!(
        "{TAG_PREFIX}{}_{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::SeqCst)
    );
    let started = Instant::now();
    let own = spec.timeout.map(|t| started + t);
    let ambient = DEADLINE.with(Cell::get);
    let deadline = own.into_iter().chain(ambient).min();
    let mut command = command_for(spec, &tag);
    let shown = spec.program.display().to_string();
    let (collectors, pipe_inodes) = wire_output(&mut command, &spec.output)?;
    let mut child = command
        .spawn()
        .with_context(|| format!("failed to run `{shown}`"))?;
    drop(command); // our copies of the pipe's writing end
    let pid = child.id() as i32;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Whatever it left running goes with it, on a timeout or not.
    kill_everything(pid, &tag, &pipe_inodes);
    if status.is_none() {
        let _ = child.wait();
    }
    let timed_out = || Ended::TimedOut(deadline.map(|d| d - started).unwrap_or_default());
    let mut printed = collectors.into_iter().map(|c| c.join().unwrap_or_default());
    Ok(Finished {
        ended: status.map_or_else(timed_out, ended_by),
        output: printed.next().unwrap_or_default(),
        stderr: printed.next().unwrap_or_default(),
        duration: started.elapsed(),
    })
}

/// How a process that ended did: its exit code, else the signal that ended it.
fn ended_by(status: std::process::ExitStatus) -> Ended {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ended::Exited(code),
        (None, Some(signal)) => Ended::Signaled(signal),
        (None, None) => Ended::Signaled(0),
    }
}

/// Sends the command's output and errors to where `output` says: pipes each read by a thread
/// (returned, stdout's first, with the pipes' inodes), or a file.
fn wire_output(
    command: &mut Command,
    output: &Output,
) -> Result<(Vec<std::thread::JoinHandle<String>>, Vec<u64>)> {
    match output {
        Output::Capture { cap } => {
            let (reader, writer) = std::io::pipe()?;
            let inodes = pipe_inode(&writer).into_iter().collect();
            command.stdout(writer.try_clone()?).stderr(writer);
            Ok((vec![collect(reader, *cap)], inodes))
        }
        Output::Apart { cap } => {
            let (out_reader, out_writer) = std::io::pipe()?;
            let (err_reader, err_writer) = std::io::pipe()?;
            let inodes = [pipe_inode(&out_writer), pipe_inode(&err_writer)];
            command.stdout(out_writer).stderr(err_writer);
            let collectors = vec![collect(out_reader, *cap), collect(err_reader, *cap)];
            Ok((collectors, inodes.into_iter().flatten().collect()))
        }
        Output::File(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("failed to create `{}`", path.display()))?;
            command.stdout(file.try_clone()?).stderr(file);
            Ok((Vec::new(), Vec::new()))
        }
    }
}

/// The command `spec` names, with no input, marked by `tag` in its environment (how the
/// processes it leaves are found) and in a session of its own (how its group is ended).
fn command_for(spec: &Spec, tag: &str) -> Command {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.dir)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(tag, "1")
        .stdin(Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches only the child.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

/// Reads the pipe to its end on a thread, keeping at most `cap` bytes.
fn collect(mut reader: std::io::PipeReader, cap: usize) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut reader).take(cap as u64).read_to_end(&mut kept);
        let dropped = std::io::copy(&mut reader, &mut std::io::sink()).unwrap_or(0);
        let mut text = String::from_utf8_lossy(&kept).into_owned();
        if dropped > 0 {
            text.push_str(&cut_marker(dropped));
        }
        text
    })
}

/// The line that says output was cut, and how much.
pub fn cut_marker(dropped: u64) -> String {
    format!("\n[forkbook: output cut here: {dropped} more bytes not kept]\n")
}

fn pipe_inode(writer: &std::io::PipeWriter) -> Option<u64> {
    use std::os::fd::AsFd;
    let file = std::fs::File::from(writer.as_fd().try_clone_to_owned().ok()?);
    use std::os::unix::fs::MetadataExt;
    file.metadata().ok().map(|m| m.ino())
}

/// Kills the child's process group, then every process that carries `tag` in its environment
/// or holds an output pipe, until none is left (each round can catch one that forked while the
/// last was being killed).
fn kill_everything(pid: i32, tag: &str, pipe_inodes: &[u64]) {
    // SAFETY: kill(2) with a negative pid signals the group; a group that is gone is ESRCH.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    for _ in 0..20 {
        let found = tagged_processes(tag, pipe_inodes);
        if found.is_empty() {
            return;
        }
        for other in found {
            // SAFETY: as above, for one process and its group.
            unsafe {
                libc::kill(other, libc::SIGKILL);
                libc::kill(-other, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Live processes (not zombies) whose environment holds `tag`, or that hold a pipe open.
fn tagged_processes(tag: &str, pipe_inodes: &[u64]) -> Vec<i32> {
    let me = std::process::id() as i32;
    let needle = format!("{tag}=");
    let pipes: Vec<String> = pipe_inodes.iter().map(|i| format!("pipe:[{i}]")).collect();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let dir = entry.path();
        let Some((state, parent)) = state_and_parent(&dir) else {
            continue;
        };
        if state == 'Z' {
            continue;
        }
        let tagged = std::fs::read(dir.join("environ")).is_ok_and(|env| {
            env.split(|b| *b == 0)
                .any(|var| var.starts_with(needle.as_bytes()))
        });
        // A child of this process holding the pipe is either the run's own child (its group was
        // killed above) or another thread's child between fork and exec, which holds every
        // descriptor of this process until exec closes them: never ours to kill.
        let holds_pipe = parent != me
            && !pipes.is_empty()
            && std::fs::read_dir(dir.join("fd")).is_ok_and(|fds| {
                fds.flatten().any(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|target| pipes.iter().any(|p| target.as_os_str() == p.as_str()))
                })
            });
        if tagged || holds_pipe {
            found.push(pid);
        }
    }
    found
}

/// A process's state letter (`Z` for a zombie) and its parent, from `/proc/PID/stat`.
fn state_and_parent(dir: &Path) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((state, fields.next()?.parse().ok()?))
}

/// Tunes glibc's allocator for a short command-line run: grow the heap in 16 MiB steps and keep
/// freed memory, instead of asking the kernel for each large buffer and giving it back at once.
/// A run reads, merges and copies blobs up to 200 kB, and every fresh page costs a page fault:
/// with glibc's defaults a third of a warm `residual` was the kernel zeroing pages it had just
/// taken back (measured with perf). Called by the `forkbook` binary only, before anything else.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 16 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 20);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout: Option<u64>) -> Finished {
        let dir = std::env::temp_dir();
        run(&Spec::new("sh", &dir)
            .arg("-c")
            .arg(script)
            .timeout(timeout.map(Duration::from_secs)))
        .unwrap()
    }

    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| !r.trim_start().starts_with('Z'))
            })
            .unwrap_or(false)
    }

    #[test]
    fn exit_status_and_merged_output() {
        let done = sh("echo out; echo err >&2; exit 3", None);
        assert_eq!(done.ended, Ended::Exited(3));
        assert_eq!(done.output, "out\nerr\n");
    }

    #[test]
    fn output_apart_keeps_stdout_and_stderr_each_on_its_own() {
        let dir = std::env::temp_dir();
        let done = run(&Spec::new("sh", &dir)
            .arg("-c")
            .arg("echo out; echo err >&2; echo more")
            .output(Output::Apart { cap: 1000 }))
        .unwrap();
        assert_eq!(done.ended, Ended::Exited(0));
        assert_eq!(done.output, "out\nmore\n");
        assert_eq!(done.stderr, "err\n");
    }

    /// Fails on main before issue 12 (the book's runner killed only the group, verify's only
    /// `sh`): a `setsid` grandchild and a background one outlived the timeout.
    #[test]
    fn a_timeout_kills_grandchildren_that_left_the_group() {
        let pids = tempfile::NamedTempFile::new().unwrap();
        let file = pids.path().display().to_string();
        let started = Instant::now();
        let done = sh(
            &format!(
                "setsid sh -c 'echo $$ >> {file}; sleep 60' & (sleep 60 & echo $! >> {file}) ; echo started; sleep 60"
            ),
            Some(2),
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(done.ended, Ended::TimedOut(Duration::from_secs(2)));
        assert!(
            done.output.contains("started"),
            "what it printed so far: {}",
            done.output
        );
        let pids: Vec<i32> = std::fs::read_to_string(pids.path())
            .unwrap()
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(pids.len(), 2);
        std::thread::sleep(Duration::from_millis(200));
        for pid in pids {
            assert!(!alive(pid), "process {pid} outlived the step");
        }
    }

    /// A run's clean-up killed any process holding its output pipe, and another thread's child
    /// holds every pipe of this process between fork and exec: under load, a step running beside
    /// another one was killed (a book test saw exit 137 where its timeout gives 124).
    #[test]
    fn the_clean_up_spares_this_process_s_own_children_but_not_a_grandchild() {
        let (_reader, writer) = std::io::pipe().unwrap();
        let inode = pipe_inode(&writer);
        let pid_file = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "sleep 30 & echo $! > {}; sleep 30",
                pid_file.path().display()
            ))
            .stdout(writer.try_clone().unwrap())
            .spawn()
            .unwrap();
        drop(writer);
        let grandchild = loop {
            if let Ok(pid) = std::fs::read_to_string(pid_file.path())
                .unwrap()
                .trim()
                .parse()
            {
                break pid;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let found = tagged_processes("FORKBOOK_RUN_NOT_THIS_ONE", inode.as_slice());
        let _ = child.kill();
        let _ = child.wait();
        // SAFETY: kill(2) on the one process this test started and left behind.
        unsafe {
            libc::kill(grandchild, libc::SIGKILL);
        }
        assert!(!found.contains(&(child.id() as i32)), "{found:?}");
        assert!(found.contains(&grandchild), "{found:?}");
    }

    #[test]
    fn a_thread_deadline_stops_a_run_without_its_own_timeout() {
        let started = Instant::now();
        let done = with_deadline(Instant::now() + Duration::from_secs(1), || {
            sh("sleep 60", None)
        });
        assert!(matches!(done.ended, Ended::TimedOut(_)));
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn output_beyond_the_cap_is_cut_with_a_marker() {
        let dir = std::env::temp_dir();
        let done = run(&Spec::new("sh", &dir)
            .arg("-c")
            .arg("head -c 100000 /dev/zero | tr '\\0' x")
            .output(Output::Capture { cap: 1000 }))
        .unwrap();
        assert!(done.output.starts_with(&"x".repeat(1000)));
        assert!(
            done.output.ends_with(&cut_marker(99_000)),
            "{}",
            &done.output[1000..]
        );
    }
}
