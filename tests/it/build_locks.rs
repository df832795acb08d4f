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
    let mut cmd = crate::common::forkbook_command();
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
         \x20   */tree/mlx/*.cpp)\n\
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

/// A compiler that hangs on every source of the exported tree (writing its pid to `pids`
/// first), and hands everything else (CMake's compiler checks) to `c++`.
fn hanging_compiler(dir: &Path, name: &str, pids: &Path) -> PathBuf {
    let stub = dir.join(name);
    let script = format!(
        "#!/bin/sh\n\
         for arg in \"$@\"; do\n\
         \x20 case \"$arg\" in\n\
         \x20   */tree/mlx/*.cpp) echo $$ >> '{pids}'; echo \"compiling $arg\"; sleep 300; exit 1;;\n\
         \x20 esac\n\
         done\n\
         exec c++ \"$@\"\n",
        pids = pids.display(),
    );
    std::fs::write(&stub, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    stub
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

/// Live processes whose command line names something below `dir`, or whose working folder is
/// below it: the build's cmake, make, compiler stub and its `sleep`.
fn processes_in(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if !alive(pid) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        let cwd = std::fs::read_link(entry.path().join("cwd"))
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default();
        if cmdline.contains(&needle) || cwd.starts_with(&needle) {
            found.push(format!("{pid}: {cmdline} (in {cwd})"));
        }
    }
    found
}

/// Both ways a book runs `forkbook drift build`: in process (a `forkbook` step, stopped through
/// its thread's deadline) and as a process (a `sh` step running the binary, stopped with every
/// process carrying its tag). Fails on main before this change: the in-process step showed no
/// build output, only the error line.
#[test]
fn a_timed_out_drift_build_step_stops_its_build_at_the_deadline_and_lets_go_of_the_locks() {
    let demo = Demo::new(Layout::Patch);
    let dir = demo.tmp.path();
    let pids = dir.join("compiler-pids");
    let stub = hanging_compiler(dir, "hanging-hipcc", &pids);
    let work = dir.join("build");
    let sh_pids = dir.join("sh-compiler-pids");
    let sh_stub = hanging_compiler(dir, "hanging-hipcc-sh", &sh_pids);
    let sh_work = dir.join("sh-build");
    let timeout = 20;
    let book = demo.root().join("book");
    let write = |rel: &str, text: &str| {
        let path = book.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "book.toml",
        "[book]\ntitle = \"timeouts\"\n\n[preprocessor.forkbook]\ncommand = \"forkbook mdbook\"\nallow-shell = true\n",
    );
    write("src/SUMMARY.md", "# Summary\n\n- [Build](build.md)\n");
    write(
        "src/build.md",
        &format!(
            "# Build\n\n```forkbook,timeout={timeout}\nforkbook drift build --compiler {} --jobs 2 --work {}\n```\n\n\
             ```sh,run,timeout={timeout}\n'{}' --cache '{}' drift build --compiler '{}' --jobs 2 --work '{}'\n```\n\n\
             ```forkbook\nforkbook status\n```\n",
            stub.display(),
            work.display(),
            env!("CARGO_BIN_EXE_forkbook"),
            demo.demo.cache.display(),
            sh_stub.display(),
            sh_work.display(),
        ),
    );
    let started = Instant::now();
    let (code, out) = demo.run(&["book", "build", "--dir", book.to_str().unwrap()]);
    let took = started.elapsed();
    let html = std::fs::read_to_string(book.join("book/build.html")).unwrap_or_default();
    assert_eq!(code, 0, "{out}");
    // At its deadline, plus the moment the command takes to notice: not the stub's 300 s.
    assert!(
        took < Duration::from_secs(2 * timeout + 40),
        "the book took {took:?}"
    );

    // Each build had reached its compiles, and the stubs' processes are gone with cmake and make.
    std::thread::sleep(Duration::from_millis(300));
    for file in [&pids, &sh_pids] {
        let compilers: Vec<i32> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        assert!(
            !compilers.is_empty(),
            "{file:?}: the build never compiled: {html}"
        );
        for pid in &compilers {
            assert!(!alive(*pid), "compiler {pid} outlived the step");
        }
    }
    let left = processes_in(dir);
    assert!(left.is_empty(), "processes outlived the step: {left:#?}");

    // The step says it timed out, with what it printed so far; the next step ran.
    let steps: Vec<&str> = html
        .split("<span class=\"forkbook-exit\">")
        .skip(1)
        .collect();
    assert_eq!(steps.len(), 3, "{html}");
    assert!(steps[0].starts_with("exit 124"), "{}", steps[0]);
    assert!(
        steps[0].contains(&format!("timed out after {timeout} s")),
        "{}",
        steps[0]
    );
    // What the build printed so far (make's lines; the stub's own are ccache's to keep, when
    // ccache launches the compiler).
    assert!(
        steps[0].contains("Building CXX object"),
        "the output so far: {}",
        steps[0]
    );
    assert!(steps[1].starts_with("exit 124"), "{}", steps[1]);
    assert!(
        steps[1].contains(&format!("timed out after {timeout} s")),
        "{}",
        steps[1]
    );
    assert!(steps[2].starts_with("exit 0"), "{}", steps[2]);
    assert!(!html.contains("another forkbook run"), "{html}");

    // Both locks are free: a writer gets the cache, and a build gets the work folder.
    let out = forkbook(&demo, &["fetch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let _work_lock = RunLock::acquire(&work, "drift build folder").unwrap();
    let _sh_work_lock = RunLock::acquire(&sh_work, "drift build folder").unwrap();
}
