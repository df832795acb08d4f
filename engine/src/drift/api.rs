//! Static API drift: what a backend will fail to compile or link against a new upstream
//! commit, predicted from the headers without a compiler.
//!
//! The upstream headers at both commits and the backend's sources are parsed with
//! tree-sitter-cpp (after blanking macros it cannot read, see `syntax`). The rules in
//! `classify` compare the declarations the backend can see (the include closure of its
//! sources) with what it calls, constructs and defines. Each finding names the upstream commit
//! that introduced it ([`history`]); checked-in suppressions ([`suppress`]) mark the ones a
//! person judged harmless.

mod classify;
pub mod config;
mod extract;
mod facts;
pub mod history;
mod index;
pub(crate) mod kind;
mod macros;
mod model;
mod parses;
pub mod report;
mod sources;
pub mod store;
pub mod suppress;
mod syntax;
mod uses;

#[cfg(test)]
mod tests;

pub use config::ApiConfig;
pub use extract::strip_template_args;
pub use history::introduced_by;
pub(crate) use macros::definitions as macro_definitions;
pub(crate) use model::tuple_elements;
pub use model::Loc;
pub use parses::{ParseMemo, Parses};
pub use report::{ApiReport, CommitRef, FileErrors, Finding, Kind, ParseStats};
pub(crate) use sources::prep;
pub use suppress::Suppression;
pub use syntax::squeeze;
pub(crate) use syntax::{children, parse, prepare, reached, Prep, StubUse};
pub use uses::{Spelled, Uses};

use crate::error::{Context, Error, Result};
use crate::FileMap;
use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};

/// The blob ids of the upstream files the analysis reads at a commit (headers under the header
/// root minus the skipped folders, shared backend sources, and reference backends), read from
/// the trees alone (no file contents).
pub fn upstream_ids(repo: &Repository, commit: Oid, cfg: &ApiConfig) -> Result<store::BlobIds> {
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .with_context(|| format!("failed to read commit `{commit}`"))?;
    let mut wanted = store::BlobIds::new();
    let mut refused = None;
    tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
        let name = entry.name().unwrap_or("");
        let path = format!("{dir}{name}");
        // libgit2 walks by recursion: a tree nested past any path's length (a pull request's
        // head can be a revision here) ends the walk before it can end the process.
        if path.len() > forkbook_records::path::MAX_PATH_BYTES {
            refused = forkbook_records::path::refusal_message(&path);
            return TreeWalkResult::Abort;
        }
        match entry.kind() {
            Some(ObjectType::Tree) => {
                let folder = format!("{path}/");
                let relevant =
                    cfg.header_root.starts_with(&folder) || folder.starts_with(&cfg.header_root);
                if relevant {
                    TreeWalkResult::Ok
                } else {
                    TreeWalkResult::Skip
                }
            }
            Some(ObjectType::Blob) if sources::is_upstream_input(&path, cfg) => {
                wanted.insert(path, entry.id());
                TreeWalkResult::Ok
            }
            _ => TreeWalkResult::Ok,
        }
    })
    .or_else(|e| if refused.is_some() { Ok(()) } else { Err(e) })?;
    match refused {
        Some(message) => {
            let commit = crate::text::short_id(&commit.to_string()).to_string();
            Err(Error::new(message).context(format!("in commit `{commit}`")))
        }
        None => Ok(wanted),
    }
}

/// Compares the upstream files at two commits against a backend. Pure: no history, no
/// suppressions (see [`drift_api`] for both).
pub fn analyze(from: &FileMap, to: &FileMap, backend: &FileMap, cfg: &ApiConfig) -> ApiReport {
    analyze_kept(from, to, backend, cfg, &Parses::new(None))
}

/// [`analyze`], each file's parse taken from `parses` where it is kept there.
pub fn analyze_kept(
    from: &FileMap,
    to: &FileMap,
    backend: &FileMap,
    cfg: &ApiConfig,
    parses: &Parses,
) -> ApiReport {
    let prep = sources::prep(cfg, &[from, to], backend, parses);
    let backend_model = sources::backend_model(backend, &prep, parses);
    let side = |files, shared, reuse| {
        sources::upstream_side(files, cfg, &prep, &backend_model, shared, reuse, parses)
    };
    let to_side = side(to, sources::SharedSources::Parsed, None);
    let from_side = side(from, sources::SharedSources::Skipped, Some((to, &to_side)));
    let inputs = classify::Inputs {
        cfg,
        from: &from_side,
        to: &to_side,
        to_files: to,
        backend: &backend_model,
        prep: &prep,
        parses,
    };
    let findings = classify::classify(&inputs);
    let (from_errors, to_errors) = (from_side.error_files(), to_side.error_files());
    let nodes = |list: &[(String, usize)]| list.iter().map(|(_, n)| n).sum();
    ApiReport {
        findings,
        parse: ParseStats {
            from_headers: from_side.visible.len(),
            from_error_nodes: nodes(&from_errors),
            to_headers: to_side.visible.len(),
            to_error_nodes: nodes(&to_errors),
            backend_files: backend_model.files,
            backend_error_nodes: nodes(&backend_model.error_files),
            error_files: error_files([
                (report::Side::From, from_errors),
                (report::Side::To, to_errors),
                (report::Side::Backend, backend_model.error_files.clone()),
            ]),
        },
        ..ApiReport::default()
    }
}

/// What the backend's files include and use, read by the parse [`analyze`] reads them with.
pub struct BackendUses {
    /// `(including file, include as written)`.
    pub includes: Vec<(String, String)>,
    pub uses: Uses,
    /// The names the backend declares or defines itself: its functions, classes and
    /// enumerators, and its macros.
    pub declared: std::collections::BTreeSet<String>,
}

/// The backend's includes and uses, for `drift build --stubs`, which declares the names a
/// missing library header would have given.
pub fn backend_uses(backend: &FileMap, cfg: &ApiConfig) -> BackendUses {
    let parses = Parses::new(None);
    let prep = sources::prep(cfg, &[], backend, &parses);
    let model = sources::backend_model(backend, &prep, &parses);
    let mut declared: std::collections::BTreeSet<String> =
        model.decls.iter().map(|d| d.name.clone()).collect();
    for (path, bytes) in backend.iter() {
        if sources::is_cpp(path) {
            declared.extend(macros::definitions(bytes).into_iter().map(|d| d.name));
        }
    }
    BackendUses {
        includes: model.includes.clone(),
        uses: model.uses.clone(),
        declared,
    }
}

/// Every side's files that kept ERROR nodes, by side and path.
fn error_files(sides: [(report::Side, Vec<(String, usize)>); 3]) -> Vec<FileErrors> {
    let mut out: Vec<FileErrors> = sides
        .into_iter()
        .flat_map(|(side, list)| {
            let file = move |(path, error_nodes)| FileErrors {
                side,
                path,
                error_nodes,
            };
            list.into_iter().map(file)
        })
        .collect();
    out.sort_by(|a, b| (a.side, &a.path).cmp(&(b.side, &b.path)));
    out
}

/// What [`drift_api`] compares besides the two commits.
pub struct DriftInputs<'a> {
    /// The backend's files (repository-relative paths), e.g. the overlay's `mlx/backend/rocm/`.
    pub backend: &'a FileMap,
    /// Files that replace upstream's at the old commit (the overlay's own core headers).
    pub from_overrides: &'a FileMap,
    /// Files that replace upstream's at the new commit.
    pub to_overrides: &'a FileMap,
    pub suppressions: &'a [Suppression],
    /// Where each file's parse is kept between runs (see [`Parses`]): with it, an analysis at
    /// a new pin parses only the files that changed.
    pub parses: Option<&'a forkbook_records::cache_entry::Store>,
}

/// The whole static drift check: collect the upstream files at both commits, lay the
/// overrides over them, analyze, name the commit behind each finding, apply suppressions. With
/// a drift cache `store` (see [`store`]), the analysis made from the same inputs is reused, and
/// this one kept there when there is none.
pub fn drift_api(
    repo: &Repository,
    from: Oid,
    to: Oid,
    inputs: &DriftInputs,
    cfg: &ApiConfig,
    store: Option<&forkbook_records::cache_entry::Store>,
) -> Result<ApiReport> {
    // The ids of what the analysis will parse, overrides included.
    let with_overrides = |commit, overrides| -> Result<store::BlobIds> {
        let mut ids = upstream_ids(repo, commit, cfg)?;
        for (path, bytes) in upstream_inputs(overrides, cfg) {
            ids.insert(path.clone(), store::blob_id(bytes)?);
        }
        Ok(ids)
    };
    let from_ids = with_overrides(from, inputs.from_overrides)?;
    let to_ids = with_overrides(to, inputs.to_overrides)?;
    let backend_ids = store::blob_ids(inputs.backend)?;
    let key = match store {
        Some(kept) => {
            let key = store::key(from, to, &from_ids, &to_ids, &backend_ids, cfg);
            if let Some(mut report) = store::load(kept, &key) {
                report::apply_suppressions(&mut report, inputs.suppressions);
                return Ok(report);
            }
            Some((kept, key))
        }
        None => None,
    };
    // Overridden files are not read from the repository at all, and a blob both commits hold
    // is read once (most are: the new commit's files share their bytes with the old one's).
    let mut read_blobs: std::collections::HashMap<Oid, crate::Bytes> = Default::default();
    let mut read = |commit, ids: &store::BlobIds, overrides: &FileMap| -> Result<FileMap> {
        let mut files = FileMap::new();
        for (path, id) in ids {
            let bytes = match (overrides.get(path), read_blobs.get(id)) {
                (Some(bytes), _) | (None, Some(bytes)) => bytes.clone(),
                (None, None) => {
                    let bytes = parses::blob_kept(repo, *id)
                        .with_context(|| format!("failed to read `{path}` at `{commit}`"))?;
                    read_blobs.insert(*id, bytes.clone());
                    bytes
                }
            };
            files.insert(path.clone(), bytes);
        }
        Ok(files)
    };
    let from_files = read(from, &from_ids, inputs.from_overrides)?;
    let to_files = read(to, &to_ids, inputs.to_overrides)?;
    let parses = Parses::new(inputs.parses)
        .knowing(&from_files, &from_ids)
        .knowing(&to_files, &to_ids)
        .knowing(inputs.backend, &backend_ids);
    let mut report = analyze_kept(&from_files, &to_files, inputs.backend, cfg, &parses);
    report.from = from.to_string();
    report.to = to.to_string();
    fill_history(repo, from, to, &mut report)?;
    if let Some((kept, key)) = key {
        // A cache that cannot be written costs the next run its reuse, not this run its result.
        let _ = store::save(kept, &key, &report);
    }
    report::apply_suppressions(&mut report, inputs.suppressions);
    Ok(report)
}

/// The overrides that replace an upstream file the analysis reads.
fn upstream_inputs<'o>(
    overrides: &'o FileMap,
    cfg: &'o ApiConfig,
) -> impl Iterator<Item = (&'o String, &'o crate::Bytes)> {
    let inputs = overrides.iter();
    inputs.filter(|(path, _)| sources::is_upstream_input(path, cfg))
}

fn fill_history(repo: &Repository, from: Oid, to: Oid, report: &mut ApiReport) -> Result<()> {
    let mut history = history::History::new(repo, from, to)?;
    for finding in &mut report.findings {
        let (to, from) = (&finding.evidence.to_text, &finding.evidence.from_text);
        let mut found = None;
        if let Some((path, text)) = to {
            found = history.introduced(path, text)?;
        }
        if let (None, Some((path, text))) = (&found, from) {
            found = history.removed(path, text)?;
        }
        finding.introduced_by = found;
    }
    Ok(())
}
