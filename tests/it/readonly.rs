//! Read-only commands write nothing, and no command writes into a mirror read through alternates.
//!
//! libgit2 "freshens" an object it is asked to write and already has: it sets the mtime of the
//! pack or loose file holding it, which may be a mirror's (issue 12, item 8). And a check that
//! writes the patches' images into the object cache is not a check (issue 14). Every file of the
//! cache and of both mirrors is compared, bytes and mtime, before and after each command.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Every file below `dir`: its bytes and its mtime.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                out.insert(
                    path.clone(),
                    (std::fs::read(&path).unwrap(), meta.modified().unwrap()),
                );
            }
        }
    }
    out
}

/// Sets every file's mtime to one fixed old time, so that any touch shows (a freshen within the
/// second the world was made would otherwise be invisible).
fn age(dir: &Path) {
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    for path in snapshot(dir).keys() {
        std::fs::File::open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
}

/// Makes `dir` read-only for everyone (`chmod -R a-w`). The tests may run as root, whom modes
/// do not stop, so the snapshots are what proves nothing was written.
fn read_only(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let meta = std::fs::symlink_metadata(&at).unwrap();
        if meta.is_dir() {
            for entry in std::fs::read_dir(&at).unwrap() {
                stack.push(entry.unwrap().path());
            }
        }
        let mode = meta.permissions().mode() & !0o222;
        std::fs::set_permissions(&at, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

fn writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let meta = std::fs::symlink_metadata(&at).unwrap();
        let mode = meta.permissions().mode() | 0o200;
        std::fs::set_permissions(&at, std::fs::Permissions::from_mode(mode)).unwrap();
        if meta.is_dir() {
            for entry in std::fs::read_dir(&at).unwrap() {
                stack.push(entry.unwrap().path());
            }
        }
    }
}

/// A demo whose upstream mirror is packed (as a real mirror is) and whose fork mirror keeps loose
/// objects, both aged and read-only.
fn demo_with_read_only_mirrors(layout: Layout) -> Demo {
    let demo = Demo::new(layout);
    let upstream = &demo.demo.world.upstream;
    let status = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(upstream)
        .args(["repack", "-a", "-d", "-q"])
        .status()
        .unwrap();
    assert!(status.success());
    for mirror in [&demo.demo.world.upstream, &demo.demo.world.fork] {
        age(mirror);
        read_only(mirror);
    }
    age(&demo.demo.cache);
    demo
}

fn mirrors(demo: &Demo) -> [PathBuf; 2] {
    [
        demo.demo.world.upstream.clone(),
        demo.demo.world.fork.clone(),
    ]
}

/// Runs each command and asserts that none changed a file below any of `dirs`.
fn assert_writes_nothing(demo: &Demo, dirs: &[PathBuf], commands: &[Vec<String>]) {
    for args in commands {
        let before: Vec<_> = dirs.iter().map(|d| snapshot(d)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out) = demo.run(&args);
        assert!(
            code == 0 || code == 1,
            "`{}` exit {code}: {out}",
            args.join(" ")
        );
        for (dir, before) in dirs.iter().zip(before) {
            let after = snapshot(dir);
            let changed: Vec<_> = before
                .keys()
                .chain(after.keys())
                .filter(|p| before.get(*p) != after.get(*p))
                .collect();
            assert!(
                changed.is_empty(),
                "`{}` changed {} file(s) below {}: {changed:?}",
                args.join(" "),
                changed.len(),
                dir.display()
            );
        }
    }
}

fn strings(commands: &[&[&str]]) -> Vec<Vec<String>> {
    commands
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect()
}

#[test]
fn read_only_commands_leave_the_cache_and_the_mirrors_byte_and_mtime_identical() {
    for layout in [Layout::Patch, Layout::Files] {
        let demo = demo_with_read_only_mirrors(layout);
        let pin2 = demo.demo.world.pin2.clone();
        let mut dirs = mirrors(&demo).to_vec();
        dirs.push(demo.demo.cache.clone());
        dirs.push(demo.records());
        assert_writes_nothing(
            &demo,
            &dirs,
            &strings(&[
                &["sync", "--check"],
                &["status"],
                &["check"],
                &["residual"],
                &["verify"],
                &["drift", "api", "--to", &pin2],
                &["--json", "sync", "--check"],
            ]),
        );
        for mirror in mirrors(&demo) {
            writable(&mirror);
        }
    }
}

#[test]
fn writing_commands_leave_read_only_mirrors_untouched() {
    for layout in [Layout::Patch, Layout::Files] {
        let demo = demo_with_read_only_mirrors(layout);
        let dirs = mirrors(&demo).to_vec();
        // A new fix: materialize, edit, record.
        let edited = demo.tmp.path().join("edited");
        let edit_dir = edited.to_str().unwrap().to_string();
        assert_writes_nothing(
            &demo,
            &dirs,
            &strings(&[&["materialize", "--out", &edit_dir]]),
        );
        let file = edited.join("mlx/backend/rocm/eval.cpp");
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str("// one more local fix\n");
        std::fs::write(&file, text).unwrap();
        let propose_out = demo.tmp.path().join("propose-out");
        let f2 = demo.fork(2).to_string();
        let pin2 = demo.demo.world.pin2.clone();
        assert_writes_nothing(
            &demo,
            &dirs,
            &strings(&[
                &[
                    "fix",
                    "add",
                    "--from",
                    &edit_dir,
                    "--title",
                    "One more local fix",
                ],
                &["propose", "2", "4", "--out", propose_out.to_str().unwrap()],
                &["sync", &f2],
                &["retarget", &pin2, "--allow-conflicts"],
            ]),
        );
        for mirror in mirrors(&demo) {
            writable(&mirror);
        }
    }
}
