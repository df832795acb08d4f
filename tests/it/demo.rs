//! `forkbook demo`, the README's first command: it runs end to end with no network and leaves a
//! built book behind.

use std::process::Command;

#[test]
fn demo_runs_every_step_and_builds_the_book() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let out = crate::common::forkbook_command()
        .arg("demo")
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("reproduced byte for byte"), "{text}");
    assert!(
        text.contains(
            "fix 4 (0004-synchronize-the-stream-before-finalize-returns.patch): CONFLICT"
        ),
        "{text}"
    );
    assert!(
        text.contains("mlx/device.cpp: CONFLICT (1 region, pin vs fork)"),
        "{text}"
    );
    assert!(text.contains("7 breaks, "), "{text}");
    assert!(text.contains("built the book into"), "{text}");
    // The book's red boxes are said to be the expected ones (issue 25: 5 red failures beside
    // "exit 0" with no word), and the verify heading says what happens, not "hipcc steps skip".
    assert!(
        text.contains("failed steps are expected: the demo world is made to conflict and to drift"),
        "{text}"
    );
    assert!(!text.contains("hipcc steps skip here"), "{text}");
    let page = std::fs::read_to_string(dir.join("project/book/book/pin-bump.html")).unwrap();
    assert!(
        page.contains("forkbook retarget"),
        "the pin-bump chapter ran its steps"
    );
    // The pages themselves say which red boxes are the planted ones, and every red box is one of
    // them (a red box the note does not name would be a demo that went wrong for real).
    let mut red = 0;
    for chapter in [
        "pin-bump",
        "fork-sync",
        "forecast",
        "report",
        "register",
        "checks",
    ] {
        let html =
            std::fs::read_to_string(dir.join(format!("project/book/book/{chapter}.html"))).unwrap();
        for (before, _) in html.match_indices(r#"<div class="forkbook-step forkbook-failed">"#) {
            red += 1;
            let command = html[..before]
                .rsplit("$ forkbook ")
                .next()
                .and_then(|rest| rest.split('\n').next())
                .unwrap();
            let named = ["retarget ", "drift api ", "drift build", "sync "];
            assert!(
                named.iter().any(|n| command.starts_with(n)),
                "{chapter}: a red box the page's note does not name: `forkbook {command}`"
            );
            assert!(
                html.contains("demo world, which is made to go wrong."),
                "{chapter} has a red box and no word that it is planted"
            );
        }
    }
    assert!(
        red >= 3,
        "the previews that conflict and drift show red: {red}"
    );
    let again = crate::common::forkbook_command()
        .arg("demo")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(
        again.status.code(),
        Some(2),
        "a second demo into the same folder is refused"
    );
}

/// The README's first block ("Try it"), as a new user runs it, in a fresh folder, then every
/// `next:` line the demo prints, in order, in one shell: each must do its job (exit 0, or 1 for
/// "found problems"), never fail to run (2) or be missing (127).
#[test]
fn the_readme_commands_then_every_next_line_work_as_printed() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let block = readme
        .split("## Try it")
        .nth(1)
        .and_then(|rest| rest.split("```sh\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("the README has a `Try it` shell block");
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        crate::common::tool_path().to_string_lossy()
    );
    // The remotes of another project, which the user's shell exports for it: the demo and
    // its next: lines keep to the demo's own world all the same. Fails before: the demo's
    // `drift api --to` pin 2 was refused as not upstream's, the upstream being this one.
    let (another_fork, another_upstream) = (tmp.path().join("fork.git"), tmp.path().join("up.git"));
    for repo in [&another_fork, &another_upstream] {
        git2::Repository::init_bare(repo).unwrap();
    }
    let shell = |script: &str, dir: &std::path::Path| {
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .env("PATH", &path)
            .env("HOME", &home)
            .env("TMPDIR", tmp.path())
            .env_remove("XDG_CACHE_HOME")
            .env_remove("FORKBOOK_CACHE")
            .env("FORKBOOK_FORK_URL", &another_fork)
            .env("FORKBOOK_UPSTREAM_URL", &another_upstream)
            .output()
            .unwrap()
    };
    let mut demo_output = None;
    let mut ran = Vec::new();
    for line in block.lines() {
        let line = line.split(" #").next().unwrap().trim();
        for command in line.split("&&").map(str::trim).filter(|c| !c.is_empty()) {
            match command {
                // What `cargo install --path .` leaves: this very build of forkbook on PATH.
                "cargo install --path . --locked" => {
                    std::os::unix::fs::symlink(
                        env!("CARGO_BIN_EXE_forkbook"),
                        bin.join("forkbook"),
                    )
                    .unwrap();
                }
                // The test suite is what runs this test.
                "cargo test --workspace" => {}
                other => {
                    let out = shell(other, tmp.path());
                    let text = String::from_utf8_lossy(&out.stdout).into_owned();
                    assert!(
                        out.status.success(),
                        "`{other}` failed: {text}{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    if other.starts_with("forkbook demo") {
                        demo_output = Some(text);
                    }
                }
            }
            ran.push(command.to_string());
        }
    }
    assert_eq!(
        ran[..2],
        ["cargo install --path . --locked", "forkbook demo"],
        "{ran:?}"
    );
    let demo_output = demo_output.expect("the README runs the demo");
    let next: Vec<&str> = demo_output
        .lines()
        .filter_map(|l| l.strip_prefix("next: "))
        .collect();
    assert!(next.len() >= 3, "{demo_output}");
    assert!(
        next.iter()
            .filter(|c| c.contains("forkbook "))
            .all(|c| c.starts_with("forkbook ")),
        "forkbook is on PATH, so the demo calls it by name: {next:?}"
    );
    // One shell, in order, as a user pastes them; each command's exit status is printed.
    let script: String = next
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c}\necho \"forkbook-next {i} exit $?\"\n"))
        .collect();
    let out = shell(&script, tmp.path());
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    for (i, command) in next.iter().enumerate() {
        let status = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("forkbook-next {i} exit ")))
            .unwrap_or_else(|| panic!("`{command}` did not finish: {text}{err}"));
        assert!(
            status == "0" || status == "1",
            "`{command}` exited {status}: {text}{err}"
        );
    }
    assert!(
        text.contains("CONFLICT"),
        "the pin bump for real reports its conflicts: {text}"
    );
    // The path goes on past `materialize`: the edit, `fix add`, then `check` (exit 1 on the new
    // entry's placeholder state, which names every state with the lines it needs), the state
    // filled in, and `check` passing (issue 39).
    let status_of = |i: usize| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("forkbook-next {i} exit ")))
            .unwrap()
            .to_string()
    };
    let at = |what: &str| {
        next.iter()
            .position(|c| c.contains(what))
            .unwrap_or_else(|| panic!("no next: line {what}: {next:?}"))
    };
    let (fix_add, last) = (at("fix add --from materialized"), next.len() - 1);
    assert!(at("materialize --out") < fix_add, "{next:?}");
    assert_eq!(status_of(fix_add), "0", "{text}{err}");
    assert!(next[fix_add + 1].starts_with("forkbook check"), "{next:?}");
    assert_eq!(status_of(fix_add + 1), "1", "{text}");
    assert!(
        text.contains("entry 5 has unknown state `TODO, one of retarget-only (with - cause:), to-propose, proposed (with - link: and - package:), merged (with - link: and - fork-commit:), kept-local (with - reason: and - issue:)`"),
        "{text}"
    );
    assert!(next[last].starts_with("forkbook check"), "{next:?}");
    assert_eq!(
        status_of(last),
        "0",
        "the path ends with every check passing: {text}"
    );
    // Every pasted command used the demo's own cache: nothing went into ~/.cache.
    assert!(next[1].starts_with("export FORKBOOK_CACHE="), "{next:?}");
    assert!(
        !home.join(".cache").exists(),
        "the next: lines wrote into ~/.cache"
    );
    // The drift build runs before the retarget writes markers into the overlay, so it builds
    // the drift alone, not the fallout of the markers the retarget wrote (issue 25).
    let build = next
        .iter()
        .position(|c| c.contains("drift build"))
        .expect("a next: line builds");
    let retarget = next
        .iter()
        .position(|c| c.contains("retarget"))
        .expect("a next: line retargets");
    assert!(build < retarget, "{next:?}");
    // Counts agree with their nouns: status said "CONFLICT markers left in 1 files".
    assert!(text.contains("CONFLICT markers left in 1 file:"), "{text}");
    assert!(!text.contains(" 1 files"), "{text}");
    // Status names the overlay's path; the line after it says where that file is on disk.
    assert!(
        next.iter()
            .any(|c| c.contains("materialize --out materialized")
                && c.contains("materialized/mlx/device.cpp")),
        "{next:?}"
    );
}

/// What a newcomer reads (issue 25): the docs name no file the repository lacks (they sent
/// readers to a DESIGN.md), say what adding a check needs besides its file (a case in the
/// catalogue's `broken()` fixture, the snapshots rewritten with `FORKBOOK_BLESS=1`) and how to
/// run one part of the tests, and the README says how long the first build takes and installs
/// with `--locked`. Fails before: architecture.md named DESIGN.md and none of the rest.
#[test]
fn the_contributor_docs_say_what_a_newcomer_needs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("DESIGN.md"),
            "{} names DESIGN.md",
            path.display()
        );
    }
    // Compared with its line breaks as spaces: a rewrap is not a change of what it says.
    let architecture = read("docs/architecture.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for needed in [
        "`broken()` in `checks/tests/common/mod.rs`",
        "FORKBOOK_BLESS=1 cargo test -p forkbook-checks",
        "`cargo test -p forkbook-checks`: the check catalogue alone",
        "`cargo test --test it MODULE::`",
    ] {
        assert!(
            architecture.contains(needed),
            "architecture.md lacks {needed:?}"
        );
    }
    assert!(root.join("checks/tests/common/mod.rs").is_file());
    let readme = read("README.md");
    // The README says what the first build costs, with a figure measured on 2 cores.
    let readme_words = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme_words.contains("The first build compiles libgit2, tree-sitter and mdBook")
            && readme_words.contains("on 2 cores"),
        "README"
    );
    assert!(
        readme.matches("cargo install --path .").count()
            == readme.matches("cargo install --path . --locked").count(),
        "every install line is --locked"
    );
}
