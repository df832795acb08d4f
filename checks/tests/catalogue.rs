//! Tests of the catalogue itself, the way cargo-semver-checks tests its lints: ids unique, every
//! check documented, file names equal to ids, every check file registered; then every check runs
//! on every fixture and all findings are compared with snapshots.
//!
//! `FORKBOOK_BLESS=1 cargo test -p forkbook-checks` rewrites the snapshots.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use forkbook_checks::{explain, render_catalogue_markdown, run_all, Severity, CHECKS};

/// Files of the crate's root that are support code, not checks.
const SUPPORT: &[&str] = &[
    "lib.rs",
    "build.rs",
    "facts.rs",
    "names.rs",
    "register.rs",
    "markers.rs",
];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files_with(extension: &str) -> BTreeSet<String> {
    std::fs::read_dir(crate_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(extension))
        .collect()
}

#[test]
fn ids_are_unique_and_kebab_case() {
    let mut seen = BTreeSet::new();
    for check in CHECKS {
        assert!(seen.insert(check.id), "id `{}` registered twice", check.id);
        assert!(
            check
                .id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'-'),
            "id `{}` is not kebab-case",
            check.id
        );
    }
}

#[test]
fn every_check_file_is_registered_and_every_page_belongs_to_a_check() {
    let registered: BTreeSet<String> = CHECKS
        .iter()
        .map(|c| format!("{}.rs", c.id.replace('-', "_")))
        .collect();
    let sources: BTreeSet<String> = files_with(".rs")
        .into_iter()
        .filter(|f| !SUPPORT.contains(&f.as_str()))
        .collect();
    assert_eq!(
        sources, registered,
        "check files and registered checks differ"
    );
    let pages: BTreeSet<String> = CHECKS.iter().map(|c| format!("{}.md", c.id)).collect();
    assert_eq!(
        files_with(".md"),
        pages,
        "doc pages and registered checks differ"
    );
}

#[test]
fn every_check_is_documented_with_why_what_and_how() {
    for check in CHECKS {
        let first = check.doc.lines().next().unwrap_or("");
        assert_eq!(
            first,
            format!("# {}", check.id),
            "page of `{}` must start with its id",
            check.id
        );
        for part in ["**Why.**", "**What it finds.**", "**How to fix it.**"] {
            assert!(
                check.doc.contains(part),
                "page of `{}` lacks {part}",
                check.id
            );
        }
        assert_eq!(explain(check.id), Some(check.doc));
        assert!(!check.name.is_empty());
    }
    assert_eq!(explain("no-such-check"), None);
}

#[test]
fn catalogue_page_lists_every_check_once_with_its_page() {
    let page = render_catalogue_markdown();
    for check in CHECKS {
        assert_eq!(
            page.matches(&format!("| [`{}`]", check.id)).count(),
            1,
            "{}",
            check.id
        );
        assert!(
            page.contains(&format!("\n## {}\n", check.id)),
            "page of `{}` missing",
            check.id
        );
    }
}

#[test]
fn healthy_records_have_no_findings() {
    let findings = run_all(&common::healthy());
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn every_check_finds_its_problem_in_the_broken_records() {
    let findings = run_all(&common::broken());
    for check in CHECKS {
        assert!(
            findings.iter().any(|f| f.check == check.id),
            "`{}` found nothing",
            check.id
        );
    }
    for finding in &findings {
        let check = CHECKS.iter().find(|c| c.id == finding.check).unwrap();
        assert_eq!(finding.severity, check.severity);
        assert!(!finding.file.is_empty(), "{finding:?}");
    }
}

#[test]
fn findings_serialize_with_file_line_and_severity() {
    let findings = run_all(&common::broken());
    let json = serde_json::to_value(&findings).unwrap();
    let first = &json[0];
    for key in ["check", "severity", "file", "line", "message", "note"] {
        assert!(
            first.get(key).is_some(),
            "JSON finding lacks `{key}`: {first}"
        );
    }
    assert!(findings.iter().any(|f| f.severity == Severity::Warning));
}

/// Every check on every fixture, all findings compared with the stored snapshot.
#[test]
fn every_check_runs_on_every_fixture() {
    let bless = std::env::var_os("FORKBOOK_BLESS").is_some();
    let mut stale = Vec::new();
    for (name, facts) in common::all() {
        let rendered: String = CHECKS
            .iter()
            .map(|check| {
                let found: Vec<String> =
                    check.findings(&facts).iter().map(|f| f.render()).collect();
                format!(
                    "== {} ({})\n{}",
                    check.id,
                    found.len(),
                    found.iter().map(|f| format!("{f}\n")).collect::<String>()
                )
            })
            .collect();
        let path = crate_dir()
            .join("tests/snapshots")
            .join(format!("{name}.txt"));
        let stored = std::fs::read_to_string(&path).unwrap_or_default();
        if bless {
            std::fs::write(&path, &rendered).unwrap();
        } else if stored != rendered {
            stale.push(format!("--- {}\n{rendered}", path.display()));
        }
    }
    assert!(
        stale.is_empty(),
        "snapshots differ (FORKBOOK_BLESS=1 rewrites them):\n{}",
        stale.join("\n")
    );
}

/// What the engine can gather with no objects at all: the records, nothing of the base tree.
fn records_alone(mut facts: forkbook_checks::Facts) -> forkbook_checks::Facts {
    facts.overlay = None;
    facts
}

/// Whole files are the overlay as they stand: without the objects `overlay-matches-lock` holds
/// them against the lock (a changed file is named, with what to do that needs no commit), and a
/// missing lock's note says adopt writes it; a series' says it waits for the commits.
#[test]
fn whole_files_are_held_against_the_lock_without_the_objects() {
    let check = CHECKS
        .iter()
        .find(|c| c.id == "overlay-matches-lock")
        .unwrap();
    let path = "mlx/backend/rocm/allocator.cpp";
    let mut facts = records_alone(common::healthy());
    let locked = format!("# lock\n{}  {path}\n", "a".repeat(64));
    facts.records.lock = Some(forkbook_checks::facts::Lock::read(&locked));
    let whole = [(path.to_string(), "b".repeat(64))];
    facts.whole_files = Some(forkbook_checks::facts::Lock::of_digests(whole));
    let found: Vec<String> = check.findings(&facts).iter().map(|f| f.render()).collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains(&format!(
            "overlay.lock:2: error[overlay-matches-lock]: `{path}` differs from its locked hash"
        )),
        "{found:#?}"
    );
    assert!(found[0].contains("run `forkbook adopt`"), "{found:#?}");
    facts.whole_files = Some(forkbook_checks::facts::Lock::of_digests([(
        path.to_string(),
        "a".repeat(64),
    )]));
    assert!(check.findings(&facts).is_empty());
    facts.records.lock = None;
    let missing = |facts: &forkbook_checks::Facts| {
        let found = check.findings(facts);
        assert_eq!(found.len(), 1, "{found:#?}");
        found[0].note.as_deref().unwrap_or_default().to_string()
    };
    let note = missing(&facts);
    assert!(
        note.contains("write it with `forkbook adopt`") && !note.contains("fetch"),
        "{note}"
    );
    facts.whole_files = None;
    let note = missing(&facts);
    assert!(
        note.contains("a series' lock") && note.contains("forkbook fetch"),
        "{note}"
    );
}

#[test]
fn checks_that_need_no_objects_find_the_same_from_the_records_alone() {
    let with_objects = run_all(&common::broken());
    let without = run_all(&records_alone(common::broken()));
    let of = |findings: &[forkbook_checks::Finding], id: &str| -> Vec<String> {
        findings
            .iter()
            .filter(|f| f.check == id)
            .map(|f| f.render())
            .collect()
    };
    let mut record_checks = 0;
    for check in CHECKS
        .iter()
        .filter(|c| !forkbook_checks::needs_objects(c.id))
    {
        record_checks += 1;
        assert!(
            !of(&with_objects, check.id).is_empty(),
            "the broken facts break `{}`",
            check.id
        );
        assert_eq!(
            of(&with_objects, check.id),
            of(&without, check.id),
            "`{}` is not listed as needing the objects, yet finds less without them",
            check.id
        );
    }
    assert!(record_checks >= 5, "{record_checks} checks run offline");
}

/// Not timed: a fix touching 20,000 files, each named by its entry, is checked whole and finds
/// nothing; one name left out is found, once. Before the names were indexed, three checks
/// resolved every name against every file for every differing file or hook (cubic: `check` on
/// such an overlay ran for more than 13 minutes without finishing).
#[test]
fn a_register_naming_twenty_thousand_files_is_checked_whole() {
    let mut facts = common::healthy();
    let wide: Vec<String> = (0..20_000)
        .map(|i| format!("mlx/backend/rocm/wide/d{:03}/file_{i:05}.cpp", i % 200))
        .collect();
    let tree = &mut facts.overlay.as_mut().unwrap().tree;
    tree.files.extend(wide.iter().cloned());
    tree.files.sort();
    tree.differing.extend(wide.iter().cloned());
    let register = facts.records.register.as_mut().unwrap();
    let names: Vec<&str> = wide.iter().map(String::as_str).collect();
    let mut entry = common::entry(
        5,
        43,
        &names,
        &[("state", "kept-local"), ("reason", "wide"), ("issue", "#8")],
    );
    register.entries.push(entry.clone());
    facts
        .records
        .patch_series
        .as_mut()
        .unwrap()
        .push(forkbook_checks::facts::SeriesPatch {
            number: 5,
            file: "patches-rocm/0005-wide.patch".into(),
            empty: false,
        });
    assert!(run_all(&facts).is_empty(), "{:#?}", run_all(&facts));

    let mut files = entry.files.into_vec();
    let left_out = files.remove(12_345);
    entry.files = files.into();
    facts.records.register.as_mut().unwrap().entries[4] = entry;
    let findings = run_all(&facts);
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].check, "differing-file-named");
    assert!(
        findings[0].message.contains(&left_out.name),
        "{findings:#?}"
    );
}

/// The findings of the streamed route (`run_streamed`: the register's entries summed up for the
/// checks that read them together, then handed one at a time to the others), each check's
/// kept apart and joined in the catalogue's order.
fn streamed(facts: &forkbook_checks::Facts) -> Vec<forkbook_checks::Finding> {
    let mut facts = facts.clone();
    let entries = (facts.records.register.as_mut()).map_or(Vec::new(), |r| {
        facts.summary = Some(forkbook_checks::facts::Summary::of(&r.entries));
        std::mem::take(&mut r.entries)
    });
    let mut by_check: Vec<Vec<forkbook_checks::Finding>> =
        CHECKS.iter().map(|_| Vec::new()).collect();
    forkbook_checks::run_streamed(
        &mut facts,
        |each| entries.iter().for_each(each),
        &mut |at, finding| by_check[at].push(finding),
    );
    by_check.into_iter().flatten().collect()
}

/// Registers of every kind of entry the checks read, as a person writes them: numbers given
/// twice and skipped, merged entries with and without patches, files named in a field and in
/// prose, fork commits, drafts, links of the fork and elsewhere, an entry with no state.
const REGISTERS: &[&str] = &[
    "# Local fixes\n\n## 1. Free the cached buffers\n\n- state: proposed\n- link: https://github.com/NripeshN/mlx/pull/12\n- package: propose/0001-a.patch\n- files: `mlx/backend/rocm/allocator.cpp`, `eval.cpp`\n\n## 1. Again\n\nTouches `mlx/backend/rocm/device/utils.hpp` and `mlx/backend/rocm/missing.cpp`.\n\n- state: merged\n- link: https://github.com/NripeshN/mlx/pull/3\n- fork-commit: 75915908dfe5028335d318b10340313744fd3a8d\n\n## 4. Past the count\n\n- state: merged\n- fork-commit: 1111111111111111111111111111111111111111\n- files: `mlx/device.cpp`\n- draft: yes\n",
    "# Local fixes\n\n1. **One.** Kept here; see `mlx/fast.cpp`.\n   - state: kept-local\n   - reason: the fork rewrites it\n   - issue: acme/app#3\n2. **Two.** No state at all, names `eval.cpp`.\n3. **Three.** Waits.\n   - state: to-propose\n   - link: https://github.com/ml-explore/mlx/pull/7\n",
    "# Local fixes\n\nNothing yet.\n",
];

#[test]
fn the_streamed_route_finds_what_the_whole_register_finds() {
    let mut fixtures = common::all();
    for text in REGISTERS {
        for mut facts in [common::healthy(), common::broken()] {
            let file = "patches-rocm/LOCAL_FIXES.md";
            facts.records.register = Some(forkbook_records::register::parse(file, text));
            fixtures.push(("a written register", facts.clone()));
            fixtures.push(("a written register, no overlay", records_alone(facts)));
        }
    }
    for (name, facts) in fixtures {
        let whole = run_all(&facts);
        // Every fixture but the healthy one finds something, from several checks.
        let checks: BTreeSet<&str> = whole.iter().map(|f| f.check).collect();
        assert!(name == "healthy" || checks.len() > 1, "{name}: {checks:?}");
        assert_eq!(streamed(&facts), whole, "fixture {name}");
    }
}
