//! What every static drift of one overlay from one commit shares: the `[drift.api]` settings,
//! the backend, the `from` side's core files and the suppressions. The run ([`crate::run::Run`])
//! and `roll`'s probes analyse from it; `drift api`, `drift build --with-api` and the drafts
//! ask the run.

use crate::cache::Cache;
use crate::config::Config;
use crate::drift::api::{self, ApiConfig, ApiReport, DriftInputs};
use crate::error::Result;
use crate::merge::count_conflicts;
use crate::overlay::OverlayState;
use crate::project::Project;
use crate::FileMap;
use git2::Oid;

/// What every static drift of one overlay from one commit shares, whatever the commit it goes
/// to: the settings, the backend, the `from` side's overrides and the suppressions. `roll`
/// runs many analyses from one setup.
pub struct DriftSetup {
    pub cfg: ApiConfig,
    prefix: String,
    pub backend: FileMap,
    from_overrides: FileMap,
    suppressions: Vec<api::Suppression>,
}

impl DriftSetup {
    pub fn new(
        project: &Project,
        cache: &Cache,
        state: &OverlayState,
        from: Oid,
    ) -> Result<DriftSetup> {
        let cfg = api_config(project)?;
        let prefix = project.config.overlay.backend_prefix.clone();
        let backend = state.backend_files(&prefix);
        // The fork's own core headers stand on the `from` side too, so what the fork itself
        // declares does not look new at `to`.
        let from_overrides = if from == state.commits.pin {
            core_files_of(&state.overlay, &prefix)
        } else if from == state.commits.base {
            let mut fork_core = FileMap::new();
            for path in &state.core_files {
                if let Some(bytes) = cache.read(state.commits.fork, path)? {
                    fork_core.insert(path.clone(), bytes.into());
                }
            }
            fork_core
        } else {
            FileMap::new()
        };
        let suppressions_path = project.records_dir().join(&cfg.suppressions);
        let suppressions = if suppressions_path.is_file() {
            api::suppress::load(&suppressions_path)?
        } else {
            Vec::new()
        };
        Ok(DriftSetup {
            cfg,
            prefix,
            backend,
            from_overrides,
            suppressions,
        })
    }

    /// The drift from `from` to `to`, with `to_overlay` (the overlay a retarget to `to` makes)
    /// standing in for upstream's core files at `to`, reused from and kept in the drift cache.
    pub fn run(
        &self,
        cache: &Cache,
        from: Oid,
        to: Oid,
        to_overlay: &FileMap,
    ) -> Result<ApiReport> {
        let to_overrides = core_files_of(to_overlay, &self.prefix);
        let parses = cache.drift_parse_store();
        let inputs = DriftInputs {
            backend: &self.backend,
            from_overrides: &self.from_overrides,
            to_overrides: &to_overrides,
            suppressions: &self.suppressions,
            parses: Some(&parses),
        };
        let store = cache.drift_store();
        api::drift_api(cache.repo(), from, to, &inputs, &self.cfg, Some(&store))
    }
}

/// The overlay's core files with no conflict markers left in.
fn core_files_of(files: &FileMap, prefix: &str) -> FileMap {
    files_where(files, |p, b| {
        !p.starts_with(prefix) && count_conflicts(b) == 0
    })
}

/// The files of `files` that `keep` takes.
pub(crate) fn files_where(files: &FileMap, keep: impl Fn(&str, &[u8]) -> bool) -> FileMap {
    let kept = files.iter().filter(|(p, b)| keep(p, b));
    kept.map(|(p, b)| (p.clone(), b.clone())).collect()
}

/// The `[drift.api]` settings.
pub fn api_config(project: &Project) -> Result<ApiConfig> {
    let table = project
        .config
        .drift
        .get("api")
        .and_then(|v| v.as_table())
        .cloned()
        .unwrap_or_default();
    Config::section(&table, "drift.api")
}
