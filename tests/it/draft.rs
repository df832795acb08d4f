//! Draft fixes from drift on the demo world: `drift api --to pin2 --draft` writes one fix per
//! break with a mechanical remedy (each of the four kinds), says why the other three get none,
//! and fails the gate until each draft is confirmed. With the drafts, hand fixes for the other
//! three and the device.cpp conflict resolved, `drift api` reports 0 and the real build
//! (`drift build --compiler c++`) compiles and links with no undefined symbol.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use std::path::Path;

fn edit(dir: &Path, path: &str, old: &str, new: &str) {
    let file = dir.join(path);
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches(old).count(), 1, "{path}: {old}");
    std::fs::write(&file, text.replacen(old, new, 1)).unwrap();
}

/// The register entry `## N.` up to the next entry.
fn entry(register: &str, n: usize) -> String {
    let start = register.find(&format!("## {n}. ")).unwrap();
    let rest = &register[start + 3..];
    let end = rest.find("\n## ").map_or(rest.len(), |i| i + 1);
    register[start..start + 3 + end].to_string()
}

#[test]
fn each_break_kind_is_drafted_and_the_drafted_overlay_builds_at_the_candidate() {
    let demo = Demo::new(Layout::Patch);
    let world = &demo.demo.world;
    let pin2 = world.pin2.clone();
    let cause = |symbol: &str| {
        world
            .breaks
            .iter()
            .find(|b| b.1 == symbol)
            .map(|b| b.2.clone())
            .unwrap()
    };

    let (code, out) = demo.run(&["drift", "api", "--to", &pin2, "--draft"]);
    assert_eq!(code, 1, "drafts wait for a person: {out}");
    assert!(out.contains("drafts: 4 fixes written"), "{out}");
    for (n, path, symbol) in [
        (
            5,
            "mlx/backend/rocm/copy.cpp",
            "mlx::core::collapse_contiguous_dims",
        ),
        (6, "mlx/backend/rocm/eval.cpp", "mlx::core::gpu::new_stream"),
        (
            7,
            "mlx/backend/rocm/primitives.cpp",
            "mlx::core::GatherQMM::eval_gpu",
        ),
        (
            8,
            "mlx/backend/rocm/event.cpp",
            "mlx::core::Event::is_signaled",
        ),
    ] {
        assert!(out.contains(&format!("  fix {n}: Draft: ")), "{out}");
        assert!(out.contains(&format!("({path}:")), "{path}: {out}");
        assert!(
            out.lines()
                .any(|l| l.starts_with("    answers ") && l.ends_with(&format!("`{symbol}`"))),
            "{out}"
        );
        let register = demo.read("LOCAL_FIXES.md");
        let e = entry(&register, n);
        assert!(e.contains("- state: retarget-only\n"), "{e}");
        assert!(e.contains(&format!("- cause: {}\n", cause(symbol))), "{e}");
        assert!(e.contains("- draft: "), "{e}");
        assert!(e.contains(&format!("`forkbook fix confirm {n}`")), "{e}");
        assert!(!e.contains("TODO"), "{e}");
    }
    for (symbol, why) in [
        (
            "mlx::core::allocator::Buffer::Buffer",
            "no draft: a constructor",
        ),
        (
            "mlx::core::array::set_data",
            "no draft: a call whose arguments or result changed",
        ),
        (
            "mlx::core::ceil_div",
            "no draft: which declaration the call means",
        ),
    ] {
        assert!(
            out.contains(&format!("`{symbol}`: {why}")),
            "{symbol}: {out}"
        );
    }
    assert!(
        out.contains("with the drafts applied: 3 breaks left"),
        "{out}"
    );

    // The drafts are the edits a person would make first, in the backend's own forms.
    let mat = demo.tmp.path().join("drafted");
    let (code, text) = demo.run(&["materialize", "--out", mat.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    let read = |p: &str| std::fs::read_to_string(mat.join(p)).unwrap();
    assert!(
        read("mlx/backend/rocm/copy.cpp")
            .contains("auto [shape, strides, unused_2] = collapse_contiguous_dims("),
        "{}",
        read("mlx/backend/rocm/copy.cpp")
    );
    assert!(read("mlx/backend/rocm/primitives.cpp").contains("NO_GPU(GatherQMM)\n"));
    let event = read("mlx/backend/rocm/event.cpp");
    assert!(
        event.contains("bool Event::is_signaled() const {\n  throw std::runtime_error("),
        "{event}"
    );
    assert!(event.contains("#include <stdexcept>\n"), "{event}");
    assert!(read("mlx/backend/rocm/eval.cpp").contains("void new_stream(Stream, int priority) {}"));

    // The gate fails while a draft mark remains.
    let (code, text) = demo.run(&["check", "--verbose"]);
    assert_eq!(code, 1, "{text}");
    assert_eq!(
        text.matches("error[fix-draft-confirmed]").count(),
        4,
        "{text}"
    );

    // A person confirms each; the register records it and the check passes.
    for n in 5..=8 {
        let (code, text) = demo.run(&["fix", "confirm", &n.to_string()]);
        assert_eq!(code, 0, "{text}");
        assert!(text.contains(&format!("confirmed fix {n}")), "{text}");
    }
    let register = demo.read("LOCAL_FIXES.md");
    assert!(!register.contains("- draft: "), "{register}");
    assert_eq!(register.matches("- confirmed: ").count(), 4, "{register}");
    let (code, text) = demo.run(&["fix", "confirm", "5"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("is not a draft"), "{text}");
    let (_, text) = demo.run(&["check"]);
    assert!(!text.contains("fix-draft-confirmed"), "{text}");

    // The three findings with no draft, and the retarget's conflict, by hand.
    let (code, text) = demo.run(&["retarget", &pin2]);
    assert_eq!(code, 1, "device.cpp conflicts: {text}");
    let hand = demo.tmp.path().join("hand");
    let (code, text) = demo.run(&["materialize", "--out", hand.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    edit(
        &hand,
        "mlx/backend/rocm/allocator.cpp",
        "return Buffer(ptr);",
        "return Buffer(ptr, ptr != nullptr ? size : 0);",
    );
    for path in [
        "mlx/backend/rocm/copy.cpp",
        "mlx/backend/rocm/kernels.cpp",
        "mlx/backend/rocm/matmul.cpp",
    ] {
        edit(
            &hand,
            path,
            "out.set_data(allocator::malloc(out.nbytes()));",
            "out.set_data(allocator::malloc(out.nbytes()), allocator::free);",
        );
    }
    edit(
        &hand,
        "mlx/backend/rocm/kernels.cpp",
        "int blocks = ceil_div(n, kBlockSize);",
        "int blocks = (n + kBlockSize - 1) / kBlockSize;",
    );
    let device = std::fs::read_to_string(hand.join("mlx/device.cpp")).unwrap();
    let start = device.find("<<<<<<< ").unwrap();
    let end = device.find(">>>>>>> ").unwrap();
    let end = end + device[end..].find('\n').unwrap() + 1;
    // Both sides: the fork's CPU preference and upstream's device index.
    let expression = "      gpu::is_available() && std::getenv(\"MLX_ROCM_PREFER_CPU\") == nullptr\n          ? Device::gpu\n          : Device::cpu,\n      default_index()};\n";
    let (before, after) = (&device[..start], &device[end..]);
    let opening = if before.ends_with("static Device default_device{\n") {
        ""
    } else {
        "  static Device default_device{\n"
    };
    let resolved = format!("{before}{opening}{expression}{after}");
    assert_eq!(
        resolved.matches("static Device default_device{").count(),
        1,
        "{resolved}"
    );
    std::fs::write(hand.join("mlx/device.cpp"), resolved).unwrap();
    let (code, text) = demo.run(&[
        "fix",
        "add",
        "--from",
        hand.to_str().unwrap(),
        "--title",
        "Adapt the backend to pin2 by hand",
    ]);
    assert_eq!(code, 0, "{text}");

    let (code, text) = demo.run(&["drift", "api"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("0 breaks,"), "{text}");
    let work = demo.tmp.path().join("build");
    let (code, text) = demo.run(&[
        "drift",
        "build",
        "--compiler",
        "c++",
        "--jobs",
        "2",
        "--work",
        work.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("no compile errors and no undefined symbols in `mlx::core`"),
        "{text}"
    );
}

#[test]
fn the_report_names_the_fix_answering_each_finding_and_how_it_was_made() {
    let demo = Demo::new(Layout::Patch);
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(demo.root())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap();
        assert!(status.success());
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "overlay at pin 1"]);
    let pin2 = demo.demo.world.pin2.clone();
    let (code, out) = demo.run(&["drift", "api", "--to", &pin2, "--draft"]);
    assert_eq!(code, 1, "{out}");
    let (code, out) = demo.run(&["fix", "confirm", "7"]);
    assert_eq!(code, 0, "{out}");
    demo.run(&["retarget", &pin2]);
    let (_, out) = demo.run(&["report", "--pr-body"]);
    let gather = &demo
        .demo
        .world
        .breaks
        .iter()
        .find(|b| b.1 == "mlx::core::GatherQMM::eval_gpu")
        .unwrap()
        .2;
    assert!(
        out.contains(&format!(
            "- missing-eval-gpu ` mlx::core::GatherQMM::eval_gpu ` (upstream `{}` primitives: add GatherQMM): drafted and confirmed: fix 7 (Draft: stub GatherQMM on the backend with NO\\_GPU)\n",
            &gather[..8]
        )),
        "{out}"
    );
    assert!(
        out.contains("- missing-backend-definition ` mlx::core::Event::is_signaled ` (upstream `"),
        "{out}"
    );
    assert!(out.contains("): drafted, not confirmed: fix 8 (Draft: define Event::is\\_signaled on the backend \\(a stub\\))\n"), "{out}");
    assert!(
        out.lines().any(|l| l
            .starts_with("- constructor-changed ` mlx::core::allocator::Buffer::Buffer `")
            && l.ends_with(": no fix yet")),
        "{out}"
    );
    // The same answers for machines: each finding with its fixes, their titles and how.
    let (_, json) = demo.run(&["--json", "report"]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let drift = value["drift"].as_array().unwrap();
    let gather = drift
        .iter()
        .find(|d| d["symbol"] == "mlx::core::GatherQMM::eval_gpu")
        .unwrap();
    assert_eq!(gather["answers"][0]["number"], 7, "{gather}");
    assert_eq!(gather["answers"][0]["how"], "confirmed", "{gather}");
    assert_eq!(
        gather["answers"][0]["title"],
        "Draft: stub GatherQMM on the backend with NO_GPU"
    );
}
