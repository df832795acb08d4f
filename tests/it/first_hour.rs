//! What a newcomer meets in the first hour: `--help` that explains itself, errors as JSON with
//! `--json`, a closed pipe that ends quietly, and `--root` mistakes named as such.

use std::io::Read;
use std::process::Stdio;

fn forkbook(args: &[&str]) -> (i32, String, String) {
    let out = crate::common::forkbook_command()
        .args(args)
        .env_remove("FORKBOOK_CACHE")
        .env_remove("FORKBOOK_FORK_URL")
        .env_remove("FORKBOOK_UPSTREAM_URL")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_puts_command_options_first_then_global_ones_and_explains_itself() {
    let (code, help, _) = forkbook(&["--help"]);
    assert_eq!(code, 0);
    for env in [
        "FORKBOOK_CACHE",
        "FORKBOOK_FORK_URL",
        "FORKBOOK_UPSTREAM_URL",
        "FORKBOOK_OFFLINE",
        "FORKBOOK_LOCK_WAIT",
    ] {
        assert!(help.contains(env), "{env} is shown: {help}");
    }
    assert!(
        help.contains("Exit status:\n  0  nothing wrong\n  1 "),
        "{help}"
    );
    assert!(help.contains("`forkbook demo`"), "{help}");
    assert!(
        help.contains("the base tree is"),
        "the term is defined: {help}"
    );

    let (code, help, _) = forkbook(&["materialize", "--help"]);
    assert_eq!(code, 0);
    let own = help.find("--out <DIR>").unwrap();
    let global = help.find("Global options:").unwrap();
    let root = help.find("--root <DIR>").unwrap();
    assert!(own < global && global < root, "{help}");
    assert!(!help.contains("(B "), "no undefined `B`: {help}");
    assert!(help.contains("Exit status: 0 nothing wrong"), "{help}");

    let (_, fix, _) = forkbook(&["fix", "--help"]);
    let (_, fixes, _) = forkbook(&["fixes", "--help"]);
    assert!(fix.contains("`fixes` works on the register"), "{fix}");
    assert!(fixes.contains("`fix add` records a new fix"), "{fixes}");

    let (_, report, _) = forkbook(&["report", "--help"]);
    assert_eq!(
        report.matches("HEAD").count(),
        1,
        "the default once: {report}"
    );
}

#[test]
fn with_json_errors_are_json_on_stdout_with_the_same_exit_status() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nowhere");
    let (code, out, err) = forkbook(&["--json", "--root", missing.to_str().unwrap(), "status"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.is_empty(), "{err}");
    let value: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(
        value["error"].as_str().unwrap().contains("does not exist"),
        "{value}"
    );
    assert!(
        value["note"].as_str().unwrap().contains("--root"),
        "{value}"
    );

    let (code, out, _) = forkbook(&["status", "--json", "--no-such-option"]);
    assert_eq!(code, 2);
    let value: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(
        value["error"]
            .as_str()
            .unwrap()
            .contains("--no-such-option"),
        "{value}"
    );
}

#[test]
fn root_mistakes_are_named_and_do_not_send_the_user_to_init() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nowhere");
    let (code, _, err) = forkbook(&["--root", missing.to_str().unwrap(), "status"]);
    assert_eq!(code, 2);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!err.contains("forkbook init"), "{err}");

    let (code, _, err) = forkbook(&["--root", tmp.path().to_str().unwrap(), "status"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("is not a forkbook project: it has no forkbook.toml"),
        "{err}"
    );
    assert!(
        err.contains("pass `--root` the folder that holds forkbook.toml"),
        "{err}"
    );
}

#[test]
fn a_closed_pipe_ends_quietly_with_status_zero() {
    let mut child = crate::common::forkbook_command()
        .args(["check", "--list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before forkbook writes, as `| head -0` would.
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
}
