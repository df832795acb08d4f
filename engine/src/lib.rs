//! The engine: everything forkbook knows about overlays, with no command line and no mdBook.
//!
//! The model (docs/architecture.md is the map of its parts): the base tree B(fork, base, pin) is the fork's backend files plus
//! each core file rebuilt as a 3-way merge of the fork's change into the pin. The overlay is B
//! plus the local fixes. Every module here works on that model in process, through libgit2.

pub mod adopt;
pub mod base;
pub mod cache;
pub mod candidate;
pub mod check;
pub mod ci;
pub mod ci_actions;
pub mod ci_rocm;
pub mod ci_template;
pub mod config;
pub mod counts;
pub mod digests;
pub mod doc;
pub mod drift;
pub mod error;
pub mod fetch;
pub mod fixes;
pub mod fsutil;
pub mod init;
pub mod markdown;
pub mod merge;
pub mod notice;
pub mod overlay;
pub mod patch;
pub mod paths;
pub mod pin;
pub mod process;
pub mod project;
pub mod propose;
pub mod record;
pub mod records;
pub mod register;
pub mod report;
pub mod report_value;
pub mod residual;
pub mod residual_diff;
pub mod residual_record;
pub mod roll;
pub mod roll_ci;
pub mod run;
pub mod status;
pub mod sync;
pub mod terminal;
pub mod text;
pub mod tools;
pub mod trace;
pub mod trust;
pub mod verify;

pub use cache::Cache;
pub use error::{Error, ErrorKind, Result};
pub use project::Project;

/// Files by repository-relative path (always `/`-separated), contents as bytes.
///
/// Bytes, not strings: trees from other people may hold non-UTF-8 or binary files.
pub type FileMap = std::collections::BTreeMap<String, Bytes>;

/// A file's bytes, shared: the base tree and the overlay made from it hold each file once, and
/// cloning a whole tree copies pointers, not contents.
pub type Bytes = std::sync::Arc<Vec<u8>>;

/// The text of `path` in `files` (bytes that are not UTF-8 replaced), empty when it is absent.
pub fn text_of(files: &FileMap, path: &str) -> String {
    files
        .get(path)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}
