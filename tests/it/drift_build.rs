//! `drift build` on the demo world, compiled for real with the machine's C++ compiler (standing
//! in for hipcc): clean at pin1, and at pin2 each break shows up as the compile error or the
//! undefined symbol it really causes.
//!
//! The tree is exported here the way `export-tree` does it: the upstream tree at the pin, the
//! fork's backend files, and each upstream file the fork hooks merged 3-way (fork base as
//! ancestor), conflict markers included.

use std::collections::BTreeSet;
use std::path::Path;

use forkbook::demo::world::{generate, BuildFailure, World, BREAKS};
use forkbook::engine::drift::build::{confirm, drift_build, BuildConfig, BuildReport};
use forkbook::engine::FileMap;
use git2::{MergeFileInput, Oid, Repository};

const BACKEND: &str = "mlx/backend/rocm/";

fn files_at(repo: &Repository, commit: &str) -> FileMap {
    let tree = repo
        .find_commit(Oid::from_str(commit).unwrap())
        .unwrap()
        .tree()
        .unwrap();
    let mut files = FileMap::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if let Ok(blob) = entry.to_object(repo).and_then(|o| o.peel_to_blob()) {
            files.insert(
                format!("{dir}{}", entry.name().unwrap()),
                blob.content().to_vec().into(),
            );
        }
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    files
}

fn merge(path: &str, base: &[u8], ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let input = |content| {
        let mut file = MergeFileInput::new();
        file.path(path).content(content);
        file
    };
    let merged = git2::merge_file(&input(base), &input(ours), &input(theirs), None).unwrap();
    merged.content().to_vec()
}

/// Writes the upstream tree at `pin` with the fork at `fork_commit` laid over it.
fn export(world: &World, pin: &str, fork_commit: &str, dest: &Path) {
    let repo = Repository::open_bare(&world.fork).unwrap(); // holds the upstream history too
    let (base, pin, fork) = (
        files_at(&repo, &world.pin1),
        files_at(&repo, pin),
        files_at(&repo, fork_commit),
    );
    let mut tree = pin.clone();
    for (path, content) in &fork {
        match base.get(path) {
            Some(base_content) if !path.starts_with(BACKEND) => {
                if base_content != content {
                    tree.insert(
                        path.clone(),
                        merge(path, base_content, &pin[path], content).into(),
                    );
                }
            }
            _ => {
                tree.insert(path.clone(), content.clone());
            }
        }
    }
    for (path, content) in &tree {
        let file = dest.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, content.as_slice()).unwrap();
    }
}

fn build(tree: &Path, build_dir: &Path, with_tests: bool) -> BuildReport {
    let mut cfg = BuildConfig::default();
    if with_tests {
        cfg.cmake_args.retain(|arg| arg != "-DMLX_BUILD_TESTS=OFF");
    }
    drift_build(tree, build_dir, &cfg, Some("c++"), Some(2), None).unwrap()
}

#[test]
fn pin1_with_the_fork_builds_clean_and_links_the_test_program() {
    let dir = tempfile::tempdir().unwrap();
    let world = generate(dir.path()).unwrap();
    let tree = dir.path().join("tree");
    export(&world, &world.pin1, &world.fork_commits[0], &tree);

    let report = build(&tree, &dir.path().join("build"), true);
    assert!(report.problems().is_empty(), "{}", report.render_text());
    assert!(report.undefined_after_errors.is_empty());
    assert!(report.objects >= 20, "{} objects", report.objects);
    assert!(report
        .render_text()
        .contains("no compile errors and no undefined symbols in `mlx::core`"));
    let smoke = std::process::Command::new(dir.path().join("build/tests/mlx_tests"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&smoke.stdout), "ok\n");
}

#[test]
fn pin2_shows_each_break_as_the_error_or_undefined_symbol_it_causes() {
    let dir = tempfile::tempdir().unwrap();
    let world = generate(dir.path()).unwrap();
    let tree = dir.path().join("tree");
    export(&world, &world.pin2, &world.fork_commits[0], &tree);

    let report = build(&tree, &dir.path().join("build"), false);
    let text = report.render_text();
    let files: BTreeSet<&str> = report.errors.iter().map(|e| e.file.as_str()).collect();
    let expected = [
        "mlx/backend/rocm/allocator.cpp",
        "mlx/backend/rocm/copy.cpp",
        "mlx/backend/rocm/kernels.cpp",
        "mlx/backend/rocm/matmul.cpp",
        "mlx/device.cpp", // the conflict markers of the retargeted hook
    ];
    assert_eq!(files, BTreeSet::from(expected), "{text}");
    let undefined: BTreeSet<&str> = report
        .undefined
        .iter()
        .map(|u| forkbook::engine::drift::build::nm::qualified_name(&u.symbol))
        .collect();
    assert_eq!(
        undefined,
        BTreeSet::from([
            "mlx::core::Event::is_signaled",
            "mlx::core::GatherQMM::eval_gpu",
            "mlx::core::gpu::new_stream"
        ]),
        "{text}"
    );
    // What the files that failed to compile would have defined is listed apart, not as a break.
    let after_errors: BTreeSet<&str> = report
        .undefined_after_errors
        .iter()
        .filter_map(|u| u.probably_in.as_deref())
        .collect();
    assert_eq!(after_errors, BTreeSet::from(expected), "{text}");
    // The source-compatible changes cause nothing.
    for word in [
        "make_contiguous_strides",
        "elem_to_loc",
        "bfloat16",
        "Dtype",
    ] {
        assert!(
            !report.errors.iter().any(|e| e.message.contains(word)),
            "{word}: {text}"
        );
    }
    assert!(!report.problems().is_empty());
    assert!(
        text.contains("undefined symbols in `mlx::core` that no object defines: 3"),
        "{text}"
    );

    let findings: Vec<(String, String)> = world
        .breaks
        .iter()
        .map(|(k, s, _)| (k.clone(), s.clone()))
        .collect();
    let confirmation = confirm(&report, &findings);
    assert_eq!(
        confirmation.confirmed.len(),
        BREAKS.len(),
        "{}",
        confirmation.render_text()
    );
    for (finding, expected) in confirmation.confirmed.iter().zip(BREAKS) {
        assert_eq!(finding.kind, expected.kind);
        match expected.shows_as {
            BuildFailure::CompileError => assert!(
                finding
                    .evidence
                    .iter()
                    .any(|e| e.starts_with(expected.backend_file)),
                "{}: {:?}",
                expected.kind,
                finding.evidence
            ),
            BuildFailure::Undefined => {
                assert!(
                    finding
                        .evidence
                        .iter()
                        .any(|e| e.contains(&expected.symbol[11..])),
                    "{:?}",
                    finding.evidence
                )
            }
        }
    }
    assert!(confirmation.unpredicted_undefined.is_empty());
    assert!(!confirmation.unpredicted_errors.is_empty());
    assert!(
        confirmation
            .unpredicted_errors
            .iter()
            .all(|e| e.file == "mlx/device.cpp"),
        "{}",
        confirmation.render_text()
    );
    assert!(confirmation
        .unpredicted_errors
        .iter()
        .any(|e| e.message.contains("conflict marker")));
}

#[test]
fn a_missing_cmake_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BuildConfig {
        cmake: "no-such-cmake".into(),
        ..BuildConfig::default()
    };
    let error = drift_build(
        dir.path(),
        &dir.path().join("b"),
        &cfg,
        Some("c++"),
        None,
        None,
    )
    .unwrap_err();
    assert_eq!(error.message(), "CMake `no-such-cmake` not found");
}

#[test]
fn a_tree_that_fails_to_configure_names_the_cmake_error() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let cmake = "cmake_minimum_required(VERSION 3.16)\nproject(broken LANGUAGES CXX)\nadd_subdirectory(mlx/backend/rocm)\n";
    std::fs::write(tree.join("CMakeLists.txt"), cmake).unwrap();

    let report = build(&tree, &dir.path().join("build"), false);
    assert!(report.build.is_none());
    let error = &report.configure_errors[0];
    assert_eq!(
        (error.file.as_str(), error.line),
        ("CMakeLists.txt", Some(3))
    );
    assert!(
        error.message.contains("add_subdirectory given source"),
        "{}",
        error.message
    );
    assert!(report.problems()[0].starts_with("configuring failed (exit 1)"));
    assert!(report.render_text().contains("build: not run"));
}
