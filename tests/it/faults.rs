//! Fault tests: a `sync`, `retarget` or `materialize` interrupted at any write, or killed, leaves
//! the records folder (and the materialized folder) either exactly as it was or exactly as a
//! finished run makes it, never a mix; a folder forkbook cannot write gives a clear error; two
//! runs at once on one overlay are refused, or queue with `FORKBOOK_LOCK_WAIT=1`.
//!
//! The forkbook binary runs as a child process so that the failure hook
//! (`FORKBOOK_FAIL_AFTER_WRITES`) and `kill -9` touch only that child.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const LAYOUTS: [Layout; 2] = [Layout::Patch, Layout::Files];

/// Every file below a folder, by relative path, plus every folder (as a path ending in `/`), so
/// an empty folder left behind counts as a difference too.
type Snapshot = BTreeMap<String, Vec<u8>>;

fn snapshot(dir: &Path) -> Snapshot {
    let mut out = Snapshot::new();
    if dir.exists() {
        snapshot_into(dir, "", &mut out);
    }
    out
}

fn snapshot_into(dir: &Path, prefix: &str, out: &mut Snapshot) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let rel = format!("{prefix}{}", entry.file_name().to_string_lossy());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            out.insert(format!("{rel}/"), Vec::new());
            snapshot_into(&entry.path(), &format!("{rel}/"), out);
        } else {
            out.insert(rel, std::fs::read(entry.path()).unwrap());
        }
    }
}

/// Puts a folder back exactly as `snap` records it.
fn restore(dir: &Path, snap: &Snapshot) {
    if dir.exists() {
        std::fs::remove_dir_all(dir).unwrap();
    }
    std::fs::create_dir_all(dir).unwrap();
    for (rel, bytes) in snap {
        match rel.strip_suffix('/') {
            Some(sub) => std::fs::create_dir_all(dir.join(sub)).unwrap(),
            None => {
                std::fs::create_dir_all(dir.join(rel).parent().unwrap()).unwrap();
                std::fs::write(dir.join(rel), bytes).unwrap();
            }
        }
    }
}

/// Names of `dir`'s entries that look like forkbook's staging folders (`.NAME.forkbook-new-PID`).
fn staging_left(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".forkbook-new-"))
        .collect()
}

/// Which of the two states a folder is in, or a description of the mix.
fn which_state(now: &Snapshot, old: &Snapshot, new: &Snapshot) -> Result<&'static str, String> {
    if now == old {
        return Ok("old");
    }
    if now == new {
        return Ok("new");
    }
    let differs = |a: &Snapshot, b: &Snapshot| -> Vec<String> {
        a.keys()
            .chain(b.keys())
            .filter(|k| a.get(*k) != b.get(*k))
            .take(5)
            .cloned()
            .collect()
    };
    Err(format!(
        "neither old nor new: differs from old at {:?}, from new at {:?}",
        differs(now, old),
        differs(now, new)
    ))
}

/// The forkbook binary with the demo's project and cache, and a clean environment for the hooks.
fn forkbook(demo: &Demo, args: &[&str]) -> Command {
    let mut cmd = crate::common::forkbook_command();
    cmd.arg("--root")
        .arg(demo.root())
        .arg("--cache")
        .arg(&demo.demo.cache)
        .args(args);
    for var in [
        "FORKBOOK_FAIL_AFTER_WRITES",
        "FORKBOOK_LOCK_WAIT",
        "FORKBOOK_OFFLINE",
        "FORKBOOK_CACHE",
    ] {
        cmd.env_remove(var);
    }
    cmd.stdin(Stdio::null());
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("forkbook runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// One command interrupted at write N = 0, 1, 2, ... until it finishes: after every failure the
/// watched folder is the old state or the new one, and no staging folder is left in its parent.
/// `prepare` puts the world back before each try. Returns the number of failed tries.
fn interrupt_at_every_write(
    demo: &Demo,
    args: &[&str],
    watched: &Path,
    prepare: &dyn Fn(),
) -> usize {
    prepare();
    let old = snapshot(watched);
    let reference = run(&mut forkbook(demo, args));
    let finished_code = reference.status.code().unwrap();
    assert!(
        finished_code == 0 || finished_code == 1,
        "{args:?} must finish without the hook: {}",
        text(&reference)
    );
    let new = snapshot(watched);
    assert_ne!(old, new, "{args:?} changes {}", watched.display());
    let parent = watched.parent().unwrap();
    let mut failures = 0;
    for n in 0..10_000 {
        prepare();
        let out = run(forkbook(demo, args).env("FORKBOOK_FAIL_AFTER_WRITES", n.to_string()));
        let now = snapshot(watched);
        let state = which_state(&now, &old, &new)
            .unwrap_or_else(|mix| panic!("{args:?} failing after {n} writes: {mix}"));
        assert!(
            staging_left(parent).is_empty(),
            "{args:?} after {n} writes left {:?}",
            staging_left(parent)
        );
        if out.status.code() == Some(2) {
            assert!(
                text(&out).contains("injected failure"),
                "{args:?} after {n} writes: {}",
                text(&out)
            );
            assert_eq!(
                state, "old",
                "{args:?} failed after {n} writes yet swapped the new folder in"
            );
            failures += 1;
            continue;
        }
        assert_eq!(
            out.status.code(),
            Some(finished_code),
            "{args:?} after {n} writes: {}",
            text(&out)
        );
        assert_eq!(
            state, "new",
            "{args:?} finished after {n} writes but the folder is not the new one"
        );
        eprintln!("{args:?}: interrupted at writes 0..{n}: {failures} failures, each left the old folder; with {n} writes allowed it finished");
        return failures;
    }
    panic!("{args:?} never finished");
}

#[test]
fn sync_interrupted_at_every_write_leaves_old_or_new_records() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let records = demo.records();
        let pristine = snapshot(&records);
        let f2 = demo.fork(2).to_string();
        let failures = interrupt_at_every_write(&demo, &["sync", &f2], &records, &|| {
            restore(&records, &pristine)
        });
        // One write per record file plus the swap: the hook really cut the run at each of them.
        assert!(
            failures > pristine.len() / 2,
            "{layout:?}: only {failures} interrupted runs"
        );
    }
}

#[test]
fn retarget_interrupted_at_every_write_leaves_old_or_new_records() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let records = demo.records();
        let pristine = snapshot(&records);
        let pin2 = demo.demo.world.pin2.clone();
        let failures = interrupt_at_every_write(&demo, &["retarget", &pin2], &records, &|| {
            restore(&records, &pristine)
        });
        assert!(
            failures > pristine.len() / 2,
            "{layout:?}: only {failures} interrupted runs"
        );
    }
}

/// `drift api --draft` writes all its drafts (each a fix: its patch, the lock, the counts, and its
/// register entry filled in) in one swap: interrupted at any write, or under a file-size limit,
/// the records are the old ones or the finished ones. Fails before: each draft was written on
/// its own, its register entry filled in after, so a failure after the first draft left
/// `LOCAL_FIXES.md` and the first fix changed and the others missing.
#[test]
fn drift_api_draft_interrupted_anywhere_leaves_old_or_new_records() {
    let demo = Demo::new(Layout::Patch);
    let records = demo.records();
    let old = snapshot(&records);
    let pin2 = demo.demo.world.pin2.clone();
    let args = ["drift", "api", "--to", &pin2, "--draft"];
    let put_back = || restore(&records, &old);
    interrupt_at_every_write(&demo, &args, &records, &put_back);
    let new = snapshot(&records);
    for limit in [1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10] {
        put_back();
        let out = run(with_file_size_limit(&mut forkbook(&demo, &args), limit));
        let state = which_state(&snapshot(&records), &old, &new)
            .unwrap_or_else(|mix| panic!("under a limit of {limit} bytes: {mix}"));
        let expected = if out.status.code() == Some(2) {
            "old"
        } else {
            "new"
        };
        assert_eq!(state, expected, "limit {limit}: {}", text(&out));
    }
}

#[test]
fn materialize_interrupted_at_every_write_leaves_old_or_new_folder() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let out_dir = demo.tmp.path().join("out").join("materialized");
        let mut previous = Snapshot::new();
        previous.insert(
            "stale.txt".into(),
            b"from an earlier materialize\n".to_vec(),
        );
        previous.insert("mlx/".into(), Vec::new());
        previous.insert("mlx/fast.cpp".into(), b"// an older copy\n".to_vec());
        // An earlier materialize's folder carries forkbook's marker, so it may be replaced.
        previous.insert(
            forkbook::engine::fsutil::WRITTEN_MARKER.into(),
            b"written by forkbook\n".to_vec(),
        );
        let args = ["materialize", "--out", out_dir.to_str().unwrap()];
        let failures =
            interrupt_at_every_write(&demo, &args, &out_dir, &|| restore(&out_dir, &previous));
        assert!(failures > 5, "{layout:?}: only {failures} interrupted runs");
        assert!(
            !out_dir.join("stale.txt").exists(),
            "the new folder replaces the old one whole"
        );
    }
}

/// A tiny deterministic generator, so the kill points are the same on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

#[test]
fn killed_sync_leaves_old_or_new_records() {
    let demo = Demo::new(Layout::Files);
    let records = demo.records();
    let old = snapshot(&records);
    let f2 = demo.fork(2).to_string();
    let started = std::time::Instant::now();
    let reference = run(&mut forkbook(&demo, &["sync", &f2]));
    // The reference run's length only spreads the kill points over a run; nothing asserts on it.
    let span_us = started.elapsed().as_micros() as u64;
    assert_eq!(reference.status.code(), Some(1), "{}", text(&reference));
    let new = snapshot(&records);
    let mut rng = Lcg(7);
    let mut seen = BTreeMap::new();
    let mut pids = Vec::new();
    for _ in 0..12 {
        restore(&records, &old);
        let mut child = forkbook(&demo, &["sync", &f2])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_micros(
            rng.below(span_us + span_us / 4),
        ));
        let pid = child.id();
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        let state = which_state(&snapshot(&records), &old, &new)
            .unwrap_or_else(|mix| panic!("killed sync: {mix}"));
        *seen.entry(state).or_insert(0) += 1;
        // A killed run cannot clean up after itself: what it may leave is a staging folder of
        // one of the killed children, never a touched records folder; the next run clears it.
        pids.push(pid);
        let leftovers = staging_left(demo.root());
        eprintln!("kill -9 of sync: {status:?} -> records {state}, leftovers {leftovers:?}");
        for leftover in leftovers {
            let ours = pids
                .iter()
                .any(|p| leftover == format!(".patches-rocm.forkbook-new-{p}"));
            assert!(ours, "{leftover} after {status:?}");
        }
    }
    assert!(!seen.is_empty());
    restore(&records, &old);
    // One stale stage for certain, whatever the kills left.
    std::fs::create_dir_all(
        demo.root()
            .join(".patches-rocm.forkbook-new-4000000000/tree"),
    )
    .unwrap();
    let again = run(&mut forkbook(&demo, &["sync", &f2]));
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert_eq!(
        snapshot(&records),
        new,
        "a run after the kills makes the same records"
    );
    assert_eq!(
        staging_left(demo.root()),
        Vec::<String>::new(),
        "the run after the kills clears stale stages"
    );
}

/// Drops the capabilities that let root ignore file permissions, so a read-only folder is
/// read-only for the child even when the tests run as root.
fn without_dac_override(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe and touches only the child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for cap in [
                1, /* CAP_DAC_OVERRIDE */
                2, /* CAP_DAC_READ_SEARCH */
            ] {
                if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                    let err = std::io::Error::last_os_error();
                    // Not root, or no CAP_SETPCAP: plain permissions already apply.
                    if err.raw_os_error() != Some(libc::EPERM) {
                        return Err(err);
                    }
                }
            }
            Ok(())
        })
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn read_only_project_folder_is_a_clear_error_and_changes_nothing() {
    let demo = Demo::new(Layout::Patch);
    let records = demo.records();
    let old = snapshot(&records);
    let f2 = demo.fork(2).to_string();
    set_mode(demo.root(), 0o555);
    let out = run(without_dac_override(&mut forkbook(&demo, &["sync", &f2])));
    set_mode(demo.root(), 0o755);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let message = text(&out);
    assert!(
        message.contains("failed to create") && message.contains(demo.root().to_str().unwrap()),
        "{message}"
    );
    assert!(
        message.to_lowercase().contains("permission denied"),
        "the OS reason is shown: {message}"
    );
    assert_eq!(snapshot(&records), old);
    assert!(staging_left(demo.root()).is_empty());
}

#[test]
fn read_only_materialize_target_parent_is_a_clear_error() {
    let demo = Demo::new(Layout::Files);
    let parent = demo.tmp.path().join("locked");
    std::fs::create_dir(&parent).unwrap();
    let out_dir = parent.join("mat");
    std::fs::create_dir(&out_dir).unwrap();
    std::fs::write(out_dir.join("keep.txt"), "old\n").unwrap();
    set_mode(&parent, 0o555);
    let out = run(without_dac_override(&mut forkbook(
        &demo,
        &["materialize", "--out", out_dir.to_str().unwrap()],
    )));
    set_mode(&parent, 0o755);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(parent.to_str().unwrap()),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(out_dir.join("keep.txt")).unwrap(),
        "old\n"
    );
}

/// Caps the size of any file the child writes (`RLIMIT_FSIZE`), with `SIGXFSZ` ignored so the
/// write fails with `EFBIG` instead of killing the process: a disk that fills up mid-file, as
/// far as forkbook can tell, without privileges or a real full disk.
fn with_file_size_limit(cmd: &mut Command, bytes: u64) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal and setrlimit are async-signal-safe and touch only the child.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

#[test]
fn a_write_that_runs_out_of_room_is_a_clear_error_and_changes_nothing() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let records = demo.records();
        let old = snapshot(&records);
        let f2 = demo.fork(2).to_string();
        let out = run(with_file_size_limit(
            &mut forkbook(&demo, &["sync", &f2]),
            256,
        ));
        assert_eq!(out.status.code(), Some(2), "{layout:?}: {}", text(&out));
        let message = text(&out);
        assert!(message.contains("failed to write"), "{layout:?}: {message}");
        assert!(
            message.contains("File too large"),
            "the OS reason is shown: {message}"
        );
        assert_eq!(snapshot(&records), old, "{layout:?}");
        assert!(staging_left(demo.root()).is_empty(), "{layout:?}");

        let out_dir = demo.tmp.path().join("mat");
        std::fs::create_dir_all(&out_dir).unwrap();
        std::fs::write(out_dir.join("keep.txt"), "old\n").unwrap();
        // A folder an earlier materialize wrote (its marker), so forkbook may replace it.
        std::fs::write(out_dir.join(forkbook::engine::fsutil::WRITTEN_MARKER), "").unwrap();
        let args = ["materialize", "--out", out_dir.to_str().unwrap()];
        let out = run(with_file_size_limit(&mut forkbook(&demo, &args), 256));
        assert_eq!(out.status.code(), Some(2), "{layout:?}: {}", text(&out));
        assert!(text(&out).contains("File too large"), "{}", text(&out));
        assert_eq!(snapshot(&out_dir).len(), 2, "the old folder is intact");
        assert!(staging_left(demo.tmp.path()).is_empty());
    }
}

#[test]
fn a_second_sync_is_refused_while_one_holds_the_overlay() {
    let demo = Demo::new(Layout::Patch);
    let records = demo.records();
    let old = snapshot(&records);
    let f2 = demo.fork(2).to_string();
    let lock = forkbook::engine::fsutil::RunLock::acquire(demo.root(), "overlay").unwrap();
    let out = run(&mut forkbook(&demo, &["sync", &f2]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("another forkbook run is using the overlay"),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("FORKBOOK_LOCK_WAIT=1"),
        "the message says how to queue: {}",
        text(&out)
    );
    assert_eq!(snapshot(&records), old, "the refused run wrote nothing");
    drop(lock);
    let out = run(&mut forkbook(&demo, &["sync", &f2]));
    assert_eq!(
        out.status.code(),
        Some(1),
        "once the lock is free the sync runs: {}",
        text(&out)
    );
}

#[test]
fn with_lock_wait_a_second_sync_queues_behind_the_first() {
    let demo = Demo::new(Layout::Patch);
    let records = demo.records();
    let old = snapshot(&records);
    let f2 = demo.fork(2).to_string();
    let lock = forkbook::engine::fsutil::RunLock::acquire(demo.root(), "overlay").unwrap();
    let mut child = forkbook(&demo, &["sync", &f2])
        .env("FORKBOOK_LOCK_WAIT", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While the lock is held the queued run must not finish or write; poll until it has had
    // time to plan (the records stay old and the child stays alive).
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(
            child.try_wait().unwrap().is_none(),
            "the queued sync ended while the lock was held"
        );
        assert_eq!(snapshot(&records), old);
    }
    drop(lock);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("CONFLICT"), "{}", text(&out));
    assert_ne!(snapshot(&records), old, "the queued sync wrote its records");
    assert!(demo.read("UPSTREAM").contains(&f2));
}

#[test]
fn the_state_comparison_sees_a_mix() {
    // The comparison the tests above rely on: one changed file is neither state.
    let mut old = Snapshot::new();
    old.insert("a".into(), b"1".to_vec());
    old.insert("b".into(), b"1".to_vec());
    let mut new = old.clone();
    new.insert("a".into(), b"2".to_vec());
    new.insert("b".into(), b"2".to_vec());
    let mut mix = old.clone();
    mix.insert("a".into(), b"2".to_vec());
    assert!(which_state(&mix, &old, &new).is_err());
    assert_eq!(which_state(&new, &old, &new), Ok("new"));
}

/// Every writer of a record under a file-size limit (a disk that fills up): exit 2 with the OS
/// reason, and the records folder exactly as it was. Fails on main before issue 12 for
/// `propose --record` and `fixes migrate --write`, which wrote `LOCAL_FIXES.md` in place and
/// left it truncated.
#[test]
fn every_record_writer_under_a_size_limit_leaves_the_old_records() {
    let demo = Demo::new(Layout::Patch);
    let records = demo.records();
    let mat = demo.tmp.path().join("edited");
    let out = run(&mut forkbook(
        &demo,
        &["materialize", "--out", mat.to_str().unwrap()],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    std::fs::write(mat.join("mlx/backend/rocm/extra.txt"), "an edit\n").unwrap();
    let older = records.join("LOCAL_FIXES.md");
    let url = "https://github.com/example/mlx/pull/150";
    let f2 = demo.fork(2).to_string();
    let writers: [(&str, Vec<&str>); 6] = [
        ("propose --record", vec!["propose", "--record", "4", url]),
        ("fixes migrate --write", vec!["fixes", "migrate", "--write"]),
        ("residual --write", vec!["residual", "--write"]),
        (
            "fix add",
            vec![
                "fix",
                "add",
                "--from",
                mat.to_str().unwrap(),
                "--title",
                "an edit",
            ],
        ),
        ("sync", vec!["sync", &f2]),
        ("retarget", vec!["retarget", "HEAD", "--allow-conflicts"]),
    ];
    for (what, args) in writers {
        if what == "fixes migrate --write" {
            std::fs::write(&older, crate::register::OLDER).unwrap();
        }
        let old = snapshot(&records);
        let limit = 64;
        let out = run(with_file_size_limit(&mut forkbook(&demo, &args), limit));
        let message = text(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {message}");
        assert!(message.contains("File too large"), "{what}: {message}");
        assert_eq!(
            snapshot(&records),
            old,
            "{what}: the records are byte for byte as before"
        );
        assert!(
            staging_left(&records).is_empty(),
            "{what}: temporary file left"
        );
        assert!(
            staging_left(demo.root()).is_empty(),
            "{what}: staging folder left"
        );
        let out = run(&mut forkbook(&demo, &args));
        // A sync may report a conflict (1) and still write its records.
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{what} without the limit: {}",
            text(&out)
        );
        assert_ne!(snapshot(&records), old, "{what} writes without the limit");
    }
}

/// Each file below `dir` (relative path) with its inode and modification time: what a writer
/// that leaves a file alone leaves as it was, and one that writes it again does not.
fn identities(dir: &Path) -> BTreeMap<String, (u64, std::time::SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    for (rel, _) in snapshot(dir) {
        if !rel.ends_with('/') {
            let meta = std::fs::metadata(dir.join(&rel)).unwrap();
            out.insert(rel, (meta.ino(), meta.modified().unwrap()));
        }
    }
    out
}

#[test]
fn a_move_writes_only_the_files_whose_bytes_change() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let records = demo.records();
        let (old, before) = (snapshot(&records), identities(&records));
        // Past the file system's timestamp granularity, so a rewrite shows in the mtime too.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let pin2 = demo.demo.world.pin2.clone();
        let out = run(&mut forkbook(&demo, &["retarget", &pin2]));
        assert!(out.status.code().unwrap() <= 1, "{}", text(&out));
        let (new, after) = (snapshot(&records), identities(&records));
        let (mut kept, mut rewritten) = (0, 0);
        for (path, identity) in &after {
            if old.get(path) == new.get(path) {
                assert_eq!(
                    before.get(path),
                    Some(identity),
                    "{layout:?}: `{path}` has the same bytes after the move, yet was written again"
                );
                kept += 1;
            } else {
                assert_ne!(before.get(path), Some(identity), "{layout:?}: `{path}`");
                rewritten += 1;
            }
        }
        assert!(
            kept > 0 && rewritten > 0,
            "{layout:?}: {kept} kept, {rewritten} rewritten"
        );
        eprintln!("{layout:?}: retarget rewrote {rewritten} files and left {kept} as they were");
    }
}

#[test]
fn a_move_killed_at_every_write_leaves_old_or_new_records() {
    use std::os::unix::process::ExitStatusExt;
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let records = demo.records();
        let old = snapshot(&records);
        let pin2 = demo.demo.world.pin2.clone();
        let reference = run(&mut forkbook(&demo, &["retarget", &pin2]));
        assert!(
            reference.status.code().unwrap() <= 1,
            "{}",
            text(&reference)
        );
        let new = snapshot(&records);
        let (mut killed, mut killed_new) = (0, 0);
        for n in 0..10_000 {
            restore(&records, &old);
            let out = run(forkbook(&demo, &["retarget", &pin2])
                .env("FORKBOOK_KILL_AFTER_WRITES", n.to_string()));
            let state = which_state(&snapshot(&records), &old, &new)
                .unwrap_or_else(|mix| panic!("{layout:?} killed after {n} writes: {mix}"));
            if out.status.signal() != Some(9) {
                assert_eq!(out.status.code(), reference.status.code(), "{}", text(&out));
                assert_eq!(state, "new", "{layout:?}: finished after {n} writes");
                break;
            }
            killed += 1;
            // Killed after its swap, the run has put the new records in place; before, the old.
            killed_new += usize::from(state == "new");
        }
        assert!(killed > 2, "{layout:?}: only {killed} runs were killed");
        assert_eq!(
            killed_new, 1,
            "{layout:?}: killed just after the swap, once"
        );
        // What the killed runs leave is their stages beside the records; the next run clears them.
        restore(&records, &old);
        let again = run(&mut forkbook(&demo, &["retarget", &pin2]));
        assert_eq!(
            again.status.code(),
            reference.status.code(),
            "{}",
            text(&again)
        );
        assert_eq!(snapshot(&records), new);
        assert_eq!(staging_left(demo.root()), Vec::<String>::new());
    }
}
