//! The integration tests, one binary: every test file is a module, sharing one demo-world builder
//! (`common`).

mod adopt;
mod attacks;
mod book;
mod build_locks;
mod caches;
mod ci;
mod common;
mod demo;
mod draft;
mod drift_api;
mod drift_build;
mod faults;
mod first_hour;
mod gate;
mod hostile;
mod merge_cache;
mod offline;
mod propose;
mod readonly;
mod register;
mod roll;
mod sync;
mod trace;
mod tree_export;
mod verify;
