//! What this machine has: programs on PATH and an AMD GPU. One rule each, used by the book's
//! `requires=`, `verify`'s steps and `drift build`'s compiler, so a step is skipped for the same
//! reason wherever it runs.

use std::path::{Path, PathBuf};

/// The path of `program`: as given when it holds a `/`, else the first executable file of that
/// name on `PATH`.
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
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
pub fn missing_requirement(tools: &[String], gpu: bool) -> Option<String> {
    for tool in tools {
        if tool == GPU {
            if let Some(reason) = missing_gpu() {
                return Some(reason);
            }
        } else if find_program(tool).is_none() {
            return Some(format!("needs `{tool}`, which is not on PATH"));
        }
    }
    if gpu {
        return missing_gpu();
    }
    None
}

/// Why this machine has no usable AMD GPU, if it has none: the kernel driver's `/dev/kfd` must
/// exist and `rocminfo` must list a `gfx` agent.
pub fn missing_gpu() -> Option<String> {
    if !Path::new("/dev/kfd").exists() {
        return Some("needs an AMD GPU, and there is no /dev/kfd".into());
    }
    let Some(rocminfo) = find_program("rocminfo") else {
        return Some("needs an AMD GPU, and `rocminfo` is not on PATH".into());
    };
    match std::process::Command::new(rocminfo)
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() && String::from_utf8_lossy(&out.stdout).contains("gfx") => {
            None
        }
        Ok(_) => Some("needs an AMD GPU, and `rocminfo` lists none".into()),
        Err(e) => Some(format!(
            "needs an AMD GPU, and `rocminfo` failed to start: {e}"
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
}
