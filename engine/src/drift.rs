//! Drift: what a pin bump will break in the backend before anyone builds it.
//!
//! `api` predicts the breaks statically from the upstream headers and the backend sources;
//! `build` confirms them with a real compiler and `nm`.

pub mod api;
pub mod build;
pub mod draft;
pub mod setup;
