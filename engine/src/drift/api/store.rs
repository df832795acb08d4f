//! The drift cache: finished analyses on disk, keyed by everything that determines them.
//!
//! An analysis is a pure function of the two commits (their history names the commit behind a
//! finding), the blob id of every file it parses (upstream's at each commit with the overlay's
//! core files laid over them, and the backend's), the `[drift.api]` settings and the analysis
//! code itself (the crate version and a fingerprint of its sources, made by `build.rs`). The key
//! is a SHA-256 over all of these, so a changed file or setting is a new key, never a stale hit.
//! Suppressions are applied after the cache: editing them needs no new analysis.
//!
//! An entry is the report as JSON, written to a temporary file and renamed into place, so a
//! reader sees a whole entry or none. A damaged or unreadable entry is a miss; failing to write
//! one costs the next run its reuse, never this run its result.

use super::config::ApiConfig;
use super::report::ApiReport;
use crate::error::Result;
use crate::FileMap;
use git2::{ObjectType, Oid};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bumped when the entry's format changes.
const FORMAT: &str = "forkbook drift api cache 1";

/// The analysis code's identity: crate version and source fingerprint.
pub fn tool_version() -> String {
    format!(
        "{} {}",
        env!("CARGO_PKG_VERSION"),
        env!("FORKBOOK_DRIFT_API_SOURCE")
    )
}

/// What one side of the analysis parses: path -> blob id.
pub type BlobIds = BTreeMap<String, Oid>;

/// The git blob id of `bytes` (what `git hash-object` says).
pub fn blob_id(bytes: &[u8]) -> Result<Oid> {
    Ok(Oid::hash_object(ObjectType::Blob, bytes)?)
}

/// The key of an analysis of `from` -> `to` over these files and settings.
pub fn key(
    from: Oid,
    to: Oid,
    from_files: &BlobIds,
    to_files: &BlobIds,
    backend: &FileMap,
    cfg: &ApiConfig,
) -> Result<String> {
    let mut hash = Sha256::new();
    let mut line = |text: &str| {
        hash.update(text.as_bytes());
        hash.update(b"\n");
    };
    line(FORMAT);
    line(&tool_version());
    line(&serde_json::to_string(cfg).unwrap_or_default());
    line(&format!("from {from}"));
    line(&format!("to {to}"));
    for (side, files) in [("from", from_files), ("to", to_files)] {
        line(&format!("{side} files {}", files.len()));
        for (path, id) in files {
            line(&format!("{id} {path}"));
        }
    }
    line(&format!("backend files {}", backend.len()));
    for (path, bytes) in backend {
        line(&format!("{} {path}", blob_id(bytes)?));
    }
    Ok(forkbook_records::hex::encode(&hash.finalize()))
}

/// Where the entry for `key` lives in `dir`.
pub fn entry_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.json"))
}

/// The stored analysis for `key`, if a whole one is there.
pub fn load(dir: &Path, key: &str) -> Option<ApiReport> {
    let bytes = std::fs::read(entry_path(dir, key)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Stores `report` (before suppressions) under `key`.
pub fn save(dir: &Path, key: &str, report: &ApiReport) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_vec(report).map_err(|e| crate::error::Error::new(e.to_string()))?;
    crate::fsutil::replace_file(&entry_path(dir, key), &json)
}
