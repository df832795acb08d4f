//! Adopting an overlay as its project keeps it (issue 10): whole files in the records folder
//! beside `UPSTREAM`, a README whose counts are prose, a `CORE_RESIDUAL.diff` with notes, and
//! `forkbook adopt` itself. Every fixture is the demo world's overlay reshaped by hand into the
//! shape a real project has, with text of our own.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use std::path::Path;

/// The demo's files-layout overlay with its whole files moved out of `tree/` into the records
/// folder itself, as a project whose build copies that folder over the upstream checkout keeps
/// them. `configured` says whether forkbook.toml is told (`tree = "."`).
fn files_in_place(configured: bool) -> Demo {
    let demo = Demo::new(Layout::Files);
    let records = demo.records();
    let tree = records.join("tree");
    for entry in std::fs::read_dir(&tree).unwrap() {
        let entry = entry.unwrap();
        std::fs::rename(entry.path(), records.join(entry.file_name())).unwrap();
    }
    std::fs::remove_dir(&tree).unwrap();
    if configured {
        set_overlay_key(&demo, "tree = \".\"");
    }
    demo
}

/// Adds `line` to the `[overlay]` section of the demo's forkbook.toml.
fn set_overlay_key(demo: &Demo, line: &str) {
    let path = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replacen("[overlay]\n", &format!("[overlay]\n{line}\n"), 1);
    std::fs::write(&path, text).unwrap();
}

/// The number after `label` on the status screen (`files    7 backend, 4 core`).
fn status_files(out: &str) -> String {
    out.lines()
        .find(|l| l.starts_with("files"))
        .unwrap_or_else(|| panic!("no files line: {out}"))
        .to_string()
}

#[test]
fn whole_files_beside_upstream_are_the_overlay() {
    let reference = Demo::new(Layout::Files);
    let (code, want) = reference.run(&["status"]);
    assert_eq!(code, 0, "{want}");
    let demo = files_in_place(true);
    std::fs::write(demo.records().join(".DS_Store"), b"\0\0\x01Bud1").unwrap();
    let (code, out) = demo.run(&["status"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(status_files(&out), status_files(&want), "{out}");
    assert!(!status_files(&out).contains(" 0 backend"), "{out}");
    let (code, check) = demo.run(&["check"]);
    let (ref_code, ref_check) = reference.run(&["check"]);
    assert_eq!(
        (code, check.lines().last()),
        (ref_code, ref_check.lines().last()),
        "{check}"
    );
    let (code, out) = demo.run(&["sync", "--check"]);
    assert_eq!(code, 0, "records and noise are not overlay files: {out}");
}

#[test]
fn sync_writes_whole_files_where_they_are() {
    let demo = files_in_place(true);
    let f3 = demo.fork(3).to_string();
    let (code, out) = demo.run(&["sync", &f3]);
    assert!(code <= 1, "{out}");
    assert!(
        !demo.records().join("tree").exists(),
        "nothing moved into tree/: {out}"
    );
    assert!(demo.records().join("mlx/backend/rocm").is_dir());
    // Every record reproduces where it is; what is left is the conflict F3 carries (fix 4),
    // named in the whole file itself.
    let (code, out) = demo.run(&["sync", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains("differ from what"), "{out}");
    assert!(
        out.contains("patches-rocm/mlx/backend/rocm/eval.cpp:"),
        "{out}"
    );
}

#[test]
fn files_not_where_the_configuration_says_are_one_error_naming_the_folder_and_the_setting() {
    // Whole files beside UPSTREAM, forkbook.toml still expecting `tree/`.
    let demo = files_in_place(false);
    for command in [
        &["status"][..],
        &["check"],
        &["sync", "--check"],
        &["residual"],
    ] {
        let (code, out) = demo.run(command);
        assert_eq!(code, 2, "{command:?}: {out}");
        assert_eq!(out.matches("error:").count(), 1, "{command:?}: {out}");
        assert!(out.contains("`patches-rocm/tree/`"), "{command:?}: {out}");
        assert!(out.contains("tree = \".\""), "{command:?}: {out}");
        assert!(
            !out.contains("LOCAL_FIXES"),
            "the register is not blamed: {out}"
        );
    }
    // `tree = "."` while the files still sit in `tree/`.
    let demo = Demo::new(Layout::Files);
    set_overlay_key(&demo, "tree = \".\"");
    let (code, out) = demo.run(&["status"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("`patches-rocm/`") && out.contains("tree = \"tree\""),
        "{out}"
    );
    // The patch layout over a folder of whole files.
    let demo = files_in_place(false);
    let toml = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&toml)
        .unwrap()
        .replace("layout = \"files\"", "layout = \"patch\"");
    std::fs::write(&toml, text).unwrap();
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("layout = \\\"files\\\"") || out.contains("layout = \"files\""),
        "{out}"
    );
    assert!(out.contains("`patches-rocm/`"), "{out}");
}

/// The backend and core counts on the status screen (`files    7 backend, 4 core`).
fn status_counts(demo: &Demo) -> (usize, usize) {
    let (code, out) = demo.run(&["status"]);
    assert_eq!(code, 0, "{out}");
    let line = status_files(&out);
    let numbers: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

/// A README of our own that states its counts in sentences, the way people write them, with one
/// number whose words do not say what it counts.
fn prose_readme(backend: usize, core: usize, fixes: usize) -> String {
    format!(
        "# The ROCm overlay\n\n\
         The files here are laid over the upstream checkout by the build.\n\n\
         - `mlx/backend/rocm/**`: the ROCm backend ({backend} files). Upstream has no such folder.\n\
         - {core} upstream core files (`CMakeLists.txt`, `mlx/fast.cpp`): the pin's file plus the hooks.\n\n\
         The register lists {fixes} entries.\n\n\
         After a bump, look at the 2 files named in the log first.\n\n\
         The fork's `mlx/backend/cuda/eval.cpp` hook is not carried: we never build CUDA.\n"
    )
}

#[test]
fn prose_counts_are_read_checked_and_kept_true_by_sync() {
    let demo = files_in_place(true);
    let (backend, core) = status_counts(&demo);
    let readme = demo.records().join("README.md");
    std::fs::write(&readme, prose_readme(backend, core, 4)).unwrap();
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    let counts: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("[readme-counts]"))
        .collect();
    assert_eq!(counts.len(), 1, "only the unreadable sentence: {out}");
    assert!(
        counts[0].starts_with("patches-rocm/README.md:10: error[readme-counts]")
            && counts[0].contains("\"After a bump, look at the 2 files named in the log first.\""),
        "{out}"
    );
    assert!(
        out.contains("<!-- forkbook:not-a-count -->"),
        "says how to mark it: {out}"
    );

    // Marked, the sentence is left alone; a wrong figure is named with its line.
    let marked = prose_readme(backend + 1, core, 4)
        .replace("first.\n", "first. <!-- forkbook:not-a-count -->\n");
    std::fs::write(&readme, &marked).unwrap();
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    let want = format!(
        "patches-rocm/README.md:5: error[readme-counts]: the README states {} backend files, the overlay has {backend}",
        backend + 1
    );
    assert!(out.contains(&want), "{out}");
    assert_eq!(out.matches("[readme-counts]").count(), 1, "{out}");

    // A sync writes the true figure into the sentence and changes nothing else.
    let f1 = demo.fork(1).to_string();
    let (code, out) = demo.run(&["sync", &f1]);
    assert_eq!(code, 0, "{out}");
    let synced = std::fs::read_to_string(&readme).unwrap();
    assert_eq!(
        synced,
        marked.replace(
            &format!("({} files)", backend + 1),
            &format!("({backend} files)")
        )
    );
    assert!(
        !synced.contains("forkbook:counts"),
        "no block added to a prose README"
    );
    let (_, out) = demo.run(&["check"]);
    assert!(!out.contains("[readme-counts]"), "{out}");
}

/// Every file below `dir` with its bytes, to show what a command changed.
pub(crate) fn snapshot(dir: &Path) -> forkbook::engine::FileMap {
    forkbook::engine::fsutil::read_tree(dir).unwrap()
}

/// A residual record's header in the first user's shape, of our own words: prose, then the
/// commits and hashes `residual --write` fills in.
const CORE_HEADER: &str = "\
# CORE_RESIDUAL.diff: what our core files carry beyond the pin plus the fork's change.
#
# Rebuilt by the overlay tool; every file listed below needs a note naming its register entry.
#
";

/// The note our fixture writes for the demo's core-file fix (fix 1 changes `mlx/fast.cpp`).
const FAST_NOTE: &str =
    "# note mlx/fast.cpp: LOCAL_FIXES.md item 1: the fast path waits for the backend's own check.";

/// The demo with its whole files in place and a `CORE_RESIDUAL.diff` carrying a note, the way a
/// project that reviews its residual keeps it.
fn with_core_residual() -> Demo {
    let demo = files_in_place(true);
    let path = demo.records().join("CORE_RESIDUAL.diff");
    std::fs::write(&path, CORE_HEADER).unwrap();
    let (code, out) = demo.run(&["residual", "--write"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("wrote patches-rocm/CORE_RESIDUAL.diff"),
        "{out}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let (header, diffs) = text.split_at(text.find("--- a/").expect("a diff"));
    let with_note = format!("{header}{FAST_NOTE}\n{diffs}").replacen("\n\n--- a/", "\n\n--- a/", 1);
    // The note goes with the other `#` lines, before the blank line that ends the header.
    let with_note = with_note.replacen(
        &format!("\n\n{FAST_NOTE}\n"),
        &format!("\n{FAST_NOTE}\n\n"),
        1,
    );
    std::fs::write(&path, with_note).unwrap();
    demo
}

#[test]
fn core_residual_is_read_and_checked_against_upstream_and_the_core_files() {
    let demo = with_core_residual();
    let text = demo.read("CORE_RESIDUAL.diff");
    assert!(text.starts_with(CORE_HEADER), "prose kept: {text}");
    let upstream = demo.read("UPSTREAM");
    let commit = |key: &str| {
        upstream
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}: ")))
            .unwrap()
            .to_string()
    };
    assert!(
        text.contains(&format!("# fork: {}\n", commit("commit"))),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "# fork_upstream_merge_base: {}\n",
            commit("fork_upstream_merge_base")
        )),
        "{text}"
    );
    let fast = std::fs::read(demo.records().join("mlx/fast.cpp")).unwrap();
    let sha = forkbook::engine::records::sha256_hex(&fast);
    assert!(
        text.contains(&format!("# overlay-sha256: {sha} mlx/fast.cpp\n")),
        "{text}"
    );
    assert_eq!(
        text.matches("# overlay-sha256: ").count(),
        4,
        "one per core file: {text}"
    );
    assert!(
        text.contains("--- a/mlx/fast.cpp\n+++ b/mlx/fast.cpp\n@@ "),
        "{text}"
    );
    let (code, out) = demo.run(&["check"]);
    assert!(
        !out.contains("[residual-"),
        "a current record with its note: {out}"
    );
    assert_eq!(code, 0, "{out}");

    // A header commit that is not UPSTREAM's, a hash that is not the file's, a note of an entry
    // the register lacks: each named with its line.
    let fork_line = text
        .lines()
        .position(|l| l.starts_with("# fork: "))
        .unwrap()
        + 1;
    let tampered = text
        .replace(
            &format!("# fork: {}", commit("commit")),
            &format!("# fork: {}", "0".repeat(40)),
        )
        .replace(&sha, &"f".repeat(64))
        .replace("LOCAL_FIXES.md item 1:", "LOCAL_FIXES.md item 9:");
    std::fs::write(demo.records().join("CORE_RESIDUAL.diff"), tampered).unwrap();
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("patches-rocm/CORE_RESIDUAL.diff:{fork_line}: error[residual-record-current]: `fork` is `{}`", "0".repeat(40))), "{out}");
    assert!(
        out.contains(
            "error[residual-record-current]: `mlx/fast.cpp` no longer has the recorded SHA-256"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "error[residual-notes]: the note for `mlx/fast.cpp` names LOCAL_FIXES.md item 9"
        ),
        "{out}"
    );
}

#[test]
fn notes_are_kept_byte_for_byte_by_residual_write_and_sync_and_a_changed_hunk_is_flagged() {
    let demo = with_core_residual();
    let before = demo.read("CORE_RESIDUAL.diff");
    let (code, out) = demo.run(&["residual", "--write"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        demo.read("CORE_RESIDUAL.diff"),
        before,
        "a rewrite at the same commits"
    );
    let f1 = demo.fork(1).to_string();
    let (code, out) = demo.run(&["sync", &f1]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(demo.read("CORE_RESIDUAL.diff"), before, "kept by sync");
    let (code, out) = demo.run(&["sync", "--check"]);
    assert_eq!(code, 0, "{out}");

    // The fix's hunk changes: the note stays, flagged for review until a person clears it.
    let fast = demo.records().join("mlx/fast.cpp");
    let mut text = std::fs::read_to_string(&fast).unwrap();
    text.push_str("// a second local line\n");
    std::fs::write(&fast, text).unwrap();
    let (code, out) = demo.run(&["residual", "--write"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("review the note for `mlx/fast.cpp`"), "{out}");
    let after = demo.read("CORE_RESIDUAL.diff");
    assert!(
        after.contains(&format!("{FAST_NOTE}\n# review mlx/fast.cpp: ")),
        "{after}"
    );
    assert!(after.contains("+// a second local line"), "{after}");
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("error[residual-notes]: the residual of `mlx/fast.cpp` changed since its note was written"), "{out}");
    // Cleared by hand, the record passes again and the next rewrite leaves it alone.
    let cleared: String = after
        .lines()
        .filter(|l| !l.starts_with("# review "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(demo.records().join("CORE_RESIDUAL.diff"), &cleared).unwrap();
    let (code, out) = demo.run(&["residual", "--write"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(demo.read("CORE_RESIDUAL.diff"), cleared);
}

#[test]
fn forkbooks_own_residual_record_carries_notes_too() {
    let demo = files_in_place(true);
    let (code, out) = demo.run(&["residual", "--write"]);
    assert_eq!(code, 0, "{out}");
    let path = demo.records().join("residual.diff");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("--- B/mlx/fast.cpp\n"), "{text}");
    let noted = format!("{FAST_NOTE}\n\n{text}");
    std::fs::write(&path, &noted).unwrap();
    let f1 = demo.fork(1).to_string();
    let (code, out) = demo.run(&["sync", &f1]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), noted);
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 0, "{out}");
}

/// A folder as a project keeps it before forkbook: whole files beside UPSTREAM, a prose README,
/// a CORE_RESIDUAL.diff with its note, desktop noise, and no forkbook.toml or lock.
pub(crate) fn never_adopted() -> Demo {
    let demo = with_core_residual();
    let (backend, core) = status_counts(&demo);
    let readme = prose_readme(backend, core, 4)
        .replace("first.\n", "first. <!-- forkbook:not-a-count -->\n");
    std::fs::write(demo.records().join("README.md"), readme).unwrap();
    std::fs::write(demo.records().join(".DS_Store"), b"\0\0\x01Bud1").unwrap();
    std::fs::remove_file(demo.records().join("overlay.lock")).unwrap();
    std::fs::remove_file(demo.root().join("forkbook.toml")).unwrap();
    demo
}

pub(crate) fn adopt(demo: &Demo, args: &[&str]) -> (i32, String) {
    let upstream = demo.demo.world.upstream.to_str().unwrap().to_string();
    let mut full = vec!["--upstream-url", upstream.as_str(), "adopt"];
    full.extend_from_slice(args);
    demo.run(&full)
}

#[test]
fn adopt_writes_only_its_own_files_and_says_what_it_understood() {
    let demo = never_adopted();
    let before = snapshot(demo.root());
    let (code, out) = adopt(&demo, &["--dir", "patches-rocm", "--tree", "."]);
    assert_eq!(code, 0, "{out}");
    let after = snapshot(demo.root());
    let changed: Vec<&String> = before
        .keys()
        .filter(|p| after.get(*p) != before.get(*p))
        .collect();
    assert!(changed.is_empty(), "adopt changed user files: {changed:?}");
    let added: Vec<&String> = after.keys().filter(|p| !before.contains_key(*p)).collect();
    assert_eq!(
        added,
        ["forkbook.toml", "patches-rocm/overlay.lock"],
        "{out}"
    );
    let toml = std::fs::read_to_string(demo.root().join("forkbook.toml")).unwrap();
    assert!(
        toml.contains("dir = \"patches-rocm\"\nlayout = \"files\"\ntree = \".\"\n"),
        "{toml}"
    );
    for line in [
        "adopted  `patches-rocm/`: files layout, whole files in the records folder itself (tree = \".\")",
        "wrote    forkbook.toml, patches-rocm/overlay.lock",
        "lock     written",
        "entries  4 in patches-rocm/LOCAL_FIXES.md:",
        "residual patches-rocm/CORE_RESIDUAL.diff: 1 note",
        "  mlx/fast.cpp: item 1: the fast path waits for the backend's own check.",
        "decide   nothing: every check passes",
    ] {
        assert!(out.contains(line), "missing `{line}` in:\n{out}");
    }
    assert!(out.contains("counts   patches-rocm/README.md:5: "), "{out}");
    assert!(!out.contains(".DS_Store"), "{out}");
    // Run again: the lock matches, nothing is written.
    let (code, again) = adopt(&demo, &[]);
    assert_eq!(code, 0, "{again}");
    assert!(
        again.contains("wrote    nothing") && again.contains("lock     matches"),
        "{again}"
    );
    assert_eq!(snapshot(demo.root()), after);
    // The adopted project works with every command.
    let (code, out) = demo.run(&[
        "--upstream-url",
        demo.demo.world.upstream.to_str().unwrap(),
        "sync",
        "--check",
    ]);
    assert_eq!(code, 0, "{out}");
    // One backend file edited since the lock was written: adopt says so as `status` does.
    let backend = after
        .keys()
        .find(|p| p.starts_with("patches-rocm/mlx/backend/rocm/"));
    let edited = demo.root().join(backend.expect("a backend file"));
    let mut text = std::fs::read(&edited).unwrap();
    text.extend_from_slice(b"// edited\n");
    std::fs::write(&edited, text).unwrap();
    let (_, out) = adopt(&demo, &[]);
    assert!(out.contains("lock     differs (1 file)\n"), "{out}");
}

#[test]
fn adopt_exits_1_naming_what_needs_a_decision_and_still_changes_no_user_file() {
    let demo = never_adopted();
    // A file changed by hand that no entry names, and a count that is not true.
    let hand = demo.records().join("mlx/backend/rocm/copy.cpp");
    let mut text = std::fs::read_to_string(&hand).unwrap();
    text.push_str("// changed by hand, in no entry\n");
    std::fs::write(&hand, text).unwrap();
    let readme = demo.records().join("README.md");
    let prose = std::fs::read_to_string(&readme)
        .unwrap()
        .replace("first. <!-- forkbook:not-a-count -->", "first.");
    std::fs::write(&readme, prose).unwrap();
    let before = snapshot(demo.root());
    let (code, out) = adopt(&demo, &["--dir", "patches-rocm", "--tree", "."]);
    assert_eq!(code, 1, "{out}");
    let after = snapshot(demo.root());
    assert!(
        before.iter().all(|(p, b)| after.get(p) == Some(b)),
        "no user file changed"
    );
    assert!(out.contains("not named: 1 file differs from the base tree and no entry names it:\n  mlx/backend/rocm/copy.cpp\n"), "{out}");
    assert!(out.contains("counts   patches-rocm/README.md:10: cannot tell which count \"After a bump, look at the 2 files named in the log first.\" states"), "{out}");
    assert!(out.contains("decide   "), "{out}");
    assert!(out.contains("error[differing-file-named]"), "{out}");
}

#[test]
fn adopt_with_the_wrong_tree_is_one_error_and_writes_nothing() {
    let demo = never_adopted();
    let before = snapshot(demo.root());
    let (code, out) = adopt(&demo, &["--dir", "patches-rocm", "--tree", "tree"]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out.matches("error:").count(), 1, "{out}");
    assert!(
        out.contains("`patches-rocm/tree/`") && out.contains("tree = \".\""),
        "{out}"
    );
    assert_eq!(snapshot(demo.root()), before, "nothing written");
}

#[test]
fn adopt_counts_adds_a_counts_block_only_when_asked() {
    let demo = never_adopted();
    let readme = demo.read("README.md");
    let (code, out) = adopt(&demo, &["--dir", "patches-rocm", "--tree", ".", "--counts"]);
    assert_eq!(code, 0, "{out}");
    let written = demo.read("README.md");
    assert!(written.starts_with(&readme), "the prose is kept");
    assert!(
        written[readme.len()..].contains("<!-- forkbook:counts -->\n- backend files: "),
        "{written}"
    );
}

/// `adopt --counts` over a README that is not UTF-8 is refused with nothing written. Fails on
/// d481506, where the README read as empty and was replaced by the counts block alone.
#[test]
fn adopt_counts_over_a_readme_that_is_not_utf8_writes_nothing() {
    let demo = never_adopted();
    let mut readme = demo.read("README.md").into_bytes();
    readme.extend_from_slice(b"Caf\xe9 notes, in Latin-1.\n");
    std::fs::write(demo.records().join("README.md"), &readme).unwrap();
    let before = snapshot(demo.root());
    let (code, out) = adopt(&demo, &["--dir", "patches-rocm", "--tree", ".", "--counts"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("`patches-rocm/README.md` is not UTF-8"),
        "{out}"
    );
    assert_eq!(snapshot(demo.root()), before, "nothing written");
}

#[test]
fn fix_add_records_an_edit_in_the_whole_files_where_they_are() {
    let demo = files_in_place(true);
    let out_dir = demo.tmp.path().join("edit");
    let (code, out) = demo.run(&["materialize", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let edited = out_dir.join("mlx/backend/rocm/copy.cpp");
    let mut text = std::fs::read_to_string(&edited).unwrap();
    text.push_str("// a fifth local fix\n");
    std::fs::write(&edited, &text).unwrap();
    let (code, out) = demo.run(&[
        "fix",
        "add",
        "--from",
        out_dir.to_str().unwrap(),
        "--title",
        "Note the copy kernel's limit",
    ]);
    assert_eq!(code, 0, "{out}");
    let in_place = demo.records().join("mlx/backend/rocm/copy.cpp");
    assert_eq!(std::fs::read_to_string(in_place).unwrap(), text);
    assert!(
        !demo.records().join("tree").exists(),
        "nothing written into tree/"
    );
    assert!(demo
        .read("LOCAL_FIXES.md")
        .contains("## 5. Note the copy kernel's limit"));
}

/// adopt of a patch series on a pin no mirror has: `forkbook.toml` is written, the lock is not
/// (a series' lock is its patches applied to the base tree, which needs the commits) and adopt
/// says it waits for them; `check` says the same of the missing lock, and with the pin back
/// adopt writes it.
#[test]
fn adopt_of_a_series_on_a_missing_pin_says_its_lock_waits_for_the_commits() {
    let demo = Demo::new(Layout::Patch);
    let upstream = demo.records().join("UPSTREAM");
    let recorded = std::fs::read_to_string(&upstream).unwrap();
    let missing = "0123456789abcdef0123456789abcdef01234567";
    let text: String = recorded
        .lines()
        .map(|l| match l.split_once(": ") {
            Some(("retargeted_to_mlx_pin", _)) => format!("retargeted_to_mlx_pin: {missing}\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    assert_ne!(text, recorded, "the demo records a pin");
    std::fs::write(&upstream, text).unwrap();
    std::fs::remove_file(demo.records().join("overlay.lock")).unwrap();
    let config = demo.root().join("forkbook.toml");
    let configured = std::fs::read_to_string(&config).unwrap();
    std::fs::remove_file(&config).unwrap();
    let (code, out) = adopt(&demo, &["--dir", "patches-rocm"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("wrote    forkbook.toml\n"), "{out}");
    assert!(
        out.contains(
            "lock     not written: a series' lock is its patches applied to the base tree, which \
             needs the missing commits; `forkbook adopt` writes it once they are fetched"
        ),
        "{out}"
    );
    assert!(out.contains(&format!("`{missing}`")), "{out}");
    assert!(!demo.records().join("overlay.lock").exists(), "{out}");
    let toml = std::fs::read_to_string(demo.root().join("forkbook.toml")).unwrap();
    assert!(toml.contains("layout = \"patch\""), "{toml}");
    let up = demo.demo.world.upstream.to_str().unwrap().to_string();
    let (_, check) = demo.run(&["--upstream-url", &up, "check", "--verbose"]);
    assert!(
        check.contains("the lock `overlay.lock` is missing"),
        "{check}"
    );
    assert!(
        check.contains("a series' lock is its patches applied to the base tree, which needs the recorded commits"),
        "{check}"
    );
    // The pin back, with the demo's core files named in forkbook.toml (without a lock, the
    // series' base tree knows its core files from there): adopt writes the series' lock.
    std::fs::write(&upstream, recorded).unwrap();
    std::fs::write(&config, configured).unwrap();
    let (_, out) = adopt(&demo, &[]);
    assert!(out.contains("lock     written\n"), "{out}");
    assert!(demo.records().join("overlay.lock").is_file(), "{out}");
}

/// adopt of a patch series with the pin present but no lock and no `[overlay] core_files`: the
/// core files are the files the series' patches touch outside the backend prefix, adopt says so,
/// and the lock is written from them; `check` then reads the series as adopt did. Where the
/// series still does not apply to the base tree made that way, the error names forkbook.toml
/// and the key to set.
#[test]
fn adopt_of_a_series_without_core_files_finds_them_in_its_patches() {
    let demo = Demo::new(Layout::Patch);
    let touched = patched_outside_backend(&demo);
    assert!(!touched.is_empty(), "the demo's series touches core files");
    std::fs::remove_file(demo.records().join("overlay.lock")).unwrap();
    std::fs::remove_file(demo.root().join("forkbook.toml")).unwrap();
    let (code, out) = adopt(&demo, &["--dir", "patches-rocm"]);
    assert!(code <= 1, "{out}");
    assert!(out.contains("lock     written\n"), "{out}");
    assert!(
        out.contains(&format!(
            "{} core (the files the patches touch outside `mlx/backend/rocm/`: no `core_files` \
             under `[overlay]` in forkbook.toml says them)",
            touched.len()
        )),
        "{out}"
    );
    let lock = demo.read("overlay.lock");
    for path in &touched {
        assert!(lock.contains(path.as_str()), "{path}: {lock}");
    }
    let up = demo.demo.world.upstream.to_str().unwrap().to_string();
    let (_, check) = demo.run(&["--upstream-url", &up, "check"]);
    assert!(!check.contains("does not apply"), "{check}");
    assert!(!check.contains("skipped:"), "{check}");
}

/// A series whose patches touch a file outside the backend that neither upstream nor the fork
/// has: the core files worked out from the series give it no base, and the error (exit 2) names
/// the patch, the core files as worked out, forkbook.toml and the `core_files` key to set.
#[test]
fn adopt_of_a_series_that_no_worked_out_core_files_fit_names_the_key_to_set() {
    let demo = Demo::new(Layout::Patch);
    std::fs::remove_file(demo.records().join("overlay.lock")).unwrap();
    std::fs::remove_file(demo.root().join("forkbook.toml")).unwrap();
    // A fix to a file neither upstream nor the fork has: no base tree the series names holds it.
    let patches = demo.records().join("patches");
    let mut names: Vec<String> = std::fs::read_dir(&patches)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let next = names.len() + 1;
    let patch = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n\
                 From: A <a@example.com>\n\
                 Subject: [PATCH] note the tool\n\
                 \n\
                 ---\n\
                 \x20docs/tool.md | 2 +-\n\
                 \n\
                 diff --git a/docs/tool.md b/docs/tool.md\n\
                 --- a/docs/tool.md\n\
                 +++ b/docs/tool.md\n\
                 @@ -1 +1 @@\n\
                 -old\n\
                 +new\n";
    std::fs::write(
        patches.join(format!("{next:04}-note-the-tool.patch")),
        patch,
    )
    .unwrap();
    let (code, out) = adopt(&demo, &["--dir", "patches-rocm"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("does not apply"), "{out}");
    assert!(
        out.contains("list them as `core_files = [...]` under `[overlay]` in forkbook.toml"),
        "{out}"
    );
    assert!(out.contains("`docs/tool.md`"), "{out}");
    assert!(!out.contains("panicked"), "{out}");
}

/// The files the demo's series touches outside the backend folder, sorted.
fn patched_outside_backend(demo: &Demo) -> Vec<String> {
    let patches = demo.records().join("patches");
    let mut out = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(patches).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines() {
            if let Some(path) = line.strip_prefix("+++ b/") {
                if !path.starts_with("mlx/backend/rocm/") {
                    out.insert(path.to_string());
                }
            }
        }
    }
    out.into_iter().collect()
}
