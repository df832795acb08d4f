//! Adopting an overlay as its project keeps it (issue 10): whole files in the records folder
//! beside `UPSTREAM`, a README whose counts are prose, a `CORE_RESIDUAL.diff` with notes, and
//! `forkbook adopt` itself. Every fixture is the demo world's overlay reshaped by hand into the
//! shape a real project has, with text of our own.

use crate::common::Demo;
use forkbook::engine::config::Layout;

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
fn sync_and_fix_add_write_whole_files_where_they_are() {
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
