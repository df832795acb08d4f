//! What a step's result depends on besides its own text (see [`forkbook_preprocessor::Fingerprint`]):
//! the recorded commits the page shows, this build of forkbook, a digest of the
//! configuration, the records and the object cache's branch tips, and the tools a step can find.

use crate::engine::project::Project;
use crate::engine::records::{self, keys};
use forkbook_records::cache_entry::KeyBuilder;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

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
        upstream.get(key).map(|v| {
            (
                label.to_string(),
                crate::engine::text::short_id(v).to_string(),
            )
        })
    })
    // A stand-in pin is what the steps ran on: the page says so beside the recorded pin.
    .chain(project.stand_in_pin().map(|(rev, _)| {
        let rev = crate::engine::text::short_id(rev).to_string();
        ("stand-in pin".to_string(), rev)
    }))
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
fn state_digest(project: &Project) -> String {
    let mut key = KeyBuilder::new("book state");
    let mut add = |name: &str, bytes: &[u8]| {
        key.part(name).part(bytes);
    };
    add(
        "forkbook.toml",
        &std::fs::read(project.root.join(crate::engine::config::CONFIG_FILE)).unwrap_or_default(),
    );
    // A stand-in pin (`--stand-in-pin`, its variable or forkbook.toml) changes every result.
    add(
        "stand-in pin",
        project.stand_in_pin().map_or("", |(rev, _)| rev).as_bytes(),
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
    key.finish().hex()
}

/// The tools the book's steps look for, whatever their `requires=` says: the ROCm compiler and
/// GPU lister, the build tools `drift build` and `verify` run, mdBook.
const PROBED_TOOLS: &[&str] = &[
    "hipcc", "rocminfo", "cmake", "nm", "c++", "ccache", "mdbook", "git",
];

/// Which tools a step can find on the search path `search` (what the steps' `requires` and
/// their `PATH` use), as `(name, where)`: the path with its length and modification time (a
/// reinstalled tool is another tool), or `-` where there is none. Besides [`PROBED_TOOLS`], the
/// tools the configuration names (`[build] compiler`, `cmake`, `nm`, and every
/// `[[verify.steps]]` `requires`); `gpu` is whether `/dev/kfd` exists.
pub fn tools_found(project: Option<&Project>, search: &std::ffi::OsStr) -> Vec<(String, String)> {
    let mut names: Vec<String> = PROBED_TOOLS.iter().map(|s| s.to_string()).collect();
    if let Some(project) = project {
        let text = |value: &toml::Value| value.as_str().map(str::to_string);
        let config = &project.config;
        names.extend(
            ["compiler", "cmake", "nm"]
                .iter()
                .filter_map(|k| text(config.build.get(*k)?)),
        );
        let steps = config.verify.get("steps").and_then(toml::Value::as_array);
        for step in steps.into_iter().flatten() {
            let requires = step.get("requires").and_then(toml::Value::as_array);
            names.extend(requires.into_iter().flatten().filter_map(text));
        }
    }
    names.sort();
    names.dedup();
    let mut found: Vec<(String, String)> = names
        .into_iter()
        .filter(|name| name != crate::engine::tools::GPU)
        .map(|name| {
            let place = crate::engine::tools::find_program_in(&name, search).map_or_else(
                || "-".to_string(),
                |path| {
                    let meta = path.metadata().ok();
                    let modified = meta
                        .as_ref()
                        .and_then(|m| m.modified().ok())
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_nanos());
                    let len = meta.map_or(0, |m| m.len());
                    format!("{} {len} {modified}", path.display())
                },
            );
            (name, place)
        })
        .collect();
    let gpu = Path::new("/dev/kfd").exists();
    found.push((crate::engine::tools::GPU.to_string(), gpu.to_string()));
    found
}

/// [`state_digest`] kept between the steps of one build: the book asks for the fingerprint
/// before every step, and hashing every record each time was most of a cached build. The kept
/// digest is reused while every file it read looks the same to the file system (path, length,
/// modification time) and the cache's branch tips are the same; a file changed in the last two
/// seconds is not trusted to its time stamp (it could change again within the same tick), as
/// git does with its index.
#[derive(Debug, Clone, Default)]
pub struct DigestMemo(Arc<Mutex<Option<Kept>>>);

/// One input of the digest as the file system describes it, or a branch tip.
type Stamp = (String, u64, Option<SystemTime>);

/// The stamps a digest was made from, and the digest.
type Kept = (Vec<Stamp>, String);

impl DigestMemo {
    pub fn digest(&self, project: &Project) -> String {
        let stamps = stamps(project);
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(stamps), Some((seen, digest))) = (&stamps, kept.as_ref()) {
            if stamps == seen {
                return digest.clone();
            }
        }
        let digest = state_digest(project);
        *kept = stamps.map(|stamps| (stamps, digest.clone()));
        digest
    }
}

/// The stamps of everything [`state_digest`] reads; `None` when one is too fresh to trust.
fn stamps(project: &Project) -> Option<Vec<Stamp>> {
    let mut files = vec![project.root.join(crate::engine::config::CONFIG_FILE)];
    if let Some(pin_file) = &project.config.overlay.pin_file {
        files.push(project.root.join(pin_file));
    }
    walk(&project.records_dir(), &mut files);
    let recent = SystemTime::now().checked_sub(Duration::from_secs(2))?;
    let mut stamps = Vec::with_capacity(files.len() + 4);
    for file in files {
        let meta = std::fs::symlink_metadata(&file).ok();
        let modified = meta.as_ref().and_then(|m| m.modified().ok());
        if modified.is_some_and(|t| t > recent) {
            return None;
        }
        stamps.push((
            file.to_string_lossy().into_owned(),
            meta.map_or(u64::MAX, |m| m.len()),
            modified,
        ));
    }
    for (name, target) in cache_refs(&project.cache_dir()) {
        stamps.push((name, 0, None));
        stamps.push((target, 0, None));
    }
    Some(stamps)
}

/// Every entry under `dir`, folders included (an added or removed file changes its folder's
/// time), in a stable order: each folder, then what it holds, sorted. The entries still to visit
/// wait in a list, not on the call stack: a folder can nest deeper than any stack goes.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut pending = vec![(dir.to_path_buf(), true)];
    while let Some((path, is_dir)) = pending.pop() {
        if !is_dir {
            out.push(path);
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        out.push(path);
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        let kinds = entries.iter().rev().map(|entry| {
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            (entry.path(), is_dir)
        });
        pending.extend(kinds);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept digest is the one a fresh hash gives, and a changed record gives a new one.
    #[test]
    fn the_kept_digest_follows_the_records() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::write(root.join("forkbook.toml"), "[overlay]\ndir = \"recs\"\n").unwrap();
        std::fs::create_dir(root.join("recs")).unwrap();
        let record = root.join("recs").join("UPSTREAM");
        std::fs::write(&record, "commit: 1\n").unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        let age = |path: &Path| {
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(old)
                .unwrap()
        };
        for path in [&root.join("forkbook.toml"), &record] {
            age(path);
        }
        let project = Project::open(root, &Default::default()).unwrap();
        let memo = DigestMemo::default();
        let first = memo.digest(&project);
        assert_eq!(first, state_digest(&project));
        assert_eq!(memo.digest(&project), first, "kept while nothing changed");
        // Same length, new bytes, an old time stamp: only the length and time are compared, so
        // a rewrite must move one of them; a rewrite now is too fresh to trust and is rehashed.
        std::fs::write(&record, "commit: 2\n").unwrap();
        assert_ne!(
            memo.digest(&project),
            first,
            "a fresh change is hashed again"
        );
        age(&record);
        assert_eq!(memo.digest(&project), state_digest(&project));
    }
}
