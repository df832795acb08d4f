//! The differential drift build with a real HIP compiler (issue 24): a small HIP fixture — a
//! `.hip` kernel and host code over the demo's headers, plus a file using a member the installed
//! ROCm lacks — laid over the demo world's tree at the recorded pin and at the candidate, both
//! built with `hipcc`. What is new at the candidate must be the planted breaks and nothing of the
//! toolchain's; the toolchain's error must be "also at the recorded pin"; the kernel must compile.
//!
//! Its own test binary with its own `main` (no libtest), because libtest cannot say "not run"
//! at run time: where `hipcc` is not on PATH this prints `hip fixture: NOT RUN (…)` and exits 0,
//! so the rest of `cargo test` stays green on a machine without ROCm; with
//! `FORKBOOK_REQUIRE_HIPCC=1` (as `.ci/run` sets it, where hipcc is always installed) a missing
//! hipcc fails. Where hipcc exists it always runs.

#[path = "it/tree_export.rs"]
mod tree_export;

use std::collections::BTreeSet;
use std::path::Path;

use forkbook::demo::world::generate;
use forkbook::engine::drift::build::{
    drift_build, nm::qualified_name, BuildConfig, BuildOptions, BuildReport, Differential,
};

/// A HIP kernel and its launcher over the demo's backend headers: compiles at both pins.
const KERNEL: &str = "// Scales a buffer on the device (the fixture's kernel).\n\
#include \"mlx/backend/rocm/device/utils.hpp\"\n\
#include \"mlx/backend/rocm/rocm.h\"\n\n\
namespace mlx::core::rocm {\n\n\
__global__ void scale_kernel(float* data, float factor, int n) {\n\
  int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
  if (i < n) {\n\
    data[i] *= factor;\n\
  }\n\
}\n\n\
void scale(float* data, float factor, int n) {\n\
  hipLaunchKernelGGL(scale_kernel, dim3((n + 255) / 256), dim3(256), 0, 0, data, factor, n);\n\
}\n\n\
} // namespace mlx::core::rocm\n";

/// A local fix using a member of newer ROCm (`hipDeviceProp_t::uuid`): an error at both pins.
const DEVICE_INFO: &str = "// The device's UUID for the logs.\n\
#include <hip/hip_runtime.h>\n\n\
namespace mlx::core::rocm {\n\n\
const char* device_uuid(const hipDeviceProp_t& prop) {\n\
  return prop.uuid.bytes;\n\
}\n\n\
} // namespace mlx::core::rocm\n";

/// The backend's CMake part gains the kernel, compiled by the HIP compiler as C++.
const CMAKE_KERNEL: &str = "\n# The fixture's kernel (hipcc compiles .hip as HIP).\n\
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/scale.hip TARGET_DIRECTORY mlx\n\
  PROPERTIES LANGUAGE CXX)\n\
target_sources(mlx PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/scale.hip)\n";

fn lay_fixture(tree: &Path) {
    let backend = tree.join("mlx/backend/rocm");
    std::fs::write(backend.join("scale.hip"), KERNEL).unwrap();
    std::fs::write(backend.join("device_info.cpp"), DEVICE_INFO).unwrap();
    let cmake = backend.join("CMakeLists.txt");
    let mut text = std::fs::read_to_string(&cmake).unwrap();
    text.push_str(CMAKE_KERNEL);
    std::fs::write(cmake, text).unwrap();
}

/// Whether a file named `name` is somewhere under `dir`.
fn has_object(dir: &Path, name: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|entry| {
            let path = entry.path();
            if path.is_dir() {
                has_object(&path, name)
            } else {
                entry.file_name() == name
            }
        })
}

fn files(errors: &[forkbook::engine::drift::build::Diagnostic]) -> BTreeSet<&str> {
    errors.iter().map(|e| e.file.as_str()).collect()
}

fn run(hipcc: &Path) {
    // The system's temporary folder, as the build's tools find it, is one this test made: the
    // build must leave nothing in it (hipcc's clang leaves two folders a file without a GPU).
    let system_tmp = tempfile::tempdir().unwrap();
    std::env::set_var("TMPDIR", system_tmp.path());
    let dir = tempfile::tempdir().unwrap();
    let world = generate(&dir.path().join("world")).unwrap();
    let work = dir.path().join("work");
    let mut reports: Vec<BuildReport> = Vec::new();
    for pin in [&world.pin1, &world.pin2] {
        let tree = work.join(&pin[..8]).join("tree");
        tree_export::export(&world, pin, &world.fork_commits[0], &tree);
        lay_fixture(&tree);
        let options = BuildOptions {
            compiler: Some(hipcc.display().to_string()),
            jobs: Some(2),
            arch: Some("gfx90a".into()),
            ccache_base: Some(work.canonicalize().unwrap()),
            ccache_dir: Some(work.join("ccache")),
            ..BuildOptions::default()
        };
        let build_dir = work.join(&pin[..8]).join("build");
        // The device check pass runs for real beside the device build (issue 41 item 2).
        let cfg = BuildConfig {
            device_check: "gfx90a".into(),
            ..BuildConfig::default()
        };
        let report = drift_build(&tree, &build_dir, &cfg, &options)
            .unwrap_or_else(|e| panic!("{}", e.message()));
        assert!(report.configure.ok(), "{}", report.doc().text());
        reports.push(report);
    }
    let left: Vec<_> = std::fs::read_dir(system_tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p != dir.path())
        .collect();
    assert!(
        left.is_empty(),
        "the build left {left:?} in the temporary folder"
    );
    let candidate = reports.pop().unwrap();
    let recorded = reports.pop().unwrap();
    // The kernel compiled at both pins: an object, and no error in it.
    for report in [&recorded, &candidate] {
        assert!(
            !report.errors.iter().any(|e| e.file.ends_with("scale.hip")),
            "{}",
            report.doc().text()
        );
        assert!(
            has_object(&report.build_dir, "scale.hip.o"),
            "the kernel was compiled: {}",
            report.doc().text()
        );
        // No `--cuda-host-only`: the report says the device side was compiled, and for what,
        // and what the device check ran on.
        assert!(
            (report.doc().text()).contains(
                "device code: compiled for gfx90a; semantic check for gfx90a (no code generated) on 1 of 1 HIP unit\n"
            ),
            "{}",
            report.doc().text()
        );
    }
    let diff = Differential::compare(
        world.pin1.clone(),
        world.pin2.clone(),
        Some(recorded),
        candidate,
        false,
    );
    let text = diff.doc().text();
    assert_eq!(
        files(&diff.new_errors),
        BTreeSet::from([
            "mlx/backend/rocm/allocator.cpp",
            "mlx/backend/rocm/copy.cpp",
            "mlx/backend/rocm/kernels.cpp",
            "mlx/backend/rocm/matmul.cpp",
            "mlx/device.cpp",
        ]),
        "{text}"
    );
    let new_undefined: BTreeSet<&str> = diff
        .new_undefined
        .iter()
        .map(|u| qualified_name(&u.symbol))
        .collect();
    assert_eq!(
        new_undefined,
        BTreeSet::from([
            "mlx::core::Event::is_signaled",
            "mlx::core::GatherQMM::eval_gpu",
            "mlx::core::gpu::new_stream"
        ]),
        "{text}"
    );
    assert_eq!(
        files(&diff.known_errors),
        BTreeSet::from(["mlx/backend/rocm/device_info.cpp"]),
        "{text}"
    );
    assert!(
        diff.known_errors.iter().all(|e| e.message.contains("uuid")),
        "{text}"
    );
    assert!(!diff.problems().is_empty());
    println!("{text}");
}

fn main() {
    const NAME: &str = "hip_fixture_differential_with_hipcc";
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("{NAME}: test");
        return;
    }
    // libtest's filters: `cargo test -- NAME` runs what contains NAME.
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let ignored_only = args.iter().any(|a| a == "--ignored");
    if ignored_only || (!filters.is_empty() && !filters.iter().any(|f| NAME.contains(f.as_str()))) {
        println!("hip fixture: filtered out");
        return;
    }
    let required = std::env::var_os("FORKBOOK_REQUIRE_HIPCC").is_some_and(|v| v != "0");
    let Some(hipcc) = forkbook::engine::tools::find_program("hipcc") else {
        if required {
            eprintln!(
                "hip fixture: FAILED: FORKBOOK_REQUIRE_HIPCC is set and `hipcc` is not on PATH"
            );
            std::process::exit(1);
        }
        println!(
            "hip fixture: NOT RUN (needs `hipcc`, which is not on PATH; Debian: apt-get install hipcc libamdhip64-dev)"
        );
        return;
    };
    println!(
        "hip fixture: building the demo world's two trees with {}",
        hipcc.display()
    );
    run(&hipcc);
    println!("hip fixture: passed");
}
