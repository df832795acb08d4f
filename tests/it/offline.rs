//! Offline first: `check` runs every record check with no objects and no network, names the
//! checks that need the objects with the command that gets them, and never fetches unasked.

use forkbook_checks::Needs;
use std::path::Path;
use std::time::{Duration, Instant};

/// A URL that fails at once if anything tries it: nothing listens on port 9 of this machine.
const NO_NETWORK: &str = "https://127.0.0.1:9/nothing.git";

/// `forkbook ARGS` as a user runs it, in `root`, with an empty cache and no usable network.
fn forkbook(root: &Path, cache: &Path, args: &[&str]) -> (i32, String, String, Duration) {
    let started = Instant::now();
    let out = crate::common::forkbook_command()
        .args(args)
        .current_dir(root)
        .env_remove("FORKBOOK_OFFLINE")
        .env("FORKBOOK_CACHE", cache)
        .env("FORKBOOK_FORK_URL", NO_NETWORK)
        .env("FORKBOOK_UPSTREAM_URL", NO_NETWORK)
        .output()
        .unwrap();
    let took = started.elapsed();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        took,
    )
}

fn this_repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn check_runs_the_record_checks_of_this_repository_with_an_empty_cache_and_no_network() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("empty-cache.git");
    let (code, out, err, took) = forkbook(this_repository(), &cache, &["check"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("skipped: the checks that need the base tree and the overlay"),
        "{out}"
    );
    for id in [
        "differing-file-named",
        "residual-hunks-noted",
        "fork-hooks-explained",
    ] {
        assert!(out.contains(&format!("\n  {id}\n")), "{id} named: {out}");
    }
    assert!(out.contains("to run them: run `forkbook fetch`"), "{out}");
    let all = forkbook_checks::CHECKS.len();
    let whole = forkbook_checks::CHECKS
        .iter()
        .filter(|c| c.needs == Needs::Objects { without: None })
        .count();
    let needing = forkbook_checks::CHECKS
        .iter()
        .filter(|c| forkbook_checks::needs_objects(c.id))
        .count();
    let part = needing - whole;
    // Every check the list names is counted: skipped whole, or run in part.
    let summary = format!(
        "{} of {all} checks ({whole} skipped, {part} run in part): all passed",
        all - whole
    );
    assert!(out.contains(&summary), "{summary}: {out}");
    // A read-only command makes no cache where there is none (it made an empty repository).
    assert!(!cache.exists(), "check created `{}`", cache.display());
    assert!(
        !out.contains("127.0.0.1") && !err.contains("127.0.0.1"),
        "{out}{err}"
    );
    // Measured on an idle machine in well under 50 ms; the bound only catches a fetch attempt.
    assert!(took < Duration::from_secs(5), "{took:?}");

    let (code, json, err, _) = forkbook(this_repository(), &cache, &["check", "--json"]);
    assert_eq!(code, 0, "{json}{err}");
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let skipped: Vec<&str> = report["skipped_checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = forkbook_checks::CHECKS
        .iter()
        .filter(|c| forkbook_checks::needs_objects(c.id))
        .map(|c| c.id)
        .collect();
    assert_eq!(skipped, expected);
    assert_eq!(report["errors"], 0);
}

#[test]
fn the_record_checks_really_run_without_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("project");
    let records = root.join("patches-rocm");
    std::fs::create_dir_all(records.join("patches")).unwrap();
    std::fs::copy(
        this_repository().join("forkbook.toml"),
        root.join("forkbook.toml"),
    )
    .unwrap();
    for entry in std::fs::read_dir(this_repository().join("patches-rocm/patches")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(
            entry.path(),
            records.join("patches").join(entry.file_name()),
        )
        .unwrap();
    }
    for name in ["UPSTREAM", "README.md", "LOCAL_FIXES.md"] {
        std::fs::copy(
            this_repository().join("patches-rocm").join(name),
            records.join(name),
        )
        .unwrap();
    }
    // The register loses entry 2's number; the lock gets a line that is no lock line.
    let register = std::fs::read_to_string(records.join("LOCAL_FIXES.md")).unwrap();
    std::fs::write(
        records.join("LOCAL_FIXES.md"),
        register.replacen("## 2. ", "## 7. ", 1),
    )
    .unwrap();
    let lock =
        std::fs::read_to_string(this_repository().join("patches-rocm/overlay.lock")).unwrap();
    std::fs::write(
        records.join("overlay.lock"),
        format!("{lock}not a lock line\n"),
    )
    .unwrap();
    let cache = tmp.path().join("empty-cache.git");
    let (code, out, err, _) = forkbook(&root, &cache, &["check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("patches-rocm/LOCAL_FIXES.md") && out.contains("error[fixes-numbered]"),
        "{out}"
    );
    let lock_lines = lock.lines().count() + 1;
    assert!(
        out.contains(&format!(
            "patches-rocm/overlay.lock:{lock_lines}: error[overlay-matches-lock]"
        )),
        "{out}"
    );
    assert!(out.contains("skipped: the checks that need"), "{out}");
}

#[test]
fn status_does_not_fetch_unasked_and_says_how_to_get_the_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("empty-cache.git");
    let (code, out, err, _) = forkbook(this_repository(), &cache, &["status"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("is not in the object cache"), "{out}");
    assert!(out.contains("run `forkbook fetch`"), "{out}");
    assert!(
        !out.contains("127.0.0.1") && !err.contains("127.0.0.1"),
        "it did not try the network: {out}{err}"
    );
}

#[test]
fn a_failed_fetch_names_the_ways_to_work_without_the_network() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("empty-cache.git");
    let (code, out, err, _) = forkbook(this_repository(), &cache, &["fetch"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("failed to fetch from the fork"), "{err}");
    for hint in ["--fork-url", "FORKBOOK_FORK_URL", "mirror", "--offline"] {
        assert!(err.contains(hint), "names {hint}: {err}");
    }
    assert!(
        err.contains("from `FORKBOOK_FORK_URL` in the environment"),
        "says where the URL came from: {err}"
    );
}

/// `status` with no objects shows what the records say (commits, layout, fixes, lock) and names
/// the command that gets the rest, instead of ending in one error.
#[test]
fn status_shows_the_records_without_the_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("empty-cache.git");
    let (code, out, err, _) = forkbook(this_repository(), &cache, &["status"]);
    assert_eq!(code, 0, "{out}{err}");
    let upstream =
        std::fs::read_to_string(this_repository().join("patches-rocm/UPSTREAM")).unwrap();
    let pin = upstream
        .lines()
        .find_map(|l| l.strip_prefix("retargeted_to_mlx_pin: "))
        .expect("UPSTREAM names the pin");
    assert!(
        out.contains(&format!("pin      {}", &pin.trim()[..8])),
        "{out}"
    );
    assert!(out.contains("layout   patch"), "{out}");
    assert!(
        out.contains("fix      0001-"),
        "the fixes from the records: {out}"
    );
    assert!(
        out.contains("files    not known: the overlay is not built here"),
        "{out}"
    );
    assert!(out.contains("not built: "), "{out}");
    assert!(out.contains("forkbook fetch"), "names the command: {out}");
    let (code, json, err, _) = forkbook(this_repository(), &cache, &["status", "--json"]);
    assert_eq!(code, 0, "{json}{err}");
    let status: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(status["backend_files"].is_null(), "{json}");
    assert!(status["not_built"]
        .as_str()
        .unwrap()
        .contains("forkbook fetch"));
}
