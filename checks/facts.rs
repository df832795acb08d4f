//! The facts the checks read: plain data the engine gathers from the project, the object cache
//! and the overlay, so every check is a pure function that tests can feed by hand.
//!
//! Paths are repository-relative with `/` separators. A record that does not exist is `None`;
//! the check about it says so.

use serde::Serialize;

use crate::register::{Problem, Register};

/// Everything the catalogue looks at.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facts {
    /// The records folder (e.g. `patches-rocm`), used to name record files in findings.
    pub records_dir: String,
    /// The folder the fork's backend lives in (e.g. `mlx/backend/rocm/`), with its final `/`.
    pub backend_prefix: String,
    /// The `UPSTREAM` record as read, or `None` when it is missing.
    pub upstream: Option<UpstreamRecord>,
    /// The upstream commit the project's build uses, where the project records one.
    pub build_pin: Option<BuildPin>,
    /// The `LOCAL_FIXES.md` register as parsed, or `None` when it is missing.
    pub register: Option<Register>,
    /// The base tree and the overlay, or `None` when they could not be built (the checks that
    /// need them then say nothing rather than guess).
    pub tree: Option<TreeFacts>,
    /// In the patch layout, the series of patches, one per register entry.
    pub patch_series: Option<Vec<SeriesPatch>>,
    /// The materialized overlay against `overlay.lock`, or `None` when the lock was not compared.
    pub lock: Option<LockFacts>,
    /// The hunks of the residual (local fixes in core files), each with the fix it belongs to.
    pub residual: Vec<ResidualHunk>,
    /// The overlay's README with its stated counts beside the actual ones.
    pub readme: Option<ReadmeFacts>,
    /// Upstream files the fork changes that the overlay does not carry (fork hooks outside it).
    pub fork_hooks: Vec<String>,
    /// Web addresses of the fork and upstream repositories, for link validation.
    pub repos: Repos,
    /// The materialized overlay files that hold conflict markers, or `None` when the overlay
    /// could not be built.
    pub markers: Option<Vec<MarkedFile>>,
    /// The records themselves (`LOCAL_FIXES.md`, the README, `UPSTREAM`, the lock, the residual
    /// record, each patch) that hold conflict markers: a merge of the records left unresolved.
    pub record_markers: Vec<MarkedFile>,
    /// The residual record the project keeps (`CORE_RESIDUAL.diff` or `residual.diff`), if any.
    pub residual_record: Option<ResidualRecordFacts>,
    /// Sections of the register that say what the overlay leaves out of the vendored set
    /// ("Dropped from the vendored set"), in their own words.
    #[serde(default)]
    pub dropped: Vec<ProseSection>,
}

/// A section of a record's prose: its heading and its text.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProseSection {
    pub file: String,
    /// Line of the heading.
    pub line: usize,
    pub title: String,
    pub text: String,
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

/// The residual record as read, beside what the overlay holds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ResidualRecordFacts {
    /// Path of the record, relative to the project root.
    pub file: String,
    /// Whether the record carries the three commits and a hash per core file in its header
    /// (`CORE_RESIDUAL.diff`) and so needs a note for every core file with a residual.
    pub core_header: bool,
    /// `pin`, `fork`, `fork_upstream_merge_base` as recorded.
    pub commits: Vec<RecordedValue>,
    /// One per `# overlay-sha256:` line: the path in `key`, the recorded SHA-256 in `value`.
    pub hashes: Vec<RecordedValue>,
    pub notes: Vec<ResidualNote>,
    /// `# review <path>:` lines: notes whose residual changed since they were written.
    pub reviews: Vec<RecordedValue>,
    pub problems: Vec<Problem>,
    /// The SHA-256 of each core file of the overlay, when the overlay could be built.
    pub core_hashes: Option<Vec<(String, String)>>,
    /// The core files that have a residual, when the overlay could be built.
    pub residual_files: Option<Vec<String>>,
}

/// A value written on a line of a record.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecordedValue {
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// `# note <path>: LOCAL_FIXES.md item N: <reason>`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ResidualNote {
    pub path: String,
    pub item: Option<u32>,
    pub reason: String,
    pub line: usize,
}

/// What the base tree and the overlay hold.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TreeFacts {
    /// Every path of the base tree and of the overlay (what a name in the register may mean).
    pub files: Vec<String>,
    /// The paths whose overlay content differs from the base tree (added, changed or removed).
    pub differing: Vec<String>,
}

/// The `UPSTREAM` record: `key: value` lines in file order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct UpstreamRecord {
    /// Path of the record, relative to the project root.
    pub file: String,
    pub lines: Vec<KeyValueLine>,
    /// Lines that are not `key: value`.
    pub problems: Vec<Problem>,
}

impl UpstreamRecord {
    /// The first line with this key.
    pub fn get(&self, key: &str) -> Option<&KeyValueLine> {
        self.lines.iter().find(|l| l.key == key)
    }
}

/// One `key: value` line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KeyValueLine {
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// Where the build records the upstream pin it uses, and what it says.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BuildPin {
    pub file: String,
    pub line: usize,
    /// The commit as written there (full or abbreviated SHA); empty when the file names none.
    pub value: String,
}

/// One patch of the series (patch layout).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SeriesPatch {
    /// The register entry the patch belongs to.
    pub number: u32,
    /// The patch file, relative to the project root.
    pub file: String,
    /// It holds no change: the fork or the pin came to hold the fix, and a move left its patch
    /// empty.
    pub empty: bool,
}

/// The overlay against its lock.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LockFacts {
    /// Path of `overlay.lock`, relative to the project root.
    pub file: String,
    /// Whether the lock file exists.
    pub present: bool,
    pub mismatches: Vec<LockMismatch>,
    /// Lines of the lock that are not `<sha256>  <path>` (read from the records alone).
    #[serde(default)]
    pub problems: Vec<Problem>,
}

/// One file where the overlay and the lock disagree.
#[derive(Debug, Clone, Serialize)]
pub struct LockMismatch {
    pub path: String,
    pub kind: MismatchKind,
    /// The line of the lock that records the path, where it does.
    pub line: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MismatchKind {
    /// The file's hash differs from the locked one.
    Changed,
    /// The overlay has a file the lock does not list.
    NotLocked,
    /// The lock lists a file the overlay does not have.
    Missing,
}

/// One hunk of the residual: a local change to a core file.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ResidualHunk {
    /// The core file, repository-relative.
    pub file: String,
    /// The hunk's first line in the overlay's version of the file.
    pub line: usize,
    /// The register entries the hunk is attributed to (the fixes whose patches change the
    /// file; in the files layout, the entries that name it). Empty: no fix explains it.
    pub fixes: Vec<u32>,
}

/// The overlay's README and its counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReadmeFacts {
    /// Path of the README, relative to the project root.
    pub file: String,
    /// Its text, so a fork hook can be explained there in prose.
    pub text: String,
    /// The counts it states (its counts block, then its prose), or `None` when it states none.
    pub counts: Option<Vec<CountFact>>,
    /// Sentences of its prose that state a number of files or fixes without saying which count.
    pub unread: Vec<UnreadCount>,
}

/// A sentence of the README that states a number of files or fixes without saying which count.
#[derive(Debug, Clone, Default, Serialize)]
pub struct UnreadCount {
    pub line: usize,
    pub sentence: String,
}

/// One count the README states, beside the true figure.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CountFact {
    /// What is counted (e.g. `backend files`).
    pub name: String,
    pub stated: u64,
    pub actual: u64,
    pub line: usize,
}

/// The web addresses of the two repositories, e.g. `https://github.com/NripeshN/mlx`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Repos {
    pub fork: Option<String>,
    pub upstream: Option<String>,
}

impl Facts {
    /// Path of a record file, e.g. `patches-rocm/UPSTREAM`.
    pub fn record_path(&self, name: &str) -> String {
        if self.records_dir.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.records_dir.trim_end_matches('/'))
        }
    }

    /// The register's file path, whether or not the register exists.
    pub fn register_file(&self) -> String {
        match &self.register {
            Some(register) => register.file.clone(),
            None => self.record_path("LOCAL_FIXES.md"),
        }
    }
}
