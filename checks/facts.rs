//! What the checks read: the records as the bottom crate models them (read once, with file and
//! line on every field), the register, and one view of the overlay when its objects are there.
//! Every check is a pure function over [`Facts`] that tests can feed by hand.
//!
//! Paths are repository-relative with `/` separators. A record that does not exist is `None`;
//! the check about it says so.

use serde::Serialize;

pub use forkbook_records::lock::{LockMismatch, MismatchKind};
pub use forkbook_records::readme::{Counts, Readme, StatedCount, UnreadCount};
pub use forkbook_records::residual_record::{Hunk, Note, Recorded, ResidualRecord};
pub use forkbook_records::upstream::{KeyValueLine, Upstream};
pub use forkbook_records::{BuildPin, Lock, Records, SeriesPatch};

/// Everything the catalogue looks at.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facts {
    /// The records folder as read (`records.dir` names it in findings).
    pub records: Records,
    /// The folder the fork's backend lives in (e.g. `mlx/backend/rocm/`), with its final `/`.
    pub backend_prefix: String,
    /// Web addresses of the fork and upstream repositories, for link validation.
    pub repos: Repos,
    /// The base tree and the overlay, or `None` when they could not be built: the checks that
    /// need them (see [`crate::Needs`]) then say nothing rather than guess.
    pub overlay: Option<OverlayView>,
    /// The records themselves (`LOCAL_FIXES.md`, the README, `UPSTREAM`, the lock, the residual
    /// record, each patch) that hold conflict markers: a merge of the records left unresolved.
    pub record_markers: Vec<MarkedFile>,
}

/// What the base tree and the overlay hold, beside the records.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OverlayView {
    pub tree: TreeFacts,
    /// The materialized overlay files that hold conflict markers.
    pub markers: Vec<MarkedFile>,
    /// Where the materialized overlay and `overlay.lock` disagree.
    pub lock_mismatches: Vec<LockMismatch>,
    /// The hunks of the residual (local fixes in core files), each with the fix it belongs to.
    pub residual: Vec<Hunk>,
    /// Upstream files the fork changes that the overlay does not carry (fork hooks outside it).
    pub fork_hooks: Vec<String>,
    /// The true counts, the way `sync` writes them.
    pub counts: Counts,
    /// The SHA-256 of each core file of the overlay.
    pub core_hashes: Vec<(String, String)>,
    /// The core files: `[overlay] core_files`, or every file outside the backend folder.
    pub core_files: Vec<String>,
    /// The register's `fork-commit` SHAs that are commits of the fork: the recorded fork
    /// commit's history, or the fork's branch as last fetched.
    pub fork_commits: Vec<String>,
}

impl OverlayView {
    /// The core files that have a residual, in hunk order.
    pub fn residual_files(&self) -> Vec<String> {
        let mut files: Vec<String> = self.residual.iter().map(|h| h.file.clone()).collect();
        files.dedup();
        files
    }
}

/// One materialized overlay file with conflict markers left in.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MarkedFile {
    /// The file as the user opens it, relative to the project root: the records' own copy in the
    /// files layout, the overlay path (as `forkbook materialize` writes it) in the patch layout.
    pub file: String,
    /// Its conflict regions, `<<<<<<<` to `>>>>>>>`.
    pub regions: Vec<crate::markers::Region>,
    /// Marker lines outside any region.
    pub stray: Vec<crate::markers::Marker>,
}

/// What the base tree and the overlay hold.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TreeFacts {
    /// Every path of the base tree and of the overlay (what a name in the register may mean).
    pub files: Vec<String>,
    /// The paths whose overlay content differs from the base tree (added, changed or removed).
    pub differing: Vec<String>,
}

/// The two repositories as `forkbook.toml` names them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Repos {
    /// The web addresses, e.g. `https://github.com/NripeshN/mlx`; `None` for a local mirror.
    pub fork: Option<String>,
    pub upstream: Option<String>,
    /// The fork's `[fork] url` and `branch`, as written there: what the objects are read from.
    pub fork_url: String,
    pub fork_branch: String,
}

impl Facts {
    /// Path of a record file, e.g. `patches-rocm/UPSTREAM`.
    pub fn record_path(&self, name: &str) -> String {
        self.records.path(name)
    }

    /// The register's file path, whether or not the register exists.
    pub fn register_file(&self) -> String {
        match &self.records.register {
            Some(register) => register.file.clone(),
            None => self.record_path("LOCAL_FIXES.md"),
        }
    }

    /// The base tree and the overlay's paths, when the overlay was built.
    pub fn tree(&self) -> Option<&TreeFacts> {
        self.overlay.as_ref().map(|o| &o.tree)
    }

    /// Every path of the base tree and the overlay; none without the overlay.
    pub fn tree_files(&self) -> &[String] {
        self.tree().map_or(&[][..], |t| &t.files[..])
    }

    /// The residual's hunks; none without the overlay.
    pub fn residual(&self) -> &[Hunk] {
        self.overlay.as_ref().map_or(&[][..], |o| &o.residual[..])
    }
}
