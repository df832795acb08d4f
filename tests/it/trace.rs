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

/// A commit on top of pin2 in the demo's upstream that changes the conflicting region of
/// `mlx/device.cpp` again, with `subject`; the branch `mentions` names it.
fn upstream_commit_on_the_region(demo: &Demo, subject: &str) -> String {
    let repo = Repository::open_bare(&demo.demo.world.upstream).unwrap();
    let pin2 = repo
        .find_commit(Oid::from_str(&demo.demo.world.pin2).unwrap())
        .unwrap();
    let tree = pin2.tree().unwrap();
    let mlx = tree.get_path(std::path::Path::new("mlx")).unwrap();
    let mlx = repo.find_tree(mlx.id()).unwrap();
    let device = mlx.get_name("device.cpp").unwrap();
    let text = String::from_utf8(repo.find_blob(device.id()).unwrap().content().to_vec()).unwrap();
    let changed = text.replace("default_index()};", "default_index(/* env */)};");
    assert_ne!(changed, text, "the region's comment is there to change");
    let blob = repo.blob(changed.as_bytes()).unwrap();
    let mut mlx_builder = repo.treebuilder(Some(&mlx)).unwrap();
    mlx_builder.insert("device.cpp", blob, 0o100644).unwrap();
    let mlx_id = mlx_builder.write().unwrap();
    let mut root = repo.treebuilder(Some(&tree)).unwrap();
    root.insert("mlx", mlx_id, 0o040000).unwrap();
    let tree = repo.find_tree(root.write().unwrap()).unwrap();
    let who = git2::Signature::now("t", "t@t").unwrap();
    let commit = repo
        .commit(
            Some("refs/heads/mentions"),
            &who,
            &who,
            subject,
            &tree,
            &[&pin2],
        )
        .unwrap();
    commit.to_string()
}

/// Fails on main before this change: an upstream commit subject's `@someone` and
/// `@ml-explore/core` went into `report --pr-body` (the roll's pull request body) as they were,
/// and GitHub would notify that person and that team; its `#12` linked the project's own issue
/// 12. Each comes out with a zero-width space after `@` and `#`.
#[test]
fn an_upstream_subject_s_mentions_and_references_notify_no_one_in_the_pr_body() {
    let demo = Demo::new(Layout::Patch);
    let subject = "device: word the GPU choice, thanks @someone and @ml-explore/core (see #12)";
    let commit = upstream_commit_on_the_region(&demo, subject);
    let (code, out) = demo.run(&["fetch", "--upstream", "mentions"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = demo.run(&["retarget", &commit]);
    assert_eq!(code, 1, "the region conflicts: {out}");
    let (_, body) = demo.run(&["report", "--pr-body"]);
    let zw = '\u{200b}';
    assert!(
        body.contains(&format!(
            "thanks @{zw}someone and @{zw}ml-explore/core \\(see \\#{zw}12\\)"
        )),
        "{body}"
    );
    for raw in ["@someone", "@ml-explore/core", "#12"] {
        assert!(!body.contains(raw), "`{raw}` in the body: {body}");
    }
}
