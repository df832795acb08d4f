//! The gate tells the truth (issue 11): conflict markers left by `sync` or `retarget` fail every
//! command that judges the overlay, naming the file and line; once they are resolved as a local
//! fix every one of them passes, and the previews at the recorded commits exit 0.

use crate::common::Demo;
use forkbook::engine::config::Layout;

const LAYOUTS: [Layout; 2] = [Layout::Patch, Layout::Files];

/// A book of gated steps and the book-wide gate, in `<project>/book`.
fn write_gate_book(demo: &Demo) -> String {
    let dir = demo.root().join("book");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("book.toml"),
        "[book]\ntitle = \"gate\"\n\n[preprocessor.forkbook]\ncommand = \"forkbook mdbook\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/SUMMARY.md"),
        "# Summary\n\n- [Gate](gate.md)\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/gate.md"),
        "# Gate\n\n```forkbook,gate\nforkbook sync --check\n```\n\n```forkbook,gate\nforkbook check\n```\n",
    )
    .unwrap();
    dir.to_string_lossy().into_owned()
}

/// The lines of `path` in the materialized overlay where a conflict region starts.
fn region_starts(demo: &Demo, path: &str) -> Vec<usize> {
    demo.materialized(path)
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("<<<<<<< "))
        .map(|(i, _)| i + 1)
        .collect()
}

/// Every judging command fails and names `shown:line` for the regions left in overlay file
/// `path` (`shown` is the file as the user opens it: the records' copy in the files layout).
fn assert_every_gate_fails_on(demo: &Demo, path: &str, shown: &str) {
    let starts = region_starts(demo, path);
    assert!(!starts.is_empty(), "{path} holds markers");
    let place = |line: usize| format!("{shown}:{line}");
    let book = write_gate_book(demo);
    for args in [
        vec!["check"],
        vec!["sync", "--check"],
        vec!["status"],
        vec!["verify"],
        vec!["book", "build", "--dir", &book],
        vec!["book", "test", "--dir", &book],
    ] {
        let (code, out) = demo.run(&args);
        assert_eq!(code, 1, "`{}` fails on the markers: {out}", args.join(" "));
        assert!(
            out.contains(&place(starts[0])),
            "`{}` names {}: {out}",
            args.join(" "),
            place(starts[0])
        );
    }
    let (_, out) = demo.run(&["check"]);
    for line in &starts {
        assert!(
            out.contains(&format!("{}: error[no-conflict-markers]", place(*line))),
            "{out}"
        );
    }
    // A move from this overlay is refused, naming the file, unless asked for.
    let pin = demo.read("UPSTREAM");
    let (code, out) = demo.run(&["sync", demo.fork(3)]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("the overlay still has conflict markers"),
        "{out}"
    );
    assert!(out.contains(path), "{out}");
    assert!(out.contains("--allow-conflicts"), "{out}");
    assert_eq!(demo.read("UPSTREAM"), pin, "a refused move writes nothing");
    let (code, out) = demo.run(&["sync", demo.fork(3), "--check", "--allow-conflicts"]);
    assert_ne!(code, 2, "--allow-conflicts lets the preview run: {out}");
}

/// Resolves every region of `path` (both sides kept, markers dropped) in a materialized copy
/// and records it as the next fix with its state, as a user would.
fn resolve_as_a_fix(demo: &Demo, path: &str) {
    resolve_as_a_fix_titled(demo, path, "Resolve the conflict keeping both sides");
}

/// [`resolve_as_a_fix`] with the fix's title given.
pub fn resolve_as_a_fix_titled(demo: &Demo, path: &str, title: &str) {
    let copy = demo.tmp.path().join("resolved");
    let _ = std::fs::remove_dir_all(&copy);
    let (code, out) = demo.run(&["materialize", "--out", copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let file = copy.join(path);
    let text = std::fs::read_to_string(&file).unwrap();
    let mut in_base = false;
    let mut kept = String::new();
    for line in text.lines() {
        let marker = |c: &str| line.starts_with(&c.repeat(7));
        if marker("|") {
            in_base = true;
        } else if marker("=") {
            in_base = false;
        } else if !(marker("<") || marker(">") || in_base) {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    std::fs::write(&file, kept).unwrap();
    let (code, out) = demo.run(&[
        "fix",
        "add",
        "--from",
        copy.to_str().unwrap(),
        "--title",
        title,
    ]);
    assert_eq!(code, 0, "{out}");
    let register = demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&register).unwrap();
    let todo = "- state: TODO, one of retarget-only (with - cause:), to-propose, proposed (with - link: and - package:), merged (with - link: and - fork-commit:), kept-local (with - reason: and - issue:)\n";
    let state = "- state: kept-local\n- reason: the resolution of a sync conflict\n- issue: #11\n";
    assert!(text.contains(todo), "{text}");
    std::fs::write(&register, text.replace(todo, state)).unwrap();
}

/// After the resolution: every judging command passes, and so do the previews at the recorded
/// commits, which name the resolved conflicts by their fix.
fn assert_every_gate_passes(demo: &Demo, drift_breaks: bool) {
    let book = write_gate_book(demo);
    for args in [
        vec!["check"],
        vec!["sync", "--check"],
        vec!["status"],
        vec!["book", "build", "--dir", &book],
        vec!["book", "test", "--dir", &book],
    ] {
        let (code, out) = demo.run(&args);
        assert_eq!(code, 0, "`{}` passes once resolved: {out}", args.join(" "));
    }
    let (code, out) = demo.run(&["verify"]);
    if drift_breaks {
        // Pin 2 still breaks the backend's API (its own test, verify.rs): only that fails.
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("checks                       passed"), "{out}");
        assert!(out.contains("sync --check                 passed"), "{out}");
        assert!(out.contains("drift api (base to pin)      FAILED"), "{out}");
    } else {
        assert_eq!(code, 0, "{out}");
    }
    let upstream = demo.read("UPSTREAM");
    let recorded = |key: &str| {
        upstream
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("no {key} in {upstream}"))
    };
    let fork = recorded("commit:");
    let pin = upstream
        .lines()
        .find_map(|l| l.strip_prefix("retargeted_to_mlx_pin:"))
        .map_or_else(|| recorded("base:"), |v| v.trim().to_string());
    for args in [
        vec!["retarget", pin.as_str(), "--check"],
        vec!["sync", fork.as_str(), "--check"],
    ] {
        let (code, out) = demo.run(&args);
        assert_eq!(
            code,
            0,
            "`{}` at the recorded commits: {out}",
            args.join(" ")
        );
        assert!(!out.contains("CONFLICT"), "{out}");
    }
}

#[test]
fn markers_left_by_sync_fail_every_gate_until_resolved_as_a_fix() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let (code, out) = demo.run(&["sync", demo.fork(2)]);
        assert_eq!(code, 1, "{layout:?}: {out}");
        let eval = "mlx/backend/rocm/eval.cpp";
        let shown = match layout {
            Layout::Patch => eval.to_string(),
            Layout::Files => format!("patches-rocm/tree/{eval}"),
        };
        let starts = region_starts(&demo, eval);
        assert!(
            out.contains(&format!("{eval}:{}", starts[0])),
            "the sync names where it left the markers: {out}"
        );
        assert_every_gate_fails_on(&demo, eval, &shown);
        resolve_as_a_fix(&demo, eval);
        assert_every_gate_passes(&demo, false);
    }
}

#[test]
fn markers_left_by_retarget_fail_every_gate_until_resolved_as_a_fix() {
    for layout in LAYOUTS {
        let demo = Demo::new(layout);
        let pin2 = demo.demo.world.pin2.clone();
        let (code, out) = demo.run(&["retarget", &pin2]);
        assert_eq!(code, 1, "{layout:?}: {out}");
        let device = "mlx/device.cpp";
        let shown = match layout {
            Layout::Patch => device.to_string(),
            Layout::Files => format!("patches-rocm/tree/{device}"),
        };
        assert_every_gate_fails_on(&demo, device, &shown);
        resolve_as_a_fix(&demo, device);
        assert_every_gate_passes(&demo, true);
        let (_, out) = demo.run(&["retarget", &pin2, "--check"]);
        assert!(
            out.contains("mlx/device.cpp: pin vs fork (1 region), resolved by fix 5"),
            "{layout:?}: {out}"
        );
    }
}

/// Without the objects of the recorded commits, the acceptance gate does not pass what it could
/// not check: `book test` fails, saying the checks could not run and naming the fetch that gets
/// the objects; a preview `book build` shows the steps as skipped with their fetch commands.
#[test]
fn the_acceptance_gate_fails_when_the_overlay_checks_could_not_run() {
    let demo = Demo::new(Layout::Patch);
    let book = write_gate_book(&demo);
    let empty = demo.root().join("empty-cache.git");
    let run = |subcommand: &str| {
        let overrides = forkbook::engine::project::Overrides {
            cache: Some(empty.clone()),
            offline: true,
            tool_path: Some(crate::common::tool_path().into()),
            ..Default::default()
        };
        let args = forkbook::cli::argv(
            demo.root(),
            &overrides,
            ["book", subcommand, "--dir", book.as_str()],
        );
        let mut out = Vec::new();
        let code = forkbook::cli::run(args, &mut out);
        (code, String::from_utf8_lossy(&out).into_owned())
    };
    let (code, out) = run("test");
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("the checks could not run"), "{out}");
    assert!(out.contains("forkbook fetch"), "{out}");
    let (code, out) = run("build");
    assert_eq!(code, 0, "a preview build shows what is missing: {out}");
    assert!(out.contains("skipped"), "{out}");
}

/// Fails on main before this change: a change that took `mlx/fast.cpp` out of `[overlay]
/// core_files`, put a line of its own into the file and wrote the lock again passed every check
/// and `book test`, since nothing held a file outside the backend that is no core file against
/// anything. In the patch layout a fix that adds such a file is the same case.
#[test]
fn an_overlay_file_that_is_neither_backend_nor_core_fails_the_gate() {
    let demo = Demo::new(Layout::Files);
    let config = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace(", \"mlx/fast.cpp\"]", "]")).unwrap();
    let fast = demo.records().join("tree/mlx/fast.cpp");
    let mut bytes = std::fs::read(&fast).unwrap();
    bytes.extend_from_slice(b"static int taken = std::system(\"id\");\n");
    std::fs::write(&fast, &bytes).unwrap();
    let lock = demo.records().join("overlay.lock");
    let relocked: String = std::fs::read_to_string(&lock)
        .unwrap()
        .lines()
        .map(|line| match line.strip_suffix("  mlx/fast.cpp") {
            Some(_) => format!("{}  mlx/fast.cpp\n", sha256(&bytes)),
            None => format!("{line}\n"),
        })
        .collect();
    std::fs::write(&lock, relocked).unwrap();
    let book = write_gate_book(&demo);
    for args in [vec!["check"], vec!["book", "test", "--dir", &book]] {
        let (code, out) = demo.run(&args);
        assert_eq!(code, 1, "`{}`: {out}", args.join(" "));
        assert!(
            out.contains("`mlx/fast.cpp` is an overlay file outside the backend folder"),
            "`{}`: {out}",
            args.join(" ")
        );
    }

    let demo = Demo::new(Layout::Patch);
    let copy = demo.tmp.path().join("copy");
    let (code, out) = demo.run(&["materialize", "--out", copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    std::fs::write(copy.join("mlx/extra.cpp"), "int extra() { return 1; }\n").unwrap();
    let (code, out) = demo.run(&[
        "fix",
        "add",
        "--from",
        copy.to_str().unwrap(),
        "--title",
        "Add a file beside MLX's own",
    ]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("error[overlay-files-in-scope]: `mlx/extra.cpp`"),
        "{out}"
    );
}

/// The SHA-256 of `bytes` in hex, as the lock writes it.
fn sha256(bytes: &[u8]) -> String {
    forkbook::engine::records::sha256_hex(bytes)
}

/// `UPSTREAM` naming another fork than the one the checks read passed every check before, and
/// `sync --check` said every record was reproduced: the record sent a reader to code nobody
/// checked. Now both the `source` and the `branch` line are errors at their lines.
#[test]
fn an_upstream_record_naming_another_fork_fails_the_gate() {
    let demo = Demo::new(Layout::Patch);
    let upstream = demo.records().join("UPSTREAM");
    let text = std::fs::read_to_string(&upstream).unwrap();
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 0, "{out}");
    let forged: String = text
        .lines()
        .map(|line| match line.split_once(": ") {
            Some(("source", _)) => "source: https://github.com/someone/mlx\n".to_string(),
            Some(("branch", _)) => "branch: other\n".to_string(),
            _ => format!("{line}\n"),
        })
        .collect();
    std::fs::write(&upstream, forged).unwrap();
    let book = write_gate_book(&demo);
    for args in [vec!["check"], vec!["book", "test", "--dir", &book]] {
        let (code, out) = demo.run(&args);
        assert_eq!(code, 1, "`{}`: {out}", args.join(" "));
        for wrong in ["UPSTREAM:1: error[upstream-names-the-fork]: `source` names `https://github.com/someone/mlx`",
            "UPSTREAM:2: error[upstream-names-the-fork]: `branch` names `other`"] {
            assert!(out.contains(wrong), "`{}`: {out}", args.join(" "));
        }
    }
    // `sync --check` no longer says the record is reproduced; `sync` writes the fork it read.
    let (code, out) = demo.run(&["sync", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("UPSTREAM"), "{out}");
    let commit = text
        .lines()
        .find_map(|l| l.strip_prefix("commit: "))
        .unwrap();
    let (code, out) = demo.run(&["sync", commit]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(std::fs::read_to_string(&upstream).unwrap(), text);
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 0, "{out}");
}

/// A `merged` entry whose `fork-commit` the fork does not hold passed every check before: the
/// register claimed the fork had a fix that was still only ours.
#[test]
fn a_merged_entry_naming_a_commit_the_fork_does_not_hold_fails_the_gate() {
    let demo = Demo::new(Layout::Patch);
    let register = demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&register).unwrap();
    let upstream = std::fs::read_to_string(demo.records().join("UPSTREAM")).unwrap();
    let fork = upstream
        .lines()
        .find_map(|l| l.strip_prefix("commit: "))
        .unwrap();
    let merged_at = |commit: &str| {
        let proposed = "- state: proposed\n- link: https://github.com/NripeshN/mlx/pull/101\n";
        assert!(text.contains(proposed), "{text}");
        let merged = proposed.replace("proposed", "merged") + &format!("- fork-commit: {commit}\n");
        std::fs::write(&register, text.replacen(proposed, &merged, 1)).unwrap();
    };
    merged_at(fork);
    let (code, out) = demo.run(&["check"]);
    assert_eq!(
        code, 0,
        "the recorded fork commit holds what it holds: {out}"
    );
    let made_up = "1".repeat(40);
    merged_at(&made_up);
    let book = write_gate_book(&demo);
    for args in [vec!["check"], vec!["book", "test", "--dir", &book]] {
        let (code, out) = demo.run(&args);
        assert_eq!(code, 1, "`{}`: {out}", args.join(" "));
        let wrong =
            format!("error[fork-commit-on-fork]: entry 2 says the fork holds it at `{made_up}`");
        assert!(out.contains(&wrong), "`{}`: {out}", args.join(" "));
    }
}

/// The README's reason for a fork hook the overlay leaves out, put in an HTML comment where no
/// reader sees it, still explained the hook before.
#[test]
fn a_reason_hidden_in_a_comment_explains_no_fork_hook() {
    let demo = Demo::new(Layout::Patch);
    let readme = demo.records().join("README.md");
    let text = std::fs::read_to_string(&readme).unwrap();
    let reason = "- `mlx/backend/cuda/eval.cpp`:";
    assert!(text.contains(reason), "{text}");
    let hidden = text
        .replace(reason, &format!("<!--\n{reason}"))
        .trim_end()
        .to_string()
        + "\n-->\n";
    std::fs::write(&readme, hidden).unwrap();
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 0, "a warning: {out}");
    assert!(
        out.contains("warning[fork-hooks-explained]: the fork changes `mlx/backend/cuda/eval.cpp`"),
        "{out}"
    );
}
