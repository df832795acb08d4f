//! `drift api` end to end on the generated demo world: every break kind, with the commit that
//! introduced it. Its figures on the real repositories come from `cargo bench --bench bench --
//! --real DIR --to REV` (docs/reliability.md).

use forkbook::demo::world;
use forkbook::engine::doc::Described;
use forkbook::engine::drift::api::{
    drift_api, ApiConfig, ApiReport, DriftInputs, Kind, Suppression,
};
use forkbook::engine::FileMap;
use git2::{Oid, Repository};

/// The files of `commit` under `prefix`, and the named files.
fn files_at(repo: &Repository, commit: Oid, prefix: &str, named: &[&str]) -> FileMap {
    let tree = repo.find_commit(commit).unwrap().tree().unwrap();
    let mut out = FileMap::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        let path = format!("{dir}{}", entry.name().unwrap_or(""));
        let wanted = path.starts_with(prefix) || named.contains(&path.as_str());
        if wanted && entry.kind() == Some(git2::ObjectType::Blob) {
            let blob = repo.find_blob(entry.id()).unwrap();
            out.insert(path, blob.content().to_vec().into());
        }
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    out
}

/// The drift kind a demo-world break is reported as (the world uses drift's own names).
fn expected_kind(world_kind: &str) -> &str {
    world_kind
}

fn demo_report(suppressions: &[Suppression]) -> (world::World, ApiReport) {
    let dir = tempfile::tempdir().unwrap();
    let world = world::generate(dir.path()).unwrap();
    let upstream = Repository::open_bare(&world.upstream).unwrap();
    let fork = Repository::open_bare(&world.fork).unwrap();
    let f1 = Oid::from_str(&world.fork_commits[0]).unwrap();
    let backend = files_at(&fork, f1, "mlx/backend/rocm/", &[]);
    let (pin1, pin2) = (
        Oid::from_str(&world.pin1).unwrap(),
        Oid::from_str(&world.pin2).unwrap(),
    );
    let empty = FileMap::new();
    let inputs = DriftInputs {
        backend: &backend,
        from_overrides: &empty,
        to_overrides: &empty,
        suppressions,
        parses: None,
    };
    let report = drift_api(&upstream, pin1, pin2, &inputs, &ApiConfig::default(), None).unwrap();
    (world, report)
}

#[test]
fn the_demo_world_breaks_exactly_where_it_was_broken() {
    let (world, report) = demo_report(&[]);
    println!("{}", report.doc(&Default::default()).text());
    let found: Vec<(String, String, String)> = report
        .findings
        .iter()
        .map(|f| {
            let commit = f
                .introduced_by
                .as_ref()
                .map_or(String::new(), |c| c.sha.clone());
            (f.kind.as_str().to_string(), f.symbol.clone(), commit)
        })
        .collect();
    let mut expected: Vec<(String, String, String)> = world
        .breaks
        .iter()
        .map(|(kind, symbol, sha)| (expected_kind(kind).to_string(), symbol.clone(), sha.clone()))
        .collect();
    let mut sorted = found.clone();
    sorted.sort();
    expected.sort();
    assert_eq!(
        sorted,
        expected,
        "{}",
        report.doc(&Default::default()).text()
    );
    assert_eq!(report.breaks(), world::BREAKS.len());
    // Every finding points at upstream's new declaration and into the backend.
    for finding in &report.findings {
        assert!(finding.to.is_some(), "{finding:?}");
        let backend = finding.backend.as_ref();
        assert!(
            backend.is_some_and(|l| l.path.starts_with("mlx/backend/rocm/")),
            "{finding:?}"
        );
    }
    assert_eq!(
        (report.parse.from_error_nodes, report.parse.to_error_nodes),
        (0, 0),
        "{:?}",
        report.parse.error_files
    );
}

#[test]
fn a_suppressed_demo_break_no_longer_counts() {
    let suppression = Suppression {
        kind: Kind::MissingEvalGpu,
        symbol: "mlx::core::GatherQMM::eval_gpu".to_string(),
        reason: "the demo never runs GatherQMM on the GPU".to_string(),
    };
    let stale = Suppression {
        symbol: "mlx::core::Gone::eval_gpu".to_string(),
        ..suppression.clone()
    };
    let (_, report) = demo_report(&[suppression.clone(), stale.clone()]);
    assert_eq!(report.breaks(), world::BREAKS.len() - 1);
    let suppressed: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.suppressed.is_some())
        .map(|f| f.symbol.as_str())
        .collect();
    let kinds: Vec<Kind> = report
        .findings
        .iter()
        .filter(|f| f.suppressed.is_some())
        .map(|f| f.kind)
        .collect();
    assert_eq!(kinds, [Kind::MissingEvalGpu]);
    assert_eq!(suppressed, ["mlx::core::GatherQMM::eval_gpu"]);
    assert_eq!(report.unused_suppressions, [stale]);
    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    let kinds: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"hidden-by-new-declaration"), "{kinds:?}");
}

/// A second analysis from the same inputs is read from the drift cache, equal to a fresh one;
/// a changed backend file, a changed setting or changed suppressions never serve a stale entry.
#[test]
fn the_drift_cache_serves_the_same_inputs_and_only_those() {
    use forkbook::engine::drift::api::{store, upstream_ids};
    use forkbook_records::cache_entry::{seal, Secret, Store};
    let dir = tempfile::tempdir().unwrap();
    let world = world::generate(&dir.path().join("world")).unwrap();
    let upstream = Repository::open_bare(&world.upstream).unwrap();
    let fork = Repository::open_bare(&world.fork).unwrap();
    let f1 = Oid::from_str(&world.fork_commits[0]).unwrap();
    let mut backend = files_at(&fork, f1, "mlx/backend/rocm/", &[]);
    let (pin1, pin2) = (
        Oid::from_str(&world.pin1).unwrap(),
        Oid::from_str(&world.pin2).unwrap(),
    );
    let empty = FileMap::new();
    let cfg = ApiConfig::default();
    let store_dir = dir.path().join("drift-store");
    let secret = Secret::from_bytes([2; 32]);
    let store = Store::new(&store_dir, "drift api", Some(secret.clone()));
    let json = |r: &ApiReport| serde_json::to_value(r).unwrap();
    let entries = || {
        std::fs::read_dir(&store_dir)
            .map(|d| d.count())
            .unwrap_or(0)
    };
    fn inputs<'a>(backend: &'a FileMap, empty: &'a FileMap) -> DriftInputs<'a> {
        DriftInputs {
            backend,
            from_overrides: empty,
            to_overrides: empty,
            suppressions: &[],
            parses: None,
        }
    }
    let fresh = drift_api(&upstream, pin1, pin2, &inputs(&backend, &empty), &cfg, None).unwrap();
    assert_eq!(entries(), 0, "no store given, nothing kept");
    let first = drift_api(
        &upstream,
        pin1,
        pin2,
        &inputs(&backend, &empty),
        &cfg,
        Some(&store),
    )
    .unwrap();
    assert_eq!(entries(), 1);
    assert_eq!(json(&first), json(&fresh));
    assert_eq!(first.breaks(), world::BREAKS.len());
    let second = drift_api(
        &upstream,
        pin1,
        pin2,
        &inputs(&backend, &empty),
        &cfg,
        Some(&store),
    )
    .unwrap();
    assert_eq!(entries(), 1, "the second run adds no entry");
    assert_eq!(
        json(&second),
        json(&fresh),
        "the stored analysis equals a fresh one"
    );

    // The second run really reads the entry: a marked entry comes back marked.
    let entry = std::fs::read_dir(&store_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let original = std::fs::read_to_string(&entry).unwrap();
    let first_message = &fresh.findings[0].message;
    let ids = |commit| upstream_ids(&upstream, commit, &cfg).unwrap();
    let backend_ids = store::blob_ids(&backend).unwrap();
    let key = store::key(pin1, pin2, &ids(pin1), &ids(pin2), &backend_ids, &cfg);
    assert_eq!(entry, store.path(&key));
    let payload = store.load(&key).unwrap();
    let marked = String::from_utf8(payload).unwrap().replacen(
        &serde_json::to_string(first_message).unwrap(),
        "\"read from the drift cache\"",
        1,
    );
    assert!(marked.contains("read from the drift cache"));
    // Edited without its seal, the entry is a miss: a fresh analysis, kept again.
    let unsealed = original.replacen(
        &serde_json::to_string(first_message).unwrap(),
        "\"read from the drift cache\"",
        1,
    );
    assert_ne!(unsealed, original);
    std::fs::write(&entry, &unsealed).unwrap();
    let unsealed_run = drift_api(
        &upstream,
        pin1,
        pin2,
        &inputs(&backend, &empty),
        &cfg,
        Some(&store),
    )
    .unwrap();
    assert_eq!(
        json(&unsealed_run),
        json(&fresh),
        "an unsealed edit is not believed"
    );
    assert_eq!(std::fs::read_to_string(&entry).unwrap(), original);
    // Sealed with the store's secret, it is read back as written.
    std::fs::write(&entry, seal(&secret, "drift api", &key, marked.as_bytes())).unwrap();
    let reused = drift_api(
        &upstream,
        pin1,
        pin2,
        &inputs(&backend, &empty),
        &cfg,
        Some(&store),
    )
    .unwrap();
    assert!(
        reused
            .findings
            .iter()
            .any(|f| f.message == "read from the drift cache"),
        "the second analysis was not read from the cache"
    );
    // A damaged entry is a miss, recomputed and rewritten.
    std::fs::write(&entry, seal(&secret, "drift api", &key, b"{ not json")).unwrap();
    let repaired = drift_api(
        &upstream,
        pin1,
        pin2,
        &inputs(&backend, &empty),
        &cfg,
        Some(&store),
    )
    .unwrap();
    assert_eq!(json(&repaired), json(&fresh));
    assert_eq!(std::fs::read_to_string(&entry).unwrap(), original);

    // Suppressions are applied after the cache.
    let finding = &fresh.findings[0];
    let suppression = Suppression {
        kind: finding.kind,
        symbol: finding.symbol.clone(),
        reason: "judged harmless".to_string(),
    };
    let suppressed = drift_api(
        &upstream,
        pin1,
        pin2,
        &DriftInputs {
            suppressions: std::slice::from_ref(&suppression),
            ..inputs(&backend, &empty)
        },
        &cfg,
        Some(&store),
    )
    .unwrap();
    assert_eq!(suppressed.breaks(), world::BREAKS.len() - 1);
    assert_eq!(entries(), 1);

    // A changed backend file is a new key: a new entry, equal to a fresh analysis of it.
    let (path, bytes) = backend
        .iter_mut()
        .find(|(p, _)| p.ends_with(".cpp"))
        .unwrap();
    let path = path.clone();
    std::sync::Arc::make_mut(bytes)
        .extend_from_slice(b"\nnamespace mlx::core { void added_by_the_test(); }\n");
    let changed = drift_api(
        &upstream,
        pin1,
        pin2,
        &inputs(&backend, &empty),
        &cfg,
        Some(&store),
    )
    .unwrap();
    assert_eq!(entries(), 2, "`{path}` changed: a new entry");
    let fresh_changed =
        drift_api(&upstream, pin1, pin2, &inputs(&backend, &empty), &cfg, None).unwrap();
    assert_eq!(json(&changed), json(&fresh_changed));

    // So is a changed setting.
    let other_cfg = ApiConfig {
        follow_includes: !cfg.follow_includes,
        ..cfg.clone()
    };
    drift_api(
        &upstream,
        pin1,
        pin2,
        &inputs(&backend, &empty),
        &other_cfg,
        Some(&store),
    )
    .unwrap();
    assert_eq!(entries(), 3);
    assert!(store::tool_version().starts_with(env!("CARGO_PKG_VERSION")));
}

/// `drift api` from the command line keeps its analysis beside the object cache; a second run
/// at the same commits prints the same report from it; a new local fix is a new analysis.
#[test]
fn a_second_drift_api_run_reuses_the_first_analysis() {
    let demo = crate::common::Demo::new(forkbook::engine::config::Layout::Patch);
    let store = demo.demo.cache.with_file_name("forkbook-drift-api");
    let pin2 = demo.demo.world.pin2.clone();
    let entries = || std::fs::read_dir(&store).map(|d| d.count()).unwrap_or(0);
    assert_eq!(entries(), 0);
    let (code, first) = demo.run(&["--json", "drift", "api", "--to", &pin2]);
    assert_eq!(code, 1, "{first}");
    assert_eq!(entries(), 1);
    let (code, second) = demo.run(&["--json", "drift", "api", "--to", &pin2]);
    assert_eq!(code, 1, "{second}");
    assert_eq!(second, first);
    assert_eq!(entries(), 1, "the second run made no new analysis");
    // verify's drift step (base -> pin) is another pair: one more entry, then reused.
    demo.run(&["verify"]);
    let after_verify = entries();
    demo.run(&["verify"]);
    assert_eq!(entries(), after_verify);
}
