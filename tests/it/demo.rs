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
    let page = std::fs::read_to_string(dir.join("project/book/book/pin-bump.html")).unwrap();
    assert!(
        page.contains("forkbook retarget"),
        "the pin-bump chapter ran its steps"
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
            .env_remove("FORKBOOK_FORK_URL")
            .env_remove("FORKBOOK_UPSTREAM_URL")
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
                "cargo install --path ." => {
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
        ["cargo install --path .", "forkbook demo"],
        "{ran:?}"
    );
    let demo_output = demo_output.expect("the README runs the demo");
    let next: Vec<&str> = demo_output
        .lines()
        .filter_map(|l| l.strip_prefix("next: "))
        .collect();
    assert!(next.len() >= 3, "{demo_output}");
    assert!(
        next.iter().skip(1).all(|c| c.starts_with("forkbook ")),
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
}
