//! The LOCAL_FIXES register as a user writes it: parsed into entries, checked, migrated from the
//! older style, and edited by `propose --record`.

use forkbook::engine::register::{self, State};
use forkbook_checks::{facts::Facts, find, Finding};

/// The facts of a records folder that holds this register and nothing else.
fn with_register(register: Option<register::Register>) -> Facts {
    Facts {
        records: forkbook_checks::facts::Records {
            register,
            ..Default::default()
        },
        ..Facts::default()
    }
}

const REGISTER: &str = "\
# Local fixes

Every change the overlay makes to the base tree, with its reason.

## 1. Accept the new `collapse_contiguous_dims` tuple

Upstream now returns three values; `copy.cpp` takes the first two.

- state: retarget-only
- cause: https://github.com/ml-explore/mlx/pull/2600

## 2. Free the allocator's cached buffers on exit

The cache in `mlx/backend/rocm/allocator.cpp` was never emptied. See `std::vector` use.

- State: Proposed
- Link: <https://github.com/NripeshN/mlx/pull/12>
- package: propose/0002-free-the-allocator-s-cached-buffers-on-exit.patch

## 3. Keep the ROCm hook in device.cpp

Prose that mentions `mlx/backend/cuda/eval.cpp` only in passing.

- state: kept-local
- reason: the fork's hook conflicts with upstream's new device table
- issue: #4
- files: `mlx/device.cpp`, `mlx/CMakeLists.txt`
- colour: blue

## Fix 4

## 5. No state yet

Touches `eval.cpp`.
";

fn run(check: &str, facts: &Facts) -> Vec<Finding> {
    find(check).unwrap().findings(facts)
}

#[test]
fn entries_carry_number_title_line_prose_files_and_fields() {
    let register = register::parse("patches-rocm/LOCAL_FIXES.md", REGISTER);
    let numbers: Vec<u32> = register.entries.iter().map(|e| e.number).collect();
    assert_eq!(numbers, [1, 2, 3, 5]);
    let first = &register.entries[0];
    assert_eq!(
        (first.title.as_str(), first.line),
        ("Accept the new `collapse_contiguous_dims` tuple", 5)
    );
    assert_eq!(
        &*first.prose,
        "Upstream now returns three values; `copy.cpp` takes the first two."
    );
    assert_eq!(first.state(), Some(State::RetargetOnly));
    let second = &register.entries[1];
    assert_eq!(second.state(), Some(State::Proposed));
    assert_eq!(
        second.value("link"),
        Some("https://github.com/NripeshN/mlx/pull/12")
    );
    let names: Vec<&str> = second.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["mlx/backend/rocm/allocator.cpp"],
        "prose code spans that are paths"
    );
    assert_eq!(second.files[0].line, 14);
}

#[test]
fn a_files_field_wins_over_paths_mentioned_in_passing() {
    let register = register::parse("LOCAL_FIXES.md", REGISTER);
    let third = register.entry(3).unwrap();
    let names: Vec<&str> = third.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["mlx/device.cpp", "mlx/CMakeLists.txt"]);
    assert_eq!(third.value("issue"), Some("#4"));
    assert!(
        !third.prose.contains("- reason"),
        "the field list is not prose: {}",
        third.prose
    );
}

#[test]
fn malformed_parts_become_findings_with_file_and_line() {
    let facts = with_register(Some(register::parse(
        "patches-rocm/LOCAL_FIXES.md",
        REGISTER,
    )));
    let numbered = run("fixes-numbered", &facts);
    let places: Vec<(Option<usize>, &str)> = numbered
        .iter()
        .map(|f| (f.line, f.message.as_str()))
        .collect();
    assert_eq!(
        places[0],
        (
            Some(30),
            "heading `Fix 4` looks like an entry but is not `## N. Title`"
        )
    );
    assert_eq!(
        places[1],
        (
            Some(32),
            "no entry is numbered 4, but entry 5 is (the register has 4 entries)"
        )
    );
    let state = run("fix-state-complete", &facts);
    assert_eq!(state.len(), 2, "{state:#?}");
    assert_eq!(state[0].line, Some(28));
    assert!(state[0].message.contains("unknown field `colour`"));
    assert_eq!(
        (state[1].line, state[1].message.as_str()),
        (
            Some(32),
            "entry 5 has no upstream state: no `state:` line, and nothing in its words says one"
        )
    );
    assert!(state
        .iter()
        .all(|f| &*f.file == "patches-rocm/LOCAL_FIXES.md"));
}

pub(crate) const OLDER: &str = "\
# Local fixes

**1. Free the allocator's cached buffers.** The cache in `mlx/backend/rocm/allocator.cpp` was
never emptied.

Status: sent upstream as PR #12.

**2. Keep the device hook**

The hook in `mlx/device.cpp` conflicts with upstream. Not upstreamed: only our build needs it.

**3. Merged one**

Touches `eval.cpp`. Merged into the fork as https://github.com/NripeshN/mlx/pull/15 in 1a2b3c4d.

**4. Nothing said**

Just prose about `kernels.cpp`.
";

#[test]
fn migrate_turns_bold_titles_and_status_sentences_into_headings_and_states() {
    let migration = register::migrate(
        OLDER,
        "patches-rocm/LOCAL_FIXES.md",
        Some("https://github.com/NripeshN/mlx"),
    );
    let states: Vec<Option<State>> = migration.proposals.iter().map(|p| p.state).collect();
    assert_eq!(
        states,
        [
            Some(State::Proposed),
            Some(State::KeptLocal),
            Some(State::Merged),
            None
        ]
    );
    assert_eq!(migration.proposals[0].missing, ["package"]);
    assert_eq!(migration.proposals[3].missing, ["state"]);
    let register = register::parse("LOCAL_FIXES.md", &migration.text);
    assert!(register.problems.is_empty(), "{:?}", register.problems);
    let first = register.entry(1).unwrap();
    assert_eq!(first.title, "Free the allocator's cached buffers");
    assert_eq!(
        first.value("link"),
        Some("https://github.com/NripeshN/mlx/pull/12")
    );
    assert_eq!(
        &*first.prose,
        "The cache in `mlx/backend/rocm/allocator.cpp` was\nnever emptied.\n\nStatus: sent upstream as PR #12.",
        "the status sentence stays in the prose"
    );
    let second = register.entry(2).unwrap();
    assert_eq!(
        second.value("reason"),
        Some("Not upstreamed: only our build needs it.")
    );
    assert_eq!(
        &*second.prose,
        "The hook in `mlx/device.cpp` conflicts with upstream. Not upstreamed: only our build needs it."
    );
    let third = register.entry(3).unwrap();
    assert_eq!(third.value("fork-commit"), Some("1a2b3c4d"));
    assert_eq!(
        third.value("link"),
        Some("https://github.com/NripeshN/mlx/pull/15")
    );
    assert!(migration
        .diff
        .starts_with("--- a/patches-rocm/LOCAL_FIXES.md\n+++ b/patches-rocm/LOCAL_FIXES.md\n"));
    for line in [
        "-**2. Keep the device hook**\n",
        "+## 2. Keep the device hook\n",
        "+- state: proposed\n",
    ] {
        assert!(
            migration.diff.contains(line),
            "{line} not in {}",
            migration.diff
        );
    }
    assert!(
        !migration.diff.contains("-Status:"),
        "no status sentence is removed: {}",
        migration.diff
    );
}

#[test]
fn an_older_register_is_reported_and_a_migrated_one_is_left_alone() {
    let older = register::parse("LOCAL_FIXES.md", OLDER);
    assert!(older.entries.is_empty());
    assert_eq!(older.problems.len(), 1);
    assert_eq!(older.problems[0].line, 3);
    let migrated = register::migrate(OLDER, "LOCAL_FIXES.md", None).text;
    let again = register::migrate(&migrated, "LOCAL_FIXES.md", None);
    assert_eq!(again.text, migrated);
    assert!(again.diff.is_empty() && again.proposals.is_empty());
}

#[test]
fn record_link_moves_an_entry_to_proposed_and_the_link_check_passes() {
    let text = register::migrate(OLDER, "LOCAL_FIXES.md", None).text;
    let mut facts = with_register(Some(register::parse("LOCAL_FIXES.md", &text)));
    facts.repos.fork = Some("https://github.com/NripeshN/mlx".into());
    let before: Vec<String> = run("fix-link-present", &facts)
        .into_iter()
        .map(|f| f.message)
        .collect();
    assert!(
        before
            .iter()
            .any(|m| m.starts_with("entry 4 has no upstream state and no upstream link")),
        "{before:?}"
    );
    let text = register::record_link(&text, 4, "https://github.com/NripeshN/mlx/pull/20").unwrap();
    facts.records.register = Some(register::parse("LOCAL_FIXES.md", &text));
    let entry = facts
        .records
        .register
        .as_ref()
        .unwrap()
        .entry(4)
        .unwrap()
        .clone();
    assert_eq!(entry.state(), Some(State::Proposed));
    let after: Vec<String> = run("fix-link-present", &facts)
        .into_iter()
        .map(|f| f.message)
        .collect();
    assert!(!after.iter().any(|m| m.starts_with("entry 4")), "{after:?}");
}

use forkbook::engine::check::{gather_facts, run_checks};
use forkbook::engine::config::Layout;
use forkbook::engine::overlay::OverlayState;
use forkbook::engine::Cache;

/// Every check over a demo project.
fn findings_of(demo: &crate::common::Demo) -> Vec<Finding> {
    let project = demo.demo.open().unwrap();
    let cache = Cache::open(&project).unwrap();
    let state = OverlayState::load(&project, &cache).unwrap();
    let facts = gather_facts(&project, &cache, &state).unwrap();
    run_checks(&facts)
}

fn errors(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .filter(|f| f.severity == forkbook_checks::Severity::Error)
        .map(|f| f.render())
        .collect()
}

#[test]
fn the_demo_register_passes_every_check_in_both_layouts() {
    for layout in [Layout::Patch, Layout::Files] {
        let findings = findings_of(&crate::common::Demo::new(layout));
        assert!(
            errors(&findings).is_empty(),
            "{layout:?}:\n{}",
            errors(&findings).join("\n")
        );
        // Warnings too: the demo README explains the fork's hook into the CUDA backend.
        assert!(findings.is_empty(), "{findings:#?}");
    }
}

#[test]
fn breaking_the_demo_register_is_found_at_its_line() {
    let demo = crate::common::Demo::new(Layout::Patch);
    let path = demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let broken = text
        .replace("- link: https://github.com/NripeshN/mlx/pull/101\n", "")
        .replace(
            "Files: `mlx/backend/rocm/local_workaround.hpp`",
            "Files: `mlx/backend/rocm/eval.cpp`",
        );
    assert_ne!(broken, text, "the demo register changed shape");
    std::fs::write(&path, &broken).unwrap();
    let errors = errors(&findings_of(&demo));
    let line_of = |needle: &str| broken.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let entry2 = line_of("## 2.");
    assert!(errors.contains(&format!(
        "patches-rocm/LOCAL_FIXES.md:{entry2}: error[fix-link-present]: entry 2 applies to the fork but has no upstream link\n  \
         note: send it with `forkbook propose 2` and record the pull request with `forkbook propose --record 2 URL`, \
         or mark it `kept-local` with a reason and an issue"
    )), "{errors:#?}");
    assert!(errors.iter().any(|e| e.starts_with("patches-rocm/LOCAL_FIXES.md: error[differing-file-named]: `mlx/backend/rocm/local_workaround.hpp` differs")), "{errors:#?}");
    assert_eq!(errors.len(), 2, "{errors:#?}");
}

#[test]
fn check_command_reports_findings_as_text_and_json_with_exit_status() {
    let demo = crate::common::Demo::new(Layout::Patch);
    let (code, out) = demo.run(&["check"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        format!("all {} checks passed\n", forkbook_checks::CHECKS.len())
    );
    let path = demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("## 3. ", "## 5. ")).unwrap();
    let (code, out) = demo.run(&["--json", "check"]);
    assert_eq!(code, 1, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Entry 5 where 3 should be, and the series' patch 3 without its entry.
    assert_eq!(
        (report["errors"].as_u64(), report["warnings"].as_u64()),
        (Some(3), Some(0)),
        "{out}"
    );
    let first = &report["findings"][0];
    assert_eq!(first["check"], "fixes-numbered");
    assert_eq!(first["file"], "patches-rocm/LOCAL_FIXES.md");
    assert!(first["line"].as_u64().unwrap() > 1);
}

#[test]
fn check_lists_and_explains_the_catalogue() {
    let demo = crate::common::Demo::new(Layout::Patch);
    let (code, out) = demo.run(&["check", "--list"]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), forkbook_checks::CHECKS.len());
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")
                == "fix-link-present error every fix for the fork links to its pull request"),
        "{out}"
    );
    let (code, out) = demo.run(&["check", "--explain", "fix-link-present"]);
    assert_eq!((code, out.lines().next()), (0, Some("# fix-link-present")));
    let (code, out) = demo.run(&["check", "--explain", "no-such"]);
    assert_eq!(code, 2);
    assert!(
        out.contains("error: no check `no-such`")
            && out.contains("note: the checks are: upstream-well-formed"),
        "{out}"
    );
}

#[test]
fn fixes_migrate_shows_the_diff_and_writes_only_when_asked() {
    let demo = crate::common::Demo::new(Layout::Patch);
    let path = demo.records().join("LOCAL_FIXES.md");
    std::fs::write(&path, OLDER).unwrap();
    let (code, out) = demo.run(&["fixes", "migrate"]);
    assert_eq!(code, 0, "{out}");
    // The demo's fork is a local path, so `PR #12` cannot become a link.
    assert!(out.starts_with("patches-rocm/LOCAL_FIXES.md:3: entry 1: proposed (from \"Status: sent upstream as PR #12.\")\n  still needs: link, package\n"), "{out}");
    assert!(
        out.contains("+## 1. Free the allocator's cached buffers\n"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        OLDER,
        "nothing written without --write"
    );
    let (code, out) = demo.run(&["fixes", "migrate", "--write"]);
    assert_eq!(code, 0, "{out}");
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(register::parse("f", &written).entries.len(), 4);
    let (_, again) = demo.run(&["fixes", "migrate"]);
    assert!(again.contains("nothing to migrate"), "{again}");
}

/// Registers made of random pieces of register syntax: parsing, migrating and editing never
/// panic, and an edit keeps the rest of the text.
#[test]
fn random_registers_never_panic() {
    const PIECES: &[&str] = &[
        "## ",
        "# ",
        "### ",
        "1. ",
        "12. ",
        "**",
        "- state: ",
        "- link: ",
        "- files: ",
        "`a.cpp`",
        "`mlx/x.h`",
        "\n",
        "\n\n",
        " ",
        "Status: ",
        "sent upstream as PR #3",
        ". ",
        "é",
        "—",
        "\r\n",
        "> ",
        "```\n",
        "* ",
        "Files: ",
        "merged in abcdef1",
        "Not upstreamed",
        ":",
        "<",
        "[x](https://github.com/o/r/pull/1)",
        "\t",
        "2. ",
        "Fix 4",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut with_entries = 0;
    for _ in 0..3000 {
        let start = if next() % 2 == 0 { "## 1. Start\n" } else { "" };
        let text: String = std::iter::once(start)
            .chain((0..next() % 40).map(|_| PIECES[(next() % PIECES.len() as u64) as usize]))
            .collect();
        let parsed = register::parse("f", &text);
        let _ = register::migrate(&text, "f", Some("https://github.com/o/r"));
        if let Some(entry) = parsed.entries.first() {
            with_entries += 1;
            let edited =
                register::record_link(&text, entry.number, "https://github.com/o/r/pull/9")
                    .unwrap();
            let again = register::parse("f", &edited);
            let entry = again.entry(entry.number).unwrap();
            if entry.field("link").is_some() && parsed.entries[0].problems.is_empty() {
                assert_eq!(
                    entry.value("link"),
                    Some("https://github.com/o/r/pull/9"),
                    "{text:?}"
                );
            }
        }
    }
    assert!(
        with_entries > 100,
        "the pieces make entries: {with_entries}"
    );
}

/// Renders the demo's findings of one check as `file:line: message`.
fn found(demo: &crate::common::Demo, check: &str) -> Vec<String> {
    findings_of(demo)
        .into_iter()
        .filter(|f| f.check == check)
        .map(|f| {
            format!(
                "{}:{}: {}",
                f.file,
                f.line.map_or(String::new(), |l| l.to_string()),
                f.message
            )
        })
        .collect()
}

#[test]
fn the_build_pin_the_readme_counts_and_the_lock_are_read_from_the_project() {
    let demo = crate::common::Demo::new(Layout::Patch);
    let config = demo.root().join("forkbook.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("[overlay]\n", "[overlay]\npin_file = \"cmake/pin.cmake\"\n"),
    )
    .unwrap();
    std::fs::create_dir_all(demo.root().join("cmake")).unwrap();
    let pin_file = demo.root().join("cmake/pin.cmake");
    let world = &demo.demo.world;
    std::fs::write(
        &pin_file,
        format!("# the MLX commit we build\nset(MLX_PIN {})\n", world.pin2),
    )
    .unwrap();
    assert_eq!(
        found(&demo, "pin-matches-build"),
        [format!("cmake/pin.cmake:2: the build uses pin `{}` but `patches-rocm/UPSTREAM` records `{}` (line 5)", world.pin2, world.pin1)]
    );
    std::fs::write(&pin_file, format!("set(MLX_PIN {})\n", world.pin1)).unwrap();
    assert!(found(&demo, "pin-matches-build").is_empty());

    let readme = demo.records().join("README.md");
    let text = std::fs::read_to_string(&readme).unwrap();
    let line = text
        .lines()
        .position(|l| l.starts_with("- local fixes: 4"))
        .expect("the demo's count")
        + 1;
    std::fs::write(
        &readme,
        text.replace("- local fixes: 4", "- local fixes: 3"),
    )
    .unwrap();
    assert_eq!(
        found(&demo, "readme-counts"),
        [format!(
            "patches-rocm/README.md:{line}: the README states 3 local fixes, the overlay has 4"
        )]
    );

    let lock = demo.records().join("overlay.lock");
    let text = std::fs::read_to_string(&lock).unwrap();
    let (line, entry) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.ends_with("  mlx/fast.cpp"))
        .unwrap();
    std::fs::write(
        &lock,
        text.replace(entry, &format!("{}  mlx/fast.cpp", "0".repeat(64))),
    )
    .unwrap();
    assert_eq!(
        found(&demo, "overlay-matches-lock"),
        [format!(
            "patches-rocm/overlay.lock:{}: `mlx/fast.cpp` differs from its locked hash",
            line + 1
        )]
    );
}

#[test]
fn a_core_fix_named_wrongly_is_caught_by_the_residual_and_both_file_checks() {
    let demo = crate::common::Demo::new(Layout::Patch);
    let path = demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("Files: `mlx/fast.cpp`"), "{text}");
    std::fs::write(
        &path,
        text.replace("Files: `mlx/fast.cpp`", "Files: `mlx/device.cpp`"),
    )
    .unwrap();
    let residual = found(&demo, "residual-hunks-noted");
    assert_eq!(residual.len(), 1, "{residual:?}");
    assert!(
        residual[0].starts_with("patches-rocm/LOCAL_FIXES.md:: residual hunk at `mlx/fast.cpp:"),
        "{residual:?}"
    );
    assert!(
        residual[0].ends_with("belongs to fix 1, whose entry does not name `mlx/fast.cpp`"),
        "{residual:?}"
    );
    assert_eq!(
        found(&demo, "differing-file-named"),
        ["patches-rocm/LOCAL_FIXES.md:: `mlx/fast.cpp` differs from the base tree but no entry names it"]
    );
    let named = found(&demo, "named-file-differs");
    assert!(
        named[0]
            .ends_with("entry 1 names `mlx/device.cpp`, which does not differ from the base tree"),
        "{named:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The register as people write it: numbered list items in sections, status sentences in the
// prose, holds, a stated policy, entries no words give a state. The fixtures are our own text
// in the shapes a real overlay's register took over its history.

/// Sections of numbered list items, the state said in the last sentence of each.
const SECTIONS: &str = "\
# Changes this overlay carries on top of the fork

Every change below has its reason. Changes that apply to the fork should go back to it;
adaptations to the pin follow the fork when it merges a newer upstream.

Steps for a pin bump, for reference:

1. Fetch the new pin.
2. Rebuild the overlay.

## Retarget onto the upstream pin (1a2b3c4d)

Upstream changed three interfaces between the fork's base and the pin:

1. **Tuple return.** `mlx/backend/gpu/copy.cpp` unpacks the new 3-tuple (acme/upstream#77).
2. **Renamed flag.** The option moved; `mlx/backend/rocm/flags.cpp` reads its new name.
3. **Event status.** `mlx/backend/rocm/event.cpp` now reports stream failures, which the fork misses too. Applies to the fork; to be proposed there.

## Kernel fixes

4. **Scale type in the dequantizer.** `mlx/backend/rocm/quant/dequant.hip` read the scales
   with the wrong element type, which gave garbage for two modes. Applies to the fork; to be proposed there.
5. **Batched path made opt-in.** The batched path in `mlx/backend/rocm/quant/gather.hip` returned wrong sums on one device. Applies to the fork; to be proposed there after a root cause.
6. **Grid size for short rows.** `mlx/backend/rocm/reduce.hip` launched too many threads; the measurement is at https://example.org/notes/grid.

## Not carried

- `mlx/backend/metal/kernels.cpp` is not copied: this build never compiles it.
- The fork's tests are not needed here.
";

/// A later shape: a policy that keeps fork fixes here, entries kept in the project with the
/// issue they cite, a build section listing an earlier number after later ones, a blank line
/// between two items, and an entry with no status at all.
const POLICY: &str = "\
# Changes this overlay carries on top of the fork

Entries marked \"Applies to the fork\" describe defects the fork has as well; they stay here and are not proposed to the fork.

## Fixes to the fork's kernels

1. **Bounds of the copy grid.** `mlx/backend/rocm/copy.hip` capped the grid without looping. Applies to the fork.
3. **Locked module cache.** `mlx/backend/rocm/jit.cpp` raced on first use. Applies to the fork; kept in ourapp under the fork policy, not proposed there (acme/ourapp#31).

4. **Locked event pool.** `mlx/backend/rocm/event_pool.cpp` handed one handle to two events. Kept in ourapp under the fork policy (acme/ourapp#40).
5. **Range-checked knobs.** The integer variables in `mlx/backend/rocm/env.h` are parsed strictly now (acme/ourapp#52).

## Fixes to the fork's build

2. **Objects track their headers.** `mlx/backend/rocm/CMakeLists.txt` passes depfiles to the compiler. Fork-side build glue; applies to the fork.
";

/// The heading form with states said in the prose, no field lists.
const HEADINGS: &str = "\
# Local fixes

## 1. Keep the device hook

The hook in `mlx/device.cpp` stays in ourapp: the fork's maintainers prefer their own (acme/ourapp#9).

## 2. Free the cached buffers

The cache in `mlx/backend/rocm/allocator.cpp` was never emptied. Sent to the fork as https://github.com/NripeshN/mlx/pull/44.

## 3. Nothing said here

Touches `mlx/backend/rocm/eval.cpp`.
";

fn states_of(register: &register::Register) -> Vec<(u32, Option<&'static str>)> {
    register
        .entries
        .iter()
        .map(|e| (e.number, e.state().map(|s| s.as_str())))
        .collect()
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} not in the text"))
        + 1
}

#[test]
fn numbered_list_items_in_sections_are_entries_with_their_section_files_and_references() {
    let register = register::parse("patches-rocm/LOCAL_FIXES.md", SECTIONS);
    let numbers: Vec<u32> = register.entries.iter().map(|e| e.number).collect();
    assert_eq!(
        numbers,
        [1, 2, 3, 4, 5, 6],
        "the intro's steps and the bullet list are no entries"
    );
    let first = &register.entries[0];
    assert_eq!(first.title, "Tuple return");
    assert_eq!(first.line, line_of(SECTIONS, "1. **Tuple return"));
    assert_eq!(
        first.section.as_deref(),
        Some("Retarget onto the upstream pin (1a2b3c4d)")
    );
    assert_eq!(first.issues[..], ["acme/upstream#77"]);
    let fourth = register.entry(4).unwrap();
    assert_eq!(fourth.section.as_deref(), Some("Kernel fixes"));
    assert_eq!(fourth.title, "Scale type in the dequantizer");
    let files: Vec<&str> = fourth.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(files, ["mlx/backend/rocm/quant/dequant.hip"]);
    assert_eq!(
        fourth.end_line,
        fourth.line + 1,
        "the continuation line belongs to the item"
    );
    assert!(
        fourth
            .prose
            .starts_with("`mlx/backend/rocm/quant/dequant.hip` read the scales\nwith the wrong"),
        "{}",
        fourth.prose
    );
    assert_eq!(
        register.entry(6).unwrap().links[..],
        ["https://example.org/notes/grid"]
    );
    assert!(register.problems.is_empty(), "{:?}", register.problems);
}

#[test]
fn states_come_from_the_entries_words_conservatively() {
    let register = register::parse("LOCAL_FIXES.md", SECTIONS);
    assert_eq!(
        states_of(&register),
        [
            (1, Some("retarget-only")),
            (2, Some("retarget-only")),
            // In the retarget section, but its own words say it applies to the fork.
            (3, Some("to-propose")),
            (4, Some("to-propose")),
            (5, Some("to-propose")),
            // Nothing says: no state, and above all no pull request.
            (6, None),
        ]
    );
    let retarget = register.entry(1).unwrap();
    assert_eq!(
        retarget.value("cause"),
        Some("Retarget onto the upstream pin (1a2b3c4d)")
    );
    assert_eq!(register.entry(4).unwrap().reason(), None);
    let held = register.entry(5).unwrap();
    assert_eq!(
        held.reason(),
        Some("to be proposed there after a root cause"),
        "the hold is kept as the reason"
    );
    let stated = held.stated.as_ref().unwrap();
    assert_eq!(stated.line, held.line);
    assert_eq!(
        stated.from,
        "\"Applies to the fork; to be proposed there after a root cause.\""
    );

    let policy = register::parse("LOCAL_FIXES.md", POLICY);
    assert_eq!(
        states_of(&policy),
        [
            (1, Some("kept-local")),
            (3, Some("kept-local")),
            (4, Some("kept-local")),
            (5, None),
            (2, Some("kept-local")),
        ]
    );
    let by_policy = policy.entry(1).unwrap();
    assert!(
        by_policy
            .reason()
            .unwrap()
            .starts_with("Entries marked \"Applies to the fork\""),
        "{:?}",
        by_policy.reason()
    );
    assert_eq!(by_policy.value("issue"), None, "the policy cites no issue");
    assert_eq!(
        policy.entry(3).unwrap().value("issue"),
        Some("acme/ourapp#31")
    );
    assert_eq!(
        policy.entry(4).unwrap().value("issue"),
        Some("acme/ourapp#40")
    );
    assert_eq!(
        policy.entry(2).unwrap().section.as_deref(),
        Some("Fixes to the fork's build")
    );

    let headings = register::parse("LOCAL_FIXES.md", HEADINGS);
    assert_eq!(
        states_of(&headings),
        [(1, Some("kept-local")), (2, Some("proposed")), (3, None)]
    );
    assert_eq!(
        headings.entry(2).unwrap().value("link"),
        Some("https://github.com/NripeshN/mlx/pull/44")
    );
}

#[test]
fn the_checks_read_the_words_and_fail_to_propose_entries_until_their_link_is_recorded() {
    let mut facts = with_register(Some(register::parse(
        "patches-rocm/LOCAL_FIXES.md",
        SECTIONS,
    )));
    facts.repos.fork = Some("https://github.com/NripeshN/mlx".into());
    let links = run("fix-link-present", &facts);
    let entries: Vec<(Option<usize>, &str)> =
        links.iter().map(|f| (f.line, f.message.as_str())).collect();
    assert_eq!(entries.len(), 4, "{links:#?}");
    assert_eq!(
        entries[0],
        (
            Some(line_of(SECTIONS, "3. **Event status")),
            "entry 3 is to be proposed (read from \"Applies to the fork; to be proposed there.\") but has no upstream link"
        )
    );
    let held = &links[2];
    assert!(
        held.message.starts_with("entry 5 is to be proposed"),
        "{held:?}"
    );
    let note = held.note.as_deref().unwrap();
    assert!(
        note.contains("`forkbook propose 5`")
            && note.ends_with("(its hold: to be proposed there after a root cause)"),
        "{note}"
    );
    assert!(links[3]
        .message
        .starts_with("entry 6 has no upstream state and no upstream link"));

    let state = run("fix-state-complete", &facts);
    assert_eq!(state.len(), 1, "{state:#?}");
    assert_eq!(
        (state[0].line, state[0].message.as_str()),
        (
            Some(line_of(SECTIONS, "6. **Grid size")),
            "entry 6 has no upstream state: no `state:` line, and nothing in its words says one"
        )
    );
    assert!(run("fixes-numbered", &facts).is_empty());

    facts.records.register = Some(register::parse("patches-rocm/LOCAL_FIXES.md", POLICY));
    assert!(
        run("fixes-numbered", &facts).is_empty(),
        "entry 2 listed after 5 in its own section is fine"
    );
    let state = run("fix-state-complete", &facts);
    let messages: Vec<&str> = state.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "entry 1 is `kept-local` (read from \"Applies to the fork.\" under the policy at line 3) but has no `issue`",
            "entry 5 has no upstream state: no `state:` line, and nothing in its words says one",
            "entry 2 is `kept-local` (read from \"Fork-side build glue; applies to the fork.\" under the policy at line 3) but has no `issue`",
        ]
    );
    assert!(
        run("fix-link-present", &facts)
            .iter()
            .all(|f| f.message.starts_with("entry 5 ")),
        "kept-local entries need no link"
    );
}

/// The lines of `new` that are not in `old`, when `new` is `old` with lines inserted and
/// nothing else changed; panics otherwise.
fn only_inserted(old: &str, new: &str) -> Vec<String> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut added = Vec::new();
    let mut at = 0;
    for line in new.split_inclusive('\n') {
        if at < old_lines.len() && old_lines[at] == line {
            at += 1;
        } else {
            added.push(line.to_string());
        }
    }
    assert_eq!(
        at,
        old_lines.len(),
        "lines of the old text changed or went missing:\n{new}"
    );
    added
}

#[test]
fn recording_a_link_adds_lines_and_changes_no_byte_of_what_was_there() {
    let text = register::record_proposal(
        SECTIONS,
        4,
        "https://github.com/NripeshN/mlx/pull/61",
        Some("propose/0004-scale-type.patch"),
    )
    .unwrap();
    assert_eq!(
        only_inserted(SECTIONS, &text),
        [
            "   - state: proposed\n",
            "   - link: https://github.com/NripeshN/mlx/pull/61\n",
            "   - package: propose/0004-scale-type.patch\n",
        ]
    );
    let after = register::parse("LOCAL_FIXES.md", &text);
    let fourth = after.entry(4).unwrap();
    assert_eq!(fourth.state(), Some(State::Proposed));
    assert_eq!(
        fourth.value("link"),
        Some("https://github.com/NripeshN/mlx/pull/61")
    );
    assert_eq!(
        fourth.prose,
        register::parse("f", SECTIONS).entry(4).unwrap().prose,
        "the field list is not prose"
    );
    // The list stays one list: every other entry reads as before.
    let before = register::parse("LOCAL_FIXES.md", SECTIONS);
    let mut expected = states_of(&before);
    expected[3].1 = Some("proposed");
    assert_eq!(states_of(&after), expected);

    // Recording again replaces the values on their lines, and adds nothing else.
    let again = register::record_link(&text, 4, "https://github.com/NripeshN/mlx/pull/62").unwrap();
    assert_eq!(
        again,
        text.replace("/pull/61", "/pull/62"),
        "only the link's value changed"
    );
    // The last item of a section, then the heading form.
    let last =
        register::record_link(SECTIONS, 6, "https://github.com/NripeshN/mlx/pull/63").unwrap();
    assert_eq!(only_inserted(SECTIONS, &last).len(), 2);
    assert_eq!(register::parse("f", &last).entries.len(), 6);
    let heading =
        register::record_link(HEADINGS, 3, "https://github.com/NripeshN/mlx/pull/64").unwrap();
    assert_eq!(
        only_inserted(HEADINGS, &heading),
        [
            "\n",
            "- state: proposed\n",
            "- link: https://github.com/NripeshN/mlx/pull/64\n"
        ]
    );
}

/// The words of a register, for comparing prose across a change of form: emphasis marks,
/// heading marks and a title's closing period are form, not words.
fn words_of(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.trim_start().trim_start_matches("## "))
        .flat_map(|l| l.split_whitespace())
        .map(|w| w.replace("**", "").trim_end_matches('.').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

#[test]
fn migrate_to_the_heading_form_keeps_every_word_and_number() {
    for fixture in [SECTIONS, POLICY] {
        let migration = register::migrate(fixture, "LOCAL_FIXES.md", None);
        let before = register::parse("f", fixture);
        let after = register::parse("f", &migration.text);
        assert!(after
            .entries
            .iter()
            .all(|e| e.form == register::Form::Heading));
        let numbers = |r: &register::Register| -> Vec<(u32, String, Option<String>)> {
            r.entries
                .iter()
                .map(|e| {
                    (
                        e.number,
                        e.title.clone(),
                        e.section.as_deref().map(String::from),
                    )
                })
                .collect()
        };
        assert_eq!(
            numbers(&after),
            numbers(&before),
            "numbers, titles and sections stay"
        );
        assert_eq!(
            states_of(&after),
            states_of(&before),
            "what the words said is now a field"
        );
        assert!(after
            .entries
            .iter()
            .filter(|e| e.state().is_some())
            .all(|e| e.field("state").is_some()));
        // Every word stays, in order; the only new words are the added fields.
        let added_fields: Vec<String> = migration
            .text
            .lines()
            .filter(|l| {
                ["- state:", "- reason:", "- issue:", "- cause:"]
                    .iter()
                    .any(|k| l.starts_with(k))
            })
            .map(String::from)
            .collect();
        let kept: String = migration
            .text
            .lines()
            .filter(|l| !added_fields.iter().any(|a| a == l))
            .collect::<Vec<_>>()
            .join("\n");
        let numbered = |text: &str| -> Vec<String> {
            words_of(text)
                .into_iter()
                .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
                .collect()
        };
        assert_eq!(numbered(&kept), numbered(fixture), "{}", migration.text);
        assert_eq!(migration.proposals.len(), before.entries.len());
        let again = register::migrate(&migration.text, "LOCAL_FIXES.md", None);
        assert_eq!(
            again.text, migration.text,
            "a migrated register stays as it is"
        );
    }
    let migration = register::migrate(SECTIONS, "LOCAL_FIXES.md", None);
    assert!(migration.text.contains(
        "## 5. Batched path made opt-in\n\nThe batched path in `mlx/backend/rocm/quant/gather.hip` returned wrong sums on one device. Applies to the fork; to be proposed there after a root cause.\n\n- state: to-propose\n- reason: to be proposed there after a root cause\n\n## 6."
    ), "{}", migration.text);
    assert!(migration
        .text
        .contains("## Not carried\n\n- `mlx/backend/metal/kernels.cpp` is not copied"));
    assert_eq!(migration.proposals[5].missing, ["state"]);
}

#[test]
fn fixes_list_shows_every_entry_and_reading_rewrites_nothing() {
    let demo = crate::common::Demo::new(Layout::Files);
    let path = demo.records().join("LOCAL_FIXES.md");
    std::fs::write(&path, SECTIONS).unwrap();
    let (code, out) = demo.run(&["--json", "fixes", "list"]);
    assert_eq!(code, 0, "{out}");
    let listing: serde_json::Value = serde_json::from_str(&out).unwrap();
    let entries = listing["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 6);
    let fifth = &entries[4];
    for key in [
        "number", "title", "state", "reason", "links", "issues", "files", "section", "line",
    ] {
        assert!(fifth.get(key).is_some(), "{key} in {fifth}");
    }
    assert_eq!(fifth["number"], 5);
    assert_eq!(fifth["state"], "to-propose");
    assert_eq!(fifth["reason"], "to be proposed there after a root cause");
    assert_eq!(fifth["section"], "Kernel fixes");
    // It names `mlx/backend/rocm/quant/gather.hip`, which the demo's overlay (its lock) has
    // not: no file of the overlay.
    assert_eq!(fifth["files"], serde_json::json!([]));
    assert_eq!(fifth["state_source"], "words");
    assert_eq!(entries[5]["state"], serde_json::Value::Null);
    assert_eq!(entries[0]["issues"][0], "acme/upstream#77");
    let problem = &listing["problems"][0];
    assert_eq!(problem["line"], line_of(SECTIONS, "6. **Grid size"));

    let (code, out) = demo.run(&["fixes", "list"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("patches-rocm/LOCAL_FIXES.md: 6 entries\n"),
        "{out}"
    );
    assert!(out.contains("\nKernel fixes\n"), "{out}");
    assert!(
        out.contains("    5. Batched path made opt-in  [to-propose]  patches-rocm/LOCAL_FIXES.md:"),
        "{out}"
    );
    assert!(
        out.contains("       reason: to be proposed there after a root cause\n"),
        "{out}"
    );
    assert!(
        out.contains("    6. Grid size for short rows  [no state]"),
        "{out}"
    );
    assert!(
        out.contains("by state: 2 retarget-only, 3 to-propose, 1 none\n"),
        "{out}"
    );

    let (_, check) = demo.run(&["check"]);
    assert!(check.contains("entry 6 has no upstream state"), "{check}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        SECTIONS,
        "listing and checking write nothing"
    );

    // Any register file, without a project.
    let loose = demo.tmp.path().join("LOCAL_FIXES.md");
    std::fs::write(&loose, POLICY).unwrap();
    let (code, out) = demo.run(&["fixes", "list", "--file", loose.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("by state: 4 kept-local, 1 none\n"), "{out}");
    let (code, out) = demo.run(&["fixes", "list", "--file", "/no/such/register.md"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("there is no register at `/no/such/register.md`"),
        "{out}"
    );
}

#[test]
fn fix_add_writes_a_list_entry_into_a_list_register_and_only_adds_lines() {
    let demo = crate::common::Demo::new(Layout::Files);
    let path = demo.records().join("LOCAL_FIXES.md");
    std::fs::write(&path, SECTIONS).unwrap();
    let copy = demo.tmp.path().join("edited");
    let (code, out) = demo.run(&["materialize", "--out", copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    std::fs::write(copy.join("mlx/backend/rocm/new_helper.hpp"), "// helper\n").unwrap();
    let (code, out) = demo.run(&[
        "fix",
        "add",
        "--from",
        copy.to_str().unwrap(),
        "--title",
        "Add a helper",
    ]);
    assert_eq!(code, 0, "{out}");
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        only_inserted(SECTIONS, &written),
        [
            "7. **Add a helper.** Files: `mlx/backend/rocm/new_helper.hpp`. TODO: why this fix exists.\n",
            "   - state: TODO, one of retarget-only (with - cause:), to-propose, proposed (with - link: and - package:), merged (with - link: and - fork-commit:), kept-local (with - reason: and - issue:)\n",
        ]
    );
    let register = register::parse("f", &written);
    let added = register.entry(7).unwrap();
    assert_eq!(added.section.as_deref(), Some("Kernel fixes"));
    assert_eq!(added.files[0].name, "mlx/backend/rocm/new_helper.hpp");
    assert_eq!(added.state(), None, "the author fills in its state");
}

#[test]
fn an_issue_the_policy_cites_is_the_issue_of_every_entry_kept_by_it() {
    let cited = POLICY.replace(
        "are not proposed to the fork.",
        "are not proposed to the fork (acme/ourapp#7).",
    );
    assert_ne!(cited, POLICY);
    let register = register::parse("LOCAL_FIXES.md", &cited);
    assert_eq!(
        register.entry(1).unwrap().value("issue"),
        Some("acme/ourapp#7")
    );
    assert_eq!(
        register.entry(3).unwrap().value("issue"),
        Some("acme/ourapp#31"),
        "an entry's own citation wins"
    );
    let facts = with_register(Some(register));
    let messages: Vec<String> = run("fix-state-complete", &facts)
        .into_iter()
        .map(|f| f.message)
        .collect();
    assert_eq!(
        messages,
        ["entry 5 has no upstream state: no `state:` line, and nothing in its words says one"]
    );
}

/// Issue 40.3: what a reader of the rendered register cannot see says nothing. Each entry's
/// visible words are "State to be decided."; its fields or its claim sit in an HTML comment, a
/// fenced example block, an indented code block, inline HTML, a code span, a link's title or an
/// image's description. Fails before: the comment's and the fenced block's fields were an
/// entry's fields (check passed), and `fixes list` read `merged` from a comment, a code span
/// and a link's title.
#[test]
fn only_what_the_page_shows_gives_an_entry_its_fields_state_and_links() {
    let url = "https://github.com/NripeshN/mlx/pull/12";
    let hidden = [
        format!("<!--\n- state: merged\n- link: {url}\n- fork-commit: 1a2b3c4d\n-->"),
        format!("```markdown\n- state: proposed\n- link: {url}\n- package: p.patch\n```"),
        format!("    - state: proposed\n    - link: {url}\n    - package: p.patch"),
        format!("<div hidden>\nMerged as {url} in 1a2b3c4d.\n</div>"),
        format!("It is <span title=\"merged as {url}\">held</span> for now."),
        format!("The flag `merged as {url}` is an example."),
        format!("See [the notes](https://example.org/notes \"merged as {url}\")."),
        format!("![merged as {url} in 1a2b3c4d](shot.png)"),
    ];
    let mut text = String::from("# Local fixes\n");
    for (index, body) in hidden.iter().enumerate() {
        text.push_str(&format!(
            "\n## {}. Fix {}\n\nState to be decided.\n\n{body}\n",
            index + 1,
            index + 1
        ));
    }
    // The same in the list form: the fields nested in the item, in a comment or a fence.
    text.push_str(&format!(
        "\n## Kernel fixes\n\n9. **Fix 9.** State to be decided.\n   <!--\n   - state: merged\n   - link: {url}\n   -->\n\
         10. **Fix 10.** State to be decided.\n\n    ```\n    - state: proposed\n    - link: {url}\n    ```\n"
    ));
    let parsed = register::parse("LOCAL_FIXES.md", &text);
    assert_eq!(parsed.entries.len(), 10, "{:?}", parsed.entries);
    for entry in &parsed.entries {
        let n = entry.number;
        assert!(entry.fields.is_empty(), "entry {n}: {:?}", entry.fields);
        assert_eq!(entry.state(), None, "entry {n}: {:?}", entry.stated);
        assert!(
            !entry.links.iter().any(|l| l.contains("/pull/")),
            "entry {n}: {:?}",
            entry.links
        );
    }
    let listing = register::listing(&parsed, None, "");
    assert!(listing.entries.iter().all(|e| e.state.is_none()));
    let facts = with_register(Some(parsed));
    let findings = run("fix-state-complete", &facts);
    let no_state: Vec<&str> = (findings.iter())
        .filter(|f| f.message.contains("has no upstream state"))
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(no_state.len(), 10, "{findings:#?}");

    // Visible, the same words count: the check has nothing to say of the state.
    let shown = format!("# Local fixes\n\n## 1. Fix\n\nMerged as {url} in 1a2b3c4d.\n");
    let entry = register::parse("f", &shown).entries[0].clone();
    assert_eq!(entry.state(), Some(State::Merged));
    assert_eq!(entry.links[..], [url]);
    let linked = format!("## 1. Fix\n\nMerged as [the pull request]({url} \"a title\").\n");
    let entry = register::parse("f", &linked).entries[0].clone();
    assert_eq!(entry.state(), Some(State::Merged));
    assert_eq!(entry.value("link"), Some(url));
}

/// The entries of a register in the list form, each saying `sentence`, then their states.
fn states_said(sentences: &[String]) -> Vec<(String, Option<State>)> {
    let mut text = String::from("# Local fixes\n\n## Fixes to the fork's kernels\n\n");
    for (index, sentence) in sentences.iter().enumerate() {
        text.push_str(&format!(
            "{}. **Fix {}.** The kernel's grid was too small. {sentence}\n",
            index + 1,
            index + 1
        ));
    }
    let parsed = register::parse("f", &text);
    assert_eq!(parsed.entries.len(), sentences.len(), "{text}");
    sentences
        .iter()
        .cloned()
        .zip(parsed.entries.iter().map(|e| e.state()))
        .collect()
}

/// Issue 40.3: a merge claim counts only when it is about this entry's own change. Each family
/// the rule must hold against: a relative clause, a subordinate clause, another subject, an
/// active verb with another object, negation, a condition, a quotation, and a claim in another
/// entry's text. Fails before: "…, which the fork merged in …" and "Upstream merged <link>,
/// which broke us" were read as `merged`, and `fixes migrate --write` wrote `state: merged`.
#[test]
fn a_merge_claim_counts_only_when_it_is_about_the_entry_s_own_change() {
    let other = "https://github.com/ml-explore/mlx/pull/10";
    let ours = "https://github.com/NripeshN/mlx/pull/12";
    let not_ours = [
        // Relative clauses: the verb belongs to another object.
        format!("Unrelated to {other}, which the fork merged in 1a2b3c4d."),
        format!("Needed because of {other}, which upstream merged last week."),
        format!("It is not {other} that was merged in 1a2b3c4d."),
        format!("See {other}, whose rename upstream merged in 1a2b3c4d."),
        // Subordinate clauses.
        format!("Needed after upstream merged {other}."),
        format!("Broken since the fork merged {other}."),
        format!("Written before {other} was merged."),
        format!("Needed because {other} was merged upstream."),
        // Another subject or another object.
        format!("Upstream merged {other} in 1a2b3c4d, which broke us."),
        format!("The fork merged {other}; our kernel still needs this."),
        format!("Upstream's rename in {other} was merged in 1a2b3c4d."),
        format!("Entry 2 was merged as {other}."),
        format!("The merged upstream change {other} broke the build."),
        // Negation.
        format!("Not merged: {ours} is still open."),
        format!("{ours} was never merged."),
        format!("{ours} hasn't been merged."),
        format!("Proposed as {ours}, but nobody merged it."),
        // Conditions.
        format!("Once merged as {ours}, drop this entry."),
        format!("When merged upstream via {ours}, drop this entry."),
        format!("If merged as {ours}, the fork carries it."),
        format!("Drop it when {ours} is merged."),
        // Quotation.
        format!("The fork's maintainer wrote \"merged as {ours}\" by mistake."),
        format!("The bot said “merged as {ours} in 1a2b3c4d”, then reverted."),
    ];
    for (sentence, state) in states_said(&not_ours) {
        assert!(
            !matches!(state, Some(State::Merged)),
            "{sentence}: {state:?}"
        );
    }
    let about_ours = [
        format!("Merged upstream in {ours}."),
        format!("Merged as {ours} in 1a2b3c4d."),
        format!("Status: merged as {ours}."),
        format!("It was merged as {ours}."),
        format!("The fix was merged upstream in {ours}."),
        format!("This fix has since been merged as {ours}."),
        format!("Proposed as {ours} and merged in 1a2b3c4d."),
        format!("The fork merged it as {ours}."),
        format!("{ours} was merged in 1a2b3c4d."),
    ];
    for (sentence, state) in states_said(&about_ours) {
        assert_eq!(state, Some(State::Merged), "{sentence}");
    }

    // A claim in another entry's text is that entry's: a quoted block is someone else's words.
    let text = format!(
        "## 1. One\n\nThe kernel's grid was too small.\n\n> Merged as {ours} in 1a2b3c4d.\n\n\
         ## 2. Two\n\nMerged as {ours} in 1a2b3c4d.\n"
    );
    let parsed = register::parse("f", &text);
    assert_eq!(states_of(&parsed), [(1, None), (2, Some("merged"))]);

    // The migration writes no `merged` for a sentence about another pull request.
    let older: String = not_ours
        .iter()
        .enumerate()
        .map(|(i, s)| format!("**{}. Fix {}.** The grid. {s}\n\n", i + 1, i + 1))
        .collect();
    let migration = register::migrate(&older, "f", Some("https://github.com/NripeshN/mlx"));
    assert_eq!(migration.proposals.len(), not_ours.len());
    assert!(
        !migration.text.contains("state: merged"),
        "{}",
        migration.text
    );
}

/// Issue 39.4: `fixes migrate`'s "still needs" and `check`'s requirement are one rule
/// (`Entry::still_needs`), and a bare `#1876` is an issue of the project's own. Fails before:
/// migrate said "still needs: issue" for entries check accepted (their issue cited in the
/// prose, not in the status sentence), and an entry citing `#1876` was told it had no issue.
#[test]
fn migrate_still_needs_what_check_asks_and_a_bare_issue_number_is_an_issue() {
    let text = "# Local fixes\n\n## Fixes to the fork's kernels\n\n\
        1. **Own issue.** Tracked in #1876. Kept local: the fork rewrites this file.\n\
        2. **Issue in the prose.** See acme/app#3 for the trace. Kept local: ours alone.\n\
        3. **Issue address.** See https://github.com/acme/app/issues/5. Kept local: ours.\n\
        4. **A pull request is no issue.** See PR #7. Kept local: ours alone.\n\
        5. **To propose.** Applies to the fork; to be proposed there.\n";
    let parsed = register::parse("LOCAL_FIXES.md", text);
    assert_eq!(parsed.entry(1).unwrap().issues[..], ["#1876"]);
    assert!(parsed.entry(4).unwrap().issues.is_empty());
    let needs: Vec<(u32, Vec<&str>)> = (parsed.entries.iter())
        .map(|e| (e.number, e.still_needs()))
        .collect();
    assert_eq!(
        needs,
        [
            (1, vec![]),
            (2, vec![]),
            (3, vec![]),
            (4, vec!["issue"]),
            (5, vec!["link"])
        ]
    );
    let facts = with_register(Some(parsed));
    let messages: Vec<String> = (run("fix-state-complete", &facts).into_iter())
        .chain(run("fix-link-present", &facts))
        .map(|f| f.message)
        .collect();
    assert_eq!(
        messages,
        [
            "entry 4 is `kept-local` (read from \"Kept local: ours alone.\") but has no `issue`",
            "entry 5 is to be proposed (read from \"Applies to the fork; to be proposed there.\") but has no upstream link",
        ]
    );
    let migration = register::migrate(text, "LOCAL_FIXES.md", None);
    let missing: Vec<(u32, Vec<String>)> = (migration.proposals.iter())
        .map(|p| (p.number, p.missing.clone()))
        .collect();
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        missing,
        [
            (1, vec![]),
            (2, vec![]),
            (3, vec![]),
            (4, strings(&["issue"])),
            (5, strings(&["link"]))
        ]
    );
    let listing = register::listing(&register::parse("f", text), None, "");
    assert_eq!(listing.entries[0].issues, ["#1876"]);
}

/// Issue 39.4: `fixes list` gives an entry's files by one rule (`Entry::named_files`): the
/// overlay's files it names (those its lock lists), each once, as paths. Fails before: the
/// three spellings of `mlx/backend/rocm/event.cpp` were three files, and the prose mention of
/// another backend's file was one of them.
#[test]
fn fixes_list_names_each_overlay_file_of_an_entry_once() {
    let demo = crate::common::Demo::new(Layout::Files);
    let path = demo.records().join("LOCAL_FIXES.md");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(
        "\n## 5. Keep the event's stream alive\n\n`mlx/backend/rocm/event.cpp` held a raw \
         pointer; `backend/rocm/event.cpp` now keeps a reference (`event.cpp` waits), unlike \
         `mlx/backend/cuda/event.cpp`.\n\n- state: kept-local\n- reason: ours\n- issue: #4\n",
    );
    std::fs::write(&path, &text).unwrap();
    let (code, out) = demo.run(&["--json", "fixes", "list"]);
    assert_eq!(code, 0, "{out}");
    let listing: serde_json::Value = serde_json::from_str(&out).unwrap();
    let fifth = (listing["entries"].as_array().unwrap().iter())
        .find(|e| e["number"] == 5)
        .unwrap();
    assert_eq!(
        fifth["files"],
        serde_json::json!(["mlx/backend/rocm/event.cpp"])
    );
    let (code, out) = demo.run(&["fixes", "list", "--file", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("files: mlx/backend/rocm/event.cpp, mlx/backend/cuda/event.cpp\n"),
        "without the overlay, the paths each once: {out}"
    );
}
