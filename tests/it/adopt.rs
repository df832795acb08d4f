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
    let (code, out) = demo.run(&["sync", "--check"]);
    assert_eq!(code, 0, "{out}");
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
