//! Parses kept: in memory while a [`ParseMemo`] scope is alive, and between runs in the drift
//! cache's parse store (one sealed entry per file, see [`Parses`]), so a new pin parses only the
//! files that changed.
//!
//! A file's parse depends on its path (declarations carry it), its bytes, whether its uses are
//! collected, the analysis code, and of the preparation (`syntax::Prep`: the macros to blank)
//! only on the macros whose names the file spells: blanking asks, for each identifier it
//! meets, whether the preparation names it, and nothing else. So a parse's key holds those
//! macros alone ([`spelled_words`]): a pin that defines a macro somewhere re-parses the files
//! that spell its name, not every file.

use super::facts::{Backend, FileFacts};
use super::macros::{self, MacroDef};
use super::syntax::Prep;
use super::uses::Uses;
use crate::{Bytes, FileMap};
use forkbook_records::cache_entry::{Key, KeyBuilder, Store};
use git2::Oid;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Where one analysis keeps its parses between runs, and how many files it parsed.
pub struct Parses<'s> {
    store: Option<&'s Store>,
    made: AtomicUsize,
    /// The blob ids the caller read from its trees, by where the bytes they name live: a file's
    /// id is hashed again only where it is not known (libgit2's collision-detecting SHA-1 cost
    /// `roll` a tenth of its time). The caller's files outlive the analysis, so an address names
    /// one file's bytes throughout.
    known: HashMap<(usize, usize), Oid>,
}

impl<'s> Parses<'s> {
    /// Parses kept in `store` (none kept between runs without one).
    pub fn new(store: Option<&'s Store>) -> Parses<'s> {
        Parses {
            store,
            made: AtomicUsize::new(0),
            known: HashMap::new(),
        }
    }

    /// Knows the blob id in `ids` of each file of `files` (which must outlive these parses).
    pub fn knowing(mut self, files: &FileMap, ids: &BTreeMap<String, Oid>) -> Parses<'s> {
        for (path, bytes) in files {
            if let Some(id) = ids.get(path) {
                self.known.insert(address(bytes), *id);
            }
        }
        self
    }

    /// The blob id of `bytes`: known, or hashed.
    fn id_of(&self, bytes: &[u8]) -> Option<Oid> {
        let known = self.known.get(&address(bytes)).copied();
        known.or_else(|| blob_id(bytes))
    }

    /// How many files were parsed, rather than taken from the memo or the store.
    pub fn made(&self) -> usize {
        self.made.load(Ordering::Relaxed)
    }
}

/// Parses kept by file content while a [`ParseMemo::scope`] is alive: `roll` analyses the drift
/// at many commits whose files are mostly the same blobs, and parses each one once.
///
/// Outside a scope nothing is kept in memory (one analysis parses each file once anyway).
pub struct ParseMemo {
    _private: (),
}

#[derive(Default)]
struct MemoTables {
    scopes: usize,
    /// By the parse's key (see the module doc).
    kept: HashMap<Key, (FileFacts, Uses)>,
    /// Each blob's `#define`s, by blob id (every probe's preparation reads them all).
    macros: HashMap<Oid, Vec<MacroDef>>,
    /// Each blob's words (see [`spelled_words`]), by blob id.
    words: HashMap<Oid, Arc<Vec<String>>>,
    /// The blobs read, by id.
    blobs: HashMap<Oid, Bytes>,
    /// Backend models, by the keys of their files' parses.
    backends: HashMap<Key, Arc<Backend>>,
}

static MEMO: std::sync::Mutex<Option<MemoTables>> = std::sync::Mutex::new(None);

fn memo_tables() -> std::sync::MutexGuard<'static, Option<MemoTables>> {
    MEMO.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl ParseMemo {
    /// Keeps every parse until the returned guard (and every other live one) is dropped.
    pub fn scope() -> ParseMemo {
        let mut tables = memo_tables();
        tables.get_or_insert_with(MemoTables::default).scopes += 1;
        ParseMemo { _private: () }
    }
}

impl Drop for ParseMemo {
    fn drop(&mut self) {
        let mut tables = memo_tables();
        if let Some(t) = tables.as_mut() {
            t.scopes -= 1;
            if t.scopes == 0 {
                *tables = None;
            }
        }
    }
}

fn blob_id(bytes: &[u8]) -> Option<Oid> {
    Oid::hash_object(git2::ObjectType::Blob, bytes).ok()
}

fn address(bytes: &[u8]) -> (usize, usize) {
    (bytes.as_ptr() as usize, bytes.len())
}

/// The blob `id` of `repo`, read once while a scope is alive (every probe of `roll` reads the
/// same headers).
pub fn blob_kept(repo: &git2::Repository, id: Oid) -> Result<Bytes, git2::Error> {
    let kept = |t: &Option<MemoTables>| t.as_ref()?.blobs.get(&id).cloned();
    if let Some(bytes) = kept(&memo_tables()) {
        return Ok(bytes);
    }
    let bytes: Bytes = repo.find_blob(id)?.content().to_vec().into();
    if let Some(tables) = memo_tables().as_mut() {
        tables.blobs.insert(id, bytes.clone());
    }
    Ok(bytes)
}

/// [`macros::definitions`] through the memo when a scope is alive.
pub fn definitions_kept(bytes: &[u8], parses: &Parses) -> Vec<MacroDef> {
    let memo = memo_tables().is_some();
    let Some(id) = memo.then(|| parses.id_of(bytes)).flatten() else {
        return macros::definitions(bytes);
    };
    if let Some(kept) = memo_tables()
        .as_ref()
        .and_then(|t| t.macros.get(&id).cloned())
    {
        return kept;
    }
    let defs = macros::definitions(bytes);
    if let Some(tables) = memo_tables().as_mut() {
        tables.macros.insert(id, defs.clone());
    }
    defs
}

/// `read`'s parse of a file (`sources::read`) through the memo and the store, with the file's
/// own uses when `with_uses` (else empty ones). A parse made here is counted and kept in both.
pub fn read_kept(
    path: &str,
    bytes: &[u8],
    prep: &Prep,
    with_uses: bool,
    parses: &Parses,
    read: impl FnOnce(Option<&mut Uses>) -> FileFacts,
) -> (FileFacts, Uses) {
    let memo = memo_tables().is_some();
    let key = (memo || parses.store.is_some())
        .then(|| parses.id_of(bytes))
        .flatten()
        .map(|id| key(path, id, bytes, prep, with_uses));
    if let Some(key) = &key {
        let in_memo = |t: &Option<MemoTables>| t.as_ref()?.kept.get(key).cloned();
        if let Some(kept) = in_memo(&memo_tables()) {
            return kept;
        }
        if let Some(kept) = parses.store.and_then(|store| load(store, key)) {
            remember(key, &kept);
            return kept;
        }
    }
    parses.made.fetch_add(1, Ordering::Relaxed);
    let mut uses = Uses::default();
    let facts = read(with_uses.then_some(&mut uses));
    let parsed = (facts, uses);
    if let Some(key) = &key {
        if let Some(store) = parses.store {
            save(store, key, &parsed);
        }
        remember(key, &parsed);
    }
    parsed
}

/// The backend's model `build` makes, through the memo when a scope is alive: every probe of
/// `roll` reads the same backend files, and its model is made again only where a file's parse
/// key differs (its preparation names other macros it spells), not cloned file by file.
pub fn backend_kept(
    inputs: &[(&str, &[u8])],
    prep: &Prep,
    parses: &Parses,
    build: impl FnOnce() -> Backend,
) -> Arc<Backend> {
    // The memo's lock is let go before the keys are made (making them takes it).
    let memo = memo_tables().is_some();
    let whole = memo.then(|| {
        let mut whole = KeyBuilder::new("drift backend");
        for (path, bytes) in inputs {
            let id = parses.id_of(bytes)?;
            whole.part(key(path, id, bytes, prep, true).hex());
        }
        Some(whole.finish())
    });
    let Some(whole) = whole.flatten() else {
        return Arc::new(build());
    };
    let kept = |t: &Option<MemoTables>| t.as_ref()?.backends.get(&whole).cloned();
    if let Some(model) = kept(&memo_tables()) {
        return model;
    }
    let model = Arc::new(build());
    if let Some(tables) = memo_tables().as_mut() {
        tables.backends.insert(whole, model.clone());
    }
    model
}

fn remember(key: &Key, parsed: &(FileFacts, Uses)) {
    if let Some(tables) = memo_tables().as_mut() {
        tables.kept.insert(*key, parsed.clone());
    }
}

/// The key of a parse (see the module doc).
fn key(path: &str, id: Oid, bytes: &[u8], prep: &Prep, with_uses: bool) -> Key {
    let mut key = KeyBuilder::new("drift parse");
    key.part(super::store::tool_version())
        .part(path)
        .part(id.as_bytes())
        .part([u8::from(with_uses)]);
    // The words and the preparation's names are sorted alike: one pass along each finds the
    // words it names (a search of every name list for each word cost more than the parse's key
    // was worth).
    let mut blank = Sorted::new(prep.blank.iter());
    let mut statement = Sorted::new(prep.statement.iter());
    let mut stubs = Sorted::new(prep.stubs.keys());
    for word in words_kept(id, bytes).iter() {
        let named = [blank.holds(word), statement.holds(word), stubs.holds(word)];
        if named.contains(&true) {
            key.part(word).part(named.map(u8::from));
        }
    }
    key.finish()
}

/// A sorted list of names asked, in ascending order, whether it holds each word.
struct Sorted<'p, I: Iterator<Item = &'p String>> {
    names: std::iter::Peekable<I>,
}

impl<'p, I: Iterator<Item = &'p String>> Sorted<'p, I> {
    fn new(names: I) -> Self {
        Sorted {
            names: names.peekable(),
        }
    }

    /// Whether the list holds `word`; each word asked must sort after the one asked before.
    fn holds(&mut self, word: &str) -> bool {
        while self.names.next_if(|name| name.as_str() < word).is_some() {}
        self.names.peek().is_some_and(|name| name.as_str() == word)
    }
}

/// [`spelled_words`] through the memo when a scope is alive.
fn words_kept(id: Oid, bytes: &[u8]) -> Arc<Vec<String>> {
    let kept = |t: &Option<MemoTables>| t.as_ref()?.words.get(&id).cloned();
    if let Some(words) = kept(&memo_tables()) {
        return words;
    }
    let words = Arc::new(spelled_words(bytes));
    if let Some(tables) = memo_tables().as_mut() {
        tables.words.insert(id, words.clone());
    }
    words
}

/// Every word blanking can test in `bytes`, sorted, each once: each run of identifier bytes
/// without its leading digits (`0x1F` is tested as `x1F`). Comments, strings and directives
/// are included, so this holds at least the words blanking tests, wherever it resumes.
pub fn spelled_words(bytes: &[u8]) -> Vec<String> {
    let is_word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let runs = bytes.split(|b| !is_word(b));
    let words = runs.map(|run| {
        let start = run.iter().position(|b| !b.is_ascii_digit());
        &run[start.unwrap_or(run.len())..]
    });
    let mut words: Vec<&[u8]> = words.filter(|w| !w.is_empty()).collect();
    words.sort_unstable();
    words.dedup();
    // Identifier bytes are ASCII: every word is UTF-8.
    let text = words
        .into_iter()
        .map(|w| String::from_utf8_lossy(w).into_owned());
    text.collect()
}

/// One kept parse, as its entry holds it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Entry<F, U> {
    facts: F,
    uses: U,
}

fn load(store: &Store, key: &Key) -> Option<(FileFacts, Uses)> {
    let entry: Entry<FileFacts, Uses> = serde_json::from_slice(&store.load(key)?).ok()?;
    Some((entry.facts, entry.uses))
}

/// Keeps a parse; failing to costs the next run its reuse, never this run its result.
fn save(store: &Store, key: &Key, (facts, uses): &(FileFacts, Uses)) {
    if let Ok(json) = serde_json::to_vec(&Entry { facts, uses }) {
        let _ = store.save_unflushed(key, &json);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sorted_list_holds_the_words_it_names_asked_in_order() {
        let names: Vec<String> = ["MLX_API", "NO_GPU", "f"].map(String::from).into();
        let mut sorted = Sorted::new(names.iter());
        let asked = ["A", "MLX_API", "MLX_APIS", "NO_GPU", "a", "f", "g"];
        let held: Vec<bool> = asked.iter().map(|w| sorted.holds(w)).collect();
        assert_eq!(held, [false, true, false, true, false, true, false]);
    }

    #[test]
    fn the_words_are_every_identifier_run_without_its_leading_digits() {
        let words = spelled_words(b"int 0x1F = MLX_API(f) // NO_GPU\n\"s2\" 12 a::b");
        assert_eq!(
            words,
            ["MLX_API", "NO_GPU", "a", "b", "f", "int", "s2", "x1F"]
        );
    }
}
