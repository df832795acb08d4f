//! `forkbook demo`, the README's first command: it runs end to end with no network and leaves a
//! built book behind.

use std::process::Command;

#[test]
fn demo_runs_every_step_and_builds_the_book() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let out = Command::new(env!("CARGO_BIN_EXE_forkbook"))
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
    assert!(text.contains("7 break(s)"), "{text}");
    assert!(text.contains("built the book into"), "{text}");
    let page = std::fs::read_to_string(dir.join("project/book/book/pin-bump.html")).unwrap();
    assert!(
        page.contains("forkbook retarget"),
        "the pin-bump chapter ran its steps"
    );
    let again = Command::new(env!("CARGO_BIN_EXE_forkbook"))
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
