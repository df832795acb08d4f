//! Facts written by hand, one set per situation; every check runs on every set.

use forkbook_checks::facts::*;
use forkbook_records::register::{Entry, Field, NamedFile, Problem, Register};
use forkbook_records::residual_record::Flavor;

pub const PIN: &str = "846d176227a0ac13d2667e58d2bb68b322109ab0";
const FORK: &str = "75915908dfe5028335d318b10340313744fd3a8d";
const BASE: &str = "39886de461d4f014cd60a3a68ad42fd8d776754a";

/// Every fixture, by name (the snapshot file's name).
pub fn all() -> Vec<(&'static str, Facts)> {
    vec![
        ("empty", Facts::default()),
        ("healthy", healthy()),
        ("broken", broken()),
    ]
}

fn field(key: &'static str, value: &str, line: usize) -> Field {
    Field {
        key,
        value: value.into(),
        line,
        end_line: line,
    }
}

fn named(name: &str, line: usize) -> NamedFile {
    NamedFile {
        name: name.into(),
        line,
    }
}

pub fn entry(number: u32, line: usize, files: &[&str], fields: &[(&'static str, &str)]) -> Entry {
    Entry {
        number,
        title: format!("fix {number}"),
        line,
        end_line: line + 8,
        // The files are declared on a `Files:` line, as the demo's entries declare them.
        prose: format!(
            "Files: {}\n\nWhy the fix exists.",
            files
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
        .into(),
        files: files.iter().map(|f| named(f, line + 2)).collect(),
        fields: fields
            .iter()
            .enumerate()
            .map(|(i, (k, v))| field(k, v, line + 4 + i))
            .collect(),
        ..Entry::default()
    }
}

fn upstream() -> Upstream {
    Upstream::read(
        "patches-rocm/UPSTREAM",
        &format!(
            "source: https://github.com/NripeshN/mlx\nbranch: rocm-support\ncommit: {FORK}\n\
             fork_upstream_merge_base: {BASE}\nretargeted_to_mlx_pin: {PIN}\nlicense: MIT\n"
        ),
    )
}

fn files() -> Vec<String> {
    [
        "mlx/device.cpp",
        "mlx/fast.cpp",
        "mlx/backend/rocm/allocator.cpp",
        "mlx/backend/rocm/eval.cpp",
        "mlx/backend/rocm/device/utils.hpp",
        "mlx/backend/cuda/eval.cpp",
    ]
    .map(String::from)
    .to_vec()
}

/// Records that agree with each other and with the overlay: no check finds anything.
pub fn healthy() -> Facts {
    let register = Register {
        file: "patches-rocm/LOCAL_FIXES.md".into(),
        entries: vec![
            entry(
                1,
                3,
                &["mlx/device.cpp"],
                &[
                    ("state", "retarget-only"),
                    ("cause", "https://github.com/ml-explore/mlx/pull/2600"),
                ],
            ),
            entry(
                2,
                13,
                &["allocator.cpp"],
                &[
                    ("state", "proposed"),
                    ("link", "https://github.com/NripeshN/mlx/pull/12"),
                    ("package", "propose/0002-fix-2.patch"),
                ],
            ),
            entry(
                3,
                23,
                &["device/utils.hpp"],
                &[
                    ("state", "merged"),
                    ("link", "https://github.com/NripeshN/mlx/pull/13"),
                    ("fork-commit", FORK),
                ],
            ),
            entry(
                4,
                33,
                &["mlx/backend/rocm/eval.cpp"],
                &[
                    ("state", "kept-local"),
                    ("reason", "only our build needs it"),
                    ("issue", "#7"),
                ],
            ),
        ],
        problems: Vec::new(),
        left_out: Vec::new(),
    };
    let records = Records {
        dir: "patches-rocm".into(),
        upstream: Some(upstream()),
        build_pin: Some(BuildPin {
            file: "cmake/mlx.cmake".into(),
            line: 4,
            value: PIN[..12].into(),
        }),
        patch_series: Some(
            (1..=4)
                .map(|n| SeriesPatch {
                    number: n,
                    file: format!("patches-rocm/{n:04}-fix-{n}.patch"),
                    empty: false,
                })
                .collect(),
        ),
        lock: Some(Lock::default()),
        readme: Some(Readme {
            file: "patches-rocm/README.md".into(),
            text: "The fork's `mlx/backend/cuda/eval.cpp` hook is left out: we never build CUDA. \
                   Nothing under `python/` is carried: we ship no bindings."
                .into(),
            counts: Some(vec![StatedCount {
                name: "backend files".into(),
                stated: 4,
                line: 9,
            }]),
            unread: Vec::new(),
        }),
        residual_record: Some(residual_record()),
        register: Some(register),
    };
    let overlay = OverlayView {
        tree: TreeFacts {
            files: files(),
            differing: [
                "mlx/device.cpp",
                "mlx/backend/rocm/allocator.cpp",
                "mlx/backend/rocm/device/utils.hpp",
                "mlx/backend/rocm/eval.cpp",
            ]
            .map(String::from)
            .to_vec(),
        },
        markers: Vec::new(),
        lock_mismatches: Vec::new(),
        residual: vec![Hunk {
            file: "mlx/device.cpp".into(),
            line: 40,
            fixes: vec![1],
            ..Hunk::default()
        }],
        fork_hooks: vec![
            "mlx/backend/cuda/eval.cpp".into(),
            "python/src/rocm.cpp".into(),
        ],
        counts: Counts {
            backend_files: 4,
            core_files: 2,
            local_fixes: 4,
        },
        core_hashes: vec![
            ("CMakeLists.txt".into(), "1".repeat(64)),
            ("mlx/device.cpp".into(), "2".repeat(64)),
        ],
        core_files: [
            "CMakeLists.txt",
            "mlx/device.cpp",
            "mlx/fast.cpp",
            "mlx/backend/cuda/eval.cpp",
        ]
        .map(String::from)
        .to_vec(),
        fork_commits: vec![FORK.into()],
        pulls: vec![
            pull(
                2,
                18,
                12,
                PullState::Open {
                    head: "c".repeat(40),
                },
            ),
            pull(
                3,
                28,
                13,
                PullState::Merged {
                    commit: FORK.into(),
                    head: None,
                },
            ),
        ],
        pin_not_upstream: None,
    };
    Facts {
        records,
        backend_prefix: "mlx/backend/rocm/".into(),
        repos: Repos {
            fork: Some("https://github.com/NripeshN/mlx".into()),
            upstream: Some("https://github.com/ml-explore/mlx".into()),
            fork_url: "https://github.com/NripeshN/mlx.git".into(),
            fork_branch: "rocm-support".into(),
        },
        overlay: Some(overlay),
        record_markers: Vec::new(),
        summary: None,
        whole_files: None,
    }
}

/// Pull request `number` of the fork, the `link` of entry `entry` at `line`, in `state`.
fn pull(entry: u32, line: usize, number: u32, state: PullState) -> CitedPull {
    CitedPull {
        entry,
        line,
        cited: format!("https://github.com/NripeshN/mlx/pull/{number}"),
        repo: "fork".into(),
        number,
        is_link: true,
        state,
    }
}

/// A `CORE_RESIDUAL.diff` of the recorded commits, with a hash per core file and a note for the
/// one core file that has a residual.
fn residual_record() -> ResidualRecord {
    let text = format!(
        "# RESIDUAL: what our core files carry beyond the pin plus the fork.\n#\n\
         # pin: {PIN}\n# fork: {FORK}\n# fork_upstream_merge_base: {BASE}\n\
         # overlay-sha256: {} CMakeLists.txt\n# overlay-sha256: {} mlx/device.cpp\n\
         # note mlx/device.cpp: LOCAL_FIXES.md item 1: keeps the fork's device check beside upstream's table\n",
        "1".repeat(64),
        "2".repeat(64)
    );
    ResidualRecord::read("patches-rocm/CORE_RESIDUAL.diff", &text, Flavor::Core)
}

/// The healthy facts with one thing wrong for every check.
pub fn broken() -> Facts {
    let mut facts = healthy();
    // Another fork's `source`, no `license`, an abbreviated commit, `branch` given again (as
    // another branch); line 7 is not `key: value`.
    let mut upstream = Upstream::read(
        "patches-rocm/UPSTREAM",
        &format!(
            "source: https://github.com/someone/mlx\nbranch: rocm-support\ncommit: 7591590\n\
             fork_upstream_merge_base: {BASE}\nretargeted_to_mlx_pin: {PIN}\n\n#\nbranch: main\n\
             local_fixes: FIXES.md\n"
        ),
    );
    upstream.problems.push(Problem {
        line: 7,
        message: "line is not `key: value`".into(),
    });
    facts.records.upstream = Some(upstream);
    facts.records.build_pin.as_mut().unwrap().value = "39886de461d4".into();
    let register = facts.records.register.as_mut().unwrap();
    register.problems.push(Problem {
        line: 1,
        message: "heading `## Fix 9` looks like an entry but is not `## N. Title`".into(),
    });
    register.entries[1].fields.retain(|f| f.key != "package");
    register.entries[1].fields[1].value = "https://github.com/someone/mlx/pull/12".into();
    register.entries[2].fields.retain(|f| f.key != "link");
    register.entries[3].fields[0].value = "local".into();
    // Merged, says entry 3, at a commit the fork does not hold.
    let fork_commit = register.entries[2]
        .fields
        .iter_mut()
        .find(|f| f.key == "fork-commit");
    fork_commit.unwrap().value = "1".repeat(40);
    register.entries[3].number = 5;
    // A fix `drift api --draft` wrote that no person has confirmed.
    register.entries[0].fields.push(field(
        "draft",
        "stub drafted by forkbook from drift api (missing-eval-gpu `mlx::core::Abs::eval_gpu`)",
        9,
    ));
    let first = &mut register.entries[0];
    let more = [("eval.cpp", 5), ("mlx/fast.cpp", 6), ("mlx/nothing.cpp", 7)];
    first.files = (first.files.iter().cloned())
        .chain(more.map(|(name, line)| named(name, line)))
        .collect();
    let overlay = facts.overlay.as_mut().unwrap();
    // Entry 3 says `merged`, but the fork's pull refs say its pull request is still open.
    overlay.pulls[1].state = PullState::Open {
        head: "d".repeat(40),
    };
    let tree = &mut overlay.tree;
    tree.differing.push("mlx/backend/rocm/kernels.cpp".into());
    tree.files.push("mlx/backend/rocm/kernels.cpp".into());
    // A file beside MLX's own that no core file list names: nothing checks it.
    tree.files.push("mlx/ops.cpp".into());
    facts.records.patch_series.as_mut().unwrap().pop();
    // A move left the first patch empty: the base tree came to hold its fix.
    facts.records.patch_series.as_mut().unwrap()[0].empty = true;
    overlay.lock_mismatches.push(LockMismatch {
        path: "mlx/device.cpp".into(),
        kind: MismatchKind::Changed,
        line: Some(3),
    });
    overlay.lock_mismatches.push(LockMismatch {
        path: "mlx/backend/rocm/kernels.cpp".into(),
        kind: MismatchKind::NotLocked,
        line: None,
    });
    overlay.residual.push(Hunk {
        file: "mlx/fast.cpp".into(),
        line: 12,
        ..Hunk::default()
    });
    overlay.residual.push(Hunk {
        file: "mlx/fast.cpp".into(),
        line: 30,
        fixes: vec![2],
        ..Hunk::default()
    });
    overlay.fork_hooks.push("docs/rocm-notes.md".into());
    // The pin is a commit of the fork's branch that no upstream ref reaches.
    overlay.pin_not_upstream = Some(
        "`846d1762` is not upstream's: no branch, tag or pull request head of the upstream reaches it"
            .into(),
    );
    overlay
        .core_hashes
        .push(("mlx/fast.cpp".into(), "5".repeat(64)));
    let readme = facts.records.readme.as_mut().unwrap();
    readme.counts.as_mut().unwrap()[0].stated = 3;
    readme.unread.push(UnreadCount {
        line: 12,
        sentence: "Copy the 3 files listed below.".into(),
    });
    let device = b"int a;\n<<<<<<< pin 846d176\nint b;\n=======\nint c;\n>>>>>>> fork 7591590\nint d;\n=======\n";
    let (regions, stray) = forkbook_checks::markers::regions(device);
    facts.overlay.as_mut().unwrap().markers = vec![MarkedFile {
        file: "mlx/device.cpp".into(),
        regions,
        stray,
    }];
    let record = facts.records.residual_record.as_mut().unwrap();
    record.commits[0].value = "81ba1c6a0e50a9268b931579c2d4f1158b9aab5a".into();
    record.hashes[1].value = "3".repeat(64);
    record.hashes.push(Recorded {
        key: "mlx/gone.cpp".into(),
        value: "4".repeat(64),
        line: 9,
    });
    record.notes[0].item = Some(7);
    record.notes.push(Note {
        path: "CMakeLists.txt".into(),
        item: None,
        reason: String::new(),
        line: 10,
    });
    record.reviews.push(Recorded {
        key: "mlx/device.cpp".into(),
        value: String::new(),
        line: 11,
    });
    record.problems.push(Problem {
        line: 2,
        message: "`stray` is neither a `#` line nor a diff".into(),
    });
    facts
}
