//! `drift build` beside other runs on one object cache: the cache lock is scoped to what a
//! command writes (readers share it, writers hold it alone, and the build holds only its own
//! work folder while it compiles).
//!
//! The build is real (CMake, make, the demo's tree), with a compiler stub standing in for hipcc:
//! it hands every compile on to `c++`, but a compile of one of the tree's sources first waits
//! (for a release file, or for good), so a test knows the build is in its compile phase and
//! holds it there as long as it needs.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use forkbook::engine::fsutil::RunLock;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The forkbook binary on the demo project, its cache named, the environment's settings that
/// would change the outcome removed.
fn forkbook(demo: &Demo, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_forkbook"));
    cmd.arg("--root")
        .arg(demo.root())
        .arg("--cache")
        .arg(&demo.demo.cache)
        .args(args)
        .stdin(Stdio::null());
    for var in ["FORKBOOK_LOCK_WAIT", "FORKBOOK_OFFLINE", "FORKBOOK_CACHE"] {
        cmd.env_remove(var);
    }
    cmd
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A compiler that compiles with `c++`, except that a compile of a source of the exported tree
/// first writes its pid to `started` and waits: until `release` exists (at most `wait_s`
/// seconds), then fails that compile (the build goes on to its end quickly).
fn compiler_stub(dir: &Path, started: &Path, release: &Path, wait_s: u32) -> PathBuf {
    let stub = dir.join("slow-hipcc");
    let script = format!(
        "#!/bin/sh\n\
         for arg in \"$@\"; do\n\
         \x20 case \"$arg\" in\n\
         \x20   */tree-*/mlx/*.cpp)\n\
         \x20     echo $$ >> '{started}'\n\
         \x20     n=0\n\
         \x20     while [ ! -e '{release}' ] && [ $n -lt {ticks} ]; do sleep 0.1; n=$((n+1)); done\n\
         \x20     echo \"$arg: error: held by the test\" >&2\n\
         \x20     exit 1;;\n\
         \x20 esac\n\
         done\n\
         exec c++ \"$@\"\n",
        started = started.display(),
        release = release.display(),
        ticks = wait_s * 10,
    );
    std::fs::write(&stub, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    stub
}

/// Waits until `file` exists; panics with the build's output if the build ended first.
fn wait_for(file: &Path, build: &mut Child, limit: Duration) {
    let started = Instant::now();
    while !file.exists() {
        if let Some(status) = build.try_wait().unwrap() {
            let mut out = String::new();
            use std::io::Read;
            if let Some(mut o) = build.stdout.take() {
                let _ = o.read_to_string(&mut out);
            }
            if let Some(mut e) = build.stderr.take() {
                let _ = e.read_to_string(&mut out);
            }
            panic!("the build ended ({status}) before compiling: {out}");
        }
        assert!(
            started.elapsed() < limit,
            "the build did not reach a compile in {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Lets a held build go on when the test ends, even when it fails half-way.
struct Release(PathBuf);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, "");
    }
}

/// Fails on main before this change: `drift build` held the object cache's exclusive lock for
/// its whole build, so `status`, `check` and `sync --check` of any project sharing the cache
/// were refused ("another forkbook run is using the object cache") until it ended.
#[test]
fn read_only_commands_use_the_cache_while_a_drift_build_compiles_and_writers_still_exclude() {
    let demo = Demo::new(Layout::Patch);
    let dir = demo.tmp.path();
    let (started, release) = (dir.join("compiling"), dir.join("release"));
    let _release = Release(release.clone());
    let stub = compiler_stub(dir, &started, &release, 300);
    let readers: [&[&str]; 3] = [&["status"], &["check"], &["sync", "--check"]];
    // What each says with the cache to itself, to compare with what it says beside the build.
    let alone: Vec<Option<i32>> = readers
        .iter()
        .map(|args| {
            let out = forkbook(&demo, args).output().unwrap();
            assert_ne!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
            out.status.code()
        })
        .collect();

    let work = dir.join("build");
    let build_args = [
        "drift",
        "build",
        "--compiler",
        stub.to_str().unwrap(),
        "--jobs",
        "1",
        "--work",
        work.to_str().unwrap(),
    ];
    let mut build = forkbook(&demo, &build_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&started, &mut build, Duration::from_secs(240));

    for (args, alone) in readers.iter().zip(&alone) {
        let out = forkbook(&demo, args).output().unwrap();
        assert_eq!(
            out.status.code(),
            *alone,
            "`{}` beside the build: {}",
            args.join(" "),
            text(&out)
        );
        assert!(
            !text(&out).contains("another forkbook run"),
            "{}",
            text(&out)
        );
    }
    // The build holds no cache lock at all while it compiles: a writer runs too.
    let out = forkbook(&demo, &["fetch"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "fetch beside the build: {}",
        text(&out)
    );
    // What the build does hold alone is its work folder: a second build there is refused.
    let out = forkbook(&demo, &build_args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("another forkbook run is using the drift build folder"),
        "{}",
        text(&out)
    );

    // A reader (the lock shared, as `status` holds it): other readers go, a writer is refused.
    let cache = &demo.demo.cache;
    let reader = RunLock::acquire_shared(cache, "object cache").unwrap();
    let out = forkbook(&demo, &["status"]).output().unwrap();
    assert_eq!(out.status.code(), alone[0], "{}", text(&out));
    let out = forkbook(&demo, &["fetch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("another forkbook run is using the object cache"),
        "{}",
        text(&out)
    );
    drop(reader);
    // A writer (the lock exclusive, as `fetch` holds it): another writer and readers are refused.
    let writer = RunLock::acquire(cache, "object cache").unwrap();
    for args in [&["fetch"][..], &["status"][..]] {
        let out = forkbook(&demo, args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("another forkbook run is using the object cache"),
            "{}",
            text(&out)
        );
    }
    drop(writer);

    std::fs::write(&release, "").unwrap();
    let out = build.wait_with_output().unwrap();
    // The stub failed the held compiles: a report with compile errors, not a refusal.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("build: failed"), "{}", text(&out));
    assert!(
        !text(&out).contains("another forkbook run"),
        "{}",
        text(&out)
    );
}
