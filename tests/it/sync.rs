//! Sync and retarget on the generated world, in both layouts: every case of issue 2, asserting
//! file contents and exit codes as a user would check them.

use crate::common::Demo;
use forkbook::engine::config::Layout;

const LAYOUTS: [Layout; 2] = [Layout::Patch, Layout::Files];

#[test]
fn fresh_overlay_passes_sync_check() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let (code, out) = demo.run(&["sync", "--check"]);
        assert_eq!(code, 0, "{layout:?}: {out}");
        assert!(out.contains("reproduced byte for byte"), "{out}");
    }
}

#[test]
fn sync_check_catches_a_tampered_record_and_writes_nothing() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let lock = demo.records().join("overlay.lock");
        let text = demo.read("overlay.lock").replacen('0', "1", 1);
        std::fs::write(&lock, &text).unwrap();
        let (code, out) = demo.run(&["sync", "--check"]);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("patches-rocm/overlay.lock"), "{out}");
        assert_eq!(
            std::fs::read_to_string(&lock).unwrap(),
            text,
            "--check wrote nothing"
        );
    }
}

#[test]
fn files_layout_check_catches_an_edited_overlay_file() {
    let demo = Demo::new(Layout::Files);
    let path = demo.records().join("tree/mlx/backend/rocm/matmul.cpp");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("// silently edited\n");
    std::fs::write(&path, text).unwrap();
    let (code, out) = demo.run(&["sync", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("mlx/backend/rocm/matmul.cpp"), "{out}");
}

#[test]
fn sync_to_a_fork_commit_that_changes_the_lines_of_a_fix_conflicts_named_by_the_fix() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let f2 = demo.fork(2).to_string();
        let (code, out) = demo.run(&["sync", &f2]);
        assert_eq!(code, 1, "{layout:?}: {out}");
        assert!(out.contains("mlx/backend/rocm/eval.cpp: CONFLICT"), "{out}");
        if layout == Layout::Patch {
            assert!(
                out.contains(
                    "fix 4 (0004-synchronize-the-stream-before-finalize-returns.patch): CONFLICT"
                ),
                "{out}"
            );
        }
        assert!(out.contains("mlx/backend/rocm/softmax.cpp: added"), "{out}");
        let eval = demo.materialized("mlx/backend/rocm/eval.cpp");
        assert!(eval.contains("<<<<<<< new base (fork "), "{eval}");
        assert!(
            eval.contains("local fix 4"),
            "the local side is kept inside the markers"
        );
        assert!(demo.read("UPSTREAM").contains(&format!("commit: {f2}")));
        // The core fix and the local-only file are carried untouched.
        assert!(demo.materialized("mlx/fast.cpp").contains("Local fix 1"));
        assert!(demo
            .materialized("mlx/backend/rocm/local_workaround.hpp")
            .contains("Local-only"));
    }
}

#[test]
fn sync_reports_a_fix_the_fork_now_contains_and_removes_a_file_the_fork_deleted() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let f3 = demo.fork(3).to_string();
        let (code, out) = demo.run(&["sync", &f3]);
        assert_eq!(code, 1, "F3 still carries F2's conflict with fix 4: {out}");
        if layout == Layout::Patch {
            assert!(out.contains("fix 2 (0002-free-pooled-buffers-when-the-allocator-is.patch): already in the new base: droppable"), "{out}");
        }
        assert!(
            out.contains("mlx/backend/rocm/allocator.cpp: contained"),
            "{out}"
        );
        assert!(
            out.contains("mlx/backend/rocm/old_copy.cpp: removed"),
            "{out}"
        );
        let lock = demo.read("overlay.lock");
        assert!(
            !lock.contains("old_copy.cpp"),
            "the deleted file left the lock"
        );
        assert!(
            lock.contains("local_workaround.hpp"),
            "the local-only file stays"
        );
    }
}

#[test]
fn sync_keeps_a_locally_modified_file_the_fork_deletes_as_a_conflict() {
    let demo = Demo::new(Layout::Files);
    let path = demo.records().join("tree/mlx/backend/rocm/old_copy.cpp");
    let text = std::fs::read_to_string(&path).unwrap() + "// local change\n";
    std::fs::write(&path, text).unwrap();
    let (code, out) = demo.run(&["sync", demo.fork(3)]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("old_copy.cpp: CONFLICT")
            && out.contains("deletes a file the overlay changes"),
        "{out}"
    );
    assert!(demo
        .materialized("mlx/backend/rocm/old_copy.cpp")
        .contains("// local change"));
}

#[test]
fn retarget_merges_core_files_and_reports_the_conflicting_one() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let pin2 = demo.demo.world.pin2.clone();
        let (code, out) = demo.run(&["retarget", &pin2]);
        assert_eq!(code, 1, "{layout:?}: {out}");
        assert!(out.contains("mlx/device.cpp: CONFLICT"), "{out}");
        assert!(out.contains("core files: 3 of 4 merged cleanly"), "{out}");
        let device = demo.materialized("mlx/device.cpp");
        assert!(
            device.contains("<<<<<<< pin ") && device.contains(">>>>>>> fork "),
            "{device}"
        );
        assert!(demo
            .read("UPSTREAM")
            .contains(&format!("retargeted_to_mlx_pin: {pin2}")));
        assert!(
            demo.materialized("mlx/fast.cpp").contains("Local fix 1"),
            "core fix carried"
        );
        // The records reproduce at the new commits, markers and all: that is no pass.
        let (code, out) = demo.run(&["sync", "--check"]);
        assert_eq!(code, 1, "{out}");
        assert!(!out.contains("records differ"), "{out}");
        assert!(out.contains("mlx/device.cpp:"), "{out}");
    }
}

#[test]
fn retarget_check_writes_nothing() {
    let demo = Demo::new(Layout::Patch);
    let before = demo.read("UPSTREAM");
    let (code, out) = demo.run(&["retarget", &demo.demo.world.pin2.clone(), "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("would move"), "{out}");
    assert_eq!(demo.read("UPSTREAM"), before);
}

#[test]
fn fork_that_merged_upstream_past_the_pin_is_refused_unless_allowed() {
    let demo = Demo::new(Layout::Patch);
    let f4 = demo.fork(4).to_string();
    let (code, out) = demo.run(&["sync", &f4]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("has merged upstream"), "{out}");
    assert!(out.contains("--allow-fork-ahead"), "{out}");
    let (code, out) = demo.run(&["sync", &f4, "--allow-fork-ahead", "--check"]);
    assert_ne!(code, 2, "{out}");
}

#[test]
fn fork_hooks_outside_the_overlay_are_reported() {
    let demo = Demo::new(Layout::Patch);
    let (_, out) = demo.run(&["sync", demo.fork(2)]);
    assert!(out.contains("fork changes outside the overlay"), "{out}");
}

#[test]
fn revision_that_looks_like_an_option_is_refused() {
    let demo = Demo::new(Layout::Patch);
    let (code, out) = demo.run(&["retarget", "--", "--upload-pack=evil"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("is not a revision"), "{out}");
}

#[test]
fn missing_object_offline_names_the_fetch_command() {
    let demo = Demo::new(Layout::Patch);
    let (code, out) = demo.run(&[
        "--offline",
        "retarget",
        "0123456789abcdef0123456789abcdef01234567",
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("forkbook fetch --upstream 0123456789abcdef0123456789abcdef01234567"),
        "{out}"
    );
}

#[test]
fn residual_from_the_records_equals_the_residual_of_the_whole_overlay() {
    use forkbook::engine::{overlay::OverlayState, residual, Cache, Project};
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        demo.run(&["retarget", &demo.demo.world.pin2.clone()]);
        let project = Project::open(demo.root(), &demo.demo.overrides()).unwrap();
        let cache = Cache::open(&project).unwrap();
        let whole = residual::compute(&OverlayState::load(&project, &cache).unwrap());
        let fast = residual::compute_from_records(&project, &cache).unwrap();
        assert_eq!(fast.hunks, whole.hunks, "{layout:?}");
        assert!(!whole.hunks.is_empty(), "the demo overlay has a core fix");
    }
}

#[test]
fn sync_check_names_each_file_the_lock_disagrees_with() {
    for layout in [Layout::Patch, Layout::Files] {
        let demo = Demo::new(layout);
        let lock = demo.records().join("overlay.lock");
        let text = std::fs::read_to_string(&lock).unwrap();
        let line = text
            .lines()
            .find(|l| l.ends_with("  mlx/backend/rocm/eval.cpp"))
            .unwrap();
        let wrong = format!("{}{}", "0".repeat(64), &line[64..]);
        std::fs::write(&lock, text.replace(line, &wrong)).unwrap();
        let (code, out) = demo.run(&["sync", "--check"]);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("overlay.lock"), "{out}");
        assert!(
            out.contains("mlx/backend/rocm/eval.cpp")
                && out.contains("does not match overlay.lock"),
            "{out}"
        );
        let (_, json) = demo.run(&["--json", "sync", "--check"]);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        // Each mismatch as scripts read it: its path, why, and a line only where one applies.
        let eval = serde_json::json!({
            "path": "mlx/backend/rocm/eval.cpp",
            "why": "materialized file does not match overlay.lock",
        });
        let listed = value.as_array().unwrap_or_else(|| panic!("{json}"));
        assert!(listed.contains(&eval), "{json}");
    }
}

/// A lock padded with 300 paths it should not hold: the terminal gets the first 20 differences
/// and how many more, the JSON every one.
#[test]
fn sync_check_lists_the_first_differences_and_counts_the_rest() {
    let demo = Demo::new(Layout::Patch);
    let lock = demo.records().join("overlay.lock");
    let mut text = std::fs::read_to_string(&lock).unwrap();
    for n in 0..300 {
        text.push_str(&format!(
            "{}  mlx/backend/rocm/junk-{n}.cpp\n",
            "0".repeat(64)
        ));
    }
    std::fs::write(&lock, text).unwrap();
    let (code, out) = demo.run(&["sync", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("301 records differ"), "{out}");
    assert_eq!(
        out.matches("does not match overlay.lock").count(),
        19,
        "{out}"
    );
    assert!(
        out.contains("… 281 more (`--json` lists them all)"),
        "{out}"
    );
    let (_, json) = demo.run(&["--json", "sync", "--check"]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value.as_array().map(Vec::len), Some(301), "{json}");
}

/// `sync --check` renders the records of the patch layout from the state's own overlay and
/// steps (`recorded_records`) instead of planning a move to the same commits: both must give the
/// same records, on a clean overlay, after a retarget with conflicts left in, and with the
/// resolution of those conflicts recorded as a fix.
#[test]
fn records_from_the_state_equal_a_planned_move_to_the_same_commits() {
    use forkbook::engine::{overlay::OverlayState, sync, Cache};
    let demo = Demo::new(Layout::Patch);
    let same = |when: &str| {
        let project = demo.demo.open().unwrap();
        // Retried: a `git` another test thread forks may briefly share the cache lock's descriptor.
        let cache = (0..50)
            .find_map(|_| {
                Cache::open(&project)
                    .map_err(|_| std::thread::sleep(std::time::Duration::from_millis(20)))
                    .ok()
            })
            .expect("the object cache stayed locked");
        let state = OverlayState::load(&project, &cache).unwrap();
        let planned = sync::plan(&project, &cache, &state, state.commits).unwrap();
        let recorded = sync::recorded_records(&project, &state).unwrap();
        assert_eq!(recorded, planned.records, "{when}");
        assert!(!state.steps.is_empty(), "{when}: fixes are carried");
    };
    same("at the demo's commits");
    let pin2 = demo.demo.world.pin2.clone();
    let (code, out) = demo.run(&["retarget", &pin2]);
    assert_eq!(code, 1, "device.cpp conflicts: {out}");
    same("after a retarget with a conflict left in");
    let dir = demo.tmp.path().join("resolved");
    let (code, out) = demo.run(&["materialize", "--out", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let device = dir.join("mlx/device.cpp");
    let text = std::fs::read_to_string(&device).unwrap();
    let resolved: String = text
        .lines()
        .filter(|l| {
            !l.starts_with("<<<<<<<") && !l.starts_with("=======") && !l.starts_with(">>>>>>>")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&device, resolved).unwrap();
    let (code, out) = demo.run(&[
        "fix",
        "add",
        "--from",
        dir.to_str().unwrap(),
        "--title",
        "Keep both device choices",
    ]);
    assert_eq!(code, 0, "{out}");
    same("with the resolution recorded as a fix");
    let (code, out) = demo.run(&["sync", "--check"]);
    assert_eq!(code, 0, "{out}");
}

/// A conflict region of the base tree resolved by a local fix stays resolved when the fork moves
/// without touching that file. The base tree's markers are labelled with the commits
/// (`>>>>>>> fork 4f39b0dc`); before this test, a fork sync changed the label, the label line
/// collided with the fix's resolution, and every such fix came back as a conflict (found on the
/// real overlay, whose fixes 1 to 3 resolve pin-vs-fork conflicts).
#[test]
fn a_resolved_base_conflict_stays_resolved_when_the_fork_moves() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let pin2 = demo.demo.world.pin2.clone();
        let (code, out) = demo.run(&["retarget", &pin2]);
        assert_eq!(code, 1, "{layout:?}: {out}");
        // Resolve mlx/device.cpp by taking the pin's side of each region, as a local fix.
        let hand = demo.tmp.path().join("hand");
        let (code, out) = demo.run(&["materialize", "--out", hand.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        let device = std::fs::read_to_string(hand.join("mlx/device.cpp")).unwrap();
        let mut resolved = String::new();
        let mut side = "out";
        for line in device.split_inclusive('\n') {
            if line.starts_with("<<<<<<< ") {
                side = "ours";
            } else if line.starts_with("||||||| ") || line.starts_with("=======") {
                side = "other";
            } else if line.starts_with(">>>>>>> ") {
                side = "out";
            } else if side != "other" {
                resolved.push_str(line);
            }
        }
        assert_ne!(
            resolved, device,
            "{layout:?}: there were markers to resolve"
        );
        std::fs::write(hand.join("mlx/device.cpp"), &resolved).unwrap();
        let (code, out) = demo.run(&[
            "fix",
            "add",
            "--from",
            hand.to_str().unwrap(),
            "--title",
            "Keep the pin's default device",
        ]);
        assert_eq!(code, 0, "{layout:?}: {out}");
        let (code, out) = demo.run(&["sync", "--check"]);
        assert_eq!(
            code, 0,
            "{layout:?}: resolved at the recorded commits: {out}"
        );

        // F2 changes backend files only: the resolution must carry as it is.
        let f2 = demo.fork(2).to_string();
        let (code, out) = demo.run(&["sync", &f2, "--check"]);
        assert!(
            !out.contains("mlx/device.cpp: CONFLICT"),
            "{layout:?}: the label change is no conflict: {out}"
        );
        assert!(
            out.contains("mlx/device.cpp: pin vs fork (1 region), resolved by fix 5"),
            "{layout:?}: {out}"
        );
        // What is left is F2's own collision with fix 4 (see the test above).
        assert_eq!(code, 1, "{layout:?}: {out}");
        assert!(
            !out.contains("mlx/device.cpp:") || !out.contains("left with markers: mlx/device.cpp"),
            "{layout:?}: {out}"
        );
    }
}

/// A fix the new fork already holds is left as an empty patch by the move: the overlay stays
/// readable (every command runs) and the check says to mark the entry merged and remove the
/// patch. Before this test every command failed on the empty patch ("no patch found").
#[test]
fn a_droppable_fix_left_empty_by_a_sync_keeps_the_overlay_readable() {
    let demo = Demo::new(Layout::Patch);
    let f3 = demo.fork(3).to_string();
    let (code, out) = demo.run(&["sync", &f3]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("droppable"), "{out}");
    for args in [
        vec!["status"],
        vec!["sync", "--check"],
        vec!["residual"],
        vec!["check"],
    ] {
        let (code, out) = demo.run(&args);
        assert_ne!(code, 2, "`{}` reads the overlay: {out}", args.join(" "));
        assert!(!out.contains("no patch found"), "{out}");
    }
    let (_, out) = demo.run(&["check"]);
    assert!(
        out.contains("0002-free-pooled-buffers-when-the-allocator-is.patch"),
        "the empty patch is named: {out}"
    );
}
