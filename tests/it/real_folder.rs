//! The first user's real folder, in shape (issue 21): whole files beside `UPSTREAM`, a register
//! of numbered list items whose states come from their words and a policy sentence, issues cited
//! in prose, entries without a state, a "Dropped from the vendored set" section, prose naming
//! files that are no overlay files, one file written two ways, a `CORE_RESIDUAL.diff` with item
//! notes and bare conflict labels, and a pin that only a pull request ref holds. Every text here
//! is our own; the world is the demo's, reshaped.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use std::path::Path;
use std::process::Command;

/// Runs `git --git-dir DIR ARGS` (with `env`), returning its trimmed output.
pub(crate) fn git(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(dir)
        .args(args)
        .envs(env.iter().copied())
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A commit on top of `parent` in `repo` adding `files`, on no branch.
pub(crate) fn commit_adding(
    repo: &Path,
    parent: &str,
    files: &[(&str, &str)],
    message: &str,
) -> String {
    let index = repo.join("forkbook-test-index");
    let index = index.to_str().unwrap();
    let env = [("GIT_INDEX_FILE", index)];
    git(repo, &env, &["read-tree", parent]);
    for (path, text) in files {
        let blob_file = repo.join("forkbook-test-blob");
        std::fs::write(&blob_file, text).unwrap();
        let blob = git(
            repo,
            &[],
            &["hash-object", "-w", blob_file.to_str().unwrap()],
        );
        git(
            repo,
            &env,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("100644,{blob},{path}"),
            ],
        );
    }
    let tree = git(repo, &env, &["write-tree"]);
    git(
        repo,
        &[],
        &["commit-tree", &tree, "-p", parent, "-m", message],
    )
}

const REGISTER: &str = "\
# What this overlay changes

Each change below sits on top of the fork commit that `UPSTREAM` records, with its reason. Changes that apply to the fork are not proposed from here: the maintainers send them in batches.

## Moving onto the pin

1. **Device choice kept.** `mlx/device.cpp` keeps the pin's default-device rule beside the fork's hook. Applies to the fork; followed in acme/engine#41.

## Fixes to the fork's backend

2. **Pooled buffers freed.** `mlx/backend/rocm/allocator.cpp` frees its pool at exit, as `mlx/backend/cuda/allocator.cu` does upstream; `scripts/leak_check.py` found it. Applies to the fork (see https://github.com/acme/engine/issues/52).
3. **Workaround header.** `local_workaround.hpp` holds a compiler workaround for one architecture.
4. **Stream synchronized.** `mlx/backend/rocm/eval.cpp` waits for queued work before `finalize` returns, unlike `mlx/fast.cpp` and `mlx/CMakeLists.txt`, which only the pin changed. Applies to the fork; acme/engine#60 has the trace.
6. **Event waits.** `event.cpp` was read for the wait above, and `mlx/backend/rocm/event.cpp` is left as the fork has it. Applies to the fork.

## Dropped from the vendored set

- The fork's Python bindings, tests and docs are not needed by this project.
- `mlx/backend/cuda/eval.cpp`: our build never compiles the CUDA backend.
";

const README: &str = "\
# The ROCm overlay

Whole files laid over the upstream checkout by the build.

- `mlx/backend/rocm/**`: the ROCm backend (13 files).
- 4 upstream core files: the pin's file plus the fork's hooks.

Removing one of the 4 core overlays needs a clean build of the checkout.
";

const RESIDUAL_HEADER: &str = "\
# CORE_RESIDUAL.diff: what our core files carry beyond the pin plus the fork's change.
#
# Kept by hand; every file below needs a note naming its register item.
#
";

const DEVICE_NOTE: &str =
    "# note mlx/device.cpp: LOCAL_FIXES.md item 1: keeps the pin's default-device rule and the fork's hook.";

/// The world in the user's shape. The fork commit adds hooks outside the overlay (Python
/// bindings, tests, docs, a CI workflow); the pin is a commit on top of the demo's candidate pin
/// that only `refs/pull/7/head` of the upstream holds.
struct Folder {
    demo: Demo,
    pin: String,
}

fn real_shaped() -> Folder {
    let demo = Demo::new(Layout::Files);
    let records = demo.records();
    let tree = records.join("tree");
    for entry in std::fs::read_dir(&tree).unwrap() {
        let entry = entry.unwrap();
        std::fs::rename(entry.path(), records.join(entry.file_name())).unwrap();
    }
    std::fs::remove_dir(&tree).unwrap();
    let world = &demo.demo.world;
    let fork = commit_adding(
        &world.fork,
        &world.fork_commits[0],
        &[
            ("python/src/rocm.cpp", "// bindings\n"),
            ("python/tests/test_rocm.py", "# a test\n"),
            ("tests/rocm_tests.cpp", "// a test\n"),
            ("docs/rocm.md", "# ROCm\n"),
            (".github/workflows/rocm.yml", "name: rocm\n"),
        ],
        "rocm: bindings, tests, docs and CI",
    );
    git(&world.fork, &[], &["update-ref", "refs/heads/hooks", &fork]);
    let pin = git(
        &world.upstream,
        &[],
        &[
            "commit-tree",
            &format!("{}^{{tree}}", world.pin2),
            "-p",
            &world.pin2,
            "-m",
            "a pull request head",
        ],
    );
    // The pull request's head is a later commit: the pin is reachable only through it.
    let head = git(
        &world.upstream,
        &[],
        &[
            "commit-tree",
            &format!("{pin}^{{tree}}"),
            "-p",
            &pin,
            "-m",
            "a review fix",
        ],
    );
    git(
        &world.upstream,
        &[],
        &["update-ref", "refs/pull/7/head", &head],
    );
    let upstream_record = records.join("UPSTREAM");
    let text = std::fs::read_to_string(&upstream_record).unwrap();
    let text: String = text
        .lines()
        .map(|l| match l.split_once(": ") {
            Some(("commit", _)) => format!("commit: {fork}\n"),
            Some(("retargeted_to_mlx_pin", _)) => format!("retargeted_to_mlx_pin: {pin}\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    std::fs::write(&upstream_record, text).unwrap();
    std::fs::write(records.join("LOCAL_FIXES.md"), REGISTER).unwrap();
    std::fs::write(records.join("README.md"), README).unwrap();
    // A backend file changed by hand that no entry names: a true finding that must stay.
    let copy = records.join("mlx/backend/rocm/copy.cpp");
    let mut hand = std::fs::read_to_string(&copy).unwrap();
    hand.push_str("// changed by hand\n");
    std::fs::write(&copy, hand).unwrap();
    // Local lines spread over a core file no note covers: several hunks of one file.
    let fast = records.join("mlx/fast.cpp");
    let lines: Vec<String> = std::fs::read_to_string(&fast)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, l)| match i {
            12 | 20 | 30 => format!("{l}\n// a local aside\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    std::fs::write(&fast, lines.concat()).unwrap();
    std::fs::remove_file(records.join("overlay.lock")).unwrap();
    std::fs::remove_file(demo.root().join("forkbook.toml")).unwrap();
    Folder { demo, pin }
}

/// A pin no mirror has, recorded in place of the folder's own.
const MISSING_PIN: &str = "0123456789abcdef0123456789abcdef01234567";

/// The real-shaped folder, its UPSTREAM recording a pin no mirror has ([`MISSING_PIN`]).
fn real_shaped_on_a_missing_pin() -> Folder {
    let folder = real_shaped();
    let upstream = folder.demo.records().join("UPSTREAM");
    let text = std::fs::read_to_string(&upstream).unwrap();
    std::fs::write(&upstream, text.replace(&folder.pin, MISSING_PIN)).unwrap();
    folder
}

fn adopt(folder: &Folder, upstream: &str, args: &[&str]) -> (i32, String) {
    let mut full = vec![
        "--upstream-url",
        upstream,
        "adopt",
        "--dir",
        "patches-rocm",
        "--tree",
        ".",
    ];
    full.extend_from_slice(args);
    folder.demo.run(&full)
}

fn mirror(folder: &Folder) -> String {
    folder
        .demo
        .demo
        .world
        .upstream
        .to_str()
        .unwrap()
        .to_string()
}

/// The folder adopted at its pull request pin, with a `CORE_RESIDUAL.diff` written by hand's
/// rules: its note, and bare conflict labels (`<<<<<<< pin`), as a record kept by another tool.
fn adopted_with_record() -> Folder {
    let folder = real_shaped();
    let (code, out) = adopt(&folder, &mirror(&folder), &[]);
    assert_eq!(code, 1, "{out}");
    let up = mirror(&folder);
    let path = folder.demo.records().join("CORE_RESIDUAL.diff");
    std::fs::write(&path, RESIDUAL_HEADER).unwrap();
    let (_, out) = folder
        .demo
        .run(&["--upstream-url", &up, "residual", "--write"]);
    assert!(
        out.contains("wrote patches-rocm/CORE_RESIDUAL.diff"),
        "{out}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let short = &folder.pin[..8];
    assert!(text.contains(&format!("<<<<<<< pin {short}")), "{text}");
    let (header, diffs) = text.split_at(text.find("--- a/").expect("a diff"));
    let header = header.trim_end().to_string();
    let bare: String = diffs
        .lines()
        .map(|l| {
            let kept = ["<<<<<<< ", ">>>>>>> ", "||||||| "].iter().find_map(|m| {
                let body = l.get(1..)?;
                let label = body.strip_prefix(m)?.split_whitespace().next()?;
                Some(format!("{}{m}{label}", &l[..1]))
            });
            format!("{}\n", kept.unwrap_or_else(|| l.to_string()))
        })
        .collect();
    std::fs::write(&path, format!("{header}\n{DEVICE_NOTE}\n\n{bare}")).unwrap();
    folder
}

#[test]
fn a_pin_no_mirror_has_is_named_with_the_command_that_gets_it_and_nothing_loops() {
    let folder = real_shaped_on_a_missing_pin();
    let missing = MISSING_PIN;
    let (code, out) = adopt(&folder, &mirror(&folder), &[]);
    assert_eq!(code, 1, "a decision, not a failure: {out}");
    assert!(folder.demo.root().join("forkbook.toml").is_file(), "{out}");
    // Whole files are locked as they stand: that needs no commit.
    assert!(
        folder.demo.records().join("overlay.lock").is_file(),
        "{out}"
    );
    assert!(
        out.contains(&format!("`{missing}` is not in the upstream")),
        "{out}"
    );
    assert!(
        out.contains(&format!("forkbook fetch --upstream {missing}")),
        "the one command that gets it: {out}"
    );
    // The record checks ran all the same: the entry without a state is there.
    assert!(out.contains("error[fix-state-complete]"), "{out}");
    assert!(out.contains("entry 3 has no upstream state"), "{out}");
    // Every command starts now; `fetch` says what is missing and does not send back to adopt.
    let up = mirror(&folder);
    let (code, out) = folder.demo.run(&["--upstream-url", &up, "fetch"]);
    assert_eq!(code, 2, "{out}");
    assert!(!out.contains("forkbook.toml"), "{out}");
    assert!(out.contains(missing) && !out.contains("adopt"), "{out}");
    let (code, out) = folder.demo.run(&["--upstream-url", &up, "status"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("fix      3. Workaround header (no state)"),
        "{out}"
    );
    let (code, out) = folder.demo.run(&["--upstream-url", &up, "check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("skipped: the checks that need the base tree"),
        "{out}"
    );
}

/// The cache reaches the upstream through git's own transport (`mirror://` rewritten to the
/// folder by the cache's git config), as it reaches a host: protocol 2 serves any commit by its
/// id; protocol 0 refuses a commit by id unless it is a ref's tip, and the pin is only an
/// ancestor of a pull request's head, so only the pull request refs can give it.
fn through_git(folder: &Folder, protocol: &str) -> String {
    let cache = &folder.demo.demo.cache;
    git(
        cache,
        &[],
        &[
            "config",
            &format!("url.{}.insteadOf", mirror(folder)),
            "mirror://upstream",
        ],
    );
    git(cache, &[], &["config", "protocol.version", protocol]);
    "mirror://upstream".to_string()
}

#[test]
fn a_pin_on_a_pull_request_ref_is_fetched_by_its_id_or_through_the_pull_request_refs() {
    for (protocol, proof) in [
        ("2", "refs/forkbook/fetched/"),
        ("0", "refs/remotes/upstream/pull/7"),
    ] {
        let folder = real_shaped();
        let url = through_git(&folder, protocol);
        // adopt reads recorded commits from the cache only: it names the fetch.
        let (code, out) = adopt(&folder, &url, &[]);
        assert_eq!(code, 1, "{out}");
        assert!(
            out.contains(&format!("forkbook fetch --upstream {}", folder.pin)),
            "{out}"
        );
        let (code, out) = folder.demo.run(&["--upstream-url", &url, "fetch"]);
        assert_eq!(code, 0, "protocol {protocol}: {out}");
        let refs = git(
            &folder.demo.demo.cache,
            &[],
            &["for-each-ref", "--format=%(refname)"],
        );
        assert!(refs.contains(proof), "protocol {protocol}: {refs}");
        // The lock the first adopt wrote without the pin is the built overlay's.
        let (code, out) = adopt(&folder, &url, &[]);
        assert!(
            out.contains("lock     matches"),
            "protocol {protocol}: {out}"
        );
        assert_eq!(code, 1, "the register's own decisions remain: {out}");
    }
    // A mirror on this machine holds the pull request's objects: adopt reads it in place.
    let folder = real_shaped();
    let (_, out) = adopt(&folder, &mirror(&folder), &[]);
    assert!(out.contains("lock     written"), "{out}");
}

/// The check lines of one check in `out`, grouped or not.
fn lines_of<'a>(out: &'a str, check: &str) -> Vec<&'a str> {
    out.lines()
        .filter(|l| l.contains(&format!("[{check}]")))
        .collect()
}

#[test]
fn every_finding_on_the_real_shaped_folder_is_true() {
    let folder = adopted_with_record();
    let up = mirror(&folder);
    let (code, out) = folder
        .demo
        .run(&["--upstream-url", &up, "check", "--verbose"]);
    assert_eq!(code, 1, "{out}");
    // Issues cited in prose are the entries' issues; the note fits a list item's form.
    let state: Vec<&str> = lines_of(&out, "fix-state-complete");
    assert!(
        !out.contains("entry 1 is `kept-local`")
            && !out.contains("entry 2 is `kept-local`")
            && !out.contains("entry 4 is `kept-local`"),
        "{out}"
    );
    assert!(
        out.contains("entry 6 is `kept-local`"),
        "no issue cited, a true finding: {out}"
    );
    assert!(
        out.contains("say it in the entry's words: cite the issue"),
        "{out}"
    );
    assert!(!out.contains("add `- issue:"), "{out}");
    assert!(out.contains("entry 3 has no upstream state"), "{state:?}");
    // A stateless entry is said to have no state, not to apply to the fork.
    assert!(
        out.contains("entry 3 has no upstream state and no upstream link"),
        "{out}"
    );
    assert!(!out.contains("entry 3 applies to the fork"), "{out}");
    // Prose naming files that are no overlay files says nothing about the overlay.
    for name in ["allocator.cu", "leak_check.py"] {
        assert!(!out.contains(name), "{name}: {out}");
    }
    // One file written two ways in one entry is one finding.
    let event: Vec<&str> = out.lines().filter(|l| l.contains("event.cpp")).collect();
    assert_eq!(event.len(), 1, "{out}");
    assert!(
        event[0].contains("error[named-file-differs]: entry 6 names `mlx/backend/rocm/event.cpp`"),
        "{out}"
    );
    // A passing mention explains no hunk: fast.cpp's hunks have no note.
    assert!(
        !lines_of(&out, "residual-hunks-noted")
            .iter()
            .any(|l| l.contains("mlx/device.cpp")),
        "{out}"
    );
    assert!(
        lines_of(&out, "residual-hunks-noted")
            .iter()
            .any(|l| l.contains("`mlx/fast.cpp:")),
        "{out}"
    );
    // The dropped section explains the bindings, tests and docs in words; the CI workflow stays.
    let hooks = lines_of(&out, "fork-hooks-explained");
    assert_eq!(hooks.len(), 1, "{out}");
    assert!(hooks[0].contains(".github/workflows/rocm.yml"), "{out}");
    // True findings stay: the unnamed differing file, the stateless entry, the numbering gap.
    assert!(
        out.contains("error[differing-file-named]") && out.contains("mlx/backend/rocm/copy.cpp"),
        "{out}"
    );
    assert!(!lines_of(&out, "fixes-numbered").is_empty(), "{out}");
    // The README's "one of the 4 core overlays" is a count, and true.
    assert!(lines_of(&out, "readme-counts").is_empty(), "{out}");
}

#[test]
fn the_lock_hint_names_adopt() {
    let folder = adopted_with_record();
    std::fs::remove_file(folder.demo.records().join("overlay.lock")).unwrap();
    let up = mirror(&folder);
    let (_, out) = folder
        .demo
        .run(&["--upstream-url", &up, "check", "--verbose"]);
    assert!(
        out.contains("the lock `overlay.lock` is missing\n  note: write it with `forkbook adopt`"),
        "{out}"
    );
}

#[test]
fn the_residual_is_kept_in_the_records_own_terms() {
    let folder = adopted_with_record();
    let up = mirror(&folder);
    let path = folder.demo.records().join("CORE_RESIDUAL.diff");
    let before = std::fs::read_to_string(&path).unwrap();
    assert!(
        before.contains("\n-<<<<<<< pin\n") || before.contains("\n+<<<<<<< pin\n"),
        "{before}"
    );
    let (code, out) = folder.demo.run(&["--upstream-url", &up, "residual"]);
    assert_eq!(code, 0, "{out}");
    let device: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("mlx/device.cpp:"))
        .collect();
    assert!(!device.is_empty(), "{out}");
    assert!(
        device[0].contains("; item 1: keeps the pin's default-device rule and the fork's hook.)"),
        "the note's item beside the hunk: {out}"
    );
    assert!(device.iter().all(|l| l.contains("item 1")), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains("mlx/fast.cpp:") && l.contains("(no fix)")),
        "{out}"
    );
    // A rewrite at the same commits keeps the labels bare and flags nothing: the hunks' content
    // did not change, only how the record wrote it.
    let (code, out) = folder
        .demo
        .run(&["--upstream-url", &up, "residual", "--write"]);
    assert_eq!(code, 0, "{out}");
    let after = std::fs::read_to_string(&path).unwrap();
    assert!(!after.contains("# review "), "{after}");
    assert!(
        !after.contains(&format!("pin {}", &folder.pin[..8])),
        "{after}"
    );
    assert_eq!(after, before);
    // A change of the hunk's content is flagged.
    let device = folder.demo.records().join("mlx/device.cpp");
    let mut text = std::fs::read_to_string(&device).unwrap();
    text.push_str("// one more local line\n");
    std::fs::write(&device, text).unwrap();
    let (code, out) = folder
        .demo
        .run(&["--upstream-url", &up, "residual", "--write"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("review the note for `mlx/device.cpp`"),
        "{out}"
    );
}

#[test]
fn check_and_adopt_fit_one_screen_and_the_detail_is_behind_verbose_and_json() {
    let folder = adopted_with_record();
    let up = mirror(&folder);
    // Many hunks of one file without a note: one group with its count, one note.
    let (code, out) = folder.demo.run(&["--upstream-url", &up, "check"]);
    assert_eq!(code, 1, "{out}");
    let (_, verbose) = folder
        .demo
        .run(&["--upstream-url", &up, "check", "--verbose"]);
    let (_, json) = folder.demo.run(&["--upstream-url", &up, "--json", "check"]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let findings = value["findings"].as_array().unwrap().len();
    assert_eq!(
        verbose.matches("error[").count() + verbose.matches("warning[").count(),
        findings,
        "{verbose}"
    );
    let hunks = verbose.matches("[residual-hunks-noted]").count();
    assert!(hunks > 3, "{verbose}");
    let grouped = lines_of(&out, "residual-hunks-noted");
    assert_eq!(grouped.len(), 1, "{out}");
    assert!(grouped[0].contains(&format!("{hunks} findings")), "{out}");
    assert!(out.contains(&format!("… {} more", hunks - 2)), "{out}");
    assert!(out.contains("`--verbose` prints every finding"), "{out}");
    let notes: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("note:"))
        .collect();
    let mut unique = notes.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(notes.len(), unique.len(), "a note once: {out}");
    let (_, adopt_out) = adopt(&folder, &up, &[]);
    assert!(adopt_out.lines().count() <= 60, "{adopt_out}");
    assert_eq!(
        lines_of(&adopt_out, "residual-hunks-noted").len(),
        1,
        "{adopt_out}"
    );
    // status shows the register's entries, in text and JSON.
    let (_, status) = folder
        .demo
        .run(&["--upstream-url", &up, "--json", "status"]);
    let value: serde_json::Value = serde_json::from_str(&status).unwrap();
    let fixes = value["local_fixes"].as_array().unwrap();
    assert_eq!(fixes.len(), 5, "{status}");
    assert_eq!(fixes[0], "1. Device choice kept (kept-local)", "{status}");
}

/// adopt on a pin no mirror has: the README's counts are not compared with an overlay it could
/// not build ("13 backend files (the overlay has 0)" was printed), the files named are the
/// overlay's files once each (`event.cpp` and `mlx/backend/rocm/event.cpp` are one; the prose
/// paths are no overlay file), as adopt counts them with the pin there, and the lock of the whole
/// files is written, the same bytes adopt writes with the pin there, so `check` has no missing
/// lock to send back to adopt.
#[test]
fn adopt_on_a_missing_pin_counts_only_what_it_could_read() {
    let folder = real_shaped_on_a_missing_pin();
    let (code, out) = adopt(&folder, &mirror(&folder), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("wrote    forkbook.toml, patches-rocm/overlay.lock\nlock     written (the whole files as they stand: their lock needs no commit)"),
        "{out}"
    );
    let written = folder.demo.read("overlay.lock");
    assert!(!out.contains("the overlay has 0"), "{out}");
    assert!(
        out.contains("counts   patches-rocm/README.md:5: 13 backend files (not counted: the overlay could not be built)"),
        "{out}"
    );
    let named = "named    7 files named by entries\n  and 2 names are no one file of the overlay \
                 the records folder holds (the overlay could not be built):\n  \
                 mlx/backend/cuda/allocator.cu\n  scripts/leak_check.py\n";
    assert!(out.contains(named), "{out}");
    let up = mirror(&folder);
    let (_, check) = folder
        .demo
        .run(&["--upstream-url", &up, "check", "--verbose"]);
    assert!(!check.contains("overlay-matches-lock]"), "{check}");
    // The pin back: the same seven files, now resolved among the built overlay's, and the lock
    // written without the pin is the one the built overlay has.
    let upstream = folder.demo.records().join("UPSTREAM");
    let recorded = std::fs::read_to_string(&upstream).unwrap();
    std::fs::write(&upstream, recorded.replace(MISSING_PIN, &folder.pin)).unwrap();
    let (_, out) = adopt(&folder, &mirror(&folder), &[]);
    assert!(out.contains("lock     matches"), "{out}");
    std::fs::remove_file(folder.demo.records().join("overlay.lock")).unwrap();
    let (_, out) = adopt(&folder, &mirror(&folder), &[]);
    assert!(out.contains("lock     written\n"), "{out}");
    assert_eq!(folder.demo.read("overlay.lock"), written);
    assert!(
        out.contains(
            "named    7 files named by entries\n  and 2 names are no one file of the overlay:\n"
        ),
        "{out}"
    );
}

/// `forkbook ARGS` as a line of forkbook's output prints it (`forkbook … # why`), with the
/// mirror as the README's first step exports it.
fn run_printed(folder: &Folder, printed: &str) -> (i32, String) {
    let command = printed.split(" # ").next().unwrap();
    let mut words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"forkbook"), "{printed}");
    let up = mirror(folder);
    words[0] = up.as_str();
    folder.demo.run(&[&["--upstream-url"][..], &words].concat())
}

/// The line of `out` that starts with `prefix` (after its indent), with the prefix cut off.
fn printed_after<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.trim_start().strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` in:\n{out}"))
}

/// The first user's loop from the README on a pin no mirror has, each next command run as
/// forkbook printed it: adopt writes forkbook.toml and the whole files' lock (no pin needed) and
/// names a stand-in; the stand-in reads the records with no missing lock sent back to adopt;
/// the book is written and built, each step that needs the pin skipped with the reason and the
/// stand-in line for the book, never passed; with that line in forkbook.toml those steps run on
/// the stand-in, saying so; and a fix is proposed into a patch and its pull request's text.
#[test]
fn the_first_users_loop_on_a_pin_no_mirror_has_runs_as_printed() {
    let folder = real_shaped_on_a_missing_pin();
    let missing = MISSING_PIN;
    // One fix the register means to send, in its own words over the policy's.
    let register = folder.demo.records().join("LOCAL_FIXES.md");
    let kept = "Applies to the fork; acme/engine#60 has the trace.";
    let text = std::fs::read_to_string(&register).unwrap();
    let to_send = "Applies to the fork; to be proposed there (acme/engine#60 has the trace).";
    std::fs::write(&register, text.replace(kept, to_send)).unwrap();
    let (code, out) = adopt(&folder, &mirror(&folder), &[]);
    assert_eq!(code, 1, "a decision, not a failure: {out}");
    assert!(
        out.contains("wrote    forkbook.toml, patches-rocm/overlay.lock\n"),
        "{out}"
    );
    // Under the stand-in adopt offers, adopt itself writes nothing and says to run it without.
    let stand_in = printed_after(&out, "meanwhile, to read the records: ");
    let rev = stand_in.split_whitespace().nth(2).unwrap().to_string();
    let (code, refused) = run_printed(&folder, &format!("forkbook --stand-in-pin {rev} adopt"));
    assert_eq!(code, 2, "{refused}");
    assert!(
        refused.contains("run `forkbook adopt` without it"),
        "{refused}"
    );

    let (code, check) = run_printed(&folder, stand_in);
    assert_eq!(code, 1, "{check}");
    assert!(
        check.starts_with(&format!("stand-in pin `{rev}`")),
        "{check}"
    );
    assert!(check.contains("entry 3 has no upstream state"), "{check}");
    assert!(!check.contains("overlay-matches-lock]"), "{check}");

    let (code, init) = run_printed(&folder, printed_after(&out, "next: "));
    assert_eq!(code, 0, "{init}");
    let build = printed_after(&init, "next: ");
    assert!(build.starts_with("forkbook book build"), "{init}");
    let (code, built) = run_printed(&folder, build);
    assert_eq!(
        code, 1,
        "the gate fails on the register's own errors: {built}"
    );
    let gate: Vec<&str> = built.lines().filter(|l| l.starts_with("error[")).collect();
    assert!(
        gate.iter()
            .any(|l| l.contains("entry 3 has no upstream state")),
        "{built}"
    );
    assert!(
        gate.iter().all(|l| !l.contains("overlay-matches-lock")),
        "{built}"
    );
    let page = |name: &str| {
        let html = folder.demo.root().join(format!("book/book/{name}.html"));
        std::fs::read_to_string(html).unwrap()
    };
    let bump = page("pin-bump");
    let retarget = &bump[bump
        .find("forkbook retarget main --check")
        .expect("the step")..];
    let reason = format!(
        "skipped:</strong> the recorded pin is missing: commit <code>{missing}</code> of the \
         upstream is not in the object cache"
    );
    let skipped = retarget.find(&reason).unwrap_or_else(|| panic!("{bump}"));
    assert!(
        !retarget[..skipped].contains("exit 0"),
        "not passed: {retarget}"
    );
    let for_the_book = format!(
        "<code>stand_in_pin = \"{}\"</code> under <code>[upstream]</code>",
        &rev[..8]
    );
    assert!(retarget[skipped..].contains(&for_the_book), "{retarget}");

    // The stand-in line for the book, as printed, in forkbook.toml: the steps run on it.
    let config = folder.demo.root().join("forkbook.toml");
    let mut toml = std::fs::read_to_string(&config).unwrap();
    toml.push_str(&format!("\n[upstream]\nstand_in_pin = \"{}\"\n", &rev[..8]));
    std::fs::write(&config, toml).unwrap();
    let (_, built) = run_printed(&folder, build);
    let bump = page("pin-bump");
    let retarget = &bump[bump.find("forkbook retarget main --check").unwrap()..];
    let next_step = retarget[1..]
        .find("forkbook ")
        .unwrap_or(retarget.len() - 1);
    assert!(
        !retarget[..next_step].contains("skipped:")
            && retarget[..next_step].contains("stand-in pin"),
        "{built}\n{retarget}"
    );

    // A fix proposed: its patch and the text of its pull request.
    let (code, proposed) = run_printed(&folder, "forkbook propose 4");
    assert_eq!(code, 0, "{proposed}");
    let packages = folder.demo.root().join("propose");
    let names: Vec<String> = std::fs::read_dir(&packages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.ends_with(".patch")),
        "{names:?}: {proposed}"
    );
    assert!(names.iter().any(|n| n == "index.md"), "{names:?}");
}

/// The folder adopted on a pin no mirror has, with entry 2 (a fix to a backend file) and entry
/// 4 (whose words name core files too) meant to be sent.
fn adopted_on_a_missing_pin_with_fixes_to_send() -> Folder {
    let folder = real_shaped_on_a_missing_pin();
    let register = folder.demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&register).unwrap();
    let text = text
        .replace(
            "Applies to the fork (see https://github.com/acme/engine/issues/52).",
            "Applies to the fork; to be proposed there (see https://github.com/acme/engine/issues/52).",
        )
        .replace(
            "Applies to the fork; acme/engine#60 has the trace.",
            "Applies to the fork; to be proposed there (acme/engine#60 has the trace).",
        );
    std::fs::write(&register, text).unwrap();
    let (code, out) = adopt(&folder, &mirror(&folder), &[]);
    assert_eq!(code, 1, "a decision, not a failure: {out}");
    folder
}

/// On a pin no mirror has, a fix to backend files alone is proposed without a stand-in: a
/// backend file's base is the fork's file, and the patch is against the fork commit, which is
/// here. A fix that names a core file (its base is the pin's file plus the fork's change) needs
/// the pin, and the error names the stand-in as the missing pin's note does.
#[test]
fn propose_of_a_backend_fix_needs_no_pin_and_a_core_fix_names_the_stand_in() {
    let folder = adopted_on_a_missing_pin_with_fixes_to_send();
    let up = mirror(&folder);
    let (code, proposed) = folder.demo.run(&["--upstream-url", &up, "propose", "2"]);
    assert_eq!(code, 0, "{proposed}");
    assert!(
        proposed.contains("git apply --check onto fork commit"),
        "{proposed}"
    );
    let packages = folder.demo.root().join("propose");
    let names: Vec<String> = std::fs::read_dir(&packages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n == "index.md"), "{names:?}");
    let patches: Vec<&String> = names.iter().filter(|n| n.ends_with(".patch")).collect();
    assert_eq!(patches.len(), 1, "{names:?}: {proposed}");
    let patch = packages.join(patches[0]);
    assert!(
        std::fs::read_to_string(&patch)
            .unwrap()
            .contains("mlx/backend/rocm/allocator.cpp"),
        "{proposed}"
    );
    // git itself applies it to the fork commit the records name.
    let record = folder.demo.read("UPSTREAM");
    let fork = printed_after(&record, "commit: ");
    let repo = &folder.demo.demo.world.fork;
    let index = folder.demo.tmp.path().join("apply-check-index");
    let env = [("GIT_INDEX_FILE", index.to_str().unwrap())];
    git(repo, &env, &["read-tree", fork]);
    git(
        repo,
        &env,
        &["apply", "--cached", "--check", patch.to_str().unwrap()],
    );

    let (code, refused) = folder.demo.run(&["--upstream-url", &up, "propose", "4"]);
    assert_eq!(code, 2, "{refused}");
    assert!(
        refused.contains("entry 4: it names the core file `mlx/fast.cpp`"),
        "{refused}"
    );
    assert!(refused.contains("the recorded pin is missing"), "{refused}");
    assert!(
        refused.contains("or run on a commit the mirrors have, as a stand-in (`--stand-in-pin "),
        "{refused}"
    );
    assert!(
        refused.contains("under `[upstream]` in forkbook.toml"),
        "{refused}"
    );
}

/// On a pin no mirror has, the whole files are the overlay as they stand, so `check` compares
/// them with the lock adopt wrote without the pin: one changed after adopt is named, with what
/// to do that needs no commit; the lock deleted, its note says adopt writes it, not to fetch.
#[test]
fn a_whole_file_changed_after_adopt_on_a_missing_pin_is_named_by_check() {
    let folder = real_shaped_on_a_missing_pin();
    let (code, out) = adopt(&folder, &mirror(&folder), &[]);
    assert_eq!(code, 1, "{out}");
    let up = mirror(&folder);
    let check = || {
        folder
            .demo
            .run(&["--upstream-url", &up, "check", "--verbose"])
    };
    let (_, before) = check();
    assert!(!before.contains("overlay-matches-lock]"), "{before}");
    let file = folder.demo.records().join("mlx/backend/rocm/allocator.cpp");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("// changed after adopt\n");
    std::fs::write(&file, text).unwrap();
    let (code, after) = check();
    assert_eq!(code, 1, "{after}");
    let found: Vec<&str> = lines_of(&after, "overlay-matches-lock");
    assert_eq!(found.len(), 1, "{after}");
    assert!(
        found[0].contains(
            "error[overlay-matches-lock]: `mlx/backend/rocm/allocator.cpp` differs from its \
             locked hash"
        ),
        "{after}"
    );
    assert!(
        after.contains("delete `overlay.lock` and run `forkbook adopt`"),
        "{after}"
    );
    assert!(
        after.contains(
            "  overlay-matches-lock (in part: the lock's presence and form; for whole files, \
             every file against its hash)"
        ),
        "{after}"
    );
    std::fs::remove_file(folder.demo.records().join("overlay.lock")).unwrap();
    let (_, gone) = check();
    assert!(
        gone.contains("the lock `overlay.lock` is missing"),
        "{gone}"
    );
    assert!(
        gone.contains(
            "write it with `forkbook adopt`: it locks the whole files as they stand, which needs \
             no commit"
        ),
        "{gone}"
    );
}

/// One project, one stand-in: on a pin no mirror has, adopt's line, `check`'s note, `propose`'s
/// refusal of a core fix, the book's skipped step and its gate name the same commit, the one
/// rule's (`pin::stand_ins`): here the head of the upstream pull request the register cites.
#[test]
fn check_adopt_and_the_book_offer_one_stand_in_for_a_missing_pin() {
    let folder = real_shaped_on_a_missing_pin();
    // Entry 3 cites the upstream pull request whose head holds the commit the pin was taken on.
    let register = folder.demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&register).unwrap();
    let workaround = "holds a compiler workaround for one architecture.";
    let cited = "holds a compiler workaround for one architecture, as in \
                 https://github.com/upco/engine/pull/7.";
    // Entry 4 (whose words name core files) is meant to be sent: propose needs the pin for it.
    let text = text.replace(workaround, cited).replace(
        "Applies to the fork; acme/engine#60 has the trace.",
        "Applies to the fork; to be proposed there (acme/engine#60 has the trace).",
    );
    std::fs::write(&register, text).unwrap();
    let (code, out) = adopt(&folder, &mirror(&folder), &[]);
    assert_eq!(code, 1, "{out}");
    let config = folder.demo.root().join("forkbook.toml");
    let mut toml = std::fs::read_to_string(&config).unwrap();
    toml.push_str("\n[upstream]\nurl = \"https://github.com/upco/engine\"\n");
    std::fs::write(&config, toml).unwrap();
    let head = git(
        &folder.demo.demo.world.upstream,
        &[],
        &["rev-parse", "refs/pull/7/head"],
    );
    let head = head.trim();

    // adopt (run again, the configuration in place) names the pull request's head.
    let (_, again) = adopt(&folder, &mirror(&folder), &[]);
    let line = printed_after(&again, "meanwhile, to read the records: ");
    let offered = line.split_whitespace().nth(2).unwrap();
    assert!(head.starts_with(offered), "{head}: {again}");
    // check's note names it first.
    let (code, check) = run_printed(&folder, "forkbook check");
    assert_eq!(code, 1, "{check}");
    let note = printed_after(&check, "to run them: ");
    let first = note
        .split("`--stand-in-pin ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("{check}"));
    assert_eq!(first, offered, "{check}");
    // propose of a fix naming a core file stops on the missing pin, naming it too.
    let (code, refused) = run_printed(&folder, "forkbook propose 4");
    assert_eq!(code, 2, "{refused}");
    assert!(
        refused.contains(&format!("(`--stand-in-pin {offered}`")),
        "{refused}"
    );
    // The book's step skipped on the missing pin names it too.
    let (code, init) = run_printed(&folder, "forkbook book init");
    assert_eq!(code, 0, "{init}");
    let (_, built) = run_printed(&folder, printed_after(&init, "next: "));
    let html = folder.demo.root().join("book/book/pin-bump.html");
    let bump = std::fs::read_to_string(html).unwrap_or_else(|_| panic!("{built}"));
    let retarget = &bump[bump
        .find("forkbook retarget main --check")
        .expect("the step")..];
    let for_the_book = format!("<code>stand_in_pin = \"{offered}\"</code>");
    assert!(retarget.contains(&for_the_book), "{retarget}");
    // The gate of a test build names the same commit as check.
    let (_, tested) = run_printed(&folder, "forkbook book test");
    assert!(
        tested.contains(&format!("`--stand-in-pin {offered}`")),
        "{tested}"
    );
}
