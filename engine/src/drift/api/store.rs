//! The drift cache: finished analyses on disk, keyed by everything that determines them.
//!
//! An analysis is a pure function of the two commits (their history names the commit behind a
//! finding), the blob id of every file it parses (upstream's at each commit with the overlay's
//! core files laid over them, and the backend's), the `[drift.api]` settings and the analysis
//! code itself (the crate version and a fingerprint of its sources, made by `build.rs`). The key
//! is a SHA-256 over all of these, so a changed file or setting is a new key, never a stale hit.
//! Suppressions are applied after the cache: editing them needs no new analysis.
//!
//! An entry is the report as JSON in one sealed cache entry (`forkbook_records::cache_entry`),
//! with each finding's evidence beside it: a damaged, forged or unreadable entry is a miss;
//! failing to write one costs the next run its reuse, never this run its result. A miss still
//! parses only the files no earlier analysis parsed: each file's parse is kept on its own
//! (`parses`).

use super::config::ApiConfig;
use super::report::{ApiReport, Evidence};
use crate::error::Result;
use crate::FileMap;
use forkbook_records::cache_entry::{Key, KeyBuilder, Store};
use git2::{ObjectType, Oid};
use std::collections::BTreeMap;

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

/// The blob id of each of `files`.
pub fn blob_ids(files: &FileMap) -> Result<BlobIds> {
    let ids = files
        .iter()
        .map(|(path, bytes)| Ok((path.clone(), blob_id(bytes)?)));
    ids.collect()
}

/// The key of an analysis of `from` -> `to` over files with these blob ids and these settings.
pub fn key(
    from: Oid,
    to: Oid,
    from_files: &BlobIds,
    to_files: &BlobIds,
    backend: &BlobIds,
    cfg: &ApiConfig,
) -> Key {
    let mut key = KeyBuilder::new("drift api");
    key.part(tool_version())
        .part(serde_json::to_string(cfg).unwrap_or_default())
        .part(from.as_bytes())
        .part(to.as_bytes());
    for files in [from_files, to_files, backend] {
        key.part((files.len() as u64).to_le_bytes());
        for (path, id) in files {
            key.part(path).part(id.as_bytes());
        }
    }
    key.finish()
}

/// What an entry holds: the report and each finding's evidence, in the findings' order. The
/// evidence is no part of the report's JSON (`drift api --json`), but the drafts and `roll`
/// start from it: an entry without it would make `drift api --draft` on a warm cache draft
/// less than the same run on a cold one.
#[derive(serde::Serialize, serde::Deserialize)]
struct Entry<R, E> {
    report: R,
    evidence: Vec<E>,
}

/// The stored analysis for `key`, if a whole sealed one is there.
pub fn load(store: &Store, key: &Key) -> Option<ApiReport> {
    let entry: Entry<ApiReport, Evidence> = serde_json::from_slice(&store.load(key)?).ok()?;
    let Entry {
        mut report,
        evidence,
    } = entry;
    if evidence.len() != report.findings.len() {
        return None;
    }
    for (finding, evidence) in report.findings.iter_mut().zip(evidence) {
        finding.evidence = evidence;
    }
    Some(report)
}

/// Stores `report` (before suppressions) under `key`.
pub fn save(store: &Store, key: &Key, report: &ApiReport) -> Result<()> {
    let entry = Entry {
        report,
        evidence: report.findings.iter().map(|f| &f.evidence).collect(),
    };
    let json = serde_json::to_vec(&entry).map_err(|e| crate::error::Error::new(e.to_string()))?;
    store
        .save(key, &json)
        .map_err(|e| crate::error::Error::new(format!("failed to keep a drift analysis: {e}")))
}
