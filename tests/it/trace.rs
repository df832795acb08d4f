//! Conflicts traced to upstream on the demo world: the retarget to pin2 conflicts in
//! `mlx/device.cpp`, and the region names upstream's `MLX_DEVICE_INDEX` commit, in text, JSON and
//! the stepwise view.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use git2::{Oid, Repository};

/// The upstream commit of the demo world whose subject starts with `subject`.
fn upstream_commit(demo: &Demo, subject: &str) -> String {
    let repo = Repository::open_bare(&demo.demo.world.upstream).unwrap();
    let mut walk = repo.revwalk().unwrap();
    walk.push(Oid::from_str(&demo.demo.world.pin2).unwrap())
        .unwrap();
    let found = walk
        .map(|oid| repo.find_commit(oid.unwrap()).unwrap())
        .find(|c| {
            c.summary()
                .ok()
                .flatten()
                .unwrap_or("")
                .starts_with(subject)
        })
        .map(|c| c.id().to_string());
    found.unwrap_or_else(|| panic!("no upstream commit `{subject}`"))
}

const DEVICE_COMMIT: &str = "device: choose the default GPU with MLX_DEVICE_INDEX";

#[test]
fn retarget_names_the_upstream_commit_behind_each_conflict_region() {
    let demo = Demo::new(Layout::Patch);
    let device = upstream_commit(&demo, DEVICE_COMMIT);
    let pin2 = demo.demo.world.pin2.clone();
    let (code, text) = demo.run(&["retarget", &pin2, "--check"]);
    assert_eq!(code, 1, "{text}");
    let expected = format!("      upstream: {} {DEVICE_COMMIT}\n", &device[..8]);
    assert!(
        text.contains("  mlx/device.cpp region 1 (pin/fork, pin line "),
        "{text}"
    );
    // Only the one commit that changed those lines (the cell ends after it), not the other ten
    // between the pins, and one region.
    assert!(text.contains(&expected), "{text}");
    assert_eq!(text.matches("      upstream: ").count(), 1, "{text}");

    let (code, json) = demo.run(&["--json", "retarget", &pin2, "--check"]);
    assert_eq!(code, 1, "{json}");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let causes = value["conflict_causes"].as_array().unwrap();
    assert_eq!(causes.len(), 1, "{json}");
    assert_eq!(causes[0]["path"], "mlx/device.cpp");
    assert_eq!(causes[0]["state"], "left");
    assert_eq!(causes[0]["commits"][0]["sha"], device.as_str());
    assert_eq!(causes[0]["commits"][0]["pr"], serde_json::Value::Null);
    // The pin side is the line upstream changed (`default_index()` passed to the device).
    let (first, last) = (
        causes[0]["pin_lines"][0].as_u64().unwrap() as usize,
        causes[0]["pin_lines"][1].as_u64().unwrap() as usize,
    );
    let repo = Repository::open_bare(&demo.demo.world.upstream).unwrap();
    let blob = repo
        .revparse_single(&format!("{pin2}:mlx/device.cpp"))
        .unwrap()
        .peel_to_blob()
        .unwrap();
    let pin_text = String::from_utf8_lossy(blob.content()).into_owned();
    let side: Vec<&str> = pin_text
        .lines()
        .skip(first - 1)
        .take(last + 1 - first)
        .collect();
    assert!(
        side.iter().any(|l| l.contains("default_index()")),
        "{side:?}"
    );
}

#[test]
fn stepwise_names_the_first_commit_at_which_each_core_file_conflicts() {
    let demo = Demo::new(Layout::Patch);
    let device = upstream_commit(&demo, DEVICE_COMMIT);
    let pin2 = demo.demo.world.pin2.clone();
    let (code, text) = demo.run(&["retarget", &pin2, "--stepwise"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!(
            "  mlx/device.cpp: first conflicts at {} {DEVICE_COMMIT} (1 region; 1 at ",
            &device[..8]
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "  mlx/CMakeLists.txt: merges cleanly at every commit [1 upstream commit changes it]"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "  mlx/fast.cpp: merges cleanly at every commit [0 upstream commits change it]"
        ),
        "{text}"
    );
    // Nothing written: the records still name pin1.
    assert!(demo.read("UPSTREAM").contains(&demo.demo.world.pin1));
    let (_, json) = demo.run(&["--json", "retarget", &pin2, "--stepwise"]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let device_row = value
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "mlx/device.cpp")
        .unwrap();
    assert_eq!(device_row["first"]["sha"], device.as_str());
}

#[test]
fn the_report_links_each_conflict_region_to_its_upstream_commit() {
    let demo = Demo::new(Layout::Patch);
    let device = upstream_commit(&demo, DEVICE_COMMIT);
    // The configured upstream is a web address; the objects come from the local world.
    let config = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let local = demo.demo.world.upstream.display().to_string();
    std::fs::write(
        &config,
        text.replace(
            &format!("url = \"{local}\""),
            "url = \"https://github.com/example/minimlx\"",
        ),
    )
    .unwrap();
    let pin2 = demo.demo.world.pin2.clone();
    let (code, out) = demo.run(&["--upstream-url", &local, "retarget", &pin2]);
    assert_eq!(code, 1, "{out}");
    let (_, out) = demo.run(&["--upstream-url", &local, "report", "--pr-body"]);
    let expected = format!(
        "- ` mlx/device.cpp `: UNRESOLVED\n  - region 1 (pin line 19): upstream [`{}`](https://github.com/example/minimlx/commit/{device}) device: choose the default GPU with MLX\\_DEVICE\\_INDEX\n",
        &device[..8]
    );
    assert!(out.contains(&expected), "{out}");
    let (_, json) = demo.run(&["--upstream-url", &local, "--json", "report"]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        value["conflict_causes"][0]["commits"][0]["sha"],
        device.as_str()
    );
}
