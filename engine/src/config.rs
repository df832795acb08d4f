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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
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
}

impl Config {
    /// The configuration for the MLX ROCm overlay.
    pub fn mlx_rocm() -> Config {
        Config {
            fork: RemoteConfig {
                url: "https://github.com/NripeshN/mlx".into(),
                branch: "rocm-support".into(),
            },
            upstream: RemoteConfig {
                url: "https://github.com/ml-explore/mlx".into(),
                branch: "main".into(),
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
        let mut config: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
            let at = line.map(|l| format!("line {l}: ")).unwrap_or_default();
            Error::new(format!("{at}{}", e.message().trim_end_matches('.')))
                .with_note("see README.md, section `forkbook.toml`, for the keys")
        })?;
        let defaults = Config::mlx_rocm();
        if config.fork.url.is_empty() {
            config.fork.url = defaults.fork.url;
        }
        if config.fork.branch.is_empty() {
            config.fork.branch = defaults.fork.branch;
        }
        if config.upstream.url.is_empty() {
            config.upstream.url = defaults.upstream.url;
        }
        if config.upstream.branch.is_empty() {
            config.upstream.branch = defaults.upstream.branch;
        }
        if !config.overlay.backend_prefix.ends_with('/') {
            config.overlay.backend_prefix.push('/');
        }
        super::paths::check_relative(&config.overlay.dir)
            .map_err(|e| e.context("`overlay.dir`"))?;
        if let Some(tree) = config.overlay.tree.as_deref().filter(|t| *t != ".") {
            super::paths::check_relative(tree).map_err(|e| e.context("`overlay.tree`"))?;
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
    fn overlay_dir_may_not_climb_out() {
        let err = Config::parse("[overlay]\ndir = \"../elsewhere\"\n").unwrap_err();
        assert!(err.message().contains(".."), "{}", err.message());
    }
}
