//! The `[drift.api]` settings: which upstream files are the API, which macros to blank, which
//! macros are the backend's stubs. The defaults fit MLX and its GPU backends.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// The upstream namespace whose declarations are the API (`mlx::core`).
    pub namespace: String,
    /// Headers under this folder are read (`mlx/`).
    pub header_root: String,
    /// Header folders that are not the API this backend sees: other backends and the backend
    /// itself.
    pub header_skip: Vec<String>,
    /// Upstream backend code shared by every GPU backend: what it defines, this backend need
    /// not (`mlx/backend/gpu/primitives.cpp` defines some `eval_gpu`).
    pub shared_sources: Vec<String>,
    /// Other backends, read only as evidence that a new declaration is one every backend must
    /// define.
    pub reference_backends: Vec<String>,
    /// Macros blanked before parsing, with their argument list when one follows.
    pub blank_macros: Vec<String>,
    /// The backend's stub macros and the members each defines for its argument
    /// (`NO_GPU(Abs)` defines `Abs::eval_gpu`).
    pub stub_macros: BTreeMap<String, Vec<String>>,
    /// The suppressions file, relative to the records folder.
    pub suppressions: String,
    /// Only headers the backend reaches through its includes are its API.
    pub follow_includes: bool,
}

impl Default for ApiConfig {
    fn default() -> ApiConfig {
        let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let eval_gpu = || strings(&["eval_gpu"]);
        ApiConfig {
            namespace: "mlx::core".to_string(),
            header_root: "mlx/".to_string(),
            header_skip: strings(&[
                "mlx/backend/cuda/",
                "mlx/backend/metal/",
                "mlx/backend/rocm/",
            ]),
            shared_sources: strings(&["mlx/backend/gpu/", "mlx/backend/common/"]),
            reference_backends: strings(&[
                "mlx/backend/cuda/",
                "mlx/backend/metal/",
                "mlx/backend/no_gpu/",
                "mlx/backend/cpu/",
            ]),
            blank_macros: strings(&[
                "MLX_API",
                "DEFINE_VMAP",
                "DEFINE_GRADS",
                "DEFINE_NAME",
                "DEFINE_INPUT_OUTPUT_SHAPE",
                "DEFINE_DEFAULT_IS_EQUIVALENT",
                "DEFINE_PRINT",
                "__device__",
                "__host__",
                "__global__",
                "__forceinline__",
                "__launch_bounds__",
                "__shared__",
                "__constant__",
                "__restrict__",
            ]),
            stub_macros: [
                ("NO_GPU".to_string(), eval_gpu()),
                ("NO_GPU_MULTI".to_string(), eval_gpu()),
                (
                    "NO_GPU_USE_FALLBACK".to_string(),
                    strings(&["use_fallback", "eval_gpu"]),
                ),
            ]
            .into(),
            suppressions: "drift-suppressions.toml".to_string(),
            follow_includes: true,
        }
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
