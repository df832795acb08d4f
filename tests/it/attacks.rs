//! Attacks and careless use from issue 12, each as a user would meet it: folders forkbook must
//! not replace, links and markup that must not become live in HTML, control characters that
//! must not reach a terminal, book steps that must not build the book inside itself, timeouts
//! that must stop everything a step started, and record writes that must not truncate.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use std::collections::BTreeMap;
use std::path::Path;

/// Every file below `dir` with its bytes (folders as `name/`).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    fn walk(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if entry.file_type().unwrap().is_dir() {
                out.insert(format!("{name}/"), Vec::new());
                walk(&entry.path(), &format!("{name}/"), out);
            } else {
                out.insert(name, std::fs::read(entry.path()).unwrap());
            }
        }
    }
    walk(dir, "", &mut out);
    out
}

/// Fails on main before issue 12: `materialize --out` and `export-tree --dest` replaced any
/// folder (notes, the records, the project itself) and exited 0.
#[test]
fn materialize_and_export_replace_only_folders_forkbook_wrote() {
    let demo = Demo::new(Layout::Patch);
    let notes = demo.tmp.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("todo.md"), "my notes\n").unwrap();
    let project_before = snapshot(demo.root());
    for command in ["materialize", "export-tree"] {
        let flag = if command == "materialize" {
            "--out"
        } else {
            "--dest"
        };
        let (code, out) = demo.run(&[command, flag, notes.to_str().unwrap()]);
        assert_eq!(code, 2, "{command} into a folder of notes: {out}");
        assert!(out.contains("notes") && out.contains("--force"), "{out}");
        assert_eq!(
            std::fs::read_to_string(notes.join("todo.md")).unwrap(),
            "my notes\n"
        );

        for (what, target) in [
            ("the records folder", demo.records()),
            ("the project root", demo.root().to_path_buf()),
            (
                "a folder holding the project",
                demo.tmp.path().to_path_buf(),
            ),
            ("a folder inside the records", demo.records().join("sub")),
            (
                "the records through `..`",
                demo.records().join("patches").join(".."),
            ),
        ] {
            for force in [false, true] {
                let mut args = vec![command, flag, target.to_str().unwrap()];
                if force {
                    args.push("--force");
                }
                let (code, out) = demo.run(&args);
                assert_eq!(code, 2, "{command} into {what} (force {force}): {out}");
                assert!(out.contains("never replaces"), "{what}: {out}");
                assert!(out.contains("refusing to write into"), "{what}: {out}");
            }
        }
        assert!(
            snapshot(demo.root()) == project_before,
            "{command}: the project is untouched"
        );

        let file = demo.tmp.path().join("a-file.txt");
        std::fs::write(&file, "keep me\n").unwrap();
        let (code, out) = demo.run(&[command, flag, file.to_str().unwrap(), "--force"]);
        assert_eq!(code, 2, "{command} onto a file: {out}");
        assert!(out.contains("it is a file"), "{out}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me\n");
        let left: Vec<String> = std::fs::read_dir(demo.tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("forkbook-new"))
            .collect();
        assert_eq!(left, Vec::<String>::new(), "nothing was moved aside");

        let fresh = demo.tmp.path().join(format!("fresh-{command}"));
        let empty = demo.tmp.path().join(format!("empty-{command}"));
        std::fs::create_dir_all(&empty).unwrap();
        for target in [&fresh, &empty] {
            for round in 0..2 {
                let (code, out) = demo.run(&[command, flag, target.to_str().unwrap()]);
                assert_eq!(
                    code,
                    0,
                    "{command} round {round} into {}: {out}",
                    target.display()
                );
            }
            assert!(target.join("CMakeLists.txt").is_file());
        }
        let (code, out) = demo.run(&[command, flag, notes.to_str().unwrap(), "--force"]);
        assert_eq!(code, 0, "{command} --force into notes: {out}");
        assert!(
            !notes.join("todo.md").exists(),
            "--force replaces the folder whole"
        );
        std::fs::remove_dir_all(&notes).unwrap();
        std::fs::create_dir_all(&notes).unwrap();
        std::fs::write(notes.join("todo.md"), "my notes\n").unwrap();
    }
    // A sync asked to materialize into the notes refuses before its records move.
    let f2 = demo.fork(2).to_string();
    let (code, out) = demo.run(&["sync", &f2, "--out", notes.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(
        snapshot(demo.root()) == project_before,
        "sync moved nothing"
    );
}

/// The marker `materialize` leaves is not an edit: a copy edited and recorded carries only the edit.
#[test]
fn the_written_marker_is_not_recorded_as_a_fix() {
    let demo = Demo::new(Layout::Patch);
    let out_dir = demo.tmp.path().join("mat");
    let (code, out) = demo.run(&["materialize", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out_dir
        .join(forkbook::engine::fsutil::WRITTEN_MARKER)
        .is_file());
    std::fs::write(out_dir.join("mlx/backend/rocm/extra.txt"), "new\n").unwrap();
    let (code, out) = demo.run(&[
        "fix",
        "add",
        "--from",
        out_dir.to_str().unwrap(),
        "--title",
        "add extra",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("touching mlx/backend/rocm/extra.txt\n"),
        "{out}"
    );
}
