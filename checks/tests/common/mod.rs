//! Facts written by hand, one set per situation; every check runs on every set.

use forkbook_checks::facts::*;
use forkbook_checks::register::{Entry, Field, NamedFile, Problem, Register};

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

fn kv(key: &str, value: &str, line: usize) -> KeyValueLine {
    KeyValueLine {
        key: key.into(),
        value: value.into(),
        line,
    }
}

fn field(key: &str, value: &str, line: usize) -> Field {
    Field {
        key: key.into(),
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

pub fn entry(number: u32, line: usize, files: &[&str], fields: &[(&str, &str)]) -> Entry {
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
        ),
        files: files.iter().map(|f| named(f, line + 2)).collect(),
        fields: fields
            .iter()
            .enumerate()
            .map(|(i, (k, v))| field(k, v, line + 4 + i))
            .collect(),
        ..Entry::default()
    }
}

fn upstream() -> UpstreamRecord {
    UpstreamRecord {
        file: "patches-rocm/UPSTREAM".into(),
        lines: vec![
            kv("source", "https://github.com/NripeshN/mlx", 1),
            kv("branch", "rocm-support", 2),
            kv("commit", FORK, 3),
            kv("fork_upstream_merge_base", BASE, 4),
            kv("retargeted_to_mlx_pin", PIN, 5),
            kv("license", "MIT", 6),
        ],
        problems: Vec::new(),
    }
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
    };
    Facts {
        records_dir: "patches-rocm".into(),
        backend_prefix: "mlx/backend/rocm/".into(),
        upstream: Some(upstream()),
        build_pin: Some(BuildPin {
            file: "cmake/mlx.cmake".into(),
            line: 4,
            value: PIN[..12].into(),
        }),
        register: Some(register),
        dropped: Vec::new(),
        tree: Some(TreeFacts {
            files: files(),
            differing: [
                "mlx/device.cpp",
                "mlx/backend/rocm/allocator.cpp",
                "mlx/backend/rocm/device/utils.hpp",
                "mlx/backend/rocm/eval.cpp",
            ]
            .map(String::from)
            .to_vec(),
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
        lock: Some(LockFacts {
            file: "patches-rocm/overlay.lock".into(),
            present: true,
            mismatches: Vec::new(),
            problems: Vec::new(),
        }),
        residual: vec![ResidualHunk {
            file: "mlx/device.cpp".into(),
            line: 40,
            fixes: vec![1],
        }],
        readme: Some(ReadmeFacts {
            file: "patches-rocm/README.md".into(),
            text: "The fork's `mlx/backend/cuda/eval.cpp` hook is left out: we never build CUDA. \
                   Nothing under `python/` is carried: we ship no bindings."
                .into(),
            counts: Some(vec![CountFact {
                name: "backend files".into(),
                stated: 4,
                actual: 4,
                line: 9,
            }]),
            unread: Vec::new(),
        }),
        fork_hooks: vec![
            "mlx/backend/cuda/eval.cpp".into(),
            "python/src/rocm.cpp".into(),
        ],
        repos: Repos {
            fork: Some("https://github.com/NripeshN/mlx".into()),
            upstream: Some("https://github.com/ml-explore/mlx".into()),
        },
        markers: Some(Vec::new()),
        record_markers: Vec::new(),
        residual_record: Some(residual_record()),
    }
}

/// A `CORE_RESIDUAL.diff` of the recorded commits, with a hash per core file and a note for the
/// one core file that has a residual.
fn residual_record() -> ResidualRecordFacts {
    let value = |key: &str, value: &str, line: usize| RecordedValue {
        key: key.into(),
        value: value.into(),
        line,
    };
    ResidualRecordFacts {
        file: "patches-rocm/CORE_RESIDUAL.diff".into(),
        core_header: true,
        commits: vec![
            value("pin", PIN, 3),
            value("fork", FORK, 4),
            value("fork_upstream_merge_base", BASE, 5),
        ],
        hashes: vec![
            value("CMakeLists.txt", &"1".repeat(64), 6),
            value("mlx/device.cpp", &"2".repeat(64), 7),
        ],
        notes: vec![ResidualNote {
            path: "mlx/device.cpp".into(),
            item: Some(1),
            reason: "keeps the fork's device check beside upstream's table".into(),
            line: 8,
        }],
        reviews: Vec::new(),
        problems: Vec::new(),
        core_hashes: Some(vec![
            ("CMakeLists.txt".into(), "1".repeat(64)),
            ("mlx/device.cpp".into(), "2".repeat(64)),
        ]),
        residual_files: Some(vec!["mlx/device.cpp".into()]),
    }
}

/// The healthy facts with one thing wrong for every check.
pub fn broken() -> Facts {
    let mut facts = healthy();
    let upstream = facts.upstream.as_mut().unwrap();
    upstream.lines.retain(|l| l.key != "license");
    upstream.lines[2].value = "7591590".into();
    upstream.lines.push(kv("branch", "main", 8));
    upstream.problems.push(Problem {
        line: 7,
        message: "line is not `key: value`".into(),
    });
    facts.build_pin.as_mut().unwrap().value = "39886de461d4".into();
    let register = facts.register.as_mut().unwrap();
    register.problems.push(Problem {
        line: 1,
        message: "heading `## Fix 9` looks like an entry but is not `## N. Title`".into(),
    });
    register.entries[1].fields.retain(|f| f.key != "package");
    register.entries[1].fields[1].value = "https://github.com/someone/mlx/pull/12".into();
    register.entries[2].fields.retain(|f| f.key != "link");
    register.entries[3].fields[0].value = "local".into();
    register.entries[3].number = 5;
    // A fix `drift api --draft` wrote that no person has confirmed.
    register.entries[0].fields.push(field(
        "draft",
        "stub drafted by forkbook from drift api (missing-eval-gpu `mlx::core::Abs::eval_gpu`)",
        9,
    ));
    register.entries[0].files.push(named("eval.cpp", 5));
    register.entries[0].files.push(named("mlx/fast.cpp", 6));
    register.entries[0].files.push(named("mlx/nothing.cpp", 7));
    let tree = facts.tree.as_mut().unwrap();
    tree.differing.push("mlx/backend/rocm/kernels.cpp".into());
    tree.files.push("mlx/backend/rocm/kernels.cpp".into());
    facts.patch_series.as_mut().unwrap().pop();
    // A move left the first patch empty: the base tree came to hold its fix.
    facts.patch_series.as_mut().unwrap()[0].empty = true;
    let lock = facts.lock.as_mut().unwrap();
    lock.mismatches.push(LockMismatch {
        path: "mlx/device.cpp".into(),
        kind: MismatchKind::Changed,
        line: Some(3),
    });
    lock.mismatches.push(LockMismatch {
        path: "mlx/backend/rocm/kernels.cpp".into(),
        kind: MismatchKind::NotLocked,
        line: None,
    });
    facts.residual.push(ResidualHunk {
        file: "mlx/fast.cpp".into(),
        line: 12,
        fixes: vec![],
    });
    facts.residual.push(ResidualHunk {
        file: "mlx/fast.cpp".into(),
        line: 30,
        fixes: vec![2],
    });
    facts.readme.as_mut().unwrap().counts.as_mut().unwrap()[0].stated = 3;
    facts.readme.as_mut().unwrap().unread.push(UnreadCount {
        line: 12,
        sentence: "Copy the 3 files listed below.".into(),
    });
    facts.fork_hooks.push("docs/rocm-notes.md".into());
    let device = b"int a;\n<<<<<<< pin 846d176\nint b;\n=======\nint c;\n>>>>>>> fork 7591590\nint d;\n=======\n";
    let (regions, stray) = forkbook_checks::markers::regions(device);
    facts.markers = Some(vec![MarkedFile {
        file: "mlx/device.cpp".into(),
        regions,
        stray,
    }]);
    let record = facts.residual_record.as_mut().unwrap();
    record.commits[0].value = "81ba1c6a0e50a9268b931579c2d4f1158b9aab5a".into();
    record.hashes[1].value = "3".repeat(64);
    record.hashes.push(RecordedValue {
        key: "mlx/gone.cpp".into(),
        value: "4".repeat(64),
        line: 9,
    });
    record.notes[0].item = Some(7);
    record.notes.push(ResidualNote {
        path: "CMakeLists.txt".into(),
        item: None,
        reason: String::new(),
        line: 10,
    });
    record.reviews.push(RecordedValue {
        key: "mlx/device.cpp".into(),
        value: String::new(),
        line: 11,
    });
    record.problems.push(Problem {
        line: 2,
        message: "`stray` is neither a `#` line nor a diff".into(),
    });
    record
        .core_hashes
        .as_mut()
        .unwrap()
        .push(("mlx/fast.cpp".into(), "5".repeat(64)));
    record
        .residual_files
        .as_mut()
        .unwrap()
        .push("mlx/fast.cpp".into());
    facts
}
