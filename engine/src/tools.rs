//! What this machine has: programs on PATH and an AMD GPU. One rule each, used by the book's
//! `requires=`, `verify`'s steps and `drift build`'s compiler, so a step is skipped for the same
//! reason wherever it runs.

//!
//! Where programs are looked for is the *search path*: `PATH`, unless the caller names the
//! folders (`--tool-path`, `FORKBOOK_TOOL_PATH`). The same search path is the `PATH` of every
//! step forkbook starts, so what counts as present and what a step then runs agree; the tests
//! set it, so the suite means the same on a machine with ROCm and one without.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The folders programs are looked for in: `tool_path` when given, else `PATH`.
pub fn search_path(tool_path: Option<&OsStr>) -> OsString {
    match tool_path {
        Some(path) => path.to_os_string(),
        None => std::env::var_os("PATH").unwrap_or_default(),
    }
}

/// The path of `program` on `PATH`; see [`find_program_in`].
pub fn find_program(program: &str) -> Option<PathBuf> {
    find_program_in(program, &search_path(None))
}

/// The path of `program`: as given when it holds a `/`, else the first executable file of that
/// name in the folders of `search` (a `PATH`-style list).
pub fn find_program_in(program: &str, search: &OsStr) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    std::env::split_paths(search)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The name a step's `requires` list uses for an AMD GPU.
pub const GPU: &str = "gpu";

/// Why something that needs `tools` (and, with `gpu`, an AMD GPU) cannot run here, if it cannot:
/// the first one missing. `tools` may itself name [`GPU`].
/// Programs are looked for on `PATH`; see [`missing_requirement_in`].
pub fn missing_requirement(tools: &[String], gpu: bool) -> Option<String> {
    missing_requirement_in(tools, gpu, &search_path(None))
}

/// [`missing_requirement`] with programs looked for in `search` (a `PATH`-style list).
pub fn missing_requirement_in(tools: &[String], gpu: bool, search: &OsStr) -> Option<String> {
    for tool in tools {
        if tool == GPU {
            if let Some(reason) = missing_gpu_in(search) {
                return Some(reason);
            }
        } else if find_program_in(tool, search).is_none() {
            return Some(format!("needs `{tool}`, which is not on PATH"));
        }
    }
    if gpu {
        return missing_gpu_in(search);
    }
    None
}

/// Why this machine has no usable AMD GPU, if it has none: the kernel driver's `/dev/kfd` must
/// exist and `rocminfo` must list a `gfx` agent. `rocminfo` is looked for first, on the search
/// path: a tool path without it means no GPU, whatever the machine has.
fn missing_gpu_in(search: &OsStr) -> Option<String> {
    let Some(rocminfo) = find_program_in("rocminfo", search) else {
        return Some("needs an AMD GPU, and `rocminfo` is not on PATH".into());
    };
    if !Path::new("/dev/kfd").exists() {
        return Some("needs an AMD GPU, and there is no /dev/kfd".into());
    }
    // Through the one runner, with a timeout: a driver that hangs must not hold a step's check.
    let spec = crate::process::Spec::new(rocminfo, Path::new("/"))
        .timeout(Some(std::time::Duration::from_secs(60)));
    match crate::process::run(&spec) {
        Ok(done) if done.code() == Some(0) && done.output.contains("gfx") => None,
        Ok(done) if done.code().is_none() => {
            Some("needs an AMD GPU, and `rocminfo` did not answer within 60 s".into())
        }
        Ok(_) => Some("needs an AMD GPU, and `rocminfo` lists none".into()),
        Err(e) => Some(format!(
            "needs an AMD GPU, and `rocminfo` failed to start: {}",
            e.message()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_is_named_and_a_present_one_passes() {
        assert_eq!(missing_requirement(&["sh".into()], false), None);
        let reason = missing_requirement(&["sh".into(), "no-such-tool-xyz".into()], false);
        assert_eq!(
            reason.as_deref(),
            Some("needs `no-such-tool-xyz`, which is not on PATH")
        );
        assert!(find_program("sh").is_some());
        assert!(find_program("/no/such/program").is_none());
    }

    #[test]
    fn the_search_path_decides_what_is_present_not_the_machine() {
        let dir = tempfile::tempdir().unwrap();
        let stub = dir.path().join("hipcc");
        std::fs::write(&stub, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
        let only_stub = dir.path().as_os_str();
        assert_eq!(find_program_in("hipcc", only_stub), Some(stub));
        assert_eq!(find_program_in("sh", only_stub), None);
        let hipcc = ["hipcc".to_string()];
        assert_eq!(missing_requirement_in(&hipcc, false, only_stub), None);
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(
            missing_requirement_in(&hipcc, false, empty.path().as_os_str()).as_deref(),
            Some("needs `hipcc`, which is not on PATH")
        );
    }
}
