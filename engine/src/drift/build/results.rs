//! The kept result of one tree's build: what configure and the compiles printed and which
//! symbols the objects need and define, keyed by every input the build reads.
//!
//! A build is minutes of compiling; the report is read from its logs and its symbols. So what is
//! kept is that raw outcome (the logs, the symbols of the namespace, failures included) and the
//! report is read from it again on every run, by this forkbook's own parsers: a rerun of the same
//! differential compiles nothing and says what the first run said, byte for byte, and a change
//! to the parsers is never hidden by a kept report.
//!
//! The key holds what the outcome depends on: every file of the exported tree, the tree's and the
//! build folder's paths (the logs name them), the `[build]` settings and the command line's
//! overrides, each tool's identity (its path, its bytes, what `--version` prints), the files of
//! the compiler's own include folders (a system header updated is a new key), the `[build]`
//! include and stub folders' files, and the environment variables the compilers and CMake read.
//! The store is a results cache like the others (`forkbook_records::cache_entry`): sealed with
//! the cache's secret, nothing kept or believed where there is none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use forkbook_records::cache_entry::{Key, KeyBuilder, Store};
use serde::{Deserialize, Serialize};

use super::run::Step;
use super::BuildConfig;
use crate::error::Result;

/// Bumped when what an outcome holds, or how it is read, changes: older entries are then misses.
const OUTCOME_FORMAT: &str = "drift build outcome 1";

/// Environment variables a compile or a configure reads besides its arguments.
const ENVIRONMENT: [&str; 16] = [
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "HIPFLAGS",
    "LDFLAGS",
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "LIBRARY_PATH",
    "CMAKE_PREFIX_PATH",
    "ROCM_PATH",
    "HIP_PATH",
    "HIP_PLATFORM",
    "HIP_CLANG_PATH",
    "HIP_DEVICE_LIB_PATH",
    "HIPCC_COMPILE_FLAGS_APPEND",
];

/// What one tree's build printed and left: everything its report is read from.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Outcome {
    pub configure: Step,
    pub configure_log: String,
    /// None when configuring failed.
    pub build: Option<Step>,
    /// Both make passes' output, as the build printed it.
    pub build_log: String,
    /// The object files read with `nm` (relative to the build folder).
    pub objects: usize,
    /// Symbols of the namespace some object needs and no object defines -> those objects.
    pub missing: Vec<(String, Vec<String>)>,
    /// Symbols of the namespace the objects define -> those objects.
    pub defined_by: BTreeMap<String, Vec<String>>,
    /// Each HIP unit's device check (`[build] device_check`), as the wrapper recorded it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_checks: Vec<super::device::UnitCheck>,
}

/// The inputs of one tree's build beyond the tree itself, as the key takes them.
pub struct KeyInputs<'a> {
    pub tree: &'a Path,
    pub build_dir: &'a Path,
    pub cfg: &'a BuildConfig,
    /// The command line's overrides and the jobs, as the report shows them.
    pub overrides: String,
    /// The tools, as found: compiler, CMake, nm, the launcher.
    pub tools: Vec<&'a Path>,
    /// The compiler's own include folders.
    pub search_path: &'a [PathBuf],
}

/// The key of a tree's build: every input listed in the module's comment.
pub fn key(inputs: &KeyInputs) -> Result<Key> {
    let mut key = KeyBuilder::new("drift build");
    key.part(OUTCOME_FORMAT);
    key.part(inputs.tree.display().to_string());
    key.part(inputs.build_dir.display().to_string());
    key.part(serde_json::to_vec(inputs.cfg).unwrap_or_default());
    key.part(&inputs.overrides);
    for tool in &inputs.tools {
        tool_identity(&mut key, tool);
    }
    for dir in inputs.search_path {
        listing(&mut key, dir);
    }
    let extra = (inputs.cfg.include_dirs.iter()).chain(Some(&inputs.cfg.stubs));
    for dir in extra.filter(|d| !d.is_empty()) {
        contents(&mut key, Path::new(dir))?;
    }
    for name in ENVIRONMENT {
        key.part(name);
        key.part(
            std::env::var_os(name)
                .unwrap_or_default()
                .as_encoded_bytes(),
        );
    }
    contents(&mut key, inputs.tree)?;
    Ok(key.finish())
}

/// A tool's identity (as a tree's key takes it) as 64 hex digits: what a compiled unit's key
/// takes of the compiler (see [`super::failures`]).
pub fn tool_digest(tool: &Path) -> String {
    let mut key = KeyBuilder::new("drift build tool");
    tool_identity(&mut key, tool);
    key.finish().hex()
}

/// A tool's path, its bytes (the file a link leads to) and what `--version` prints.
fn tool_identity(key: &mut KeyBuilder, tool: &Path) {
    let real = tool.canonicalize().unwrap_or_else(|_| tool.to_path_buf());
    key.part(real.display().to_string());
    key.part(std::fs::read(&real).unwrap_or_default());
    let probe = crate::process::Spec::new(tool, Path::new(".")).arg("--version");
    let version = super::run::output_of(probe).unwrap_or_default();
    key.part(version.0).part(version.1);
}

/// Every file below `dir` by its path, size and modification time: a system folder (thousands
/// of headers) changes when a package updates it.
fn listing(key: &mut KeyBuilder, dir: &Path) {
    key.part(dir.display().to_string());
    let files = crate::fsutil::files_below(dir, false, |_, _| false).unwrap_or_default();
    for file in files {
        let meta = std::fs::metadata(dir.join(&file)).ok();
        let modified = meta.as_ref().and_then(|m| m.modified().ok());
        let since = modified.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        key.part(&file);
        key.part(meta.map_or(0, |m| m.len()).to_le_bytes());
        key.part(since.map_or(0, |d| d.as_nanos()).to_le_bytes());
    }
}

/// Every file below `dir` by its path and bytes.
fn contents(key: &mut KeyBuilder, dir: &Path) -> Result<()> {
    key.part(dir.display().to_string());
    for file in crate::fsutil::files_below(dir, false, |_, _| false)? {
        key.part(&file);
        key.part(std::fs::read(dir.join(&file)).unwrap_or_default());
    }
    Ok(())
}

/// The outcome kept under `key`, its logs written back where its report says they are.
pub fn load(store: &Store, key: &Key) -> Option<Outcome> {
    let outcome: Outcome = serde_json::from_slice(&store.load(key)?).ok()?;
    let mut logs = vec![(&outcome.configure.log, &outcome.configure_log)];
    logs.extend(outcome.build.as_ref().map(|b| (&b.log, &outcome.build_log)));
    for (path, text) in logs {
        crate::fsutil::replace_file(path, text.as_bytes()).ok()?;
    }
    Some(outcome)
}

/// Keeps `outcome` under `key`; failing to keep it costs the next run its reuse only.
pub fn save(store: &Store, key: &Key, outcome: &Outcome) {
    if let Ok(payload) = serde_json::to_vec(outcome) {
        let _ = store.save(key, &payload);
    }
}
