//! The one format of a kept result: how a cache names an entry, seals it, and checks it back.
//!
//! Every cache of forkbook (the core merges, the drift analyses, the book's step results) keeps
//! results that a run could make again, so a cache may make a run faster but must never change
//! what it says. Three rules hold that:
//!
//! - **One key builder.** A key is a SHA-256 over the cache's kind and every input, each part
//!   framed by its length ([`KeyBuilder::part`]), so no two lists of inputs give the same bytes
//!   to hash (`["ab", "c"]` and `["a", "bc"]` differ).
//! - **One sealed entry.** An entry is a header naming the format, the kind, the key, the
//!   payload's length and a seal, then the payload. The seal is an HMAC-SHA256, under the
//!   cache's [`Secret`], of the format, the kind, the key and the payload. An entry whose seal,
//!   key, kind or length does not match (a damaged byte, a truncation, an entry copied under
//!   another name, one written by someone without the secret) is a miss: the result is made
//!   again. Reading never panics and never trusts a byte it has not checked.
//! - **One write.** An entry is written with [`crate::atomic::replace`], so a reader sees a
//!   whole entry or the old one.
//!
//! The secret is what makes an entry unforgeable: a digest alone can be recomputed by whoever
//! writes a forged entry (a pull request controls its own checkout), an HMAC cannot without the
//! secret. It lives in `forkbook-cache.key` in the cache's home folder, beside the object
//! cache, and is made from the system's random source the first time it is needed. Where that
//! folder is the checkout's to write, the secret is not a secret: the caller then passes no
//! secret, and a [`Store`] without one keeps and believes nothing.

use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};
use std::io;
use std::path::{Path, PathBuf};

/// Bumped when the entry's framing or sealing changes: an older entry is then a miss.
const FORMAT: &str = "forkbook cache entry 1";

/// The file, in a cache's home folder, that holds its secret.
pub const SECRET_FILE: &str = "forkbook-cache.key";

type Hmac = hmac::Hmac<Sha256>;

/// Builds a [`Key`]: a SHA-256 over the kind and every part, each framed by its length.
#[derive(Clone)]
pub struct KeyBuilder(Sha256);

impl KeyBuilder {
    /// A key of the cache `kind` (`core merges`): keys of two caches never meet.
    pub fn new(kind: &str) -> KeyBuilder {
        let mut builder = KeyBuilder(Sha256::new());
        builder.part(FORMAT).part(kind);
        builder
    }

    /// Adds one input: its length (8 bytes, little-endian), then its bytes.
    pub fn part(&mut self, bytes: impl AsRef<[u8]>) -> &mut KeyBuilder {
        let bytes = bytes.as_ref();
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    pub fn finish(self) -> Key {
        Key(self.0.finalize().into())
    }
}

/// A cache key: what an entry was made from, hashed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Key([u8; 32]);

impl Key {
    /// The key as 64 hex digits: an entry's file name and what its header names.
    pub fn hex(&self) -> String {
        crate::hex::encode(&self.0)
    }

    /// The key an entry's file name spells (64 hex digits), if it spells one.
    pub fn from_hex(text: &str) -> Option<Key> {
        Some(Key(crate::hex::decode(text)?.try_into().ok()?))
    }
}

/// The key that seals a cache's entries. Never shown: `Debug` prints no byte of it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret([u8; 32]);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    pub fn from_bytes(bytes: [u8; 32]) -> Secret {
        Secret(bytes)
    }

    /// The secret of the cache whose home folder is `home` (created if needed): read from
    /// [`SECRET_FILE`], or made from the system's random source and written there (readable by
    /// its owner only) when there is none or it is not one. Two runs making it at once agree:
    /// the first file written wins and the other run reads it.
    pub fn beside(home: &Path) -> io::Result<Secret> {
        let path = home.join(SECRET_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => {
                if let Some(secret) = Secret::parse(&bytes) {
                    return Ok(secret);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        std::fs::create_dir_all(home)?;
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(io::Error::other)?;
        let text = format!("{}\n", crate::hex::encode(&bytes));
        let made = Secret(bytes);
        if path.exists() {
            // Not a secret (damaged): replace it; what it sealed becomes a miss.
            crate::atomic::replace(&path, text.as_bytes())?;
            return Ok(made);
        }
        let mut temp = tempfile::Builder::new()
            .prefix(".forkbook-new-")
            .tempfile_in(home)?;
        io::Write::write_all(&mut temp, text.as_bytes())?;
        temp.as_file().sync_all()?;
        match temp.persist_noclobber(&path) {
            Ok(_) => {
                crate::atomic::sync_dir(home);
                Ok(made)
            }
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => {
                Secret::parse(&std::fs::read(&path)?).ok_or_else(|| {
                    io::Error::other(format!("`{}` holds no cache secret", path.display()))
                })
            }
            Err(e) => Err(e.error),
        }
    }

    fn parse(bytes: &[u8]) -> Option<Secret> {
        let text = std::str::from_utf8(bytes).ok()?;
        let decoded = crate::hex::decode(text.strip_suffix('\n').unwrap_or(text))?;
        Some(Secret(decoded.try_into().ok()?))
    }

    fn mac(&self, kind: &str, key: &Key, payload: &[u8]) -> Hmac {
        let mut mac = <Hmac as KeyInit>::new_from_slice(&self.0).expect("HMAC takes any key");
        for part in [FORMAT.as_bytes(), kind.as_bytes(), &key.0, payload] {
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part);
        }
        mac
    }
}

/// `payload` as an entry of the cache `kind` under `key`, sealed with `secret`.
pub fn seal(secret: &Secret, kind: &str, key: &Key, payload: &[u8]) -> Vec<u8> {
    let tag = secret.mac(kind, key, payload).finalize().into_bytes();
    let mut entry = format!(
        "{FORMAT}\nkind {kind}\nkey {}\nlength {}\nseal {}\n",
        key.hex(),
        payload.len(),
        crate::hex::encode(&tag)
    )
    .into_bytes();
    entry.extend_from_slice(payload);
    entry
}

/// The payload of `entry` if it is a whole entry of the cache `kind` under `key`, sealed with
/// `secret`; `None` for anything else.
pub fn open<'a>(secret: &Secret, kind: &str, key: &Key, entry: &'a [u8]) -> Option<&'a [u8]> {
    let mut rest = entry;
    if header_line(&mut rest, "")? != FORMAT
        || header_line(&mut rest, "kind")? != kind
        || header_line(&mut rest, "key")? != key.hex()
    {
        return None;
    }
    let length: usize = header_line(&mut rest, "length")?.parse().ok()?;
    let tag = crate::hex::decode(header_line(&mut rest, "seal")?)?;
    if rest.len() != length {
        return None;
    }
    secret.mac(kind, key, rest).verify_slice(&tag).ok()?;
    Some(rest)
}

/// The next header line of `rest` (moving past it), without its `label` and one space.
fn header_line<'a>(rest: &mut &'a [u8], label: &str) -> Option<&'a str> {
    let end = rest.iter().position(|&b| b == b'\n')?;
    let text = std::str::from_utf8(&rest[..end]).ok()?;
    *rest = &rest[end + 1..];
    if label.is_empty() {
        return Some(text);
    }
    text.strip_prefix(label)?.strip_prefix(' ')
}

/// A folder of sealed entries of one kind, one file per key.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    kind: &'static str,
    /// `None`: no trusted secret, so nothing is kept or believed.
    secret: Option<Secret>,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>, kind: &'static str, secret: Option<Secret>) -> Store {
        Store {
            dir: dir.into(),
            kind,
            secret,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the entry for `key` lives.
    pub fn path(&self, key: &Key) -> PathBuf {
        self.dir.join(key.hex())
    }

    /// The payload kept under `key`, if a whole entry sealed with this store's secret is there.
    pub fn load(&self, key: &Key) -> Option<Vec<u8>> {
        let secret = self.secret.as_ref()?;
        let entry = std::fs::read(self.path(key)).ok()?;
        open(secret, self.kind, key, &entry).map(<[u8]>::to_vec)
    }

    /// Keeps `payload` under `key` (the folder is made if needed). Without a secret nothing is
    /// written. Failing to keep an entry costs the next run its reuse, never this run its
    /// result, so callers may ignore the error.
    pub fn save(&self, key: &Key, payload: &[u8]) -> io::Result<()> {
        let Some(secret) = &self.secret else {
            return Ok(());
        };
        std::fs::create_dir_all(&self.dir)?;
        crate::atomic::replace(&self.path(key), &seal(secret, self.kind, key, payload))
    }

    /// [`Store::save`] without flushing the entry to disk, for a cache of many small entries
    /// (the drift analysis keeps one per parsed file), where a flush each costs more than the
    /// entries are worth after a crash. The rename still shows a reader the whole entry or none,
    /// and one a crash tore fails its seal: a miss.
    pub fn save_unflushed(&self, key: &Key, payload: &[u8]) -> io::Result<()> {
        let Some(secret) = &self.secret else {
            return Ok(());
        };
        std::fs::create_dir_all(&self.dir)?;
        let mut temp = tempfile::Builder::new()
            .prefix(".forkbook-new-")
            .tempfile_in(&self.dir)?;
        io::Write::write_all(&mut temp, &seal(secret, self.kind, key, payload))?;
        temp.persist(self.path(key)).map_err(|e| e.error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(parts: &[&str]) -> Key {
        let mut builder = KeyBuilder::new("test");
        for part in parts {
            builder.part(part);
        }
        builder.finish()
    }

    const SECRET: Secret = Secret([7; 32]);

    #[test]
    fn framed_parts_never_collide() {
        assert_ne!(key(&["ab", "c"]), key(&["a", "bc"]));
        assert_ne!(key(&["a", ""]), key(&["a"]));
        assert_ne!(key(&[]), key(&[""]));
        assert_eq!(key(&["a", "b"]), key(&["a", "b"]));
        let other_kind = KeyBuilder::new("other").finish();
        assert_ne!(other_kind, KeyBuilder::new("test").finish());
        assert_eq!(key(&["x"]).hex().len(), 64);
        assert_eq!(Key::from_hex(&key(&["x"]).hex()), Some(key(&["x"])));
        assert_eq!(Key::from_hex("00"), None);
    }

    #[test]
    fn a_sealed_entry_opens_and_every_damaged_byte_is_a_miss() {
        let k = key(&["inputs"]);
        let entry = seal(&SECRET, "test", &k, b"payload\n\xff");
        assert_eq!(
            open(&SECRET, "test", &k, &entry),
            Some(&b"payload\n\xff"[..])
        );
        for at in 0..entry.len() {
            for flip in [0x01, 0x80] {
                let mut damaged = entry.clone();
                damaged[at] ^= flip;
                assert_eq!(open(&SECRET, "test", &k, &damaged), None, "byte {at}");
            }
        }
        for len in 0..entry.len() {
            assert_eq!(open(&SECRET, "test", &k, &entry[..len]), None, "cut {len}");
        }
        let longer = [&entry[..], b"x"].concat();
        assert_eq!(open(&SECRET, "test", &k, &longer), None);
        assert_eq!(open(&SECRET, "test", &key(&["other"]), &entry), None);
        assert_eq!(open(&SECRET, "other", &k, &entry), None);
        assert_eq!(open(&Secret([8; 32]), "test", &k, &entry), None);
    }

    #[test]
    fn an_entry_forged_without_the_secret_is_a_miss() {
        let k = key(&["inputs"]);
        // What a forger can write: the right header and a digest of the payload.
        let digest = crate::hex::encode(&Sha256::digest(b"forged"));
        let forged = format!(
            "{FORMAT}\nkind test\nkey {}\nlength 6\nseal {digest}\nforged",
            k.hex()
        );
        assert_eq!(open(&SECRET, "test", &k, forged.as_bytes()), None);
        let by_another_cache = seal(&Secret([9; 32]), "test", &k, b"forged");
        assert_eq!(open(&SECRET, "test", &k, &by_another_cache), None);
    }

    #[test]
    fn a_store_keeps_entries_and_without_a_secret_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let k = key(&["a"]);
        let store = Store::new(dir.path().join("kept"), "test", Some(SECRET));
        assert_eq!(store.load(&k), None);
        store.save(&k, b"result").unwrap();
        assert_eq!(store.load(&k).as_deref(), Some(&b"result"[..]));
        std::fs::write(store.path(&k), b"garbage").unwrap();
        assert_eq!(store.load(&k), None);
        let untrusted = Store::new(dir.path().join("other"), "test", None);
        untrusted.save(&k, b"result").unwrap();
        assert!(!dir.path().join("other").exists());
        assert_eq!(untrusted.load(&k), None);
    }

    #[test]
    fn the_secret_is_made_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let first = Secret::beside(&home).unwrap();
        assert_eq!(Secret::beside(&home).unwrap(), first);
        let path = home.join(SECRET_FILE);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "readable by its owner only: {mode:o}");
        std::fs::write(&path, "not a secret\n").unwrap();
        let remade = Secret::beside(&home).unwrap();
        assert_ne!(remade, first);
        assert_eq!(Secret::beside(&home).unwrap(), remade);
        assert_eq!(format!("{first:?}"), "Secret(..)");
    }
}
