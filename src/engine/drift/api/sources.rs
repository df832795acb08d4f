//! Files in, facts out: which files of a tree matter, parsing them (on every core), the
//! include closure of the backend, and the upstream and backend models the rules read.

use super::config::ApiConfig;
use super::extract::{self, Source};
use super::macros;
use super::model::{Decl, DeclKind};
use super::syntax::{self, Blanking, StubUse};
use super::uses::{self, Uses};
use crate::engine::FileMap;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What one parsed file holds.
#[derive(Debug, Clone, Default)]
pub struct FileFacts {
    pub decls: Vec<Decl>,
    pub includes: Vec<String>,
    pub stubs: Vec<StubUse>,
    /// ERROR and MISSING nodes left after blanking: how much of the file may have been missed.
    pub errors: usize,
}

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
    let under = |prefixes: &[String]| prefixes.iter().any(|p| path.starts_with(p.as_str()));
    let header = is_header(path) && path.starts_with(&cfg.header_root) && !under(&cfg.header_skip);
    header || (is_cpp(path) && (under(&cfg.shared_sources) || under(&cfg.reference_backends)))
}

/// What to blank before parsing, and the backend's stub macros: the configured ones plus
/// those learned from the files' own `#define` lines (see [`macros`]).
#[derive(Debug, Default)]
pub struct Prep {
    pub blank: BTreeSet<String>,
    /// Function-like macros defined anywhere in the input, blanked in statement position.
    pub statement: BTreeSet<String>,
    /// Stub and definer macros with the members each defines for its argument.
    pub stubs: BTreeMap<String, Vec<String>>,
}

impl Prep {
    pub fn new(cfg: &ApiConfig, upstream: &[&FileMap], backend: &FileMap) -> Prep {
        let mut statement = BTreeSet::new();
        for files in upstream {
            for (_, bytes) in files.iter().filter(|(p, _)| is_upstream_input(p, cfg)) {
                statement.extend(macros::definitions(bytes).into_iter().map(|d| d.name));
            }
        }
        let mut backend_defs = Vec::new();
        for (_, bytes) in backend.iter().filter(|(p, _)| is_cpp(p)) {
            backend_defs.extend(macros::definitions(bytes));
        }
        statement.extend(backend_defs.iter().map(|d| d.name.clone()));
        let mut stubs = macros::definers(&backend_defs);
        for (name, members) in &cfg.stub_macros {
            stubs.insert(name.clone(), members.clone());
        }
        Prep {
            blank: cfg.blank_set(),
            statement,
            stubs,
        }
    }
}

/// Parses one file: blanking, tree-sitter, declarations, includes and (when asked) uses.
pub fn read(path: &str, bytes: &[u8], prep: &Prep, uses: Option<&mut Uses>) -> FileFacts {
    let blanking = Blanking {
        blank: &prep.blank,
        statement: &prep.statement,
        stubs: &prep.stubs,
    };
    let prepared = syntax::prepare(bytes, &blanking);
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

/// Parses many files on all cores, keeping their order.
pub fn read_all(files: &[(&str, &[u8])], prep: &Prep) -> Vec<FileFacts> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let chunk = files.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|(p, b)| read(p, b, prep, None))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
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
            .filter(|(path, _)| {
                !is_header(path)
                    && cfg
                        .shared_sources
                        .iter()
                        .any(|p| path.starts_with(p.as_str()))
            })
            .flat_map(|(_, f)| f.decls.iter())
            .filter(|d| d.has_body)
    }

    pub fn error_nodes(&self) -> usize {
        self.visible
            .iter()
            .filter_map(|p| self.files.get(p))
            .map(|f| f.errors)
            .sum()
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

/// Parses the upstream side, reusing `reuse`'s result for every file with identical bytes.
pub fn upstream_side(
    files: &FileMap,
    cfg: &ApiConfig,
    prep: &Prep,
    reuse: Option<(&FileMap, &Side)>,
) -> Side {
    let mut side = Side::default();
    let mut todo: Vec<(&str, &[u8])> = Vec::new();
    for (path, bytes) in files {
        let in_scope = is_upstream_input(path, cfg) && !is_reference(path, cfg);
        if !in_scope {
            continue;
        }
        let same = reuse.and_then(|(other, parsed)| {
            (other.get(path) == Some(bytes))
                .then(|| parsed.files.get(path))
                .flatten()
        });
        match same {
            Some(facts) => {
                side.files.insert(path.clone(), facts.clone());
            }
            None => todo.push((path, bytes)),
        }
    }
    for ((path, _), facts) in todo.iter().zip(read_all(&todo, prep)) {
        side.files.insert(path.to_string(), facts);
    }
    side
}

/// Reference backends are parsed on demand (see [`reference_definitions`]).
fn is_reference(path: &str, cfg: &ApiConfig) -> bool {
    cfg.reference_backends
        .iter()
        .any(|p| path.starts_with(p.as_str()))
}

/// Marks the headers reachable from the backend's includes.
pub fn compute_visible(side: &mut Side, backend: &Backend, cfg: &ApiConfig) {
    let headers: BTreeSet<&String> = side.files.keys().filter(|p| is_header(p)).collect();
    if !cfg.follow_includes || backend.includes.is_empty() {
        side.visible = headers.into_iter().cloned().collect();
        return;
    }
    let mut queue: Vec<String> = Vec::new();
    for (from, include) in &backend.includes {
        queue.extend(resolve_include(from, include, &headers));
    }
    while let Some(path) = queue.pop() {
        if !side.visible.insert(path.clone()) {
            continue;
        }
        if let Some(facts) = side.files.get(&path) {
            for include in &facts.includes {
                queue.extend(resolve_include(&path, include, &headers));
            }
        }
    }
}

/// An include resolves next to the including file first, then from the repository root.
fn resolve_include(from: &str, include: &str, headers: &BTreeSet<&String>) -> Option<String> {
    let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
    let beside = normalize(&format!("{dir}/{include}"));
    [beside, normalize(include)]
        .into_iter()
        .find(|c| headers.contains(c))
}

fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    parts.join("/")
}

/// The backend: its declarations and definitions, what it uses, and its stubs.
#[derive(Debug, Default)]
pub struct Backend {
    pub decls: Vec<Decl>,
    pub uses: Uses,
    /// Stub macro invocations with the file they are in.
    pub stubs: Vec<(String, StubUse)>,
    /// `(including file, include as written)`.
    pub includes: Vec<(String, String)>,
    pub files: usize,
    pub error_nodes: usize,
    /// Files that kept ERROR nodes, with their count.
    pub error_files: Vec<(String, usize)>,
}

impl Backend {
    /// Free functions the backend declares or defines, by name.
    pub fn free_functions(&self) -> HashMap<&str, Vec<&Decl>> {
        let mut out: HashMap<&str, Vec<&Decl>> = HashMap::new();
        for decl in self.decls.iter().filter(|d| d.kind == DeclKind::Function) {
            out.entry(decl.name.as_str()).or_default().push(decl);
        }
        out
    }
}

pub fn backend_model(files: &FileMap, prep: &Prep) -> Backend {
    let inputs: Vec<(&str, &[u8])> = files
        .iter()
        .filter(|(p, _)| is_cpp(p))
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let chunk = inputs.len().div_ceil(threads).max(1);
    let parts: Vec<Backend> = std::thread::scope(|scope| {
        let handles: Vec<_> = inputs
            .chunks(chunk)
            .map(|part| scope.spawn(move || backend_part(part, prep)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut model = Backend::default();
    for part in parts {
        model.decls.extend(part.decls);
        model.uses.calls.extend(part.uses.calls);
        model.uses.constructs.extend(part.uses.constructs);
        for (name, loc) in part.uses.names {
            let slot = model.uses.names.entry(name).or_insert_with(|| loc.clone());
            if loc < *slot {
                *slot = loc;
            }
        }
        model.stubs.extend(part.stubs);
        model.includes.extend(part.includes);
        model.files += part.files;
        model.error_nodes += part.error_nodes;
        model.error_files.extend(part.error_files);
    }
    model
}

fn backend_part(files: &[(&str, &[u8])], prep: &Prep) -> Backend {
    let mut part = Backend::default();
    for (path, bytes) in files {
        let facts = read(path, bytes, prep, Some(&mut part.uses));
        part.decls.extend(facts.decls);
        part.stubs
            .extend(facts.stubs.into_iter().map(|s| (path.to_string(), s)));
        part.includes
            .extend(facts.includes.into_iter().map(|i| (path.to_string(), i)));
        part.files += 1;
        part.error_nodes += facts.errors;
        if facts.errors > 0 {
            part.error_files.push((path.to_string(), facts.errors));
        }
    }
    part
}

/// Definitions named `name` in the reference backends (other GPU backends, the CPU backend):
/// only files whose bytes mention the name are parsed.
pub fn reference_definitions(
    files: &FileMap,
    cfg: &ApiConfig,
    prep: &Prep,
    name: &str,
) -> Vec<Decl> {
    let needle = name.as_bytes();
    files
        .iter()
        .filter(|(p, _)| is_cpp(p) && is_reference(p, cfg))
        .filter(|(_, b)| b.windows(needle.len()).any(|w| w == needle))
        .flat_map(|(p, b)| read(p, b, prep, None).decls)
        .filter(|d| d.has_body && d.name == name)
        .collect()
}
