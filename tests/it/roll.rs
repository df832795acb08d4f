//! `forkbook roll` on the demo world's upstream branch `next`: from pin1 a clean stretch (N1,
//! N2), a conflict of the fork's `mlx/device.cpp` hook (N3) and its revert (N4), a break with a
//! mechanical draft (N5, a new primitive) and one without (N6, a new declaration hiding a
//! function the backend calls unqualified).

use crate::common::Demo;
use forkbook::engine::config::Layout;

fn short(sha: &str) -> &str {
    &sha[..8]
}

#[test]
fn the_forecast_names_each_event_at_its_commit_and_the_two_candidates() {
    let demo = Demo::new(Layout::Patch);
    let next = demo.demo.world.next.clone();
    let (code, out) = demo.run(&["roll", "--check", "--to", "next"]);
    assert_eq!(code, 0, "a forecast is information, not a failure: {out}");
    // Each event under its commit, in history order, with its pull request.
    let at = |sha: &str| {
        out.find(&format!("  {} ", short(sha)))
            .unwrap_or_else(|| panic!("{sha} named: {out}"))
    };
    let (n3, n4, n5, n6) = (at(&next[2]), at(&next[3]), at(&next[4]), at(&next[5]));
    assert!(n3 < n4 && n4 < n5 && n5 < n6, "{out}");
    let block = |from: usize, to: usize| &out[from..to];
    assert!(
        block(n3, n4).contains("mlx/device.cpp starts conflicting"),
        "{out}"
    );
    assert!(block(n3, n4).contains("[PR #103]"), "{out}");
    assert!(
        block(n4, n5).contains("mlx/device.cpp merges cleanly again"),
        "{out}"
    );
    assert!(
        block(n5, n6)
            .contains("drift: missing-eval-gpu `mlx::core::GatherQMM::eval_gpu` [draft: stub"),
        "{out}"
    );
    let tail = &out[n6..];
    assert!(
        tail.contains("drift: hidden-by-new-declaration `mlx::core::ceil_div` [no draft"),
        "{out}"
    );
    // Nothing happens at the clean stretch.
    for quiet in &next[..2] {
        assert!(!out.contains(&format!("  {} ", short(quiet))), "{out}");
    }
    assert!(
        out.contains(&format!("clean candidate: {} ", short(&next[3]))),
        "the revert is the newest commit with no conflict and no drift: {out}"
    );
    assert!(
        out.contains(&format!("with drafts: {} ", short(&next[4]))),
        "GatherQMM has a draft, ceil_div none: {out}"
    );

    // The same in JSON, for the scheduled job.
    let (code, json) = demo.run(&["--json", "roll", "--check", "--to", "next"]);
    assert_eq!(code, 0, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["clean"]["commit"]["sha"], next[3].as_str(), "{json}");
    assert_eq!(v["clean"]["moves"], true, "{json}");
    assert_eq!(v["drafted"]["commit"]["sha"], next[4].as_str(), "{json}");
    assert_eq!(v["commits"], 6, "{json}");
    let events = v["events"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap(),
                e["commit"]["sha"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("conflict-starts", next[2].as_str()),
            ("conflict-stops", next[3].as_str()),
            ("drift-appears", next[4].as_str()),
            ("drift-appears", next[5].as_str()),
        ],
        "{json}"
    );
    assert_eq!(events[2]["draft"]["remedy"], "stub", "{json}");
    assert!(
        events[3]["draft"].is_null() && events[3]["no_draft"].is_string(),
        "{json}"
    );
    assert_eq!(events[0]["commit"]["pr"], 103, "{json}");
    // Read-only: the records did not move.
    assert!(
        demo.read("UPSTREAM").contains(&demo.demo.world.pin1),
        "nothing written"
    );
}

#[test]
fn roll_moves_to_the_clean_candidate_and_the_gate_passes() {
    let demo = Demo::new(Layout::Patch);
    let next = demo.demo.world.next.clone();
    // The upstream branch the project follows is `next` here, so `roll` needs no `--to`.
    let config = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("branch = \"main\"", "branch = \"next\""),
    )
    .unwrap();
    let body = demo.tmp.path().join("body.md");
    let (code, out) = demo.run(&["roll", "--body", body.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("to {} ", short(&next[3]))), "{out}");
    assert!(
        demo.read("UPSTREAM").contains(&next[3]),
        "the pin is the clean candidate"
    );
    let pr = std::fs::read_to_string(&body).unwrap();
    assert!(
        pr.starts_with("## ROCm overlay"),
        "the report's section: {pr}"
    );
    assert!(
        out.contains(&body.display().to_string()),
        "the body's file is named: {out}"
    );
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 0, "the gate passes after the roll: {out}");
    let (code, out) = demo.run(&["sync", "--check"]);
    assert_eq!(code, 0, "{out}");
    // The next forecast starts at the new pin: the clean candidate is where it is now.
    let (_, out) = demo.run(&["roll", "--check"]);
    assert!(
        out.contains("clean candidate: the recorded pin (no move)"),
        "{out}"
    );
    let (code, out) = demo.run(&["roll"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("nothing to roll"), "{out}");
}

#[test]
fn roll_with_drafts_past_both_breaks_leaves_only_the_undraftable_one() {
    let demo = Demo::new(Layout::Patch);
    let next = demo.demo.world.next.clone();
    let body = demo.tmp.path().join("body.md");
    let (code, out) = demo.run(&[
        "roll",
        "--draft",
        "--to",
        &next[5],
        "--body",
        body.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "a draft to review and a break left: {out}");
    assert!(demo.read("UPSTREAM").contains(&next[5]), "{out}");
    assert!(out.contains("drafted fixes 5:"), "{out}");
    assert!(
        out.contains("left for a person: hidden-by-new-declaration mlx::core::ceil_div"),
        "{out}"
    );
    assert!(
        !out.contains("left for a person: missing-eval-gpu"),
        "{out}"
    );
    let (code, out) = demo.run(&["drift", "api"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("mlx::core::ceil_div"), "{out}");
    assert!(!out.contains("GatherQMM"), "the draft answers it: {out}");
    let register = demo.read("LOCAL_FIXES.md");
    assert!(
        register.contains("- draft: stub drafted by forkbook"),
        "{register}"
    );
}

#[test]
fn roll_refuses_an_overlay_with_markers_left_in() {
    let demo = Demo::new(Layout::Files);
    let path = demo.records().join("tree/mlx/fast.cpp");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("<<<<<<< ours\n=======\n>>>>>>> theirs\n{text}"),
    )
    .unwrap();
    let (code, out) = demo.run(&["roll", "--to", "next"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("conflict markers"), "{out}");
    assert!(
        demo.read("UPSTREAM").contains(&demo.demo.world.pin1),
        "nothing written"
    );
}
