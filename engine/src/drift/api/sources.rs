//! Files in, facts out: which files of a tree matter, parsing them (on every core), the
//! include closure of the backend, and the upstream and backend models the rules read.

use super::config::ApiConfig;
use super::extract::{self, Source};
use super::facts::{Backend, FileFacts};
use super::macros;
use super::model::Loc;
use super::model::{Decl, DeclKind};
use super::parses::{backend_kept, definitions_kept, read_kept, Parses};
use super::syntax::{self, Prep, StubUse};
use super::uses::{self, Uses};
use crate::paths::normalize;
use crate::FileMap;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// Larger files are generated data, not an API; they are not parsed.
const MAX_FILE_BYTES: usize = 8 << 20;

const HEADER_EXTS: &[&str] = &["h", "hpp", "hh", "hxx", "cuh", "inl", "ipp"];
const SOURCE_EXTS: &[&str] = &["cpp", "cc", "cxx", "cu", "hip"];

pub fn is_header(path: &str) -> bool {
    extension(path).is_some_and(|e| HEADER_EXTS.contains(&e))
}

pub fn is_cpp(path: &str) -> bool {
    extension(path).is_some_and(|e| HEADER_EXTS.contains(&e) || SOURCE_EXTS.contains(&e))
}

fn extension(path: &str) -> Option<&str> {
    let file = path.rsplit('/').next()?;
    file.rsplit_once('.').map(|(_, ext)| ext)
}

/// Whether an upstream file takes part: a header under the header root and outside the
/// skipped folders, or any C++ file of the shared or reference backend folders.
pub fn is_upstream_input(path: &str, cfg: &ApiConfig) -> bool {
    let header =
        is_header(path) && path.starts_with(&cfg.header_root) && !under(path, &cfg.header_skip);
    header
        || (is_cpp(path)
            && (under(path, &cfg.shared_sources) || under(path, &cfg.reference_backends)))
}

/// Whether `path` lies under one of `prefixes`.
fn under(path: &str, prefixes: &[String]) -> bool {
    prefixes.iter().any(|p| path.starts_with(p.as_str()))
}

/// What to blank before parsing `upstream` and `backend`: the configured macros plus those
/// learned from the files' own `#define` lines (see [`macros`]).
pub fn prep(cfg: &ApiConfig, upstream: &[&FileMap], backend: &FileMap, parses: &Parses) -> Prep {
    // Every file's `#define`s, in the files' order, read on all cores.
    let defined = |files: &[(&str, &[u8])]| -> Vec<_> {
        let each = on_all_cores(files, |_, bytes| definitions_kept(bytes, parses));
        each.into_iter().flatten().collect()
    };
    // A file both commits share (the same bytes, see `drift_api`) is read once: the
    // preparation is made of sets, which a second copy of its `#define`s leaves as they are.
    let mut seen = HashSet::new();
    let upstream_inputs: Vec<_> = upstream
        .iter()
        .flat_map(|f| cpp_inputs(f, |p, _| is_upstream_input(p, cfg)))
        .filter(|(_, bytes)| seen.insert((bytes.as_ptr(), bytes.len())))
        .collect();
    let mut defs = defined(&upstream_inputs);
    let backend_defs = defined(&cpp_inputs(backend, |_, _| true));
    let mut stubs = macros::definers(&backend_defs);
    stubs.extend(cfg.stub_macros.clone());
    defs.extend(backend_defs);
    let attributes = defs.iter().filter(|d| macros::is_attribute_like(d));
    let blank = cfg.blank_macros.iter().chain(attributes.map(|d| &d.name));
    let blank: BTreeSet<String> = blank.cloned().collect();
    let statement = defs
        .into_iter()
        .filter(|d| d.function_like)
        .map(|d| d.name)
        .collect();
    Prep {
        blank,
        statement,
        stubs,
    }
}

/// Parses one file: blanking, tree-sitter, declarations, includes and (when asked) uses.
pub fn read(path: &str, bytes: &[u8], prep: &Prep, uses: Option<&mut Uses>) -> FileFacts {
    if bytes.len() > MAX_FILE_BYTES {
        // Counted as one error, so the report's list of unparsed files names it.
        return FileFacts {
            errors: 1,
            ..FileFacts::default()
        };
    }
    let prepared = syntax::prepare(bytes, prep);
    let Some(tree) = syntax::parse(&prepared.text) else {
        return FileFacts::default();
    };
    let root = tree.root_node();
    let src = Source {
        path,
        parsed: &prepared.text,
        original: bytes,
    };
    if let Some(uses) = uses {
        uses::collect(&src, root, uses);
    }
    FileFacts {
        decls: extract::declarations(&src, root),
        includes: extract::includes(&src, root),
        stubs: prepared.stubs,
        errors: syntax::error_count(root),
    }
}

/// Parses many files on all cores (or takes their kept parses), keeping their order.
pub fn read_all(files: &[(&str, &[u8])], prep: &Prep, parses: &Parses) -> Vec<FileFacts> {
    let read = |path: &str, bytes: &[u8]| {
        read_kept(path, bytes, prep, false, parses, |uses| {
            read(path, bytes, prep, uses)
        })
    };
    let parsed = on_all_cores(files, read);
    parsed.into_iter().map(|(facts, _)| facts).collect()
}

/// `read` of each file on all cores, in the files' order.
///
/// Each thread takes the next file from a shared counter, largest files first: a fixed split
/// left one core idle while the other parsed the few big headers (a wave is often a handful of
/// files of very different sizes).
fn on_all_cores<T: Default + Send>(
    files: &[(&str, &[u8])],
    read: impl Fn(&str, &[u8]) -> T + Sync,
) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(files.len());
    if threads <= 1 {
        return files.iter().map(|(p, b)| read(p, b)).collect();
    }
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(files[i].1.len()));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let take = || order.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let work = || {
        let taken = std::iter::from_fn(take);
        taken
            .map(|&i| (i, read(files[i].0, files[i].1)))
            .collect::<Vec<_>>()
    };
    let parsed: Vec<(usize, T)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    // A file whose parse panicked stays unparsed, without shifting the others.
    let mut out: Vec<T> = files.iter().map(|_| T::default()).collect();
    for (i, facts) in parsed {
        out[i] = facts;
    }
    out
}

/// One side of the comparison: the upstream headers and shared backend sources at a commit.
#[derive(Debug, Default)]
pub struct Side {
    pub files: BTreeMap<String, FileFacts>,
    /// Headers the backend reaches through its includes (all headers if it includes none).
    pub visible: BTreeSet<String>,
}

impl Side {
    /// Declarations the backend can see, inside the configured namespace.
    pub fn visible_decls<'a>(
        &'a self,
        namespace: &'a [String],
    ) -> impl Iterator<Item = &'a Decl> + 'a {
        self.visible
            .iter()
            .filter_map(|path| self.files.get(path))
            .flat_map(|f| f.decls.iter())
            .filter(move |d| d.scope.starts_with(namespace))
    }

    /// Definitions in the shared backend sources (they serve every GPU backend).
    pub fn shared_definitions<'a>(
        &'a self,
        cfg: &'a ApiConfig,
    ) -> impl Iterator<Item = &'a Decl> + 'a {
        self.files
            .iter()
            .filter(|(path, _)| !is_header(path) && under(path, &cfg.shared_sources))
            .flat_map(|(_, f)| f.decls.iter())
            .filter(|d| d.has_body)
    }

    /// Visible headers that kept ERROR nodes, with their count.
    pub fn error_files(&self) -> Vec<(String, usize)> {
        let counts = self
            .visible
            .iter()
            .filter_map(|p| Some((p.clone(), self.files.get(p)?.errors)));
        counts.filter(|(_, n)| *n > 0).collect()
    }
}

/// Which files of an upstream side are parsed besides the headers the backend reaches.
#[derive(Clone, Copy, PartialEq)]
pub enum SharedSources {
    /// The shared backend sources too: the rules read their definitions at the new commit.
    Parsed,
    /// Not at the old commit: no rule reads an old definition, and a source's includes lead
    /// nowhere (only headers' do), so parsing them there changed no report.
    Skipped,
}

/// Parses the upstream side: the shared backend sources (when `shared` says so), and the
/// headers the backend reaches through its includes (all headers when it includes none or
/// `follow_includes` is off). Files with the same bytes as in `reuse` take its parse instead of
/// a new one.
pub fn upstream_side(
    files: &FileMap,
    cfg: &ApiConfig,
    prep: &Prep,
    backend: &Backend,
    shared: SharedSources,
    reuse: Option<(&FileMap, &Side)>,
    parses: &Parses,
) -> Side {
    let in_scope = |p: &str| is_upstream_input(p, cfg) && !is_reference(p, cfg);
    let headers: BTreeSet<&String> = files
        .keys()
        .filter(|p| in_scope(p) && is_header(p))
        .collect();
    let follow = cfg.follow_includes && !backend.includes.is_empty();
    let mut side = Side::default();
    let mut wave: BTreeSet<String> = files
        .keys()
        .filter(|p| shared == SharedSources::Parsed && in_scope(p) && !is_header(p))
        .cloned()
        .collect();
    if follow {
        let seeds = backend
            .includes
            .iter()
            .filter_map(|(from, include)| resolve_include(from, include, &headers));
        wave.extend(seeds);
    } else {
        wave.extend(headers.iter().map(|p| p.to_string()));
    }
    // Breadth first: each wave is parsed on all cores, its includes make the next wave.
    while !wave.is_empty() {
        parse_wave(files, prep, reuse, &wave, &mut side, parses);
        let mut next = BTreeSet::new();
        for path in wave.iter().filter(|p| is_header(p)) {
            side.visible.insert(path.clone());
            let parsed = side.files.get(path);
            let includes = parsed.map(|f| f.includes.as_slice()).unwrap_or_default();
            let found = includes
                .iter()
                .filter_map(|include| resolve_include(path, include, &headers));
            next.extend(found.filter(|found| !side.files.contains_key(found)));
        }
        wave = next;
    }
    side
}

fn parse_wave(
    files: &FileMap,
    prep: &Prep,
    reuse: Option<(&FileMap, &Side)>,
    wave: &BTreeSet<String>,
    side: &mut Side,
    parses: &Parses,
) {
    let mut todo: Vec<(&str, &[u8])> = Vec::new();
    for path in wave {
        let Some(bytes) = files.get(path) else {
            continue;
        };
        let unchanged = reuse.filter(|(other, _)| other.get(path) == Some(bytes));
        let same = unchanged.and_then(|(_, parsed)| parsed.files.get(path));
        match same {
            Some(facts) => {
                side.files.insert(path.clone(), facts.clone());
            }
            None => todo.push((path, bytes)),
        }
    }
    for ((path, _), facts) in todo.iter().zip(read_all(&todo, prep, parses)) {
        side.files.insert(path.to_string(), facts);
    }
}

/// Reference backends are parsed on demand (see [`reference_definitions`]).
fn is_reference(path: &str, cfg: &ApiConfig) -> bool {
    under(path, &cfg.reference_backends)
}

/// An include resolves next to the including file first, then from the repository root.
fn resolve_include(from: &str, include: &str, headers: &BTreeSet<&String>) -> Option<String> {
    if include.contains(['<', '"']) {
        return None;
    }
    let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
    // An include that climbs above the repository names no header of it.
    let beside = normalize(&format!("{dir}/{include}"));
    [beside, normalize(include)]
        .into_iter()
        .flatten()
        .find(|c| headers.contains(c))
}

/// The C++ files of `files` that `keep` wants, as parse inputs.
fn cpp_inputs(files: &FileMap, keep: impl Fn(&str, &[u8]) -> bool) -> Vec<(&str, &[u8])> {
    let inputs = files.iter().map(|(p, b)| (p.as_str(), b.as_slice()));
    inputs.filter(|(p, b)| is_cpp(p) && keep(p, b)).collect()
}

/// The backend's model, made once per preparation while a memo scope is alive.
pub fn backend_model(files: &FileMap, prep: &Prep, parses: &Parses) -> Arc<Backend> {
    let inputs = cpp_inputs(files, |_, _| true);
    backend_kept(&inputs, prep, parses, || {
        read_backend(&inputs, prep, parses)
    })
}

fn read_backend(inputs: &[(&str, &[u8])], prep: &Prep, parses: &Parses) -> Backend {
    let mut model = Backend::default();
    let read = |path: &str, bytes: &[u8]| {
        read_kept(path, bytes, prep, true, parses, |uses| {
            read(path, bytes, prep, uses)
        })
    };
    let parsed = on_all_cores(inputs, read);
    for ((path, _), (facts, uses)) in inputs.iter().zip(parsed) {
        model.uses.merge(uses);
        model.decls.extend(facts.decls);
        let at = |s: &StubUse| Loc {
            path: path.to_string(),
            line: s.line,
        };
        model
            .stubs
            .extend(facts.stubs.into_iter().map(|s| (at(&s), s)));
        model
            .includes
            .extend(facts.includes.into_iter().map(|i| (path.to_string(), i)));
        model.files += 1;
        if facts.errors > 0 {
            model.error_files.push((path.to_string(), facts.errors));
        }
    }
    model
}

/// Where the reference backends (other GPU backends, the CPU backend) define each of `wanted`,
/// by qualified name and definition form. Only files that mention a wanted name the way its
/// out-of-line definition must spell it (`Event::error` for a member) are parsed, each once.
pub fn reference_definitions(
    files: &FileMap,
    cfg: &ApiConfig,
    prep: &Prep,
    wanted: &[&Decl],
    parses: &Parses,
) -> HashMap<(String, String), Loc> {
    let needles: BTreeSet<String> = wanted.iter().map(|d| definition_needle(d)).collect();
    // One scan of each file for all the needles at once (one search per needle made this
    // the analysis's largest cost).
    let pattern: Vec<String> = needles
        .iter()
        .filter(|n| !n.is_empty())
        .map(|n| definition_pattern(n))
        .collect();
    let any_needle = (!pattern.is_empty())
        .then(|| regex::bytes::Regex::new(&pattern.join("|")).ok())
        .flatten();
    // A pattern too large to compile falls back to one search per needle (the needle alone,
    // which every file the pattern finds also holds).
    let mentions = |bytes: &[u8]| match &any_needle {
        Some(re) => re.is_match(bytes),
        None => needles.iter().any(|n| contains(bytes, n.as_bytes())),
    };
    let todo = cpp_inputs(files, |p, b| is_reference(p, cfg) && mentions(b));
    let keys: HashSet<(String, String)> = wanted
        .iter()
        .map(|d| (d.key(), d.definition_form()))
        .collect();
    let mut found = HashMap::new();
    for facts in read_all(&todo, prep, parses) {
        for decl in facts.decls.iter().filter(|d| d.has_body) {
            let key = (decl.key(), decl.definition_form());
            if keys.contains(&key) {
                found.entry(key).or_insert_with(|| decl.loc());
            }
        }
    }
    found
}

/// Where a file may define what `needle` names: the needle as a whole word (`error` is not
/// `clear_error`), then its parameter list, after blanks or a comment at most. A definition
/// spells both, so a file without them defines none of the wanted names. The bare names of new
/// functions are short words that longer names hold: on the real overlay (39886de4 to
/// 846d176) the needles alone had 44 reference files parsed, this pattern 11.
fn definition_pattern(needle: &str) -> String {
    let word = needle.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
    let start = if word { r"\b" } else { "" };
    format!(r"(?-u:{start}{}\s*[(/])", regex::escape(needle))
}

/// `Class::name` for a member (its definition must be qualified), `name` for a function.
fn definition_needle(decl: &Decl) -> String {
    match (decl.kind, decl.scope.last()) {
        (DeclKind::Method | DeclKind::Constructor, Some(class)) => {
            format!("{class}::{}", decl.name)
        }
        _ => decl.name.clone(),
    }
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_include_that_climbs_above_the_repository_names_no_header() {
        let (io, utils) = ("io.h".to_string(), "mlx/utils.h".to_string());
        let headers: BTreeSet<&String> = [&io, &utils].into_iter().collect();
        let resolve = |include| resolve_include("mlx/backend/rocm/device.h", include, &headers);
        assert_eq!(resolve("../../utils.h").as_deref(), Some("mlx/utils.h"));
        assert_eq!(resolve("mlx/utils.h").as_deref(), Some("mlx/utils.h"));
        // Four levels up from `mlx/backend/rocm/` is above the root: not the root's `io.h`.
        assert_eq!(resolve("../../../../io.h"), None);
    }
}
