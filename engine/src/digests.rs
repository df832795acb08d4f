//! The SHA-256 of the files a run holds, each hashed once, and of the blobs of the object cache
//! those files are copies of, kept between runs.
//!
//! The lock needs the SHA-256 of every overlay file, and the base tree takes a fork file from
//! the overlay's copy where that copy holds the blob's bytes. Deciding that by git's own hash
//! (SHA-1 with collision detection, libgit2's) cost a quarter of `sync --check` on the real
//! overlay, on bytes the lock hashes anyway. So each file is hashed once, with SHA-256
//! ([`FileDigests`]), and a blob is known by the SHA-256 of its bytes, kept beside the object
//! cache in `forkbook-blob-digests/` ([`KnownBlobs`]): one sealed entry per base tree.
//!
//! What an entry says is never taken from a record (a pull request writes the lock): a blob's
//! SHA-256 is learned from its own bytes, read from the object cache, or from a held copy that
//! git's hash shows to be those bytes. A damaged or forged entry is a miss (the SHA-1 way
//! again, and the true entry kept); with no trusted secret nothing is kept or believed, and every
//! run decides by SHA-1 as before.

use super::error::Result;
use super::{Bytes, FileMap};
use forkbook_records::cache_entry::{Key, KeyBuilder, Store};
use forkbook_records::lock::sha256_hex;
use git2::{ObjectType, Oid};
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

/// Files by path, each with its SHA-256 made the first time it is asked and kept.
#[derive(Debug, Clone, Default)]
pub struct FileDigests {
    files: BTreeMap<String, Digested>,
}

#[derive(Debug, Clone)]
struct Digested {
    bytes: Bytes,
    sha256: OnceLock<String>,
}

impl Digested {
    fn sha256(&self) -> &str {
        self.sha256.get_or_init(|| sha256_hex(&self.bytes))
    }
}

impl FileDigests {
    /// `files`, none hashed yet.
    pub fn of(files: &FileMap) -> FileDigests {
        let files = files.iter().map(|(path, bytes)| {
            let sha256 = OnceLock::new();
            let digested = Digested {
                bytes: bytes.clone(),
                sha256,
            };
            (path.clone(), digested)
        });
        FileDigests {
            files: files.collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The SHA-256 (hex) of `bytes`, the file at `path`: the one kept where `bytes` is the very
    /// copy held there (the same allocation, so the same bytes), else made now.
    pub fn sha256_hex(&self, path: &str, bytes: &Bytes) -> String {
        match self.files.get(path) {
            Some(held) if std::sync::Arc::ptr_eq(&held.bytes, bytes) => held.sha256().to_string(),
            _ => sha256_hex(bytes),
        }
    }

    fn get(&self, path: &str) -> Option<&Digested> {
        self.files.get(path)
    }
}

/// The blobs a base tree reads, told apart from the copies `files` holds of them by SHA-256:
/// the digests kept for this tree where an entry is there, else git's hash of the copy, which
/// then teaches the blob's digest; kept again by [`KnownBlobs::keep`] when something was learned.
pub struct KnownBlobs<'a> {
    files: &'a FileDigests,
    /// Blob id -> SHA-256 (hex) of its bytes: the kept entry's, then what this run learned.
    digests: HashMap<Oid, String>,
    learned: bool,
    /// Where the entry is kept, and under which key; `None` when no copy is held.
    store: Option<(Store, Key)>,
}

impl<'a> KnownBlobs<'a> {
    /// Nothing held: every blob is read.
    pub fn none() -> KnownBlobs<'static> {
        static NONE: OnceLock<FileDigests> = OnceLock::new();
        KnownBlobs {
            files: NONE.get_or_init(FileDigests::default),
            digests: HashMap::new(),
            learned: false,
            store: None,
        }
    }

    /// The copies `files` holds of the blobs of the base tree `tree` names (its commits,
    /// backend folder and core files: see [`key`]), with the digests `store` keeps for it
    /// (asked only where a copy is held).
    pub fn open(
        store: impl FnOnce() -> Store,
        tree: &[&str],
        files: &'a FileDigests,
    ) -> KnownBlobs<'a> {
        if files.is_empty() {
            return KnownBlobs::none();
        }
        let (store, key) = (store(), key(tree));
        let digests = store
            .load(&key)
            .and_then(|payload| parse(&payload))
            .unwrap_or_default();
        KnownBlobs {
            files,
            digests,
            learned: false,
            store: Some((store, key)),
        }
    }

    /// The bytes of blob `id`, the file at `path`: the held copy where it holds them (shared,
    /// the blob never inflated), else the blob as `read` gives it.
    pub fn blob(
        &mut self,
        id: Oid,
        path: &str,
        read: impl FnOnce(Oid) -> Result<Vec<u8>>,
    ) -> Result<Bytes> {
        let Some(held) = self.files.get(path) else {
            return Ok(read(id)?.into());
        };
        match self.digests.get(&id) {
            Some(digest) if digest == held.sha256() => return Ok(held.bytes.clone()),
            Some(_) => return Ok(read(id)?.into()),
            None => {}
        }
        // Not known yet: git's own hash names the blob. A copy it names is the blob's bytes.
        let copy = Oid::hash_object(ObjectType::Blob, &held.bytes).ok() == Some(id);
        let (bytes, digest) = match copy {
            true => (held.bytes.clone(), held.sha256().to_string()),
            false => {
                let bytes: Bytes = read(id)?.into();
                let digest = sha256_hex(&bytes);
                (bytes, digest)
            }
        };
        self.digests.insert(id, digest);
        self.learned = true;
        Ok(bytes)
    }

    /// Keeps what this run learned for the next, unflushed (a first run should not wait on the
    /// disk; an entry a crash tore fails its seal: a miss). Failing to keep it costs the next
    /// run its reuse, never this one its result.
    pub fn keep(self) {
        if let (true, Some((store, key))) = (self.learned, &self.store) {
            let _ = store.save_unflushed(key, &render(&self.digests));
        }
    }
}

/// The key of a base tree's blob digests: its parts (the fork, base and pin commits, the
/// backend folder, each core file), in order. A digest is a fact about a blob whatever tree
/// holds it; the key only gathers one tree's in one entry, one read for a run.
fn key(tree: &[&str]) -> Key {
    let mut key = KeyBuilder::new("blob digests");
    for part in tree {
        key.part(part);
    }
    key.finish()
}

/// `<blob id> <sha256>` a line, sorted by blob id, so the same digests are the same entry.
fn render(digests: &HashMap<Oid, String>) -> Vec<u8> {
    let sorted: BTreeMap<&Oid, &String> = digests.iter().collect();
    let mut out = String::with_capacity(sorted.len() * 106);
    for (id, digest) in sorted {
        out.push_str(&format!("{id} {digest}\n"));
    }
    out.into_bytes()
}

/// The digests of an entry's payload; `None` (a miss) where any line is not `<blob id> <sha256>`.
fn parse(payload: &[u8]) -> Option<HashMap<Oid, String>> {
    let text = std::str::from_utf8(payload).ok()?;
    let hex =
        |s: &str, len| s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    text.lines()
        .map(|line| {
            let (id, digest) = line.split_once(' ')?;
            (hex(id, 40) && hex(digest, 64)).then_some(())?;
            Some((Oid::from_str(id).ok()?, digest.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use forkbook_records::cache_entry::Secret;

    fn files(pairs: &[(&str, &[u8])]) -> FileMap {
        let map = pairs
            .iter()
            .map(|(p, b)| (p.to_string(), Bytes::new(b.to_vec())));
        map.collect()
    }

    fn blob_id(bytes: &[u8]) -> Oid {
        Oid::hash_object(ObjectType::Blob, bytes).unwrap()
    }

    /// A copy is shared where its SHA-256 is the blob's, read where it is not, and the digests
    /// learned the first time decide the second without git's hash.
    #[test]
    fn a_copy_is_shared_by_its_digest_and_a_different_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(
            dir.path(),
            "blob digests",
            Some(Secret::from_bytes([3; 32])),
        );
        let held = files(&[("same.h", b"int a;\n"), ("edited.h", b"int b;\n")]);
        let digests = FileDigests::of(&held);
        let fork = [("same.h", &b"int a;\n"[..]), ("edited.h", b"int c;\n")];
        let tree = ["fork", "base", "pin"];
        for run in ["learns", "knows"] {
            let mut known = KnownBlobs::open(|| store.clone(), &tree, &digests);
            let mut reads = Vec::new();
            for (path, bytes) in fork {
                let got = known
                    .blob(blob_id(bytes), path, |_| {
                        reads.push(path);
                        Ok(bytes.to_vec())
                    })
                    .unwrap();
                assert_eq!(got.as_slice(), bytes, "{run}: {path}");
                let shared = std::sync::Arc::ptr_eq(&got, &held[path]);
                assert_eq!(shared, path == "same.h", "{run}: {path}");
            }
            assert_eq!(reads, ["edited.h"], "{run}");
            assert_eq!(known.learned, run == "learns", "{run}");
            known.keep();
        }
    }

    #[test]
    fn an_entry_that_is_not_digests_is_a_miss() {
        let id = blob_id(b"x");
        let good = format!("{id} {}\n", "a".repeat(64));
        assert_eq!(parse(good.as_bytes()).unwrap()[&id], "a".repeat(64));
        for bad in [
            format!("{id} {}\n", "A".repeat(64)),
            format!("{id} {}\n", "a".repeat(63)),
            format!("{id}  {}\n", "a".repeat(64)),
            format!("{id}\n"),
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
    }
}
