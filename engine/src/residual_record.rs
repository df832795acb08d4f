//! The residual record a project keeps: the first user's `CORE_RESIDUAL.diff`, or forkbook's own
//! `residual.diff`.

/// The residual record the first user keeps, read and kept in its own format.
pub const CORE_RESIDUAL_FILE: &str = "CORE_RESIDUAL.diff";
