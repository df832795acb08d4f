//! `drift build` on the demo world, compiled for real with the machine's C++ compiler (standing
//! in for hipcc): clean at pin1, and at pin2 each break shows up as the compile error or the
//! undefined symbol it really causes.
//!
//! The tree is exported here the way `export-tree` does it: the upstream tree at the pin, the
//! fork's backend files, and each upstream file the fork hooks merged 3-way (fork base as
//! ancestor), conflict markers included.

use std::collections::BTreeSet;
use std::path::Path;

use crate::tree_export::export;
use forkbook::demo::world::{generate, BuildFailure, BREAKS};
use forkbook::engine::drift::api::Kind;
use forkbook::engine::drift::build::{
    confirm, drift_build, BuildConfig, BuildOptions, BuildReport, Differential,
};

/// The host compiler, `jobs` at a time.
fn cxx(jobs: Option<usize>) -> BuildOptions {
    BuildOptions {
        compiler: Some("c++".to_string()),
        jobs,
        ..BuildOptions::default()
    }
}

fn build(tree: &Path, build_dir: &Path, with_tests: bool) -> BuildReport {
    let mut cfg = BuildConfig::default();
    if with_tests {
        cfg.cmake_args.retain(|arg| arg != "-DMLX_BUILD_TESTS=OFF");
    }
    drift_build(tree, build_dir, &cfg, &cxx(Some(2))).unwrap()
}

#[test]
fn pin1_with_the_fork_builds_clean_and_links_the_test_program() {
    let dir = tempfile::tempdir().unwrap();
    let world = generate(dir.path()).unwrap();
    let tree = dir.path().join("tree");
    export(&world, &world.pin1, &world.fork_commits[0], &tree);

    let report = build(&tree, &dir.path().join("build"), true);
    assert!(report.problems().is_empty(), "{}", report.doc().text());
    assert!(report.undefined_after_errors.is_empty());
    assert!(report.objects >= 20, "{} objects", report.objects);
    assert!(report
        .doc()
        .text()
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
    let text = report.doc().text();
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

    let findings: Vec<(Kind, String)> = world
        .breaks
        .iter()
        .map(|(k, s, _)| (Kind::parse(k).expect("a drift kind"), s.clone()))
        .collect();
    let confirmation = confirm(&report, &findings);
    assert_eq!(
        confirmation.confirmed.len(),
        BREAKS.len(),
        "{}",
        confirmation.doc().text()
    );
    for (finding, expected) in confirmation.confirmed.iter().zip(BREAKS) {
        assert_eq!(finding.kind.as_str(), expected.kind);
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
        confirmation.doc().text()
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
    let error = drift_build(dir.path(), &dir.path().join("b"), &cfg, &cxx(None)).unwrap_err();
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
    assert!(report.doc().text().contains("build: not run"));
}

/// `drift build --to TO` with the machine's `c++`, two jobs, in `work`.
fn text_build_args<'a>(work: &'a Path, to: &'a str) -> [&'a str; 10] {
    let work = work.to_str().unwrap();
    [
        "drift",
        "build",
        "--to",
        to,
        "--compiler",
        "c++",
        "--jobs",
        "2",
        "--work",
        work,
    ]
}

/// `forkbook --json drift build --to TO` with the machine's `c++` in `work`, and `extra`: its
/// exit status and its JSON.
fn json_build(
    demo: &crate::common::Demo,
    work: &Path,
    to: &str,
    extra: &[&str],
) -> (i32, serde_json::Value) {
    let mut args = vec!["--json"];
    args.extend(text_build_args(work, to));
    args.extend(extra);
    let (code, out) = demo.run(&args);
    let json: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    (code, json)
}

/// Issue 24: the differential drift build. The demo project with a local fix that uses a member
/// the installed toolchain lacks (`hipDeviceProp_t::uuid`, from a toolchain header found through
/// `[build] include_dirs`): at the recorded pin and at pin2 alike that is an error. Built at both
/// pins with one toolchain, only the planted breaks are drift; the toolchain's error is listed as
/// "also at the recorded pin" and fails nothing; `--with-api` matches each static finding to what
/// is new. The same command with the candidate equal to the recorded pin exits 0. Fails before:
/// `drift build --to` built the candidate alone and failed on the toolchain's error too.
#[test]
fn a_differential_build_reports_only_what_is_new_at_the_candidate() {
    use crate::common::Demo;
    use forkbook::engine::config::Layout;
    let demo = Demo::new(Layout::Patch);
    let hand = demo.tmp.path().join("hand");
    let (code, out) = demo.run(&["materialize", "--out", hand.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    // A file of its own, so what the failing file defines hides no break of another.
    let info = hand.join("mlx/backend/rocm/device_info.cpp");
    let mut text = String::from("// Device information for the logs.\n");
    text.push_str(
        "\n#include <hip/hip_runtime_api.h>\n\nnamespace mlx::core::rocm {\n\n\
         // The device's UUID for the logs (a member of newer ROCm).\n\
         const char* device_uuid(const hipDeviceProp_t& prop) {\n  return prop.uuid.bytes;\n}\n\n\
         } // namespace mlx::core::rocm\n",
    );
    std::fs::write(&info, text).unwrap();
    let (code, out) = demo.run(&[
        "fix",
        "add",
        "--from",
        hand.to_str().unwrap(),
        "--title",
        "Log the device UUID",
    ]);
    assert_eq!(code, 0, "{out}");
    // The machine's ROCm, older than the fix: its device properties have no `uuid`.
    let toolchain = demo.root().join("toolchain/hip");
    std::fs::create_dir_all(&toolchain).unwrap();
    std::fs::write(
        toolchain.join("hip_runtime_api.h"),
        "#pragma once\nstruct hipDeviceProp_t {\n  char name[256];\n};\n",
    )
    .unwrap();
    let config = demo.root().join("forkbook.toml");
    let toml = std::fs::read_to_string(&config).unwrap().replacen(
        "[build]\ncompiler = \"hipcc\"\n",
        "[build]\ncompiler = \"hipcc\"\ninclude_dirs = [\"toolchain\"]\n",
        1,
    );
    assert!(toml.contains("include_dirs"), "{toml}");
    std::fs::write(&config, toml).unwrap();

    let work = demo.tmp.path().join("work");
    let pin1 = demo.demo.world.pin1.clone();
    let pin2 = demo.demo.world.pin2.clone();
    let build = |to: &str, extra: &[&str]| json_build(&demo, &work, to, extra);
    let files = |list: &serde_json::Value| -> BTreeSet<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|e| e["file"].as_str().unwrap().to_string())
            .collect()
    };

    let (code, json) = build(&pin2, &["--with-api"]);
    let diff = &json["differential"];
    assert_eq!(code, 1, "{json:#}");
    assert_eq!(
        files(&diff["new_errors"]),
        BTreeSet::from(
            [
                "mlx/backend/rocm/allocator.cpp",
                "mlx/backend/rocm/copy.cpp",
                "mlx/backend/rocm/kernels.cpp",
                "mlx/backend/rocm/matmul.cpp",
            ]
            .map(String::from)
        ),
        "{diff:#}"
    );
    // The core file the retarget to pin 2 leaves in conflict: its errors follow from the markers
    // (issue 25), counted apart from the drift, and still a problem.
    let in_conflict = diff["in_conflict"].as_array().unwrap();
    assert_eq!(in_conflict.len(), 1, "{diff:#}");
    assert_eq!(in_conflict[0]["path"], "mlx/device.cpp", "{diff:#}");
    assert!(in_conflict[0]["errors"].as_u64().unwrap() > 0, "{diff:#}");
    let new_undefined: BTreeSet<&str> = diff["new_undefined"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| forkbook::engine::drift::build::nm::qualified_name(u["symbol"].as_str().unwrap()))
        .collect();
    assert_eq!(
        new_undefined,
        BTreeSet::from([
            "mlx::core::Event::is_signaled",
            "mlx::core::GatherQMM::eval_gpu",
            "mlx::core::gpu::new_stream"
        ]),
        "{diff:#}"
    );
    let known = diff["known_errors"].as_array().unwrap();
    assert_eq!(known.len(), 1, "{diff:#}");
    assert_eq!(
        known[0]["file"], "mlx/backend/rocm/device_info.cpp",
        "{diff:#}"
    );
    assert!(
        known[0]["message"].as_str().unwrap().contains("uuid"),
        "{diff:#}"
    );
    assert!(
        !diff["new_errors"].to_string().contains("uuid"),
        "the toolchain's error is no drift: {diff:#}"
    );
    // Each static finding is matched to what is new at the candidate.
    let confirmation = &json["confirmation"];
    assert_eq!(
        confirmation["confirmed"].as_array().unwrap().len(),
        BREAKS.len(),
        "{confirmation:#}"
    );
    assert!(
        !confirmation.to_string().contains("device_info.cpp"),
        "{confirmation:#}"
    );

    // The text says which is which.
    let (code, text) = demo.run(&text_build_args(&work, &pin2));
    assert_eq!(code, 1, "{text}");
    let new_line = text
        .lines()
        .find(|l| l.starts_with("new at the candidate (drift): "))
        .expect(&text);
    assert!(new_line.ends_with(", 3 undefined symbols"), "{text}");
    let conflict = text
        .split("in conflict at the candidate")
        .nth(1)
        .expect(&text);
    assert!(
        conflict.contains("\n  mlx/device.cpp ") && conflict.contains("follow from the markers"),
        "{text}"
    );
    let also = text.split("also at the recorded pin").nth(1).expect(&text);
    assert!(
        also.contains("device_info.cpp") && also.contains("uuid"),
        "{text}"
    );

    // The candidate equal to the recorded pin: nothing is new.
    let (code, json) = build(&pin1, &[]);
    assert_eq!(code, 0, "{json:#}");
    let diff = &json["differential"];
    assert_eq!(diff["new_errors"].as_array().unwrap().len(), 0, "{diff:#}");
    assert_eq!(
        files(&diff["known_errors"]),
        BTreeSet::from(["mlx/backend/rocm/device_info.cpp".to_string()])
    );
    // `--strict` fails on what the recorded pin has too.
    let (code, _) = build(&pin1, &["--strict"]);
    assert_eq!(code, 1);
}

/// A backend file using a library the machine lacks: `<rocblas/rocblas.h>`, two of its
/// functions, a type and a constant. Without stubs the header is named as missing (never as
/// drift) and the file is not compiled past its first line.
const BLAS: &str = "// Matrix products through rocBLAS.\n\
#include <rocblas/rocblas.h>\n\n\
namespace mlx::core::rocm {\n\n\
int blas_gemm(rocblas_handle handle, int n) {\n\
  int status = rocblas_sgemm(handle, rocblas_operation_none, n, n);\n\
  if (status != 0) {\n\
    return status;\n\
  }\n\
  return rocblas_destroy_handle(handle);\n\
}\n\n\
} // namespace mlx::core::rocm\n";

/// Issue 24: `drift build --stubs DIR` writes a stub for the missing header declaring the
/// names the backend uses, builds with it, and keeps a file in DIR it did not write. Fails
/// before: no `--stubs`, and the file stopped at its `#include`.
#[test]
fn stubs_stand_in_for_a_library_the_machine_lacks() {
    use crate::common::Demo;
    use forkbook::engine::config::Layout;
    let demo = Demo::new(Layout::Patch);
    let hand = demo.tmp.path().join("hand");
    let (code, out) = demo.run(&["materialize", "--out", hand.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    std::fs::write(hand.join("mlx/backend/rocm/blas.cpp"), BLAS).unwrap();
    let (code, out) = demo.run(&[
        "fix",
        "add",
        "--from",
        hand.to_str().unwrap(),
        "--title",
        "Matrix products through rocBLAS",
    ]);
    assert_eq!(code, 0, "{out}");

    let work = demo.tmp.path().join("work");
    let stubs = demo.root().join("stubs");
    let pin2 = demo.demo.world.pin2.clone();
    let build = |extra: &[&str]| json_build(&demo, &work, &pin2, extra);
    let names_blas = |list: &serde_json::Value| {
        list.as_array()
            .unwrap()
            .iter()
            .any(|e| e["file"] == "mlx/backend/rocm/blas.cpp")
    };
    let blas_object = || {
        let mut found = Vec::new();
        let mut pending = vec![work.clone()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    pending.push(path);
                } else if path.file_name().is_some_and(|n| n == "blas.cpp.o") {
                    found.push(path);
                }
            }
        }
        found
    };

    // Without stubs: a missing header, named as such, at both pins; no object.
    let (code, json) = build(&[]);
    assert_eq!(code, 1, "the planted breaks: {json:#}");
    let diff = &json["differential"];
    assert_eq!(
        diff["missing_headers"][0]["header"], "rocblas/rocblas.h",
        "{diff:#}"
    );
    assert!(!names_blas(&diff["new_errors"]), "{diff:#}");
    assert!(blas_object().is_empty());

    // With `--stubs`: the stub declares what blas.cpp uses, and the file compiles.
    let (code, json) = build(&["--stubs", stubs.to_str().unwrap()]);
    assert_eq!(code, 1, "the planted breaks stay: {json:#}");
    let header = &json["stubs"]["headers"][0];
    assert_eq!(header["header"], "rocblas/rocblas.h", "{json:#}");
    assert_eq!(header["state"], "written");
    let listed = |key: &str| -> Vec<String> {
        header[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        listed("functions"),
        ["rocblas_destroy_handle", "rocblas_sgemm"]
    );
    assert_eq!(listed("types"), ["rocblas_handle"]);
    assert_eq!(listed("constants"), ["rocblas_operation_none"]);
    let text = std::fs::read_to_string(stubs.join("rocblas/rocblas.h")).unwrap();
    assert!(
        text.starts_with("// forkbook-stub: rocblas/rocblas.h\n"),
        "{text}"
    );
    assert!(
        text.contains("stands in for\n// <rocblas/rocblas.h>"),
        "{text}"
    );
    for name in [
        "rocblas_sgemm",
        "rocblas_destroy_handle",
        "rocblas_handle",
        "rocblas_operation_none",
    ] {
        assert!(text.contains(name), "{name}: {text}");
    }
    // The backend's own names are not the library's.
    assert!(!text.contains("blas_gemm("), "{text}");
    let diff = &json["differential"];
    assert_eq!(
        diff["missing_headers"].as_array().unwrap().len(),
        0,
        "{diff:#}"
    );
    assert!(!names_blas(&diff["new_errors"]), "{diff:#}");
    assert!(!names_blas(&diff["known_errors"]), "{diff:#}");
    // An object at each pin, and in the candidate built at the pin's side of its conflict.
    let objects = blas_object();
    assert_eq!(objects.len(), 3, "{objects:?}");
    let side = |o: &&std::path::PathBuf| o.to_string_lossy().contains("-pin-side/build/");
    assert_eq!(objects.iter().filter(side).count(), 1, "{objects:?}");
    // The planted breaks are still what is new.
    assert_eq!(
        diff["new_undefined"].as_array().unwrap().len(),
        3,
        "{diff:#}"
    );

    // A header in the folder that forkbook did not write is kept as it is, and used.
    let own = text.replacen("// forkbook-stub: rocblas/rocblas.h\n", "// Our own.\n", 1);
    std::fs::write(stubs.join("rocblas/rocblas.h"), &own).unwrap();
    let (_, json) = build(&["--stubs", stubs.to_str().unwrap()]);
    assert_eq!(json["stubs"]["headers"][0]["state"], "kept-not-ours");
    assert_eq!(
        std::fs::read_to_string(stubs.join("rocblas/rocblas.h")).unwrap(),
        own
    );
    assert!(!names_blas(&json["differential"]["known_errors"]));
}

/// `[build] drop_flags` and `add_flags`: an argument the compiler refuses, passed by the tree's
/// own CMake, is dropped, and an added one reaches the compile, through the script CMake is
/// given as the compiler. Fails before: neither key existed.
#[test]
fn flags_the_compiler_refuses_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(
        tree.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.16)\nproject(flags LANGUAGES CXX)\n\
         add_library(one STATIC one.cpp)\n\
         target_compile_options(one PRIVATE -no-such-flag-here=2)\n",
    )
    .unwrap();
    std::fs::write(
        tree.join("one.cpp"),
        "#ifndef FORKBOOK_ADDED\n#error the added flag is missing\n#endif\nint one() { return 1; }\n",
    )
    .unwrap();
    let mut cfg = BuildConfig {
        cmake_args: vec!["-DCMAKE_CXX_COMPILER={compiler}".to_string()],
        ..BuildConfig::default()
    };
    let refused = drift_build(&tree, &dir.path().join("b1"), &cfg, &cxx(Some(1))).unwrap();
    assert!(
        refused.build.as_ref().is_some_and(|b| !b.ok()) && !refused.problems().is_empty(),
        "{}",
        refused.doc().text()
    );
    assert_eq!(refused.objects, 0);
    cfg.drop_flags = vec!["-no-such-flag-*".to_string()];
    cfg.add_flags = vec!["-DFORKBOOK_ADDED=1".to_string()];
    let report = drift_build(&tree, &dir.path().join("b2"), &cfg, &cxx(Some(1))).unwrap();
    assert!(report.problems().is_empty(), "{}", report.doc().text());
    assert_eq!(report.objects, 1);
    assert!(dir.path().join("b2/forkbook-compiler/c++").is_file());
}

/// `make -k` builds nothing that depends on a target that failed: the real overlay's HIP
/// kernel library, one of whose files fails with an older ROCm, kept every C++ file of `mlx`
/// from compiling. The second pass compiles them. Fails before: `b.cpp` was never compiled.
#[test]
fn files_of_targets_after_a_failed_one_are_compiled_too() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(
        tree.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.16)\nproject(order LANGUAGES CXX)\n\
         add_library(kernels STATIC a.cpp)\nadd_library(mlx STATIC b.cpp)\n\
         add_dependencies(mlx kernels)\n",
    )
    .unwrap();
    std::fs::write(tree.join("a.cpp"), "int a() { return missing_name; }\n").unwrap();
    std::fs::write(
        tree.join("b.cpp"),
        "namespace mlx::core { int b() { return 2; } }\n",
    )
    .unwrap();
    let cfg = BuildConfig {
        cmake_args: vec!["-DCMAKE_CXX_COMPILER={compiler}".to_string()],
        ..BuildConfig::default()
    };
    let report = drift_build(&tree, &dir.path().join("b"), &cfg, &cxx(Some(1))).unwrap();
    let files: Vec<&str> = report.errors.iter().map(|e| e.file.as_str()).collect();
    assert_eq!(files, ["a.cpp"], "{}", report.doc().text());
    assert_eq!(report.objects, 1, "{}", report.doc().text());
    assert!(dir.path().join("b/CMakeFiles/mlx.dir/b.cpp.o").is_file());
}

/// A CMake project of one static library `mlx` over `sources` (name, text), written into `tree`.
fn lay_library(tree: &Path, sources: &[(&str, &str)]) {
    lay_library_after(tree, "", sources);
}

/// [`lay_library`], with `cmake` (whole lines) before the library in `CMakeLists.txt`.
fn lay_library_after(tree: &Path, cmake: &str, sources: &[(&str, &str)]) {
    let _ = std::fs::remove_dir_all(tree);
    std::fs::create_dir_all(tree).unwrap();
    let names: Vec<&str> = sources.iter().map(|(name, _)| *name).collect();
    std::fs::write(
        tree.join("CMakeLists.txt"),
        format!(
            "cmake_minimum_required(VERSION 3.16)\nproject(fixture LANGUAGES CXX)\n{cmake}\
             add_library(mlx STATIC {})\n",
            names.join(" ")
        ),
    )
    .unwrap();
    for (name, text) in sources {
        std::fs::write(tree.join(name), text).unwrap();
    }
}

/// `[build]` for a fixture library: the compiler and the include folders, nothing else.
fn fixture_config(include_dirs: &[&Path]) -> BuildConfig {
    BuildConfig {
        cmake_args: vec!["-DCMAKE_CXX_COMPILER={compiler}".to_string()],
        include_dirs: include_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect(),
        ..BuildConfig::default()
    }
}

/// Builds `baseline` and `candidate` (each a list of sources) in folders of their own under
/// `dir` and compares them.
fn differential(
    dir: &Path,
    cfg: &BuildConfig,
    options: &BuildOptions,
    baseline: &[(&str, &str)],
    candidate: &[(&str, &str)],
) -> Differential {
    let mut reports = Vec::new();
    for (name, sources) in [("recorded", baseline), ("candidate", candidate)] {
        let tree = dir.join(name).join("tree");
        lay_library(&tree, sources);
        let build_dir = dir.join(name).join("build");
        reports.push(drift_build(&tree, &build_dir, cfg, options).unwrap());
    }
    let candidate = reports.pop().unwrap();
    let recorded = reports.pop();
    Differential::compare("a".repeat(40), "b".repeat(40), recorded, candidate, false)
}

/// Defines `mlx::core::zero()` through a macro, so no reading of the source sees the definition.
const ZERO: &str = "#define DEFINE_ZERO(name) \\\n  namespace mlx::core { int name() { return 0; } }\n\nDEFINE_ZERO(zero)\n";

/// Calls `mlx::core::zero()`.
const ONE: &str = "namespace mlx::core {\nint zero();\nint one() { return zero() + 1; }\n}\n";

/// Issue 41.1: an undefined symbol whose defining source failed to compile at the candidate
/// follows from that failure: it is filed under it, not as drift. Here the source defines the
/// symbol through a macro, which the reading of failed sources cannot see; the recorded pin's
/// objects say where it was defined. Fails before: `mlx::core::zero()` was a new undefined
/// symbol, drift beside the compile error.
#[test]
fn an_undefined_symbol_of_a_source_that_failed_is_filed_under_the_failure() {
    let dir = tempfile::tempdir().unwrap();
    let broken = format!("{ZERO}\nint broken() {{ return no_such_name; }}\n");
    let diff = differential(
        dir.path(),
        &fixture_config(&[]),
        &cxx(Some(1)),
        &[("zero.cpp", ZERO), ("one.cpp", ONE)],
        &[("zero.cpp", &broken), ("one.cpp", ONE)],
    );
    let text = diff.doc().text();
    assert!(diff.new_undefined.is_empty(), "{text}");
    let after: Vec<(&str, Option<&str>)> = (diff.after_failed_compiles.iter())
        .map(|u| (u.symbol.as_str(), u.probably_in.as_deref()))
        .collect();
    assert_eq!(after, [("mlx::core::zero()", Some("zero.cpp"))], "{text}");
    assert_eq!(diff.candidate.failed, ["zero.cpp"], "{text}");
    let problems = diff.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("zero.cpp:6"), "{problems:?}");
    assert!(
        text.contains(
            "failed to compile at the candidate (they follow from its errors; not drift): 1"
        ),
        "{text}"
    );
}

/// A device-properties header of an older ROCm: no `uuid`.
const OLD_ROCM: &str = "#pragma once\nstruct hipDeviceProp_t {\n  char name[256];\n};\n";

/// Uses the `uuid` of newer ROCm: an error with the old header.
const UUID: &str = "#include <hip/hip_runtime_api.h>\nnamespace mlx::core {\n\
const char* uuid(const hipDeviceProp_t& p) { return p.uuid; }\n}\n";

/// A compiler that stands in for clang 15 on one limit: a source marked `captures a binding`
/// fails with clang 15's message for a lambda capturing a structured binding; everything else
/// goes to `c++`.
const CLANG15: &str = "for a in \"$@\"; do\n  case \"$a\" in\n    *.cpp)\n      \
if grep -q 'captures a binding' \"$a\"; then\n        \
echo \"$a:3:30: error: reference to local binding 'size' declared in enclosing function 'mlx::core::sizes'\" >&2\n        \
exit 1\n      fi ;;\n  esac\ndone\nexec c++ \"$@\"";

/// Issue 41.1: an error new at the candidate only because new upstream code meets a limit of
/// the toolchain is "toolchain, new instance", with its evidence, and fails nothing unless
/// `--strict`: a second file using the member the old ROCm lacks (the same message is at the
/// recorded pin), and a new file meeting a limit of the table (clang 15 and a lambda capturing
/// a structured binding). Fails before: both were drift.
#[test]
fn a_toolchain_limit_error_new_at_the_candidate_is_not_drift() {
    let dir = tempfile::tempdir().unwrap();
    let rocm = dir.path().join("rocm");
    std::fs::create_dir_all(rocm.join("hip")).unwrap();
    std::fs::write(rocm.join("hip/hip_runtime_api.h"), OLD_ROCM).unwrap();
    let bin = dir.path().join("bin");
    let compiler = crate::common::write_stub(&bin, "old-cxx", CLANG15);
    let options = BuildOptions {
        compiler: Some(compiler.display().to_string()),
        jobs: Some(1),
        ..BuildOptions::default()
    };
    let binding = "// captures a binding\nnamespace mlx::core {\nint sizes() { return 0; }\n}\n";
    let mut diff = differential(
        dir.path(),
        &fixture_config(&[&rocm]),
        &options,
        &[("uuid.cpp", UUID), ("one.cpp", ONE), ("zero.cpp", ZERO)],
        &[
            ("uuid.cpp", UUID),
            ("uuid_again.cpp", UUID),
            ("sizes.cpp", binding),
            ("one.cpp", ONE),
            ("zero.cpp", ZERO),
        ],
    );
    let text = diff.doc().text();
    assert!(diff.new_errors.is_empty(), "{text}");
    let toolchain: Vec<(&str, &str)> = (diff.toolchain_new.iter())
        .map(|t| (t.error.file.as_str(), t.evidence.as_str()))
        .collect();
    assert_eq!(toolchain.len(), 2, "{text}");
    assert_eq!(toolchain[0].0, "sizes.cpp", "{text}");
    assert!(
        toolchain[0].1.starts_with("known limit: clang 15"),
        "{text}"
    );
    assert_eq!(toolchain[1].0, "uuid_again.cpp", "{text}");
    assert!(
        toolchain[1]
            .1
            .starts_with("the same message at the recorded pin in uuid.cpp:3"),
        "{text}"
    );
    assert_eq!(diff.known_errors.len(), 1, "{text}");
    assert!(diff.problems().is_empty(), "{:?}", diff.problems());
    assert!(text.contains("toolchain, new instance"), "{text}");
    diff.strict = true;
    assert_eq!(diff.problems().len(), 3, "{:?}", diff.problems());
}

/// Declares two primitives the way upstream does: `eval_cpu` is the first virtual function
/// defined out of line, so the vtable (which names `eval_gpu`) is emitted where it is.
const PRIMITIVES_H: &str = "#pragma once\nnamespace mlx::core {\nstruct Primitive {\n  \
virtual ~Primitive();\n  virtual void eval_cpu() = 0;\n  virtual void eval_gpu() = 0;\n};\n\
struct Gather : Primitive {\n  void eval_cpu() override;\n  void eval_gpu() override;\n};\n\
struct Scatter : Primitive {\n  void eval_cpu() override;\n  void eval_gpu() override;\n};\n}\n";

/// The CPU backend: every primitive's `eval_cpu`, so every vtable.
const CPU: &str = "#include \"primitives.h\"\nnamespace mlx::core {\nPrimitive::~Primitive() {}\n\
void Gather::eval_cpu() {}\nvoid Scatter::eval_cpu() {}\n}\n";

/// The GPU backend: `Scatter::eval_gpu` only.
const GPU: &str =
    "#include \"primitives.h\"\nnamespace mlx::core {\nvoid Scatter::eval_gpu() {}\n}\n";

/// Issue 41.2: a primitive's missing `eval_gpu` that nothing calls shows only when the static
/// library is linked: the nm closure over every object finds it, with the object that needs it
/// (the CPU backend's, whose vtable names it).
#[test]
fn a_missing_eval_gpu_only_a_link_reveals_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    lay_library(
        &tree,
        &[
            ("cpu.cpp", CPU),
            ("gpu.cpp", GPU),
            ("primitives.h", PRIMITIVES_H),
        ],
    );
    let cfg = fixture_config(&[]);
    let report = drift_build(&tree, &dir.path().join("build"), &cfg, &cxx(Some(1))).unwrap();
    let undefined: Vec<(&str, &[String])> = (report.undefined.iter())
        .map(|u| (u.symbol.as_str(), u.needed_by.as_slice()))
        .collect();
    assert_eq!(
        undefined,
        [(
            "mlx::core::Gather::eval_gpu()",
            ["cpu.cpp".to_string()].as_slice()
        )],
        "{}",
        report.doc().text()
    );
}

/// Declares a primitive whose key function (the destructor) upstream defines in `mlx/device.cpp`:
/// the vtable, which names `eval_gpu`, is that object's alone.
const FUSED_H: &str =
    "#pragma once\nnamespace mlx::core {\nstruct Fused {\n  virtual ~Fused();\n  \
virtual void eval_cpu();\n  virtual void eval_gpu();\n};\n}\n";

/// What a new upstream commit appends to `mlx/device.cpp`.
const FUSED_CPU: &str = "\n#include \"mlx/fused.h\"\nnamespace mlx::core {\nFused::~Fused() {}\n\
void Fused::eval_cpu() {}\n}\n";

/// Issue 41.2: a primitive's missing `eval_gpu` shows in the link even when the object that needs
/// it is of a file the retarget leaves in conflict. A commit on the demo's pin2 declares a new
/// primitive and defines its key function in `mlx/device.cpp`, which the retarget leaves with
/// markers, so that file never compiles; the symbols are read from the candidate built once more
/// with each conflict at the pin's side. Fails before: `Fused::eval_gpu` was never named, as
/// fix 6 of the first user's overlay was not (its vtable's file included a header in conflict).
#[test]
fn a_missing_eval_gpu_needed_by_a_file_in_conflict_is_found() {
    use crate::common::Demo;
    use forkbook::engine::config::Layout;
    let demo = Demo::new(Layout::Patch);
    let upstream = git2::Repository::open_bare(&demo.demo.world.upstream).unwrap();
    let pin2 = upstream.revparse_single(&demo.demo.world.pin2).unwrap();
    let pin2 = pin2.peel_to_commit().unwrap();
    let device = pin2
        .tree()
        .unwrap()
        .get_path(Path::new("mlx/device.cpp"))
        .unwrap();
    let device = upstream.find_blob(device.id()).unwrap();
    let device = [device.content(), FUSED_CPU.as_bytes()].concat();
    let mut update = git2::build::TreeUpdateBuilder::new();
    update.upsert(
        "mlx/device.cpp",
        upstream.blob(&device).unwrap(),
        git2::FileMode::Blob,
    );
    update.upsert(
        "mlx/fused.h",
        upstream.blob(FUSED_H.as_bytes()).unwrap(),
        git2::FileMode::Blob,
    );
    let tree = update
        .create_updated(&upstream, &pin2.tree().unwrap())
        .unwrap();
    let tree = upstream.find_tree(tree).unwrap();
    let who = git2::Signature::new(
        "Upstream",
        "upstream@example.com",
        &git2::Time::new(1_700_000_000, 0),
    )
    .unwrap();
    let pin3 = upstream
        .commit(
            Some("refs/heads/main"),
            &who,
            &who,
            "Add the fused primitive",
            &tree,
            &[&pin2],
        )
        .unwrap()
        .to_string();

    let work = demo.tmp.path().join("work");
    let (code, json) = json_build(&demo, &work, &pin3, &[]);
    assert_eq!(code, 1, "{json:#}");
    let diff = &json["differential"];
    let in_conflict: Vec<&str> = (diff["in_conflict"].as_array().unwrap().iter())
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(in_conflict, ["mlx/device.cpp"], "{diff:#}");
    let fused: Vec<&serde_json::Value> = (diff["new_undefined"].as_array().unwrap().iter())
        .filter(|u| u["symbol"] == "mlx::core::Fused::eval_gpu()")
        .collect();
    assert_eq!(fused.len(), 1, "{diff:#}");
    assert_eq!(
        fused[0]["needed_by"],
        serde_json::json!(["mlx/device.cpp"]),
        "{diff:#}"
    );
    let side = &json["build"]["symbols_from"];
    assert_eq!(
        side["compiled"],
        serde_json::json!(["mlx/device.cpp"]),
        "{json:#}"
    );

    // The text says where the symbols were read, and that the side's errors are not counted.
    let (_, text) = demo.run(&text_build_args(&work, &pin3));
    assert!(
        text.contains("symbols: read from a build with each of the 1 file in conflict taken at the pin's side"),
        "{text}"
    );
    assert!(text.contains("Fused::eval_gpu()"), "{text}");
}

/// Issue 41.3: a build folder an earlier build used changes no verdict. The first tree has a
/// source defining `mlx::core::zero()`; the second, built in the same folder, has not, so its
/// `one.cpp` needs a symbol no object of its own defines. Fails before: the first build's
/// object was still in the folder and nm read it, so nothing was undefined.
#[test]
fn a_build_folder_used_before_changes_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let (tree, build_dir) = (dir.path().join("tree"), dir.path().join("build"));
    let cfg = fixture_config(&[]);
    lay_library(&tree, &[("zero.cpp", ZERO), ("one.cpp", ONE)]);
    let first = drift_build(&tree, &build_dir, &cfg, &cxx(Some(1))).unwrap();
    assert!(first.problems().is_empty(), "{}", first.doc().text());
    lay_library(&tree, &[("one.cpp", ONE)]);
    let second = drift_build(&tree, &build_dir, &cfg, &cxx(Some(1))).unwrap();
    let undefined: Vec<&str> = second.undefined.iter().map(|u| u.symbol.as_str()).collect();
    assert_eq!(undefined, ["mlx::core::zero()"], "{}", second.doc().text());
    assert_eq!(second.objects, 1);
}

/// The lines of `file`, none when it is missing.
fn line_count(file: &Path) -> usize {
    std::fs::read_to_string(file).map_or(0, |text| text.lines().count())
}

/// Issue 41.3: a rerun of the same differential compiles nothing, failures included, and prints
/// the same report, byte for byte: each tree's outcome is kept by every input it read. Fails
/// before: the rerun compiled the candidate's failing files again (ccache keeps no failure) and
/// its report differed in every time.
#[test]
fn a_rerun_of_the_same_differential_compiles_nothing_and_says_the_same() {
    use crate::common::Demo;
    use forkbook::engine::config::Layout;
    let demo = Demo::new(Layout::Patch);
    let compiles = demo.tmp.path().join("compiles");
    let compiler = crate::common::write_stub(
        &demo.tmp.path().join("bin"),
        "logging-c++",
        &format!(
            "case \" $* \" in *' -c '*) echo \"$*\" >> '{}' ;; esac\nexec c++ \"$@\"",
            compiles.display()
        ),
    );
    let work = demo.tmp.path().join("work");
    let pin2 = demo.demo.world.pin2.clone();
    let args = [
        "drift",
        "build",
        "--to",
        &pin2,
        "--compiler",
        compiler.to_str().unwrap(),
        "--jobs",
        "2",
        "--work",
        work.to_str().unwrap(),
    ];
    let (code, first) = demo.run(&args);
    assert_eq!(code, 1, "the planted breaks: {first}");
    let compiled = line_count(&compiles);
    assert!(compiled >= 20, "{compiled} compiles: {first}");
    let (code, again) = demo.run(&args);
    assert_eq!(code, 1, "{again}");
    assert_eq!(again, first);
    assert_eq!(
        line_count(&compiles),
        compiled,
        "the rerun compiled something"
    );
}

/// Issue 41.3: `verify` right after a `drift build --to` that used the same work folder gives
/// the verdict a `drift build` by hand gives: its ROCm step fails exactly when that does.
#[test]
fn verify_after_a_drift_build_in_the_same_folder_gives_the_true_verdict() {
    use crate::common::Demo;
    use forkbook::engine::config::Layout;
    let demo = Demo::new(Layout::Patch);
    let stubs = demo.tmp.path().join("stubs");
    crate::common::write_stub(&stubs, "hipcc", "exec c++ \"$@\"");
    let tools = crate::common::with_stubs(&stubs);
    let pin2 = demo.demo.world.pin2.clone();
    let (code, out) = demo.run_with_tools(&tools, &["drift", "build", "--to", &pin2]);
    assert_eq!(code, 1, "the planted breaks: {out}");
    // The recorded pin broken the way a candidate is: the backend's allocator no longer compiles.
    let hand = demo.tmp.path().join("hand");
    let (code, out) = demo.run(&["materialize", "--out", hand.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let allocator = hand.join("mlx/backend/rocm/allocator.cpp");
    let mut text = std::fs::read_to_string(&allocator).unwrap();
    text.push_str("\nint broken_on_purpose() { return no_such_name; }\n");
    std::fs::write(&allocator, text).unwrap();
    let title = "Break the allocator";
    let from = hand.to_str().unwrap();
    let (code, out) = demo.run(&["fix", "add", "--from", from, "--title", title]);
    assert_eq!(code, 0, "{out}");
    let (by_hand, out) = demo.run_with_tools(&tools, &["drift", "build"]);
    assert_eq!(by_hand, 1, "{out}");
    assert!(out.contains("no_such_name"), "{out}");
    let (code, out) = demo.run_with_tools(&tools, &["verify"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("ROCm build                   FAILED: exit 1"),
        "{out}"
    );
}

/// Includes `a.h`, which the candidate changes.
const WITH_HEADER: &str = "#include \"a.h\"\nnamespace mlx::core { int a() { return A; } }\n";

/// Issue 41.3: a candidate that changes one header recompiles only the translation units that
/// include it. The two trees are laid out alike under one base folder and share ccache's
/// objects (as `drift build --to` lays them), so the candidate's unchanged sources are ccache's
/// hits; the compiler counts its compiles itself (a script on the tool path, not a clock).
#[test]
fn a_header_changed_at_the_candidate_recompiles_only_what_includes_it() {
    let dir = tempfile::tempdir().unwrap();
    let compiles = dir.path().join("compiles");
    let compiler = counting_compiler(dir.path(), &compiles);
    let options = BuildOptions {
        compiler: Some(compiler.display().to_string()),
        jobs: Some(1),
        ccache_base: Some(dir.path().to_path_buf()),
        ccache_dir: Some(dir.path().join("ccache")),
        ..BuildOptions::default()
    };
    let others = [("one.cpp", ONE), ("zero.cpp", ZERO)];
    let header_at = |value: &str| format!("#pragma once\n#define A {value}\n");
    let (recorded_h, candidate_h) = (header_at("1"), header_at("2"));
    let recorded = [&others[..], &[("a.cpp", WITH_HEADER), ("a.h", &recorded_h)]].concat();
    let candidate = [
        &others[..],
        &[("a.cpp", WITH_HEADER), ("a.h", &candidate_h)],
    ]
    .concat();
    let diff = differential(
        dir.path(),
        &fixture_config(&[]),
        &options,
        &recorded,
        &candidate,
    );
    assert!(diff.problems().is_empty(), "{}", diff.doc().text());
    let log = std::fs::read_to_string(&compiles).unwrap();
    // The library's compiles, not CMake's probes of the compiler.
    let of_the_library = |line: &&str| line.contains(" -o CMakeFiles/mlx.dir/");
    let mut compiled: Vec<&str> = (log.lines().filter(of_the_library))
        .filter_map(|line| line.split(' ').find(|arg| arg.ends_with(".cpp")))
        .map(|source| source.rsplit('/').next().unwrap_or(source))
        .collect();
    compiled.sort();
    assert_eq!(
        compiled,
        ["a.cpp", "a.cpp", "one.cpp", "zero.cpp"],
        "the recorded pin's three sources, then the candidate's a.cpp alone:\n{log}"
    );
}

/// Fails to compile, at both pins.
const BROKEN: &str = "namespace mlx::core { int broken() { return no_such_name; } }\n";

/// A compiler script on the tool path that logs each `-c` compile to `compiles` and each `-E`
/// run to [`preprocessed_log`] before running `c++`.
fn counting_compiler(dir: &Path, compiles: &Path) -> std::path::PathBuf {
    crate::common::write_stub(
        &dir.join("bin"),
        "counting-c++",
        &format!(
            "case \" $* \" in *' -E '*) echo \"$*\" >> '{}' ;; *' -c '*) echo \"$*\" >> '{}' ;; esac\nexec c++ \"$@\"",
            preprocessed_log(compiles).display(),
            compiles.display()
        ),
    )
}

/// Where [`counting_compiler`] logs its `-E` runs: beside `compiles`.
fn preprocessed_log(compiles: &Path) -> std::path::PathBuf {
    compiles.with_extension("preprocessed")
}

/// The library's sources compiled, as logged by [`counting_compiler`], sorted.
fn library_compiles(compiles: &Path) -> Vec<String> {
    let log = std::fs::read_to_string(compiles).unwrap_or_default();
    let mut compiled: Vec<String> = (log.lines())
        .filter(|line| line.contains(" -o CMakeFiles/mlx.dir/"))
        .filter_map(|line| line.split(' ').find(|arg| arg.ends_with(".cpp")))
        .map(|source| source.rsplit('/').next().unwrap_or(source).to_string())
        .collect();
    compiled.sort();
    compiled
}

/// A report's text with what differs between two folders and two runs masked: the folder
/// and each `in 1.2 s`.
fn masked(text: &str, dir: &Path) -> String {
    let text = text.replace(&dir.display().to_string(), "DIR");
    let mut out = String::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        let mut kept = Vec::new();
        for (at, word) in words.iter().enumerate() {
            let timed = words.get(at + 1).is_some_and(|w| w.starts_with('s'))
                && word.trim_end_matches(',').parse::<f64>().is_ok();
            kept.push(if timed { "T" } else { word });
        }
        out.push_str(&kept.join(" "));
        out.push('\n');
    }
    out
}

/// The recorded pin's and the candidate's sources of the kept-failure tests: `broken.cpp`
/// fails at both, `a.h` changes at the candidate, `one.cpp` is the same.
fn broken_at_both_pins() -> [Vec<(&'static str, String)>; 2] {
    let at = |value: &str| {
        vec![
            ("one.cpp", ONE.to_string()),
            ("broken.cpp", BROKEN.to_string()),
            ("a.cpp", WITH_HEADER.to_string()),
            ("a.h", format!("#pragma once\n#define A {value}\n")),
        ]
    };
    [at("1"), at("2")]
}

fn as_sources<'a>(files: &'a [(&'static str, String)]) -> Vec<(&'a str, &'a str)> {
    files
        .iter()
        .map(|(path, text)| (*path, text.as_str()))
        .collect()
}

/// The store of kept compile failures in `dir`, with a secret of the test's.
fn failure_store(dir: &Path) -> forkbook_records::cache_entry::Store {
    use forkbook_records::cache_entry::{Secret, Store};
    Store::new(
        dir,
        "drift build compile failure",
        Some(Secret::from_bytes([7; 32])),
    )
}

/// Issue 41.3: a failed compile is kept per translation unit, keyed by its preprocessed text,
/// arguments and compiler, so the candidate's build replays a failure the recorded pin's build
/// met instead of compiling the file again (ccache keeps successes only), and says what a
/// build without kept failures says. A forged entry is not believed: the file compiles again
/// and its true error is reported. Fails before: `broken.cpp` compiled at both pins.
#[test]
fn a_failure_the_candidate_shares_is_replayed_not_compiled_again() {
    use forkbook_records::cache_entry::Store;
    let dir = tempfile::tempdir().unwrap();
    let compiles = dir.path().join("compiles");
    let compiler = counting_compiler(dir.path(), &compiles);
    let kept_dir = dir.path().join("failures");
    let store = failure_store(&kept_dir);
    let options_in = |base: &Path, store: Option<Store>| BuildOptions {
        compiler: Some(compiler.display().to_string()),
        jobs: Some(1),
        ccache_base: Some(base.to_path_buf()),
        ccache_dir: Some(base.join("ccache")),
        compile_failures: store,
        ..BuildOptions::default()
    };
    let [recorded, candidate] = broken_at_both_pins();
    let (recorded, candidate) = (as_sources(&recorded), as_sources(&candidate));
    let cfg = fixture_config(&[]);

    let (plain_dir, kept_at) = (dir.path().join("plain"), dir.path().join("kept"));
    for folder in [&plain_dir, &kept_at] {
        std::fs::create_dir_all(folder).unwrap();
    }
    let plain = differential(
        &plain_dir,
        &cfg,
        &options_in(&plain_dir, None),
        &recorded,
        &candidate,
    );
    assert_eq!(
        library_compiles(&compiles),
        [
            "a.cpp",
            "a.cpp",
            "broken.cpp",
            "broken.cpp",
            "broken.cpp",
            "broken.cpp",
            "one.cpp"
        ],
        "without kept failures the failing file compiles twice (make -k, make -i) at each pin"
    );
    std::fs::remove_file(&compiles).unwrap();
    let options = options_in(&kept_at, Some(store.clone()));
    let kept = differential(&kept_at, &cfg, &options, &recorded, &candidate);
    assert_eq!(
        library_compiles(&compiles),
        ["a.cpp", "a.cpp", "broken.cpp", "one.cpp"],
        "the recorded pin's three sources, then the candidate's a.cpp alone"
    );
    let text = kept.doc().text();
    assert_eq!(kept.known_errors.len(), 1, "{text}");
    assert!(text.contains("no_such_name"), "{text}");
    assert_eq!(
        masked(&text, &kept_at),
        masked(&plain.doc().text(), &plain_dir)
    );

    // Every kept entry forged: its bytes changed, its seal no longer theirs.
    let entries: Vec<_> = std::fs::read_dir(&kept_dir).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1, "one failing unit kept");
    for entry in &entries {
        let bytes = std::fs::read(entry.path()).unwrap();
        let forged = String::from_utf8(bytes)
            .unwrap()
            .replace("no_such_name", "forged_name_");
        std::fs::write(entry.path(), forged).unwrap();
    }
    std::fs::remove_file(&compiles).unwrap();
    let tree = kept_at.join("candidate").join("tree");
    let again = drift_build(&tree, &kept_at.join("candidate/build"), &cfg, &options).unwrap();
    assert_eq!(library_compiles(&compiles), ["broken.cpp"]);
    let again_text = again.doc().text();
    assert!(again_text.contains("no_such_name"), "{again_text}");
    assert!(!again_text.contains("forged"), "{again_text}");
}

/// A kept failure is a cache of one pin's unit: once the pins move on it is never met again.
/// So the store keeps what builds still replay: an entry replayed is dated anew, and one
/// neither replayed nor kept for a month is removed, while files that are not entries stay.
/// Fails before: the store was never pruned, and the stale entry stayed.
#[test]
fn a_kept_failure_unused_for_a_month_leaves_the_store_and_a_replayed_one_is_dated_anew() {
    use std::time::{Duration, SystemTime};
    let dir = tempfile::tempdir().unwrap();
    let compiles = dir.path().join("compiles");
    let compiler = counting_compiler(dir.path(), &compiles);
    let kept_dir = dir.path().join("failures");
    let options = BuildOptions {
        compiler: Some(compiler.display().to_string()),
        jobs: Some(1),
        compile_failures: Some(failure_store(&kept_dir)),
        ..BuildOptions::default()
    };
    let cfg = BuildConfig {
        ccache: false,
        ..fixture_config(&[])
    };
    let [recorded, candidate] = broken_at_both_pins();
    let (recorded, candidate) = (as_sources(&recorded), as_sources(&candidate));
    differential(dir.path(), &cfg, &options, &recorded, &candidate);
    let entries: Vec<_> = std::fs::read_dir(&kept_dir).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1, "one failing unit kept");
    let replayed = entries[0].path();

    let stale = kept_dir.join("0".repeat(64));
    let not_an_entry = kept_dir.join("notes.txt");
    std::fs::copy(&replayed, &stale).unwrap();
    std::fs::write(&not_an_entry, "mine").unwrap();
    let two_months_ago = SystemTime::now() - Duration::from_secs(60 * 24 * 60 * 60);
    for path in [&replayed, &stale, &not_an_entry] {
        let file = std::fs::File::open(path).unwrap();
        file.set_modified(two_months_ago).unwrap();
    }
    std::fs::remove_file(&compiles).unwrap();
    let tree = dir.path().join("candidate/tree");
    let again = drift_build(&tree, &dir.path().join("candidate/build"), &cfg, &options).unwrap();

    assert_eq!(
        library_compiles(&compiles),
        ["a.cpp", "one.cpp"],
        "broken.cpp replayed from the aged entry"
    );
    assert!(again.doc().text().contains("no_such_name"));
    let dated = std::fs::metadata(&replayed).unwrap().modified().unwrap();
    let age = SystemTime::now().duration_since(dated).unwrap_or_default();
    assert!(
        age < Duration::from_secs(24 * 60 * 60),
        "dated anew: {age:?} old"
    );
    assert!(
        !stale.exists(),
        "an entry no build replayed for two months is removed"
    );
    assert!(not_an_entry.exists(), "a file that is not an entry stays");
}

/// Issue 41.3: only a command that failed before has a kept failure to replay, so only its unit
/// is preprocessed (for the key) before it compiles; every other unit goes straight to the
/// compiler, and a failing one is preprocessed once it has failed, to be kept. On the real
/// overlay that `-E` was about 40 % of each host-side compile and all of a ccache hit. Fails
/// before: every `-c` command of both trees was preprocessed first (`one.cpp`, `a.cpp` too).
#[test]
fn only_a_unit_whose_command_failed_before_is_preprocessed_for_its_kept_failure() {
    let dir = tempfile::tempdir().unwrap();
    let compiles = dir.path().join("compiles");
    let compiler = counting_compiler(dir.path(), &compiles);
    let store = failure_store(&dir.path().join("failures"));
    let options = BuildOptions {
        compiler: Some(compiler.display().to_string()),
        jobs: Some(1),
        compile_failures: Some(store),
        ..BuildOptions::default()
    };
    let [recorded, candidate] = broken_at_both_pins();
    let (recorded, candidate) = (as_sources(&recorded), as_sources(&candidate));
    // Without ccache, whose own `-E` runs (on a miss) would be logged too.
    let cfg = BuildConfig {
        ccache: false,
        ..fixture_config(&[])
    };
    let report = differential(dir.path(), &cfg, &options, &recorded, &candidate);

    let log = std::fs::read_to_string(preprocessed_log(&compiles)).unwrap_or_default();
    let mut sources: Vec<&str> = (log.lines())
        .filter_map(|line| line.split(' ').find(|arg| arg.ends_with(".cpp")))
        .map(|source| source.rsplit('/').next().unwrap_or(source))
        .collect();
    sources.dedup();
    assert_eq!(
        sources,
        ["broken.cpp"],
        "what the wrapper preprocessed:\n{log}"
    );
    assert_eq!(
        library_compiles(&compiles),
        ["a.cpp", "a.cpp", "broken.cpp", "one.cpp", "one.cpp"],
        "each pin's sources once (no ccache), the candidate's broken.cpp replayed"
    );
    let text = report.doc().text();
    assert_eq!(report.known_errors.len(), 1, "{text}");
    assert!(text.contains("no_such_name"), "{text}");
}

/// The real tree's CMake puts ccache in front of whatever compiler it is given (MLX does when
/// ccache is installed), so with `[build] add_flags` ccache runs the script forkbook writes into
/// the build folder. Every build empties that folder and writes the script again, and ccache
/// judged the compiler by its file's time: each build was a new compiler, and a warm build of
/// the real overlay compiled 167 of its sources again. Fails before: the second build of the
/// same tree compiled `one.cpp` again.
#[test]
fn a_tree_that_puts_ccache_before_the_compiler_is_cached_across_builds() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    lay_library_after(
        &tree,
        "find_program(CCACHE_PROGRAM ccache REQUIRED)\n\
         set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})\n",
        &[(
            "one.cpp",
            "namespace mlx::core { int one() { return 1; } }\n",
        )],
    );
    let compiles = dir.path().join("compiles");
    let compiler = counting_compiler(dir.path(), &compiles);
    let cfg = BuildConfig {
        add_flags: vec!["-DFORKBOOK_ADDED=1".to_string()],
        ..fixture_config(&[])
    };
    let options = BuildOptions {
        compiler: Some(compiler.display().to_string()),
        jobs: Some(1),
        ccache_base: Some(dir.path().to_path_buf()),
        ccache_dir: Some(dir.path().join("ccache")),
        ..BuildOptions::default()
    };
    let build_dir = dir.path().join("build");
    for _ in 0..2 {
        let report = drift_build(&tree, &build_dir, &cfg, &options).unwrap();
        assert!(report.problems().is_empty(), "{}", report.doc().text());
        assert_eq!(report.objects, 1, "{}", report.doc().text());
    }
    assert_eq!(
        library_compiles(&compiles),
        ["one.cpp"],
        "compiled by the first build only"
    );
}

/// A `hipcc` standing in for the HIP compiler on the C++ compiler, logging every command to
/// `commands`: a `-c` of a `.hip` file is C++, and its device side (`--cuda-device-only`) the
/// same source with `__HIP_DEVICE_COMPILE__` defined, as clang's device side reads it.
fn fake_hipcc(dir: &Path, commands: &Path) -> std::path::PathBuf {
    crate::common::write_stub(
        &dir.join("bin"),
        "hipcc",
        &format!(
            "echo \"$*\" >> '{}'\nn=$#\nx=\nwhile [ \"$n\" -gt 0 ]; do\n  a=$1\n  shift\n  n=$((n - 1))\n  \
             case \"$a\" in\n    --cuda-device-only) set -- \"$@\" -D__HIP_DEVICE_COMPILE__=1 ;;\n    \
             --cuda-host-only|--offload-arch=*) ;;\n    -c) x='-x c++'; set -- \"$@\" -c ;;\n    \
             *) set -- \"$@\" \"$a\" ;;\n  esac\ndone\nexec c++ $x \"$@\"",
            commands.display()
        ),
    )
}

/// A kernel file whose device side, and only it, reads `name`: the host compile never sees it.
fn kernel_reading(name: &str) -> String {
    format!(
        "namespace mlx::core {{\nint host_side() {{ return 1; }}\n#if __HIP_DEVICE_COMPILE__\n\
         int device_side() {{ return {name}; }}\n#endif\n}}\n"
    )
}

/// Issue 41.2: with `[build] device_check`, each HIP unit the build compiles also gets the
/// device side's semantic check, through the compiler wrapper: its errors go into the
/// differential like the host compile's (one only the device side reads, new at the candidate,
/// is drift; one at both pins is not), and the report's device line says what ran and what
/// was not compiled. Off, nothing of it runs or is said. Fails before: no check existed, the
/// device-only error was seen at neither pin.
#[test]
fn the_device_check_pass_finds_what_only_the_device_side_reads() {
    let dir = tempfile::tempdir().unwrap();
    let commands = dir.path().join("commands");
    let hipcc = fake_hipcc(dir.path(), &commands);
    let options = BuildOptions {
        compiler: Some(hipcc.display().to_string()),
        jobs: Some(1),
        ..BuildOptions::default()
    };
    let cmake = "set_source_files_properties(kernel.hip known.hip PROPERTIES LANGUAGE CXX)\n";
    let known = kernel_reading("missing_at_both_pins");
    let build = |name: &str, kernel: &str, cfg: &BuildConfig| {
        let tree = dir.path().join(name).join("tree");
        let sources = [
            ("kernel.hip", kernel),
            ("known.hip", known.as_str()),
            ("one.cpp", ONE),
        ];
        lay_library_after(&tree, cmake, &sources);
        std::fs::write(tree.join("unused.hip"), "").unwrap();
        let build_dir = dir.path().join(name).join("build");
        drift_build(&tree, &build_dir, cfg, &options).unwrap()
    };
    let mut cfg = fixture_config(&[]);
    cfg.add_flags = vec!["--cuda-host-only".to_string()];
    let off = build("off", &kernel_reading("0"), &cfg);
    assert!(off.device_check.is_none());
    let text = off.doc().text();
    assert!(
        text.contains("device code: not compiled (`--cuda-host-only` in `[build] add_flags`"),
        "{text}"
    );
    let log = std::fs::read_to_string(&commands).unwrap();
    assert!(!log.contains("--cuda-device-only"), "{log}");
    assert_eq!(files_of(&off.errors), ["known.hip"; 0]);

    cfg.device_check = "gfx90a".to_string();
    let recorded = build("recorded", &kernel_reading("0"), &cfg);
    let candidate = build("candidate", &kernel_reading("missing_at_candidate"), &cfg);
    let line = |report: &BuildReport| {
        let text = report.doc().text();
        let line = text.lines().find(|l| l.starts_with("device code:"));
        line.unwrap_or_default().to_string()
    };
    assert_eq!(
        line(&recorded),
        "device code: semantic check for gfx90a (no code generated) on 2 of 2 HIP units, \
         1 error the host compile does not show; not compiled: the device code itself \
         (`--cuda-host-only` in `[build] add_flags`; errors only its code generator shows are \
         not seen); 1 HIP file of the tree the build does not compile (`unused.hip`)"
    );
    // What ran: the check of each unit, with the device flags and without the output and the
    // host-only flag, beside the host compile, which is unchanged.
    let log = std::fs::read_to_string(&commands).unwrap();
    let checks: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("--cuda-device-only"))
        .collect();
    assert_eq!(
        checks.len(),
        4,
        "two units, two builds with the check: {log}"
    );
    for check in &checks {
        assert!(check.ends_with("-fsyntax-only --cuda-device-only --offload-arch=gfx90a"));
        assert!(
            !check.contains(" -o ") && !check.contains("--cuda-host-only"),
            "{check}"
        );
    }
    assert!(recorded.objects >= 3, "{}", recorded.doc().text());
    let diff = Differential::compare(
        "a".repeat(40),
        "b".repeat(40),
        Some(recorded),
        candidate,
        false,
    );
    let text = diff.doc().text();
    assert_eq!(files_of(&diff.new_errors), ["kernel.hip"], "{text}");
    assert!(
        diff.new_errors[0].message.contains("missing_at_candidate"),
        "{text}"
    );
    assert_eq!(files_of(&diff.known_errors), ["known.hip"], "{text}");
    assert!(
        text.contains("on 2 of 2 HIP units, 2 errors the host compile does not show"),
        "{text}"
    );
    let json = serde_json::to_value(&diff.candidate).unwrap();
    assert_eq!(json["device_check"]["arch"], "gfx90a");
    assert_eq!(json["device_check"]["checked"], 2);
    assert_eq!(json["device_check"]["not_compiled"][0], "unused.hip");
}

fn files_of(errors: &[forkbook::engine::drift::build::Diagnostic]) -> Vec<&str> {
    errors.iter().map(|e| e.file.as_str()).collect()
}

/// The device check's failures are kept like the host compile's (by its own command and its
/// device side's preprocessed text): the candidate's build replays the check of a unit that
/// failed the same way at the recorded pin instead of running it, and says the same; a kept
/// outcome keeps the check's records, so a rerun runs nothing and says the same. Fails before:
/// the check ran at every build.
#[test]
fn a_failed_device_check_is_kept_and_replayed_like_a_failed_compile() {
    let dir = tempfile::tempdir().unwrap();
    let commands = dir.path().join("commands");
    let hipcc = fake_hipcc(dir.path(), &commands);
    let results = forkbook_records::cache_entry::Store::new(
        dir.path().join("results"),
        "drift build outcome",
        Some(forkbook_records::cache_entry::Secret::from_bytes([7; 32])),
    );
    let options = BuildOptions {
        compiler: Some(hipcc.display().to_string()),
        jobs: Some(1),
        compile_failures: Some(failure_store(&dir.path().join("failures"))),
        results: Some(results),
        ccache_base: Some(dir.path().canonicalize().unwrap()),
        ..BuildOptions::default()
    };
    let mut cfg = fixture_config(&[]);
    cfg.add_flags = vec!["--cuda-host-only".to_string()];
    cfg.device_check = "gfx90a".to_string();
    let known = kernel_reading("missing_at_both_pins");
    let checks_of_known = || {
        let log = std::fs::read_to_string(&commands).unwrap_or_default();
        (log.lines())
            .filter(|l| l.contains("--cuda-device-only") && !l.contains(" -E"))
            .filter(|l| l.contains("known.hip"))
            .count()
    };
    let mut texts = Vec::new();
    for name in ["recorded", "candidate", "candidate"] {
        let tree = dir.path().join(name).join("tree");
        let cmake = "set_source_files_properties(known.hip PROPERTIES LANGUAGE CXX)\n";
        lay_library_after(
            &tree,
            cmake,
            &[("known.hip", known.as_str()), ("one.cpp", ONE)],
        );
        let build_dir = dir.path().join(name).join("build");
        let report = drift_build(&tree, &build_dir, &cfg, &options).unwrap();
        assert_eq!(
            files_of(&report.errors),
            ["known.hip"],
            "{}",
            report.doc().text()
        );
        texts.push(masked(&report.doc().text(), &dir.path().join(name)));
    }
    assert_eq!(
        checks_of_known(),
        1,
        "checked once, then replayed, then kept"
    );
    assert_eq!(texts[0], texts[1]);
    assert_eq!(texts[1], texts[2]);
}
