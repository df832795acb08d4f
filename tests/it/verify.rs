//! verify, report and drift through the command line on the generated world.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use std::process::Command;

#[test]
fn verify_runs_configured_steps_and_skips_those_it_cannot_run_with_the_reason() {
    let demo = Demo::new(Layout::Patch);
    let config = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .split("[[verify.steps]]")
        .next()
        .unwrap()
        .to_string();
    let steps = "[[verify.steps]]\nname = \"needs a missing tool\"\ncommand = \"true\"\nrequires = [\"forkbook-no-such-tool\"]\n\n\
                 [[verify.steps]]\nname = \"fails\"\ncommand = \"echo boom; exit 3\"\n\n\
                 [[verify.steps]]\nname = \"passes\"\ncommand = \"true\"\n";
    std::fs::write(&config, format!("{text}{steps}")).unwrap();
    let (code, out) = demo.run(&["verify"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("sync --check                 passed"), "{out}");
    assert!(
        out.contains(
            "needs a missing tool         skipped: needs `forkbook-no-such-tool`, which is not on PATH"
        ),
        "{out}"
    );
    assert!(
        out.contains("fails                        FAILED: exit 3") && out.contains("boom"),
        "{out}"
    );
    assert!(out.contains("passes                       passed"), "{out}");
    assert!(out.contains("5 passed, 1 failed, 1 skipped"), "{out}");
}

#[test]
fn verify_fails_after_a_retarget_that_leaves_drift_unfixed() {
    let demo = Demo::new(Layout::Patch);
    let pin2 = demo.demo.world.pin2.clone();
    let (code, out) = demo.run(&["retarget", &pin2]);
    assert_eq!(code, 1, "{out}");
    let (code, out) = demo.run(&["verify"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("drift api (base to pin)      FAILED: 7 breaks"),
        "{out}"
    );
    assert!(
        out.contains("missing-eval-gpu: mlx::core::GatherQMM::eval_gpu"),
        "{out}"
    );
}

#[test]
fn drift_api_lists_each_break_with_its_commit_and_json() {
    let demo = Demo::new(Layout::Patch);
    let pin2 = demo.demo.world.pin2.clone();
    let (code, out) = demo.run(&["--json", "drift", "api", "--to", &pin2]);
    assert_eq!(code, 1, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).expect("json");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 7, "{out}");
    for (kind, symbol, commit) in &demo.demo.world.breaks {
        let short_symbol = symbol.rsplit("::").next().unwrap();
        let found = findings
            .iter()
            .find(|f| f["symbol"].as_str().unwrap().contains(short_symbol));
        let found = found.unwrap_or_else(|| panic!("{kind} {symbol} not reported: {out}"));
        assert_eq!(
            found["introduced_by"]["sha"].as_str().map(|s| &s[..10]),
            Some(&commit[..10]),
            "{kind}"
        );
    }
}

/// Makes the demo project a git checkout and commits all of it: what `report` compares with.
fn commit_the_project(demo: &Demo, message: &str) {
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-qm", message],
    ] {
        let status = Command::new("git")
            .args(args)
            .current_dir(demo.root())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }
}

#[test]
fn report_names_the_pin_move_the_conflict_and_its_state() {
    let demo = Demo::new(Layout::Patch);
    commit_the_project(&demo, "overlay at pin 1");
    let pin2 = demo.demo.world.pin2.clone();
    demo.run(&["retarget", &pin2]);
    let (_, out) = demo.run(&["report", "--pr-body"]);
    assert!(out.starts_with("## ROCm overlay"), "{out}");
    assert!(out.contains(&format!("Pin: fork 4f39b0dc (base 9f83916f) on pin 9f83916f -> fork 4f39b0dc (base 9f83916f) on pin {}", &pin2[..8])), "{out}");
    assert!(
        out.contains("Core files: 3 of 4 merged cleanly. Conflicts:"),
        "{out}"
    );
    assert!(out.contains("- ` mlx/device.cpp `: UNRESOLVED"), "{out}");
    assert!(out.contains("API drift fixed by this change (7)"), "{out}");
    assert!(
        out.contains("Verify: FAILED, 3 failed: checks (1 error), sync --check (1 conflict region left), drift api \\(base to pin\\) (7 breaks), 2 not run: "),
        "{out}"
    );
    let (code, _) = demo.run(&["report", "--pr-body"]);
    assert_eq!(code, 1, "a report that says FAILED exits 1, PR body or not");
}

/// `report` compares with the records git committed: where there is no commit to compare with, it
/// says so rather than that nothing moved.
#[test]
fn report_says_when_it_has_no_committed_records_to_compare_with() {
    let demo = Demo::new(Layout::Files);
    let (_, out) = demo.run(&["report"]);
    assert!(
        out.contains("(no committed records to compare with)"),
        "the demo project is no git checkout: {out}"
    );
    commit_the_project(&demo, "records");
    let (_, out) = demo.run(&["report"]);
    assert!(
        out.contains("(no change to the recorded commits)"),
        "committed as they are: {out}"
    );
}

/// A fix's title is the register's text: the report's Markdown (a pull request's body) quotes
/// it, so a title cannot add HTML or Markdown of its own to the body.
#[test]
fn report_quotes_the_title_of_the_fix_that_resolves_a_conflict() {
    let demo = Demo::new(Layout::Patch);
    let pin2 = demo.demo.world.pin2.clone();
    demo.run(&["retarget", &pin2]);
    let title = "Keep both <img src=x onerror=alert(1)> [sides](javascript:alert(2))";
    crate::gate::resolve_as_a_fix_titled(&demo, "mlx/device.cpp", title);
    let (_, out) = demo.run(&["report", "--pr-body"]);
    assert!(
        out.contains("- ` mlx/device.cpp `: resolved by fix 5 (Keep both &lt;img"),
        "{out}"
    );
    assert!(!out.contains("<img"), "{out}");
    assert!(!out.contains("[sides](javascript"), "{out}");
}

/// Issue 11: "passed" only when every step ran and passed; skipped steps are named as not run
/// with their reasons, in `verify` and in the report.
#[test]
fn verify_and_report_say_passed_only_when_every_step_ran() {
    let demo = Demo::new(Layout::Patch);
    let (code, out) = demo.run(&["verify"]);
    assert_eq!(code, 0, "skips are not failures: {out}");
    let not_run = "passed, 2 not run: ROCm build (needs `hipcc`, which is not on PATH), generation smoke (needs `hipcc`, which is not on PATH)";
    assert!(out.contains(&format!("verify: {not_run}\n")), "{out}");
    let (code, out) = demo.run(&["report", "--pr-body"]);
    assert_eq!(code, 0, "{out}");
    // On the page, `hipcc` is a code span.
    let not_run_page = not_run.replace("`hipcc`", "` hipcc `");
    assert!(out.contains(&format!("Verify: {not_run_page}.")), "{out}");
    assert!(!out.contains("Verify: passed."), "{out}");
    // With every step able to run, it is a plain pass.
    let config = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let head = text.split("[[verify.steps]]").next().unwrap().to_string();
    std::fs::write(
        &config,
        format!("{head}[[verify.steps]]\nname = \"runs\"\ncommand = \"true\"\n"),
    )
    .unwrap();
    let (code, out) = demo.run(&["verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("verify: passed\n"), "{out}");
}

/// Issue 11: a misspelt key of `[[verify.steps]]` fails every command at load, with its line.
#[test]
fn a_misspelt_verify_step_key_fails_status_and_check_with_its_line() {
    let demo = Demo::new(Layout::Patch);
    let config = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let typo = text.replacen(
        "requires = [\"hipcc\", \"cmake\"",
        "requries = [\"hipcc\", \"cmake\"",
        1,
    );
    assert_ne!(typo, text, "the demo's first step has `requires`");
    std::fs::write(&config, &typo).unwrap();
    let line = typo
        .lines()
        .position(|l| l.starts_with("requries"))
        .unwrap()
        + 1;
    for command in ["status", "check", "verify"] {
        let (code, out) = demo.run(&[command]);
        assert_eq!(code, 2, "{command}: {out}");
        assert!(
            out.contains(&format!("line {line}: unknown field `requries`")),
            "{command}: {out}"
        );
        assert!(out.contains("forkbook.toml"), "{command}: {out}");
    }
}

#[test]
fn the_book_builds_offline_without_objects_and_its_test_gate_asks_for_them() {
    let demo = Demo::new(Layout::Patch);
    forkbook::book::write_sources(&demo.root().join("book")).unwrap();
    let empty = demo.tmp.path().join("empty-cache.git");
    let run = |what: &str| {
        let args: Vec<std::ffi::OsString> = vec![
            "forkbook".into(),
            "--root".into(),
            demo.root().into(),
            "--tool-path".into(),
            crate::common::tool_path().into(),
            "--cache".into(),
            empty.clone().into(),
            "--offline".into(),
            "book".into(),
            what.into(),
            "--var".into(),
            format!("candidate_pin={}", demo.demo.world.pin2).into(),
        ];
        let mut out = Vec::new();
        let code = forkbook::cli::run(args, &mut out);
        (code, String::from_utf8_lossy(&out).into_owned())
    };
    let (code, out) = run("build");
    assert_eq!(
        code, 0,
        "no false findings while the objects are missing: {out}"
    );
    assert!(
        out.contains(" ran (") && out.contains(" skipped, "),
        "the build ends with what ran and what was skipped: {out}"
    );
    assert!(out.contains("0 failed"), "{out}");
    let page = std::fs::read_to_string(demo.root().join("book/book/pin-bump.html")).unwrap();
    assert!(
        page.contains("is not in the object cache"),
        "the steps say why they were skipped"
    );
    assert!(
        page.contains("run <code>forkbook fetch</code>"),
        "and name the command that fetches"
    );
    let (code, out) = run("test");
    assert_eq!(code, 1, "the acceptance gate needs the objects: {out}");
    assert!(out.contains("forkbook fetch"), "{out}");
}

#[test]
fn in_the_files_layout_verify_leaves_residual_ownership_to_the_check_and_says_so() {
    let demo = Demo::new(Layout::Files);
    let (code, out) = demo.run(&["verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("residual                     skipped: files layout"),
        "{out}"
    );
    assert!(
        !out.contains("residual                     passed"),
        "{out}"
    );
}

/// Issue 20 item 9, issue 25 item 1: what counts as installed is the tool path the run was given,
/// not the machine. With a `hipcc` on it (a stub), the demo's "ROCm build" step runs — through
/// this build's `forkbook`, on the demo's own cache, with the same tools — where without one it
/// is skipped. Fails before: the step read the machine's PATH and ran the installed forkbook
/// against `~/.cache/forkbook`.
#[test]
fn verify_runs_the_rocm_step_exactly_when_the_tool_path_has_hipcc() {
    let demo = Demo::new(Layout::Patch);
    let stubs = demo.tmp.path().join("stubs");
    let called = demo.tmp.path().join("hipcc-called");
    crate::common::write_stub(
        &stubs,
        "hipcc",
        &format!("echo \"$@\" >> '{}'\nexit 1", called.display()),
    );
    let (code, out) = demo.run_with_tools(&crate::common::with_stubs(&stubs), &["verify"]);
    assert_eq!(code, 1, "the stub compiler fails the build: {out}");
    assert!(
        out.contains("ROCm build                   FAILED: exit 1"),
        "{out}"
    );
    assert!(
        called.is_file(),
        "the step's forkbook found the stub on the tool path: {out}"
    );
    assert!(
        demo.demo
            .cache
            .with_file_name("forkbook-drift-build")
            .is_dir(),
        "the step's forkbook built beside the demo's cache: {out}"
    );
    assert!(
        out.contains("generation smoke             skipped: needs an AMD GPU"),
        "{out}"
    );

    let (code, out) = demo.run(&["verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ROCm build                   skipped: needs `hipcc`"),
        "{out}"
    );
}

/// A verify step's name is the configuration's text, which a pull request can change: the
/// report's Markdown (the pull request's body) quotes it in the verdict and in the list.
#[test]
fn report_quotes_the_name_of_a_verify_step() {
    let demo = Demo::new(Layout::Patch);
    let config = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let head = text.split("[[verify.steps]]").next().unwrap().to_string();
    let name = "<img src=x onerror=alert(1)> [step](javascript:alert(2))";
    std::fs::write(
        &config,
        format!("{head}[[verify.steps]]\nname = \"{name}\"\ncommand = \"false\"\n"),
    )
    .unwrap();
    let (code, out) = demo.run(&["report", "--pr-body"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Verify: FAILED, 1 failed: &lt;img"), "{out}");
    assert!(
        out.contains(
            "- ` <img src=x onerror=alert(1)> [step](javascript:alert(2)) `: FAILED (exit 1)"
        ),
        "{out}"
    );
    let outside_code: String = out.split('`').step_by(2).collect();
    assert!(!outside_code.contains("<img"), "{out}");
    assert!(!outside_code.contains("](javascript"), "{out}");
}
