//! `forkbook.toml`: where the overlay lives, how it is laid out, and where the two upstreams are.
//!
//! Defaults fit the MLX ROCm overlay, so a project that vendors it needs only the sections it changes.

use super::error::{Context, Error, Result};
use serde::Deserialize;
use std::path::Path;

/// The file name looked for at the project root.
pub const CONFIG_FILE: &str = "forkbook.toml";

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub overlay: OverlayConfig,
    pub fork: RemoteConfig,
    pub upstream: RemoteConfig,
    /// Static drift options (see `engine::drift::api`).
    pub drift: toml::Table,
    /// Build drift options (see `engine::drift::build`).
    pub build: toml::Table,
    /// The steps `forkbook verify` runs beyond the checks.
    pub verify: toml::Table,
}

/// How the overlay is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// One patch per local fix, applied to the base tree in order.
    #[default]
    Patch,
    /// Whole files; the local fixes are the overlay minus the base tree.
    Files,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Patch => "patch",
            Layout::Files => "files",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OverlayConfig {
    /// The records folder, relative to the project root.
    pub dir: String,
    pub layout: Layout,
    /// The backend folder taken whole from the fork, with a trailing `/`.
    pub backend_prefix: String,
    /// The upstream files the overlay carries (each must be the pin's file plus the fork's change).
    /// Empty means: the files the lock names outside the backend folder.
    pub core_files: Vec<String>,
    /// A file of the project that records the build's pin (a 40-hex SHA on some line), if any.
    pub pin_file: Option<String>,
    /// Files layout: the folder of the whole files inside the records folder (`tree` by default);
    /// `"."` means the overlay files sit in the records folder itself, beside `UPSTREAM`.
    pub tree: Option<String>,
    /// More names (relative to the records folder) that are records, not overlay files, when
    /// the whole files sit in the records folder (`tree = "."`).
    pub records: Vec<String>,
}

impl OverlayConfig {
    /// Where the files layout keeps its whole files, relative to the records folder, with a
    /// trailing `/`; empty when they sit in the records folder itself (`tree = "."`).
    pub fn tree_prefix(&self) -> String {
        let tree = self
            .tree
            .as_deref()
            .unwrap_or(DEFAULT_TREE)
            .trim_matches('/');
        if tree.is_empty() || tree == "." {
            String::new()
        } else {
            format!("{tree}/")
        }
    }
}

/// The files layout's folder of whole files when `[overlay] tree` is not set.
pub const DEFAULT_TREE: &str = "tree";

impl Default for OverlayConfig {
    fn default() -> Self {
        OverlayConfig {
            dir: "patches-rocm".into(),
            layout: Layout::Patch,
            backend_prefix: "mlx/backend/rocm/".into(),
            core_files: Vec::new(),
            pin_file: None,
            tree: None,
            records: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct RemoteConfig {
    /// A URL or a local path (a mirror).
    pub url: String,
    pub branch: String,
    /// `[upstream]` only: the upstream commit a run uses in place of a recorded pin that no
    /// mirror has, as `--stand-in-pin` does (see `engine::pin`). Never written into a record.
    pub stand_in_pin: Option<String>,
}

impl Config {
    /// The configuration for the MLX ROCm overlay.
    pub fn mlx_rocm() -> Config {
        Config {
            fork: RemoteConfig {
                url: "https://github.com/NripeshN/mlx".into(),
                branch: "rocm-support".into(),
                stand_in_pin: None,
            },
            upstream: RemoteConfig {
                url: "https://github.com/ml-explore/mlx".into(),
                branch: "main".into(),
                stand_in_pin: None,
            },
            ..Config::default()
        }
    }

    /// Reads `forkbook.toml`; sections left out keep the MLX ROCm defaults.
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("failed to read `{}`", path.display()))?;
        Config::parse(&text).map_err(|e| e.context(format!("invalid `{}`", path.display())))
    }

    pub fn parse(text: &str) -> Result<Config> {
        let mut config: Config = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
        validate_sections(text)?;
        let defaults = Config::mlx_rocm();
        for (name, remote, default) in [
            ("fork", &mut config.fork, defaults.fork),
            ("upstream", &mut config.upstream, defaults.upstream),
        ] {
            if remote.url.is_empty() {
                remote.url = default.url;
            }
            if remote.branch.is_empty() {
                remote.branch = default.branch;
            }
            refuse_control_characters(name, remote)?;
            refuse_bad_branch(name, &remote.branch).map_err(|e| {
                match key_line(text, name, "branch") {
                    Some(line) => e.context(format!("line {line}")),
                    None => e,
                }
            })?;
        }
        if config.fork.stand_in_pin.is_some() {
            return Err(
                Error::new("`fork.stand_in_pin`: a stand-in is for the upstream pin")
                    .with_note("move it to `[upstream] stand_in_pin`, or remove it"),
            );
        }
        // An empty value is no stand-in (the README's example shows it so).
        if config.upstream.stand_in_pin.as_deref() == Some("") {
            config.upstream.stand_in_pin = None;
        }
        if let Some(rev) = &config.upstream.stand_in_pin {
            // The revision rule of the cache (`cache::refuse_option_like`), which this file
            // cannot ask: the cache reads the configuration.
            if rev.starts_with('-') || rev.contains(|c: char| c.is_whitespace() || c.is_control()) {
                return Err(Error::new(format!(
                    "`upstream.stand_in_pin` is not a revision: `{}`",
                    rev.escape_debug()
                ))
                .with_note("give an upstream commit SHA, a branch or a tag"));
            }
        }
        if config.overlay.backend_prefix.trim_matches('/').is_empty() {
            return Err(Error::new(
                "`overlay.backend_prefix` is empty: the whole fork tree would be the backend",
            )
            .with_note(
                "name the backend's folder, such as `backend_prefix = \"mlx/backend/rocm/\"`",
            ));
        }
        super::paths::check_relative(config.overlay.backend_prefix.trim_end_matches('/'))
            .map_err(|e| e.context("`overlay.backend_prefix`"))?;
        if !config.overlay.backend_prefix.ends_with('/') {
            config.overlay.backend_prefix.push('/');
        }
        super::paths::check_relative(&config.overlay.dir)
            .map_err(|e| e.context("`overlay.dir`"))?;
        if let Some(tree) = config.overlay.tree.as_deref().filter(|t| *t != ".") {
            super::paths::check_relative(tree).map_err(|e| e.context("`overlay.tree`"))?;
        }
        if let Some(pin_file) = &config.overlay.pin_file {
            super::paths::check_relative(pin_file).map_err(|e| e.context("`overlay.pin_file`"))?;
        }
        for core in &config.overlay.core_files {
            super::paths::check_relative(core).map_err(|e| e.context("`overlay.core_files`"))?;
        }
        Ok(config)
    }

    /// A typed view of one of the helper sections (`drift`, `build`, `verify`).
    pub fn section<T: serde::de::DeserializeOwned + Default>(
        table: &toml::Table,
        name: &str,
    ) -> Result<T> {
        if table.is_empty() {
            return Ok(T::default());
        }
        T::deserialize(toml::Value::Table(table.clone()))
            .map_err(|e| Error::new(format!("invalid `[{name}]` in `{CONFIG_FILE}`: {e}")))
    }
}

/// A TOML error as `line N: message`, with the note that points at the keys.
fn toml_error(text: &str, e: &toml::de::Error) -> Error {
    let at = e
        .span()
        .map(|s| format!("line {}: ", line_at(text, s.start)))
        .unwrap_or_default();
    Error::new(format!("{at}{}", e.message().trim_end_matches('.')))
        .with_note("see README.md, section `forkbook.toml`, for the keys")
}

fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The helper sections as their commands read them, each step with where it is written. Only
/// deserializing them matters (an unknown or mistyped key fails with its place).
#[derive(Deserialize)]
#[allow(dead_code)]
struct Sections {
    #[serde(default)]
    verify: Option<VerifySection>,
    #[serde(default)]
    drift: Option<DriftSection>,
    #[serde(default)]
    build: Option<super::drift::build::BuildConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifySection {
    #[serde(default)]
    steps: Vec<toml::Spanned<StepConfig>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct DriftSection {
    #[serde(default)]
    api: Option<super::drift::api::ApiConfig>,
}

/// Checks `[verify]` (every `[[verify.steps]]`), `[drift]` and `[build]` key by key when the
/// file is loaded, so a misspelt key fails `status` and `check` with its line rather than
/// passing until the one command that reads it.
/// A remote's URL and branch are written into `UPSTREAM` and the README, one per line: a line
/// break in them would write a line of its own (`license: …`) into the record.
fn refuse_control_characters(name: &str, remote: &RemoteConfig) -> Result<()> {
    for (key, value) in [("url", &remote.url), ("branch", &remote.branch)] {
        if value.chars().any(char::is_control) {
            return Err(Error::new(format!(
                "`{name}.{key}` holds a line break or another control character: `{}`",
                value.escape_debug()
            ))
            .with_note(format!("write the {name}'s {key} on one line")));
        }
    }
    Ok(())
}

/// Refuses a branch of the `remote` (`fork`, `upstream`) that is no branch name git accepts
/// (`a:b`, `+x`, `x..y`, `-x`): the fetch would read it as a refspec, a range or an option.
pub fn refuse_bad_branch(remote: &str, branch: &str) -> Result<()> {
    let valid = git2::Reference::is_valid_name(&format!("refs/heads/{branch}"));
    if valid && !branch.starts_with('-') {
        return Ok(());
    }
    Err(Error::new(format!(
        "the {remote} branch `{}` is not a branch name",
        branch.escape_debug()
    ))
    .with_note(format!(
        "set `[{remote}] branch` in forkbook.toml to the name of a branch (like `main`), without `:`, `+`, `..` or spaces"
    )))
}

/// The line of `key = …` in the `[section]` of a TOML `text`, where it is written that way.
fn key_line(text: &str, section: &str, key: &str) -> Option<usize> {
    let mut current = "";
    for (at, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            current = header.trim_end_matches(']').trim();
        } else if current == section {
            let rest = line.strip_prefix(key).map(str::trim_start);
            if rest.is_some_and(|rest| rest.starts_with('=')) {
                return Some(at + 1);
            }
        }
    }
    None
}

fn validate_sections(text: &str) -> Result<()> {
    let sections: Sections = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
    let steps = sections.verify.map(|v| v.steps).unwrap_or_default();
    let mut names = std::collections::BTreeMap::new();
    for step in &steps {
        let line = line_at(text, step.span().start);
        let missing = match (step.get_ref().name.trim(), step.get_ref().command.trim()) {
            ("", _) => Some("`name`"),
            (_, "") => Some("`command`"),
            _ => None,
        };
        if let Some(key) = missing {
            return Err(Error::new(format!(
                "line {line}: this `[[verify.steps]]` has no {key}"
            ))
            .with_note("each step needs a `name` (what the report calls it) and a `command` (run with `sh -c` in the project root)"));
        }
        if let Some(first) = names.insert(step.get_ref().name.clone(), line) {
            return Err(Error::new(format!(
                "line {line}: a second verify step is named `{}` (the first is at line {first})",
                step.get_ref().name
            ))
            .with_note("give every step its own name: the report tells them apart by it"));
        }
    }
    Ok(())
}

/// One configured verify step: a shell command run in the project root.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StepConfig {
    pub name: String,
    pub command: String,
    /// Tools that must be on PATH (`hipcc`, `cmake`).
    pub requires: Vec<String>,
    /// Needs an AMD GPU (`/dev/kfd`, and `rocminfo` listing a `gfx` agent).
    pub gpu: bool,
    /// Seconds before the step is stopped and failed.
    pub timeout: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_the_mlx_rocm_defaults() {
        let config = Config::parse("").unwrap();
        assert_eq!(config.overlay.backend_prefix, "mlx/backend/rocm/");
        assert_eq!(config.fork.branch, "rocm-support");
        assert_eq!(config.upstream.url, "https://github.com/ml-explore/mlx");
        assert_eq!(config.overlay.layout, Layout::Patch);
    }

    #[test]
    fn unknown_key_names_the_line() {
        let err = Config::parse("[overlay]\ndir = \"x\"\nlayuot = \"files\"\n").unwrap_err();
        assert!(err.message().contains("line 3"), "{}", err.message());
    }

    #[test]
    fn misspelt_keys_of_every_section_name_their_line() {
        for (text, line) in [
            (
                "[[verify.steps]]\nname = \"a\"\ncommand = \"true\"\nrequries = [\"x\"]\n",
                4,
            ),
            ("[overlay]\n\n[drift.api]\nnamespce = \"x\"\n", 4),
            ("[drift]\napi_typo = 1\n", 2),
            ("[build]\ncompiler = \"hipcc\"\njbos = 4\n", 3),
            ("[verify]\nstep = []\n", 2),
            (
                "[[verify.steps]]\nname = \"a\"\ncommand = \"true\"\ngpu = \"yes\"\n",
                4,
            ),
        ] {
            let err = Config::parse(text).unwrap_err();
            assert!(
                err.message().starts_with(&format!("line {line}: ")),
                "{text:?}: {}",
                err.message()
            );
        }
    }

    #[test]
    fn verify_steps_need_a_name_and_a_command_and_distinct_names() {
        let err = Config::parse("[[verify.steps]]\nname = \"a\"\ncommand = \"true\"\n\n[[verify.steps]]\ncommand = \"true\"\n").unwrap_err();
        assert!(err.message().starts_with("line 5: "), "{}", err.message());
        assert!(err.message().contains("no `name`"), "{}", err.message());
        let twice = "[[verify.steps]]\nname = \"a\"\ncommand = \"x\"\n[[verify.steps]]\nname = \"a\"\ncommand = \"y\"\n";
        let err = Config::parse(twice).unwrap_err();
        assert!(
            err.message()
                .contains("line 4: a second verify step is named `a`"),
            "{}",
            err.message()
        );
        assert!(Config::parse("[[verify.steps]]\nname = \"a\"\ncommand = \"true\"\n").is_ok());
    }

    #[test]
    fn overlay_dir_may_not_climb_out() {
        let err = Config::parse("[overlay]\ndir = \"../elsewhere\"\n").unwrap_err();
        assert!(err.message().contains(".."), "{}", err.message());
    }

    /// Before, `url = "…fork.git\nlicense: injected"` reached `UPSTREAM` as a line of its own
    /// through `init` and `sync`.
    #[test]
    fn a_remote_is_written_on_one_line() {
        for text in [
            "[fork]\nurl = \"https://github.com/NripeshN/mlx\\nlicense: injected\"\n",
            "[upstream]\nbranch = \"main\\r\"\n",
        ] {
            let message = Config::parse(text).unwrap_err().message().to_string();
            assert!(message.contains("holds a line break"), "{message}");
        }
    }

    /// A stand-in pin is upstream's alone, one revision, and empty means none.
    #[test]
    fn a_stand_in_pin_is_one_upstream_revision() {
        let config = Config::parse("[upstream]\nstand_in_pin = \"abc1234\"\n").unwrap();
        assert_eq!(config.upstream.stand_in_pin.as_deref(), Some("abc1234"));
        let config = Config::parse("[upstream]\nstand_in_pin = \"\"\n").unwrap();
        assert_eq!(config.upstream.stand_in_pin, None);
        for (text, said) in [
            (
                "[upstream]\nstand_in_pin = \"--upload-pack=x\"\n",
                "is not a revision",
            ),
            ("[upstream]\nstand_in_pin = \"a b\"\n", "is not a revision"),
            (
                "[fork]\nstand_in_pin = \"abc1234\"\n",
                "a stand-in is for the upstream pin",
            ),
        ] {
            let message = Config::parse(text).unwrap_err().message().to_string();
            assert!(message.contains(said), "{text}: {message}");
        }
    }

    /// Before, `../../etc/passwd` reached libgit2 ("repo path … should not start with `..`",
    /// naming no file) and `mlx//fast.cpp` passed every check as a core file no tree holds.
    #[test]
    fn a_core_file_is_a_plain_relative_path() {
        for (core, why) in [
            ("../../etc/passwd", "`..` component"),
            ("/etc/passwd", "absolute"),
            ("mlx//fast.cpp", "empty or `.` component"),
        ] {
            let text = format!("[overlay]\ncore_files = [\"mlx/fast.cpp\", \"{core}\"]\n");
            let message = Config::parse(&text).unwrap_err().message().to_string();
            assert!(message.contains("`overlay.core_files`"), "{message}");
            assert!(message.contains(why), "{core}: {message}");
        }
    }
}
