//! What a run believes of its machine (issue 40, items 5 to 8; issue 42, the process runner): a
//! cache secret others could read seals nothing, a cache folder of the checkout's is not used,
//! a run never waits for itself on a lock, a killed run's temporary file is no overlay file, a fork branch like a refspec is an error and
//! no panic, and a network transfer that hangs is stopped at its timeout.

use crate::common::{with_stubs, write_stub, Demo};
use forkbook::engine::config::Layout;
use forkbook::engine::process::{run, Ended, Finished, Spec};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

/// Runs the forkbook binary on `demo` with `args`, `env` over the test's own, through the one
/// process runner with a timeout: a run that would never end is stopped, and the test says so.
fn spawned(demo: &Demo, path: &std::ffi::OsStr, env: &[(&str, &str)], args: &[&str]) -> Finished {
    let mut spec = Spec::new(env!("CARGO_BIN_EXE_forkbook"), demo.root())
        .arg("--root")
        .arg(demo.root())
        .arg("--cache")
        .arg(&demo.demo.cache)
        .args(args.iter().copied())
        .env("PATH", path)
        .env("HOME", crate::common::home())
        .timeout(Some(Duration::from_secs(120)));
    for (name, value) in env {
        spec = spec.env(*name, *value);
    }
    let done = run(&spec).unwrap();
    assert!(
        !matches!(done.ended, Ended::TimedOut(_)),
        "{args:?} never ended: {}",
        done.output
    );
    done
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The demo's forkbook.toml with `edit` applied.
fn edit_config(demo: &Demo, edit: impl FnOnce(String) -> String) {
    let path = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, edit(text)).unwrap();
}

/// `verify`'s output, the notes left out and step times evened out.
fn verdict(out: &str) -> String {
    let kept: String = out
        .lines()
        .filter(|l| !l.starts_with("note: no results cache"))
        .map(|l| format!("{l}\n"))
        .collect();
    crate::caches::normalized(&kept)
}

/// A cache secret others can read is no secret: whoever reads it seals a drift analysis with no
/// findings, and `verify` must still find the pin's API breaks. The same where the folder holding
/// it lets others put a file of theirs in its place (world-writable, not sticky). Each run says
/// why no results cache is used. Fails before: the secret was believed whatever its mode, and
/// `verify` read the forged analysis (no drift).
#[test]
fn a_secret_others_can_read_or_replace_seals_nothing() {
    for exposed in ["the key readable by all", "the folder writable by all"] {
        let demo = Demo::new(Layout::Patch);
        let pin2 = demo.demo.world.pin2.clone();
        let (code, out) = demo.run(&["retarget", &pin2]);
        assert_eq!(code, 1, "device.cpp conflicts: {out}");
        let (code, truth) = demo.run(&["verify"]);
        assert_eq!(code, 1, "{truth}");
        assert!(truth.contains("break"), "the pin's API breaks: {truth}");
        let home = demo.demo.cache.parent().unwrap();
        let drift = home.join("forkbook-drift-api");
        let kept: Vec<_> = std::fs::read_dir(&drift)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect();
        assert!(!kept.is_empty(), "verify keeps its analysis");
        for entry in &kept {
            crate::caches::reseal(&demo, entry, "drift api", |payload| {
                let mut entry: serde_json::Value = serde_json::from_str(&payload).unwrap();
                entry["report"]["findings"] = serde_json::json!([]);
                entry["evidence"] = serde_json::json!([]);
                entry.to_string()
            });
        }
        let key = home.join(forkbook_records::cache_entry::SECRET_FILE);
        match exposed {
            "the key readable by all" => set_mode(&key, 0o644),
            _ => set_mode(home, 0o777),
        }
        let (code, out) = demo.run(&["verify"]);
        set_mode(home, 0o700);
        assert_eq!(code, 1, "{exposed}: {out}");
        assert_eq!(verdict(&out), verdict(&truth), "{exposed}");
        let note = out
            .lines()
            .find(|l| l.starts_with("note: no results cache is used: its secret"))
            .unwrap_or_else(|| panic!("{exposed}: no note saying why: {out}"));
        assert!(note.contains("forkbook-cache.key"), "{note}");
        let why = match exposed {
            "the key readable by all" => "may be read or written by other users (mode 0644)",
            _ => "other users may write in (mode 0777, not sticky)",
        };
        assert!(note.contains(why), "{exposed}: {note}");
    }
}

/// `[build] ccache_dir` naming the records folder: ccache would keep its objects in the
/// checkout, which a pull request writes, so the build runs without ccache, says so, and the
/// records are untouched. Fails before: the stub ccache ran with `CCACHE_DIR` in the records.
#[test]
fn a_ccache_folder_in_the_checkout_is_not_used() {
    let demo = Demo::new(Layout::Patch);
    edit_config(&demo, |text| {
        text.replace(
            "[build]\ncompiler = \"hipcc\"\n",
            "[build]\ncompiler = \"hipcc\"\nccache_dir = \"patches-rocm\"\n",
        )
    });
    let stubs = demo.tmp.path().join("stubs");
    let log = demo.tmp.path().join("ccache.log");
    let script = format!("echo \"$CCACHE_DIR\" >> '{}'\nexec \"$@\"", log.display());
    write_stub(&stubs, "ccache", &script);
    let before = forkbook::engine::fsutil::read_tree(&demo.records()).unwrap();
    let work = demo.tmp.path().join("work");
    let pin1 = demo.demo.world.pin1.clone();
    let args = [
        "drift",
        "build",
        "--to",
        &pin1,
        "--compiler",
        "c++",
        "--jobs",
        "2",
        "--work",
        work.to_str().unwrap(),
    ];
    let (code, out) = demo.run_with_tools(&with_stubs(&stubs), &args);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("note: the build runs without ccache: its folder")
            && out.contains("which the checkout controls"),
        "{out}"
    );
    assert!(
        !log.exists(),
        "ccache ran with CCACHE_DIR {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let after = forkbook::engine::fsutil::read_tree(&demo.records()).unwrap();
    assert_eq!(before, after, "the records are as they were");
}

/// A verify step running `forkbook fetch` (which writes the object cache) gets the cache: verify
/// lets go of its lock before its steps. With `FORKBOOK_LOCK_WAIT=1` the step would otherwise
/// wait for verify, which waits for the step. Fails before: the plain step was refused ("another
/// forkbook run is using the object cache") and the waiting one ran into its timeout.
#[test]
fn a_verify_step_running_forkbook_fetch_is_not_locked_out_by_verify() {
    let demo = Demo::new(Layout::Patch);
    edit_config(&demo, |text| {
        let head = text.split("[[verify.steps]]").next().unwrap().to_string();
        format!(
            "{head}[[verify.steps]]\nname = \"fetch\"\ncommand = \"forkbook fetch\"\ntimeout = 60\n\n\
             [[verify.steps]]\nname = \"fetch, waiting\"\ncommand = \"FORKBOOK_LOCK_WAIT=1 forkbook fetch\"\ntimeout = 60\n"
        )
    });
    let (code, out) = demo.run(&["verify"]);
    assert_eq!(code, 0, "{out}");
    for step in ["fetch", "fetch, waiting"] {
        let passed = |line: &str| {
            let rest = line.trim_start().strip_prefix(step);
            rest.is_some_and(|rest| rest.trim_start().starts_with("passed"))
        };
        assert!(out.lines().any(passed), "{step}: {out}");
    }
}

/// A replace killed before its rename leaves `.forkbook-new-XXXXXX` beside the file it was
/// replacing. In the files layout that may be among the overlay's files: a read-only command
/// names it as a dead run's leftover, not an overlay file, and the next command that writes the
/// records (under the project's lock) removes it, and nothing else. Fails before: `check` and
/// `status` counted it as an overlay file no entry names.
#[test]
fn a_killed_replace_s_temporary_file_is_no_overlay_file_and_is_cleared() {
    let demo = Demo::new(Layout::Files);
    let (code, clean) = demo.run(&["check"]);
    assert_eq!(code, 0, "{clean}");
    let folder = demo.records().join("tree/mlx/backend/rocm");
    assert!(
        folder.is_dir(),
        "the files layout keeps the overlay in the records' `tree/`"
    );
    let leftover = folder.join(".forkbook-new-Ab12Cd");
    std::fs::write(&leftover, "half of a file\n").unwrap();
    // Not ours: another name, and a folder of the same pattern.
    let someone_elses = folder.join(".forkbook-new-notours.txt");
    std::fs::write(&someone_elses, "kept\n").unwrap();
    let (code, out) = demo.run(&["check"]);
    assert!(
        out.contains("notours"),
        "a file not named like ours is an overlay file: {out}"
    );
    assert_ne!(code, 0, "{out}");
    std::fs::remove_file(&someone_elses).unwrap();
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("is a temporary file a killed forkbook run left"),
        "{out}"
    );
    assert!(leftover.exists(), "a read-only command removes nothing");
    let fork = demo.fork(1).to_string();
    let (code, out) = demo.run(&["sync", &fork]);
    assert!(matches!(code, 0 | 1), "{out}");
    assert!(
        !leftover.exists(),
        "the writer under the lock clears it: {out}"
    );
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("killed forkbook run"), "{out}");
}

/// A fork branch that reads as a refspec (`a:b`) is no branch: every command says so with the
/// configuration's line, and none panics. Fails before: `check` panicked indexing an empty
/// fetch result.
#[test]
fn a_fork_branch_like_a_refspec_is_an_error_not_a_panic() {
    let demo = Demo::new(Layout::Patch);
    edit_config(&demo, |text| {
        text.replace(
            "branch = \"rocm-support\"",
            "branch = \"rocm-support:refs/heads/elsewhere\"",
        )
    });
    for command in ["check", "fetch", "status"] {
        let (code, out) = demo.run(&[command]);
        assert_eq!(code, 2, "{command}: {out}");
        assert!(
            out.contains(
                "forkbook.toml`: line 10: the fork branch `rocm-support:refs/heads/elsewhere` is not a branch name"
            ),
            "{command}: {out}"
        );
    }
}

/// A network fetch whose server stops answering (a `git` that never ends) is stopped at the
/// network timeout, and the error says so. Fails before: the fetch ran `git` with no timeout and
/// never ended (the test's runner stopped it after 120 s).
#[test]
fn a_fetch_that_hangs_is_stopped_at_its_timeout() {
    let demo = Demo::new(Layout::Patch);
    let stubs = demo.tmp.path().join("stubs");
    write_stub(&stubs, "git", "sleep 300");
    let env = [
        ("FORKBOOK_FORK_URL", "https://example.invalid/fork.git"),
        ("FORKBOOK_NETWORK_TIMEOUT", "1"),
    ];
    let done = spawned(&demo, &with_stubs(&stubs), &env, &["fetch"]);
    assert_eq!(done.code(), Some(2), "{}", done.output);
    assert!(
        done.output.contains("timed out after 1 s"),
        "{}",
        done.output
    );
    assert!(
        done.output.contains("FORKBOOK_NETWORK_TIMEOUT"),
        "{}",
        done.output
    );
}
