//! The `[drift.api]` settings: which upstream files are the API, which macros to blank, which
//! macros are the backend's stubs. The defaults, fitted to MLX and its GPU backends, ship as
//! `engine/drift-defaults.toml`, read with this same type: a key a project's table leaves out
//! keeps the shipped value.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::LazyLock;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApiConfig {
    /// The upstream namespace whose declarations are the API (`mlx::core`).
    #[serde(default = "shipped::namespace")]
    pub namespace: String,
    /// Headers under this folder are read (`mlx/`).
    #[serde(default = "shipped::header_root")]
    pub header_root: String,
    /// Header folders that are not the API this backend sees: other backends and the backend
    /// itself.
    #[serde(default = "shipped::header_skip")]
    pub header_skip: Vec<String>,
    /// Upstream backend code shared by every GPU backend: what it defines, this backend need
    /// not (`mlx/backend/gpu/primitives.cpp` defines some `eval_gpu`).
    #[serde(default = "shipped::shared_sources")]
    pub shared_sources: Vec<String>,
    /// Other backends, read only as evidence that a new declaration is one every backend must
    /// define.
    #[serde(default = "shipped::reference_backends")]
    pub reference_backends: Vec<String>,
    /// The other backends whose definitions a drafted one is shaped like, in order of
    /// preference.
    #[serde(default = "shipped::draft_backends")]
    pub draft_backends: Vec<String>,
    /// Macros blanked before parsing, with their argument list when one follows.
    #[serde(default = "shipped::blank_macros")]
    pub blank_macros: Vec<String>,
    /// The backend's stub macros and the members each defines for its argument
    /// (`NO_GPU(Abs)` defines `Abs::eval_gpu`).
    #[serde(default = "shipped::stub_macros")]
    pub stub_macros: BTreeMap<String, Vec<String>>,
    /// The suppressions file, relative to the records folder.
    #[serde(default = "shipped::suppressions")]
    pub suppressions: String,
    /// Only headers the backend reaches through its includes are its API.
    #[serde(default = "shipped::follow_includes")]
    pub follow_includes: bool,
}

/// `engine/drift-defaults.toml`, its `[drift.api]` table read as a project's is. Every key is
/// written there, so reading it asks no default of its own.
static SHIPPED: LazyLock<ApiConfig> = LazyLock::new(|| {
    let file: toml::Table = toml::from_str(include_str!("../../../drift-defaults.toml"))
        .expect("the shipped drift defaults are TOML (test shipped_defaults_are_complete)");
    let api = file.get("drift").and_then(|d| d.get("api")).cloned();
    ApiConfig::deserialize(api.expect("the shipped defaults have a [drift.api] table"))
        .expect("the shipped drift defaults are an `ApiConfig`")
});

/// One function a key, each the shipped value of its key (serde's `default = "..."` takes a
/// function's path).
macro_rules! shipped {
    ($($key:ident: $ty:ty),* $(,)?) => {
        mod shipped {
            use super::*;
            $(pub fn $key() -> $ty {
                SHIPPED.$key.clone()
            })*
        }
    };
}

shipped! {
    namespace: String,
    header_root: String,
    header_skip: Vec<String>,
    shared_sources: Vec<String>,
    reference_backends: Vec<String>,
    draft_backends: Vec<String>,
    blank_macros: Vec<String>,
    stub_macros: BTreeMap<String, Vec<String>>,
    suppressions: String,
    follow_includes: bool,
}

impl Default for ApiConfig {
    fn default() -> ApiConfig {
        SHIPPED.clone()
    }
}

impl ApiConfig {
    /// The namespace as path segments.
    pub fn namespace_path(&self) -> Vec<String> {
        self.namespace
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The shipped file writes every key (a key missing there would make reading it ask the
    /// default it is reading), and a project's table replaces only the keys it sets.
    #[test]
    fn shipped_defaults_are_complete() {
        // serde names every key in its refusal of an unknown one, before any default is asked.
        let refusal = toml::from_str::<ApiConfig>("no_such_key = 1\n").unwrap_err();
        let keys: BTreeSet<&str> = refusal.message().split('`').skip(3).step_by(2).collect();
        let file: toml::Table =
            toml::from_str(include_str!("../../../drift-defaults.toml")).unwrap();
        let api = file["drift"]["api"].as_table().unwrap();
        let written: BTreeSet<&str> = api.keys().map(String::as_str).collect();
        assert_eq!(written, keys, "{refusal}");
        let shipped = ApiConfig::default();
        assert_eq!(shipped.namespace, "mlx::core");
        assert_eq!(
            shipped.stub_macros["NO_GPU_USE_FALLBACK"],
            ["use_fallback", "eval_gpu"]
        );
        let project: ApiConfig = toml::from_str("namespace = \"ns\"\n").unwrap();
        assert_eq!(project.namespace, "ns");
        assert_eq!(project.blank_macros, shipped.blank_macros);
    }
}
