//! What the checks read: the records as the bottom crate models them (read once, with file and
//! line on every field), the register, and one view of the overlay when its objects are there.
//! Every check is a pure function over [`Facts`] that tests can feed by hand.
//!
//! Paths are repository-relative with `/` separators. A record that does not exist is `None`;
//! the check about it says so.

use std::borrow::Cow;

use serde::Serialize;

pub use forkbook_records::lock::{LockMismatch, MismatchKind};
pub use forkbook_records::readme::{Counts, Readme, StatedCount, UnreadCount};
pub use forkbook_records::register::summary::{Summary, SummedEntry};
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
    /// The register's entries summed up for the checks that read them together, when the
    /// register's entries are read one at a time and not held (`records.register` then holds
    /// none); [`Facts::summary`] sums up the held entries otherwise.
    pub summary: Option<Summary>,
    /// The files layout's whole files as the records folder holds them, hashed: the overlay as
    /// it stands, which needs no commit, so `overlay-matches-lock` compares them with the lock
    /// when the overlay could not be built. Filled only then (with the overlay, its
    /// `lock_mismatches` say the same); `None` in the patch layout, whose overlay is the series
    /// applied to the base tree.
    pub whole_files: Option<Lock>,
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
    /// Each pull request or issue of the fork or upstream the register cites, with its state as
    /// the repository's pull refs (`refs/pull/N/head`) say.
    pub pulls: Vec<CitedPull>,
    /// Why the pin the overlay was built on is no upstream commit (none of upstream's branches,
    /// tags and pull request heads reaches it); `None` when one does.
    pub pin_not_upstream: Option<String>,
}

impl OverlayView {
    /// The core files that have a residual, in hunk order.
    pub fn residual_files(&self) -> Vec<String> {
        let mut files: Vec<String> = self.residual.iter().map(|h| h.file.clone()).collect();
        files.dedup();
        files
    }
}

/// A pull request or issue of the fork or upstream that an entry cites, and its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CitedPull {
    /// The entry that cites it, and the line it is cited at (the `link` field's, else the
    /// entry's own).
    pub entry: u32,
    pub line: usize,
    /// As the entry writes it: a web address or `owner/repo#N`.
    pub cited: String,
    /// `fork` or `upstream`: whose pull refs were read.
    pub repo: String,
    pub number: u32,
    /// Whether it is the entry's `link` field (its own pull request), not a cause or a reference.
    pub is_link: bool,
    pub state: PullState,
}

/// What a repository's pull refs say of a number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "state")]
pub enum PullState {
    /// Its head ref is there and the branch holds neither its head nor a commit naming it.
    Open { head: String },
    /// The branch holds it: `commit` is its head (an ancestor of the branch) or the branch's
    /// commit whose message names the number (a squash or rebase merge).
    Merged {
        commit: String,
        head: Option<String>,
    },
    /// No pull ref of that number: an issue, or a pull request the mirror does not hold.
    Absent,
}

impl PullState {
    pub fn as_str(&self) -> &'static str {
        match self {
            PullState::Open { .. } => "open",
            PullState::Merged { .. } => "merged",
            PullState::Absent => "absent",
        }
    }

    /// `open`, `merged at 1a2b3c4d5e6f`, `absent`: the state as people read it.
    pub fn describe(&self) -> String {
        match self {
            PullState::Merged { commit, .. } => {
                format!("merged at {}", &commit[..12.min(commit.len())])
            }
            other => other.as_str().to_string(),
        }
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

    /// The register's entries summed up (none without a register).
    pub fn summary(&self) -> Cow<'_, Summary> {
        match (&self.summary, &self.records.register) {
            (Some(summary), _) => Cow::Borrowed(summary),
            (None, Some(register)) => Cow::Owned(Summary::of(&register.entries)),
            (None, None) => Cow::Owned(Summary::default()),
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
