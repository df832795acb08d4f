//! `drift api` end to end: on the generated demo world (every break kind, with the commit that
//! introduced it) and, when mirrors are given, on the real MLX repositories.

use forkbook::engine::drift::api::{collect_upstream, drift_api, ApiConfig, ApiReport, DriftInputs};
use forkbook::engine::FileMap;
use git2::{Oid, Repository};
use std::path::Path;
use std::time::Instant;

/// The files of `commit` under `prefix`, and the named files.
fn files_at(repo: &Repository, commit: Oid, prefix: &str, named: &[&str]) -> FileMap {
    let tree = repo.find_commit(commit).unwrap().tree().unwrap();
    let mut out = FileMap::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        let path = format!("{dir}{}", entry.name().unwrap_or(""));
        let wanted = path.starts_with(prefix) || named.contains(&path.as_str());
        if wanted && entry.kind() == Some(git2::ObjectType::Blob) {
            let blob = repo.find_blob(entry.id()).unwrap();
            out.insert(path, blob.content().to_vec());
        }
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    out
}

fn revision(repo: &Repository, rev: &str) -> Oid {
    repo.revparse_single(rev).unwrap().peel_to_commit().unwrap().id()
}

/// The fork's change to each core header, merged into the new pin (what an overlay carries).
fn merged_overrides(up: &Repository, fork_files: &FileMap, base: Oid, pin: Oid) -> FileMap {
    let base_files = files_at(up, base, "\0", &fork_files.keys().map(String::as_str).collect::<Vec<_>>());
    let pin_files = files_at(up, pin, "\0", &fork_files.keys().map(String::as_str).collect::<Vec<_>>());
    let mut out = FileMap::new();
    for (path, theirs) in fork_files {
        let input = |bytes: &'static [u8]| {
            let mut file = git2::MergeFileInput::new();
            file.path(path.as_str());
            file.content(bytes);
            file
        };
        // Leaked: a test process reads a handful of headers once.
        let leak = |bytes: &[u8]| -> &'static [u8] { Box::leak(bytes.to_vec().into_boxed_slice()) };
        let ancestor = input(leak(base_files.get(path).map_or(&[][..], Vec::as_slice)));
        let ours = input(leak(pin_files.get(path).map_or(&[][..], Vec::as_slice)));
        let theirs = input(leak(theirs));
        let merged = git2::merge_file(&ancestor, &ours, &theirs, None).unwrap();
        println!("override {path}: {}", if merged.is_automergeable() { "merged cleanly" } else { "conflicts" });
        out.insert(path.clone(), merged.content().to_vec());
    }
    out
}

/// Runs `drift api --from 39886de4 --to 846d176` over the backend of fork commit 75915908.
///
/// FORKBOOK_UPSTREAM_MIRROR and FORKBOOK_FORK_MIRROR name local clones of ml-explore/mlx and
/// NripeshN/mlx; FORKBOOK_DRIFT_OVERRIDES=1 also lays the fork's own core headers over
/// upstream's (the fork's at the old pin, merged into the new pin at the new one).
#[test]
#[ignore]
fn real_mlx_rocm_backend() {
    let (Ok(upstream), Ok(fork)) = (std::env::var("FORKBOOK_UPSTREAM_MIRROR"), std::env::var("FORKBOOK_FORK_MIRROR")) else {
        panic!("set FORKBOOK_UPSTREAM_MIRROR and FORKBOOK_FORK_MIRROR");
    };
    let up = Repository::open(Path::new(&upstream)).unwrap();
    let fork = Repository::open(Path::new(&fork)).unwrap();
    let from = revision(&up, "39886de4");
    let to = revision(&up, "846d176");
    let fork_commit = revision(&fork, "75915908");
    let core_headers = ["mlx/fast.h", "mlx/fast_primitives.h"];
    let backend = files_at(&fork, fork_commit, "mlx/backend/rocm/", &[]);
    let (from_overrides, to_overrides) = if std::env::var("FORKBOOK_DRIFT_OVERRIDES").is_ok() {
        let fork_headers = files_at(&fork, fork_commit, "\0", &core_headers);
        let merged = merged_overrides(&up, &fork_headers, from, to);
        (fork_headers, merged)
    } else {
        (FileMap::new(), FileMap::new())
    };
    let cfg = ApiConfig::default();
    let inputs = DriftInputs { backend: &backend, from_overrides: &from_overrides, to_overrides: &to_overrides, suppressions: &[] };
    let mut report: Option<ApiReport> = None;
    for run in 1..=3 {
        let start = Instant::now();
        report = Some(drift_api(&up, from, to, &inputs, &cfg).unwrap());
        println!("run {run}: {:.3} s", start.elapsed().as_secs_f64());
    }
    let start = Instant::now();
    let collected = collect_upstream(&up, to, &cfg).unwrap();
    println!("collect_upstream alone: {} files in {:.3} s", collected.len(), start.elapsed().as_secs_f64());
    let report = report.unwrap();
    println!("{}", report.render_text());
    for (file, count) in &report.parse.error_files {
        println!("error nodes: {count:4} {file}");
    }
    if std::env::var("FORKBOOK_DRIFT_JSON").is_ok() {
        println!("{}", serde_json::to_string_pretty(&report).unwrap());
    }
}
