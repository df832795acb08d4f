//! The device check pass (`[build] device_check`): beside each HIP unit's compile, the device
//! side's semantic check for one architecture (`-fsyntax-only --cuda-device-only`), so errors of
//! templates instantiated for the device and of code under `#if __HIP_DEVICE_COMPILE__` show
//! even where `[build] add_flags` compiles the host side alone. No device code is generated:
//! the check costs about what the host compile costs, where generating the code costs several
//! times that.
//!
//! The compiler wrapper runs it ([`script`]): for a `-c` command of a HIP unit it runs itself
//! again with the device flags, so the check goes through the same kept failures
//! ([`super::failures`], its command and its device-side preprocessed text its key) as the host
//! compile, and records the check's status and output in the build folder. The records are
//! read after the build into the tree's outcome ([`super::results`]), so a kept outcome keeps
//! them too. Their errors join the build's: the differential tells them apart like the host's.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::log::{self, Diagnostic};
use crate::error::{Error, Result};

/// The folder in the build folder where the wrapper records each unit's check.
const FOLDER: &str = "forkbook-device-check";

/// The environment variable the wrapper sets when it runs itself as the check.
const PASS: &str = "FORKBOOK_DEVICE_PASS";

/// One HIP unit's check, as the wrapper recorded it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitCheck {
    /// The unit's source as the command named it, and the folder the command ran in.
    pub source: String,
    pub dir: String,
    /// The check's exit status; None where the record has none.
    pub status: Option<i32>,
    /// What the check printed.
    pub output: String,
}

impl UnitCheck {
    /// Whether the check ran to a verdict: 126, 127 (the compiler could not run) and a signal
    /// (128 and above) are none.
    fn ran(&self) -> bool {
        self.status.is_some_and(|s| (0..126).contains(&s))
    }
}

/// What the device check of one build did, as the report says it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeviceCheck {
    /// The one architecture checked (`[build] device_check`).
    pub arch: String,
    /// The HIP units of the tree the build compiled.
    pub units: usize,
    /// Those whose check ran to a verdict.
    pub checked: usize,
    /// The errors the check found that the host compile did not show (also in the build's
    /// errors, where the differential reads them).
    pub device_only: Vec<Diagnostic>,
    /// The units whose check did not run to a verdict (relative to the tree).
    pub not_checked: Vec<String>,
    /// The tree's HIP files the build did not compile (relative to the tree).
    pub not_compiled: Vec<String>,
}

/// `arch` when it is an architecture name the wrapper can pass as it is (`gfx90a`,
/// `gfx90a:xnack+`), or the error that says what to write.
pub fn checked_arch(arch: &str) -> Result<&str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-:+".contains(c);
    match !arch.is_empty() && arch.chars().all(plain) {
        true => Ok(arch),
        false => Err(Error::new(format!(
            "`[build] device_check = {arch:?}` is not an architecture name"
        ))
        .with_note(
            "give one offload architecture, for example `device_check = \"gfx90a\"`, \
             or leave the key out to check no device code",
        )),
    }
}

/// The wrapper's lines, after its own flags are added, for `arch`: as the check, the command
/// without its output, dependency and offload flags, with the device check's; otherwise, for a
/// `-c` command of a HIP unit, the check run first (the script itself with [`PASS`] set), once
/// per command line, its record written into `build_dir`'s [`FOLDER`].
pub fn script(arch: &str, build_dir: &Path) -> String {
    let quote = super::failures::shell_quote;
    let checks = quote(&build_dir.join(FOLDER).display().to_string());
    let offload = quote(&format!("--offload-arch={arch}"));
    let without_output = super::failures::without_output_args(&[
        "-MD|-MMD|--cuda-host-only|--offload-host-only|--cuda-device-only|--offload-device-only",
        "--offload-arch=*|--cuda-gpu-arch=*|--amdgpu-target=*",
    ]);
    format!(
        r#"if [ -n "${{{PASS}:-}}" ]; then
  # The device side's semantic check of one HIP unit: no object, no host side, one architecture.
{without_output}  set -- "$@" -fsyntax-only --cuda-device-only {offload}
  # No object to keep: ccache would preprocess the unit first for nothing.
  CCACHE_DISABLE=1
  export CCACHE_DISABLE
else
  case " $* " in *' -c '*)
    case " $* " in *'.hip '*|*' -x hip '*)
      source=
      prev=
      for a in "$@"; do
        case "$a" in
          *.hip) source=$a ;;
          -*) ;;
          *) if [ "$prev" = -c ]; then source=$a; fi ;;
        esac
        prev=$a
      done
      checks={checks}
      check="$checks/$(printf '%s\n' "$PWD" "$@" | cksum | cut -d ' ' -f 1)"
      if [ ! -f "$check" ] && mkdir -p "$checks"; then
        {PASS}=1 "$0" "$@" >"$check.out" 2>&1
        status=$?
        {{ echo "status $status"; echo "dir $PWD"; echo "source $source"; cat "$check.out"; }} >"$check.new" &&
          mv -f "$check.new" "$check"
        rm -f "$check.out"
      fi ;;
    esac ;;
  esac
fi
"#
    )
}

/// The environment the build gives the wrapper: [`PASS`] empty, so a value in forkbook's own
/// environment never makes the host compile the check.
pub fn env() -> (String, std::ffi::OsString) {
    (PASS.to_string(), std::ffi::OsString::new())
}

/// The records the wrapper left in `build_dir`, in the order of their file names.
pub fn read_records(build_dir: &Path) -> Vec<UnitCheck> {
    let entries = std::fs::read_dir(build_dir.join(FOLDER))
        .into_iter()
        .flatten();
    let mut names: Vec<_> = (entries.flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_none())
        .collect();
    names.sort();
    let read = |path: &std::path::PathBuf| std::fs::read(path).ok();
    let records = names.iter().filter_map(read);
    records
        .map(|bytes| parse_record(&String::from_utf8_lossy(&bytes)))
        .collect()
}

/// `status N`, `dir D`, `source S`, then the check's output.
fn parse_record(text: &str) -> UnitCheck {
    let mut lines = text.splitn(4, '\n');
    let mut field = |name: &str| {
        let line = lines.next().unwrap_or_default();
        line.strip_prefix(name).unwrap_or_default().to_string()
    };
    let status = field("status ").parse().ok();
    let (dir, source) = (field("dir "), field("source "));
    UnitCheck {
        source,
        dir,
        status,
        output: lines.next().unwrap_or_default().to_string(),
    }
}

/// The check's report from the `units` the wrapper recorded, the host compile's `host_errors`
/// and the tree; `relative` makes a path relative to the tree from the folder a command ran
/// in. The errors the host compile did not show are returned in the report and as the build's
/// new errors.
pub fn report(
    arch: &str,
    units: &[UnitCheck],
    host_errors: &[Diagnostic],
    tree: &Path,
    relative: impl Fn(&str, &Path) -> String,
) -> DeviceCheck {
    let key = |d: &Diagnostic| (d.file.clone(), d.line, d.column, d.message.clone());
    let mut seen: BTreeSet<_> = host_errors.iter().map(key).collect();
    let mut check = DeviceCheck {
        arch: arch.to_string(),
        ..DeviceCheck::default()
    };
    let mut compiled = BTreeSet::new();
    for unit in units {
        let dir = Path::new(&unit.dir);
        let source = relative(&unit.source, dir);
        // CMake's probes of the compiler, in the build folder, are no unit of the tree.
        if source.starts_with('/') || !compiled.insert(source.clone()) {
            continue;
        }
        if !unit.ran() {
            check.not_checked.push(source);
            continue;
        }
        for mut error in log::parse_compiler_log(&unit.output) {
            if !error.file.is_empty() {
                error.file = relative(&error.file, dir);
            }
            if seen.insert(key(&error)) {
                check.device_only.push(error);
            }
        }
    }
    check.units = compiled.len();
    check.checked = check.units - check.not_checked.len();
    let files = crate::fsutil::files_below(tree, false, |_, _| false).unwrap_or_default();
    let hip = files.into_iter().filter(|f| f.ends_with(".hip"));
    check.not_compiled = hip.filter(|f| !compiled.contains(f)).collect();
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_read_back_as_the_wrapper_wrote_it() {
        let unit = parse_record("status 1\ndir /b/x\nsource ../k.hip\nk.hip:3:1: error: no\n");
        assert_eq!(
            unit,
            UnitCheck {
                source: "../k.hip".into(),
                dir: "/b/x".into(),
                status: Some(1),
                output: "k.hip:3:1: error: no\n".into(),
            }
        );
        assert!(unit.ran());
        assert!(!parse_record("status 137\ndir /\nsource k.hip\n").ran());
        assert!(!parse_record("").ran());
    }

    #[test]
    fn an_architecture_name_is_all_the_key_takes() {
        assert_eq!(checked_arch("gfx90a:xnack+").unwrap(), "gfx90a:xnack+");
        let error = checked_arch("gfx90a' ; rm -rf x").unwrap_err();
        assert!(error.message().contains("is not an architecture name"));
        assert!(error.note.unwrap().contains("device_check = \"gfx90a\""));
    }
}
