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

/// Builds a one-chapter book (shell steps allowed) in `<project>/book` with `forkbook book build`
/// in process; returns (exit status, output, the chapter's HTML).
fn build_book(demo: &Demo, chapter: &str) -> (i32, String, String) {
    let dir = demo.root().join("book");
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "book.toml",
        "[book]\ntitle = \"attacks\"\n\n[preprocessor.forkbook]\ncommand = \"forkbook mdbook\"\nallow-shell = true\n",
    );
    write("src/SUMMARY.md", "# Summary\n\n- [Steps](steps.md)\n");
    write("src/steps.md", chapter);
    let (code, out) = demo.run(&["book", "build", "--dir", dir.to_str().unwrap()]);
    let html = std::fs::read_to_string(dir.join("book/steps.html")).unwrap_or_default();
    (code, out, html)
}

/// The output boxes of a built chapter, in order: (status line, output).
fn results(html: &str) -> Vec<(String, String)> {
    html.split("<span class=\"forkbook-exit\">")
        .skip(1)
        .map(|part| {
            let status = part.split("</span>").next().unwrap_or("").to_string();
            let output = part
                .split("forkbook-output\">")
                .nth(1)
                .and_then(|o| o.split("</pre>").next())
                .unwrap_or("")
                .to_string();
            (status, output)
        })
        .collect()
}

/// Fails on main before issue 12: the guard only looked at the first word, so
/// `forkbook --json book build` built the book inside itself without end.
#[test]
fn a_book_step_cannot_build_test_or_serve_a_book_whatever_its_flags_order() {
    let demo = Demo::new(Layout::Patch);
    let root = demo.root().display().to_string();
    let commands = [
        "book build".to_string(),
        "--json book build".to_string(),
        "book --json build".to_string(),
        "book --json test".to_string(),
        "--json book serve".to_string(),
        format!("book build --dir {root}/book"),
        "mdbook supports html".to_string(),
        "--json mdbook".to_string(),
    ];
    let exe = env!("CARGO_BIN_EXE_forkbook");
    let mut chapter = String::from("# Steps\n\n");
    for command in &commands {
        chapter.push_str(&format!(
            "```forkbook,timeout=20\nforkbook {command}\n```\n\n"
        ));
    }
    // The same rule for a shell step that runs this forkbook.
    for command in &commands {
        chapter.push_str(&format!("```sh,run,timeout=20\n'{exe}' {command}\n```\n\n"));
    }
    chapter.push_str("```forkbook\nforkbook --json status\n```\n");
    let (code, out, html) = build_book(&demo, &chapter);
    assert_eq!(code, 0, "{out}");
    let results = results(&html);
    assert_eq!(results.len(), commands.len() * 2 + 1, "{html}");
    for (index, (status, output)) in results.iter().enumerate().take(commands.len() * 2) {
        let command = &commands[index % commands.len()];
        assert!(
            status.starts_with("exit 2"),
            "step {index} ({command}): {status}: {output}"
        );
        assert!(
            output.contains("a book step cannot run"),
            "step {index} ({command}): {output}"
        );
    }
    let (status, output) = results.last().unwrap();
    assert!(
        status.starts_with("exit 0"),
        "other commands still run from a step: {status} {output}"
    );
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| !r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

fn pids_in(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// Fails on main before issue 12: a `setsid` child kept a `timeout=2` step alive (45 s in the
/// report), and `verify` killed only `sh` at its timeout, leaving its children running.
#[test]
fn a_setsid_or_background_grandchild_does_not_outlive_a_timed_out_step() {
    let demo = Demo::new(Layout::Patch);
    let script = |pids: &Path| {
        format!(
            "setsid sh -c 'echo $$ >> {0}; exec sleep 120' & (sleep 120 & echo $! >> {0}); sleep 0.3; echo printed before the timeout; sleep 120",
            pids.display()
        )
    };
    let book_pids = demo.tmp.path().join("pids-book");
    let started = std::time::Instant::now();
    let chapter = format!(
        "# Steps\n\n```sh,run,timeout=2\n{}\n```\n",
        script(&book_pids)
    );
    let (code, out, html) = build_book(&demo, &chapter);
    let took = started.elapsed();
    assert_eq!(code, 0, "{out}");
    assert!(
        took < std::time::Duration::from_secs(20),
        "the book took {took:?}"
    );
    let results = results(&html);
    assert_eq!(results.len(), 1, "{html}");
    assert!(results[0].0.starts_with("exit 124"), "{:?}", results[0]);
    assert!(
        results[0].1.contains("printed before the timeout"),
        "what it printed so far: {:?}",
        results[0]
    );
    assert!(
        results[0].1.contains("timed out after 2 s"),
        "{:?}",
        results[0]
    );

    let verify_pids = demo.tmp.path().join("pids-verify");
    let started = std::time::Instant::now();
    let outcome = forkbook::engine::verify::run_shell(
        &script(&verify_pids),
        demo.root(),
        std::time::Duration::from_secs(2),
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let why = outcome.expect_err("a timed-out verify step is a failure");
    assert!(
        why.contains("timed out after 2 s") && why.contains("printed before the timeout"),
        "{why}"
    );

    std::thread::sleep(std::time::Duration::from_millis(300));
    for (runner, file) in [("book", &book_pids), ("verify", &verify_pids)] {
        let pids = pids_in(file);
        assert_eq!(pids.len(), 2, "{runner}: {pids:?}");
        for pid in pids {
            assert!(!alive(pid), "{runner}: process {pid} outlived the step");
        }
    }
}

/// The forkbook binary on the demo, killed after 30 s so a hang fails the test instead of
/// stopping it: (exit status, everything printed).
fn run_binary(demo: &Demo, args: &[&str]) -> (Option<i32>, String) {
    use std::process::Stdio;
    let mut child = crate::common::forkbook_command()
        .arg("--root")
        .arg(demo.root())
        .arg("--cache")
        .arg(&demo.demo.cache)
        .args(args)
        .env_remove("FORKBOOK_CACHE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            return (None, "hung: killed after 30 s".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// Each fails on main before issue 12: a FIFO as `pin_file` hung `check`; `backend_prefix = ""`
/// silently made the whole fork tree the backend; a records folder that is a link was silently
/// replaced by a real folder.
#[test]
fn odd_settings_and_folders_are_refused_with_a_clear_error() {
    let demo = Demo::new(Layout::Patch);
    let config = demo.root().join("forkbook.toml");
    let original = std::fs::read_to_string(&config).unwrap();

    let fifo = demo.root().join("pin.fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
    let with_pin = original.replace("[overlay]\n", "[overlay]\npin_file = \"pin.fifo\"\n");
    std::fs::write(&config, &with_pin).unwrap();
    let (code, out) = run_binary(&demo, &["check"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("pin.fifo") && out.contains("not a regular file"),
        "{out}"
    );

    let empty = original.replace(
        "backend_prefix = \"mlx/backend/rocm/\"",
        "backend_prefix = \"\"",
    );
    assert_ne!(empty, original);
    std::fs::write(&config, &empty).unwrap();
    let (code, out) = run_binary(&demo, &["status"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("backend_prefix") && out.contains("empty"),
        "{out}"
    );
    std::fs::write(&config, &original).unwrap();

    let real = demo.tmp.path().join("real-records");
    std::fs::rename(demo.records(), &real).unwrap();
    std::os::unix::fs::symlink(&real, demo.records()).unwrap();
    let before = snapshot(&real);
    let f2 = demo.fork(2).to_string();
    let (code, out) = run_binary(&demo, &["sync", &f2]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("is a link"), "{out}");
    assert!(std::fs::symlink_metadata(demo.records())
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(
        snapshot(&real) == before,
        "the records behind the link are unchanged"
    );
}

/// Fails on main before issue 12: a file name with a backtick gave a `Files:` line whose code
/// span ended inside the name, so the register named a file that does not exist.
#[test]
fn fix_add_names_a_file_with_backticks_exactly() {
    let demo = Demo::new(Layout::Patch);
    let out_dir = demo.tmp.path().join("mat");
    let (code, out) = demo.run(&["materialize", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let name = "mlx/backend/rocm/we`ird``name.txt";
    std::fs::write(out_dir.join(name), "x\n").unwrap();
    let (code, out) = demo.run(&[
        "fix",
        "add",
        "--from",
        out_dir.to_str().unwrap(),
        "--title",
        "odd name",
    ]);
    assert_eq!(code, 0, "{out}");
    let text = demo.read("LOCAL_FIXES.md");
    let register = forkbook::engine::register::parse("LOCAL_FIXES.md", &text);
    let entry = register.entries.last().unwrap();
    let files: Vec<&str> = entry.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(files, [name], "{text}");
}

/// A title is shown on terminals and pages, heads the patch and becomes a pull request's title:
/// `fix add` refuses one with a control character (naming the flag), and writes nothing; a
/// register whose title holds one fails `check` at the title's line, the character shown
/// escaped, never sent to the terminal.
#[test]
fn a_title_with_a_control_character_is_refused_and_reported() {
    let demo = Demo::new(Layout::Patch);
    let out_dir = demo.tmp.path().join("mat");
    let (code, out) = demo.run(&["materialize", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    std::fs::write(out_dir.join("mlx/backend/rocm/new.txt"), "x\n").unwrap();
    let before = snapshot(&demo.records());
    let (code, out) = demo.run(&[
        "fix",
        "add",
        "--from",
        out_dir.to_str().unwrap(),
        "--title",
        "Fix \u{1b}]0;owned\u{7} the title",
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("`--title` holds the control character"),
        "{out}"
    );
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert_eq!(snapshot(&demo.records()), before, "nothing written");

    let path = demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (heading_line, heading) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("## 2. "))
        .unwrap();
    let hostile = heading.replacen("## 2. ", "## 2. \u{1b}[2J", 1);
    std::fs::write(&path, text.replacen(heading, &hostile, 1)).unwrap();
    let (code, out) = demo.run(&["check", "--verbose"]);
    assert_eq!(code, 1, "{out}");
    let at = format!("LOCAL_FIXES.md:{}", heading_line + 1);
    let finding = out
        .lines()
        .find(|l| l.contains("entry 2: the title holds the control character"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(out.contains(&at), "{out}");
    assert!(finding.contains("\\u{1b}"), "{finding}");
    assert!(!out.contains('\u{1b}'), "{out:?}");
}

/// Fails on main before this change (issue 40.1 again): forkbook runs before mdBook's links
/// preprocessor (mdBook orders them by name), so a book.toml variable holding an include
/// (`leak = "{{#include ../../secret.txt}}"`, a page saying `{{leak}}`, in prose or in a step's
/// command) put the file into the site: the bounds read the page before the variables were
/// filled in. Now the page is read as mdBook's links preprocessor reads it, and the build is
/// refused, naming the page and line, before any step runs.
#[test]
fn a_variable_holding_an_include_is_held_to_the_book_folder() {
    let demo = Demo::new(Layout::Patch);
    let book = demo.root().join("book");
    std::fs::write(demo.root().join("secret.txt"), "SECRET-FROM-OUTSIDE\n").unwrap();
    let ran = demo.tmp.path().join("the-step-ran");
    let write = |rel: &str, text: &str| {
        let path = book.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("src/SUMMARY.md", "# Summary\n\n- [Steps](steps.md)\n");
    let step = format!("```sh,run\ntouch '{}'\n```\n", ran.display());
    for (value, page, line) in [
        ("{{#include ../../secret.txt}}", "In prose: {{leak}}\n", 3),
        ("{{ #playground ../../secret.txt }}", "{{leak}}\n", 3),
        (
            "{{#rustdoc_include ../../secret.txt}}",
            "```sh,run\necho {{leak}}\n```\n",
            4,
        ),
    ] {
        write(
            "book.toml",
            &format!(
                "[book]\ntitle = \"steps\"\n\n[preprocessor.forkbook]\ncommand = \"forkbook mdbook\"\n\
                 allow-shell = true\n\n[preprocessor.forkbook.vars]\nleak = \"{value}\"\n"
            ),
        );
        write("src/steps.md", &format!("# Steps\n\n{page}\n{step}"));
        let (code, out) = demo.run(&["book", "build", "--dir", book.to_str().unwrap()]);
        assert_eq!(code, 2, "{value} in {page:?}: {out}");
        assert!(
            out.contains(&format!(
                "src/steps.md:{line} includes `../../secret.txt`, outside the book folder"
            )),
            "{out}"
        );
        assert!(!ran.exists(), "a step ran before the refusal");
        let site = book.join("book/steps.html");
        let html = std::fs::read_to_string(site).unwrap_or_default();
        assert!(!html.contains("SECRET-FROM-OUTSIDE"), "{html}");
    }
    // The same include given as `--var` (or `FORKBOOK_VAR_leak`, which CI may build from other
    // text): the bounds read the page with the run's own variables. Failed before 5e2e161,
    // which read book.toml's alone: the file went into the site.
    write(
        "book.toml",
        "[book]\ntitle = \"steps\"\n\n[preprocessor.forkbook]\ncommand = \"forkbook mdbook\"\n",
    );
    write("src/steps.md", "# Steps\n\nIn prose: {{leak}}\n");
    let dir = book.to_str().unwrap();
    let leak = "leak={{#include ../../secret.txt}}";
    let (code, out) = demo.run(&["book", "build", "--dir", dir, "--var", leak]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("src/steps.md:3 includes `../../secret.txt`, outside the book folder"),
        "{out}"
    );
    let html = std::fs::read_to_string(book.join("book/steps.html")).unwrap_or_default();
    assert!(!html.contains("SECRET-FROM-OUTSIDE"), "{html}");
}
