//! The demo: a small but realistic world with real git history, built from text kept in this
//! repository, so the demo command, the book and the tests all run with no network.
//!
//! [`world`] makes the two repositories (a miniature MLX upstream and a miniature ROCm fork).

pub mod project;
pub mod world;
