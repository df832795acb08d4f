//! The pin (issues 39 and 40): a recorded pin no mirror has is not the end of the road (the
//! commits the mirrors do have are named, and a stand-in runs every tree check, marking what
//! depends on the pin, writing nothing), and a pin must be upstream's (a fork's commit the cache
//! also holds is refused by `retarget`, `roll --to` and `check`; one only a pull request ref
//! holds is accepted). The world is the demo's, with real git history.

use crate::common::Demo;
use crate::real_folder::{commit_adding, git};
use forkbook::engine::config::Layout;
use std::collections::BTreeMap;
use std::path::Path;

/// A pin no mirror has.
const MISSING: &str = "0123456789abcdef0123456789abcdef01234567";

/// Upstream as `forkbook.toml` names it: the register's links are to it.
const UPSTREAM_WEB: &str = "https://github.com/ml-explore/mlx";

/// The demo (files layout) with upstream named by its web address, a commit only
/// `refs/pull/7/head` of the upstream holds (pin 1 with a change to `mlx/device.cpp`), and
/// entry 1 citing that pull request.
struct World {
    demo: Demo,
    /// The head of upstream's pull request 7, on no branch.
    pull_head: String,
    /// The tip of upstream's `main`.
    main_tip: String,
    /// The fork mirror's path, for `--upstream-url`.
    upstream: String,
}

impl World {
    fn new() -> World {
        let demo = Demo::new(Layout::Files);
        let world = &demo.demo.world;
        let device = git(
            &world.upstream,
            &[],
            &["show", &format!("{}:mlx/device.cpp", world.pin1)],
        );
        let changed = format!("// upstream's pull request 7 reads the device first\n{device}\n");
        let pull_head = commit_adding(
            &world.upstream,
            &world.pin1,
            &[("mlx/device.cpp", &changed)],
            "device: read the device first (#7)",
        );
        git(
            &world.upstream,
            &[],
            &["update-ref", "refs/pull/7/head", &pull_head],
        );
        let main_tip = git(&world.upstream, &[], &["rev-parse", "refs/heads/main"]);
        let config = demo.root().join("forkbook.toml");
        let text = std::fs::read_to_string(&config).unwrap().replace(
            &format!("url = \"{}\"", world.upstream.display()),
            &format!("url = \"{UPSTREAM_WEB}\""),
        );
        assert!(text.contains(UPSTREAM_WEB), "{text}");
        std::fs::write(&config, text).unwrap();
        let register = demo.records().join("LOCAL_FIXES.md");
        let text = std::fs::read_to_string(&register).unwrap().replacen(
            "the fork takes it unconditionally.",
            &format!("the fork takes it unconditionally. Upstream's {UPSTREAM_WEB}/pull/7 reads the device first."),
            1,
        );
        std::fs::write(&register, text).unwrap();
        let upstream = world.upstream.to_str().unwrap().to_string();
        World {
            demo,
            pull_head,
            main_tip,
            upstream,
        }
    }

    fn run(&self, args: &[&str]) -> (i32, String) {
        let mut full = vec!["--upstream-url", &self.upstream];
        full.extend_from_slice(args);
        self.demo.run(&full)
    }

    /// The records name a pin no mirror has.
    fn lose_the_pin(&self) {
        let path = self.demo.records().join("UPSTREAM");
        let pin = &self.demo.demo.world.pin1;
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains(&format!("retargeted_to_mlx_pin: {pin}")),
            "{text}"
        );
        let line = format!("retargeted_to_mlx_pin: {pin}");
        let text = text.replace(&line, &format!("retargeted_to_mlx_pin: {MISSING}"));
        std::fs::write(&path, text).unwrap();
    }
}

/// Every file of the records folder, by path.
fn folder(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                files.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn a_missing_pin_names_the_commits_the_mirrors_have_and_the_option_that_uses_one() {
    let world = World::new();
    world.lose_the_pin();
    for command in [
        &["residual"][..],
        &["sync", "--check"],
        &["retarget", &world.main_tip, "--check"],
        &["drift", "api"],
    ] {
        let (code, out) = world.run(command);
        assert_eq!(code, 2, "{command:?}: {out}");
        assert!(
            out.contains("the recorded pin is missing"),
            "{command:?}: {out}"
        );
        assert!(out.contains(MISSING), "{out}");
        // The pull request entry 1 cites, then the branch tip, each with the option.
        let pull = format!(
            "--stand-in-pin {}  upstream's pull request #7",
            world.pull_head
        );
        assert!(out.contains(&pull), "{command:?}: {out}");
        assert!(out.contains("which entry 1 cites"), "{out}");
        let tip = format!(
            "--stand-in-pin {}  the tip of upstream's branch `main`",
            world.main_tip
        );
        assert!(out.contains(&tip), "{command:?}: {out}");
        assert!(
            out.contains(&format!(
                "`forkbook --stand-in-pin {} <command>`",
                &world.pull_head[..8]
            )),
            "{out}"
        );
    }
}

#[test]
fn under_a_stand_in_every_tree_check_runs_marks_what_depends_on_the_pin_and_writes_nothing() {
    let world = World::new();
    world.lose_the_pin();
    // A backend file changed by hand that no entry names: a finding the pin has no part in.
    let copy = world.demo.records().join("tree/mlx/backend/rocm/copy.cpp");
    let mut hand = std::fs::read_to_string(&copy).unwrap();
    hand.push_str("// changed by hand\n");
    std::fs::write(&copy, hand).unwrap();
    let before = folder(&world.demo.records());
    let stand_in = ["--stand-in-pin", world.pull_head.as_str()];
    let run = |args: &[&str]| {
        let mut full = stand_in.to_vec();
        full.extend_from_slice(args);
        world.run(&full)
    };
    let head = format!("stand-in pin `{}` (from `--stand-in-pin`)", world.pull_head);

    // The residual: `mlx/device.cpp` lacks the pull request's line the stand-in has.
    let (code, out) = run(&["residual"]);
    assert_ne!(code, 2, "{out}");
    assert!(out.starts_with(&head), "{out}");
    let fast: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("mlx/device.cpp:"))
        .collect();
    assert!(!fast.is_empty(), "{out}");
    assert!(fast.iter().all(|l| l.ends_with("(stand-in pin)")), "{out}");

    // check: the core file's finding is marked, the backend file's is not.
    let (code, out) = run(&["check", "--verbose"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with(&head), "{out}");
    assert!(!out.contains("skipped"), "every tree check ran: {out}");
    let core: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("mlx/device.cpp"))
        .collect();
    assert!(!core.is_empty(), "{out}");
    assert!(core.iter().all(|l| l.ends_with("(stand-in pin)")), "{out}");
    let backend: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("mlx/backend/rocm/copy.cpp") && l.contains("error["))
        .collect();
    assert!(!backend.is_empty(), "{out}");
    assert!(backend.iter().all(|l| !l.contains("stand-in")), "{out}");
    assert!(
        !out.contains("pin-on-upstream"),
        "the stand-in is upstream's: {out}"
    );

    // sync --check, retarget --check and drift api run on it.
    for command in [
        &["sync", "--check"][..],
        &["retarget", &world.main_tip, "--check"],
        &["drift", "api"],
    ] {
        let (code, out) = run(command);
        assert_ne!(code, 2, "{command:?}: {out}");
        assert!(out.starts_with(&head), "{command:?}: {out}");
    }
    let (_, out) = run(&["sync", "--check"]);
    let core: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("mlx/device.cpp"))
        .collect();
    assert!(core.iter().all(|l| l.ends_with("(stand-in pin)")), "{out}");

    // JSON says it too.
    let (_, out) = run(&["--json", "check"]);
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        value["stand_in_pin"]
            .as_str()
            .unwrap()
            .contains(&world.pull_head),
        "{out}"
    );

    // A write is refused, and nothing was written by any run.
    for command in [
        &["residual", "--write"][..],
        &["sync"],
        &["retarget", &world.main_tip],
    ] {
        let (code, out) = run(command);
        assert_eq!(code, 2, "{command:?}: {out}");
        assert!(
            out.contains("refusing to write the records under the stand-in pin"),
            "{command:?}: {out}"
        );
    }
    assert!(
        folder(&world.demo.records()) == before,
        "the records changed"
    );
}

#[test]
fn a_stand_in_may_come_from_forkbook_toml_and_must_be_upstream_s() {
    let world = World::new();
    world.lose_the_pin();
    let config = world.demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[upstream]\n",
        &format!("[upstream]\nstand_in_pin = \"{}\"\n", world.main_tip),
    );
    std::fs::write(&config, text).unwrap();
    let (code, out) = world.run(&["residual"]);
    assert_ne!(code, 2, "{out}");
    assert!(
        out.starts_with(&format!(
            "stand-in pin `{}` (from `[upstream] stand_in_pin` in forkbook.toml)",
            world.main_tip
        )),
        "{out}"
    );
    // A fork's commit is no stand-in.
    let fork_only = fork_only_commit(&world);
    let (code, out) = world.run(&["--stand-in-pin", &fork_only, "residual"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("is not upstream's"), "{out}");
}

/// A commit on top of the fork's branch (which follows pin 1) that only the fork's mirror holds.
fn fork_only_commit(world: &World) -> String {
    let w = &world.demo.demo.world;
    let commit = commit_adding(
        &w.fork,
        &w.fork_commits[3],
        &[("mlx/fast.cpp", "// the fork's own fast path\n")],
        "fork: its own fast path",
    );
    git(
        &w.fork,
        &[],
        &["update-ref", "refs/heads/rocm-support", &commit],
    );
    commit
}

#[test]
fn a_pin_must_be_upstream_s_a_fork_commit_is_refused_and_a_pull_request_head_accepted() {
    let world = World::new();
    let fork_only = fork_only_commit(&world);
    // The cache reads the fork's objects: the commit is found, and still refused.
    let (code, out) = world.run(&["fetch"]);
    assert_eq!(code, 0, "{out}");
    let before = folder(&world.demo.records());
    for command in [
        &["retarget", fork_only.as_str(), "--check"][..],
        &["retarget", fork_only.as_str()],
        &["roll", "--to", fork_only.as_str()],
        &["roll", "--check", "--to", fork_only.as_str()],
        // Fails on main before this change (issue 40.4 again): each analysed the fork's commit
        // and reported it as upstream's (`drift api from upstream … to F`, `first upstream
        // commit at which each core file conflicts, up to F`), exit 1.
        &["drift", "api", "--to", fork_only.as_str()],
        &["drift", "api", "--from", fork_only.as_str()],
        &["drift", "api", "--to", fork_only.as_str(), "--draft"],
        &["drift", "build", "--to", fork_only.as_str()],
        &[
            "drift",
            "build",
            "--baseline",
            fork_only.as_str(),
            "--to",
            "main",
        ],
        &["retarget", fork_only.as_str(), "--stepwise"],
    ] {
        let (code, out) = world.run(command);
        assert_eq!(code, 2, "{command:?}: {out}");
        assert!(
            out.contains(&format!(
                "`{}` is not upstream's: no branch, tag or pull request head",
                &fork_only[..8]
            )),
            "{command:?}: {out}"
        );
        assert!(out.contains("it is a commit of the fork's branch"), "{out}");
    }
    assert!(
        folder(&world.demo.records()) == before,
        "a refused pin wrote records"
    );
    // A commit only a pull request's head reaches is upstream's.
    let (code, out) = world.run(&["retarget", &world.pull_head, "--check"]);
    assert_ne!(code, 2, "{out}");
    let (code, out) = world.run(&["roll", "--to", &world.pull_head]);
    assert_ne!(code, 2, "{out}");
    let upstream = world.demo.read("UPSTREAM");
    assert!(
        upstream.contains(&format!("retargeted_to_mlx_pin: {}", world.pull_head)),
        "{upstream}"
    );
    let (_, out) = world.run(&["check"]);
    assert!(!out.contains("pin-on-upstream"), "{out}");
}

#[test]
fn check_finds_a_recorded_pin_that_is_the_fork_s() {
    let world = World::new();
    let fork_only = fork_only_commit(&world);
    let path = world.demo.records().join("UPSTREAM");
    let pin = &world.demo.demo.world.pin1;
    let line = format!("retargeted_to_mlx_pin: {pin}");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace(&line, &format!("retargeted_to_mlx_pin: {fork_only}"));
    std::fs::write(&path, text).unwrap();
    let (code, out) = world.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("error[pin-on-upstream]"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.starts_with("patches-rocm/UPSTREAM:"), "{line}");
    assert!(
        line.contains(&format!("the pin `{}` is not upstream's", &fork_only[..8])),
        "{line}"
    );
}

/// The first user's own case: their register's pin is on no mirror. `adopt` names the fetch and
/// also how to read the records meanwhile, on a commit the mirrors have (the first offer of
/// `missing_pin`), so the next step is there and not only in `check`'s error.
#[test]
fn adopt_on_a_missing_pin_offers_a_stand_in_to_read_the_records_meanwhile() {
    let world = World::new();
    world.lose_the_pin();
    let (code, out) = world.run(&["adopt"]);
    assert_ne!(code, 2, "{out}");
    assert!(out.contains("forkbook fetch --upstream"), "{out}");
    let fetch = out.lines().find(|l| l.contains("forkbook fetch")).unwrap();
    assert!(
        !fetch.contains("stand-in"),
        "the fetch line is the fetch alone: {fetch}"
    );
    let line = (out.lines())
        .find(|l| l.contains("meanwhile, to read the records: "))
        .unwrap_or_else(|| panic!("no stand-in line:\n{out}"));
    let stand_in = format!("forkbook --stand-in-pin {} check", &world.pull_head[..8]);
    assert!(line.contains(&stand_in), "{line}");
    assert!(line.contains("upstream's pull request #7"), "{line}");
    // And the command works as printed: `check` reads the records on that stand-in.
    let printed = line.split("records: ").nth(1).unwrap();
    let printed = printed.split('#').next().unwrap();
    let words: Vec<&str> = printed.split_whitespace().skip(1).collect();
    let (code, out) = world.run(&words);
    assert_ne!(code, 2, "{out}");
    assert!(out.contains("stand-in"), "{out}");
}
