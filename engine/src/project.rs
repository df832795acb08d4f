//! A project: the folder holding `forkbook.toml` and the overlay's records.

use super::config::{Config, CONFIG_FILE};
use super::error::{Error, Result};
use forkbook_records::remote::web_address;
use std::path::{Path, PathBuf};

/// Settings given on the command line or in the environment, over `forkbook.toml`.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// The object cache (`--cache`, `FORKBOOK_CACHE`).
    pub cache: Option<PathBuf>,
    /// The fork's URL or local mirror (`--fork-url`, `FORKBOOK_FORK_URL`).
    pub fork_url: Option<String>,
    /// The upstream's URL or local mirror (`--upstream-url`, `FORKBOOK_UPSTREAM_URL`).
    pub upstream_url: Option<String>,
    /// Never touch the network.
    pub offline: bool,
    /// The folders tools are looked for in, `PATH`-style (`--tool-path`, `FORKBOOK_TOOL_PATH`);
    /// default `PATH`. It is also the `PATH` of the steps forkbook runs.
    pub tool_path: Option<std::ffi::OsString>,
    /// The upstream commit this run uses in place of the recorded pin (`--stand-in-pin`,
    /// `FORKBOOK_STAND_IN_PIN`): a run option, never a record (see `engine::pin`).
    pub stand_in_pin: Option<String>,
}

impl Overrides {
    /// Fills what the caller left empty from `FORKBOOK_*` environment variables.
    pub fn with_env(mut self) -> Overrides {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        self.cache = self
            .cache
            .or_else(|| var("FORKBOOK_CACHE").map(PathBuf::from));
        self.fork_url = self.fork_url.or_else(|| var("FORKBOOK_FORK_URL"));
        self.upstream_url = self.upstream_url.or_else(|| var("FORKBOOK_UPSTREAM_URL"));
        self.offline |= var("FORKBOOK_OFFLINE").is_some_and(|v| v != "0");
        self.tool_path = self
            .tool_path
            .or_else(|| std::env::var_os("FORKBOOK_TOOL_PATH").filter(|v| !v.is_empty()));
        self.stand_in_pin = self.stand_in_pin.or_else(|| var("FORKBOOK_STAND_IN_PIN"));
        self
    }

    /// The folders tools are looked for in: the tool path, else `PATH`.
    pub fn search_path(&self) -> std::ffi::OsString {
        super::tools::search_path(self.tool_path.as_deref())
    }

    /// The environment of a step forkbook starts (a `forkbook` in it then works on the same
    /// cache, mirrors and tools as this run): `PATH` is the search path, and every override is
    /// passed on as its `FORKBOOK_*` variable.
    pub fn child_env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        let mut env = vec![("PATH".into(), self.search_path())];
        if let Some(tool_path) = &self.tool_path {
            env.push(("FORKBOOK_TOOL_PATH".into(), tool_path.clone()));
        }
        if let Some(cache) = &self.cache {
            env.push(("FORKBOOK_CACHE".into(), cache.clone().into_os_string()));
        }
        if let Some(url) = &self.fork_url {
            env.push(("FORKBOOK_FORK_URL".into(), url.into()));
        }
        if let Some(url) = &self.upstream_url {
            env.push(("FORKBOOK_UPSTREAM_URL".into(), url.into()));
        }
        if self.offline {
            env.push(("FORKBOOK_OFFLINE".into(), "1".into()));
        }
        if let Some(rev) = &self.stand_in_pin {
            env.push(("FORKBOOK_STAND_IN_PIN".into(), rev.into()));
        }
        env
    }
}

#[derive(Debug, Clone)]
pub struct Project {
    pub root: PathBuf,
    pub config: Config,
    pub overrides: Overrides,
    /// The fork and upstream URLs as `forkbook.toml` names them, before any override: records
    /// name these, never a mirror path of one machine.
    pub canonical_urls: (String, String),
    /// Their web addresses (`https://host/owner/repo`), `None` for a local path.
    pub web_urls: (Option<String>, Option<String>),
}

impl Project {
    /// Opens the project at `root`; a missing `forkbook.toml` means the MLX ROCm defaults.
    pub fn open(root: &Path, overrides: &Overrides) -> Result<Project> {
        let path = root.join(CONFIG_FILE);
        let config = if path.exists() {
            Config::load(&path)?
        } else {
            Config::mlx_rocm()
        };
        Ok(Project::with_config(root, config, overrides))
    }

    /// The project at `root` with `config` (read or composed), the URL overrides applied.
    pub fn with_config(root: &Path, mut config: Config, overrides: &Overrides) -> Project {
        let canonical_urls = (config.fork.url.clone(), config.upstream.url.clone());
        if let Some(url) = &overrides.fork_url {
            config.fork.url = url.clone();
        }
        if let Some(url) = &overrides.upstream_url {
            config.upstream.url = url.clone();
        }
        Project {
            root: root.to_path_buf(),
            config,
            overrides: overrides.clone(),
            web_urls: (
                web_address(&canonical_urls.0),
                web_address(&canonical_urls.1),
            ),
            canonical_urls,
        }
    }

    /// The stand-in pin of this run, if one is given, and where it came from (for messages):
    /// `--stand-in-pin` (or its variable) over `[upstream] stand_in_pin`.
    pub fn stand_in_pin(&self) -> Option<(&str, &'static str)> {
        match (
            &self.overrides.stand_in_pin,
            &self.config.upstream.stand_in_pin,
        ) {
            (Some(rev), _) => Some((rev, "`--stand-in-pin`")),
            (None, Some(rev)) => Some((rev, "`[upstream] stand_in_pin` in forkbook.toml")),
            (None, None) => None,
        }
    }

    /// The project's lock, taken before a command writes its records. Refused under a stand-in
    /// pin: what a run computes from a stand-in is not the recorded pin's, so no record is
    /// written from it.
    pub fn lock_records(&self) -> Result<super::fsutil::ProjectLock> {
        if let Some((rev, origin)) = self.stand_in_pin() {
            return Err(Error::new(format!(
                "refusing to write the records under the stand-in pin `{rev}` (from {origin})"
            ))
            .with_note(
                "a stand-in pin is for reading only: drop it to write, once `forkbook fetch` \
                 brings the recorded pin",
            ));
        }
        super::fsutil::ProjectLock::acquire(&self.root)
    }

    /// The nearest folder at or above `start` that holds `forkbook.toml`.
    pub fn find_root(start: &Path) -> Result<PathBuf> {
        let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
        for dir in start.ancestors() {
            if dir.join(CONFIG_FILE).is_file() {
                return Ok(dir.to_path_buf());
            }
        }
        Err(Error::new(format!("no `{CONFIG_FILE}` in `{}` or any folder above it", start.display()))
            .with_note("run forkbook inside a project, or pass `--root DIR` (`forkbook demo` makes one to try)"))
    }

    /// The overlay's records folder (`patches-rocm/` by default).
    pub fn records_dir(&self) -> PathBuf {
        self.root.join(&self.config.overlay.dir)
    }

    /// A records path for messages, relative to the project root (`patches-rocm/UPSTREAM`).
    pub fn record_name(&self, file: &str) -> String {
        format!("{}/{file}", self.records_name())
    }

    /// The records folder as the configuration names it (`patches-rocm`).
    pub fn records_name(&self) -> &str {
        self.config.overlay.dir.trim_end_matches('/')
    }

    /// The object cache folder: `--cache`, `FORKBOOK_CACHE`, or the user's cache folder.
    pub fn cache_dir(&self) -> PathBuf {
        if let Some(dir) = &self.overrides.cache {
            return dir.clone();
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        base.join("forkbook").join("objects.git")
    }
}
