//! What a step's result depends on besides its own text (see [`forkbook_preprocessor::Fingerprint`]):
//! the recorded commits the page shows, this build of forkbook, and a digest of the
//! configuration, the records and the object cache's branch tips.

use crate::engine::project::Project;
use crate::engine::records::{self, keys};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The recorded commits, for the page: `fork 75915908`, `base 39886de4`, `pin 846d1762`.
pub fn recorded_commits(project: &Project) -> Vec<(String, String)> {
    let path = project.records_dir().join(records::UPSTREAM_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    let Ok(upstream) = records::Upstream::parse(&text, records::UPSTREAM_FILE) else {
        return Vec::new();
    };
    [
        ("fork", keys::COMMIT),
        ("base", keys::BASE),
        ("pin", keys::PIN),
    ]
    .into_iter()
    .filter_map(|(label, key)| {
        upstream
            .get(key)
            .map(|v| (label.to_string(), v.chars().take(8).collect()))
    })
    .collect()
}

/// This build of forkbook: its version and when its executable was written, so a rebuilt
/// forkbook does not reuse results of the old one.
pub fn tool_version() -> String {
    let built = std::env::current_exe()
        .and_then(|exe| exe.metadata())
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    format!("{}+{built}", env!("CARGO_PKG_VERSION"))
}

/// A digest of what step results depend on besides the commits: the configuration, the
/// records folder, the build's pin file, and the branch tips in the object cache.
pub fn state_digest(project: &Project) -> String {
    let mut hash = Sha256::new();
    let mut add = |name: &str, bytes: &[u8]| {
        hash.update(name.as_bytes());
        hash.update([0]);
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    add(
        "forkbook.toml",
        &std::fs::read(project.root.join(crate::engine::config::CONFIG_FILE)).unwrap_or_default(),
    );
    if let Some(pin_file) = &project.config.overlay.pin_file {
        add(
            pin_file,
            &crate::engine::fsutil::read_regular_file(&project.root.join(pin_file), "pin file")
                .ok()
                .flatten()
                .unwrap_or_default(),
        );
    }
    match crate::engine::fsutil::read_tree(&project.records_dir()) {
        Ok(files) => files.iter().for_each(|(path, bytes)| add(path, bytes)),
        Err(e) => add("records", e.message().as_bytes()),
    }
    for (name, target) in cache_refs(&project.cache_dir()) {
        add(&name, target.as_bytes());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The remote branch tips of the object cache, read without taking its lock.
fn cache_refs(dir: &Path) -> Vec<(String, String)> {
    let Ok(repo) = git2::Repository::open_bare(dir) else {
        return Vec::new();
    };
    let Ok(refs) = repo.references_glob("refs/remotes/*") else {
        return Vec::new();
    };
    let mut tips: Vec<(String, String)> = refs
        .flatten()
        .filter_map(|r| Some((r.name().ok()?.to_string(), r.target()?.to_string())))
        .collect();
    tips.sort();
    tips
}
