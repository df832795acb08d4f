//! Draft fixes from drift: for each `drift api` finding with a mechanical remedy, the edit of the
//! backend a person would make first, written as a local fix in the same form as a hand-made one
//! (a patch through `fix add`'s machinery, a register entry with `state: retarget-only`, the
//! introducing commit as its `cause`) and a `draft` mark that fails the gate until a person
//! confirms it (`forkbook fix confirm N`) or replaces it.
//!
//! The remedies, each found in the backend or in upstream's other backends, never invented:
//! - a new primitive with no `eval_gpu`: the backend's own stub macro for that `eval_gpu` form
//!   (one of `[drift.api] stub_macros`, `NO_GPU(Name)` by default), beside the stub of the
//!   nearest primitive upstream declares before it;
//! - a member every backend must define: a definition with the signature the other backends
//!   write, after the backend's last definition of the same class, whose body throws as the
//!   backend's stubs do; the other backends' body is quoted in a comment;
//! - a definition whose declaration changed its parameters: the definition's parameter list
//!   rewritten to the new declaration, keeping the backend's own text for every parameter that
//!   stays;
//! - a structured binding of a tuple that grew: the binding widened with a new, unused name at
//!   the new element's position;
//! - anything else: no draft, and the finding says why.

mod cpp;
pub mod record;

pub use record::{
    answers, confirm, drift_api_drafts, write_drafts, Answer, CONFIRMED_KEY, DRAFT_KEY,
};

use super::api::{ApiReport, Finding, Kind, Loc};
use crate::cache::Cache;
use crate::FileMap;
use git2::Oid;
use serde::Serialize;
use std::collections::BTreeMap;

/// A draft (or what a step towards one finds), or why there is none.
type Drafting<T = Draft> = std::result::Result<T, String>;

crate::drift::api::kind::named_enum! {
    /// What a draft does.
    pub enum Remedy {
        /// The backend's stub macro for a new primitive.
        Stub = "stub",
        /// A definition shaped like the other backends', its body a stub.
        StubDefinition = "stub-definition",
        /// A definition's parameter list brought to the new declaration.
        ParameterList = "parameter-list",
        /// A structured binding widened to the tuple's new size.
        WidenedBinding = "widened-binding",
    }
}

/// One drafted edit of one backend file.
#[derive(Debug, Clone, Serialize)]
pub struct Draft {
    pub kind: Kind,
    pub symbol: String,
    pub remedy: Remedy,
    pub path: String,
    /// 1-based line of the edit in the edited file.
    pub line: usize,
    /// The fix's title.
    pub title: String,
    /// Why the fix exists, for the register's prose.
    pub why: String,
    /// What a person still has to judge (a stub's behaviour, an ambiguous position).
    pub caveat: Option<String>,
    /// The upstream commit that introduced the finding.
    pub cause: Option<String>,
    /// The file after the edit.
    #[serde(skip)]
    pub content: Vec<u8>,
}

/// A finding with no mechanical remedy.
#[derive(Debug, Clone, Serialize)]
pub struct NoDraft {
    pub kind: Kind,
    pub symbol: String,
    pub reason: String,
}

/// The drafts for a report's findings.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DraftPlan {
    pub drafts: Vec<Draft>,
    pub without: Vec<NoDraft>,
}

/// What drafting may read besides the backend: upstream's files at the candidate, read from
/// the object cache, and the backend's stub macros as `[drift.api] stub_macros` names them
/// (each with the members it defines), the same table the analysis reads stubs by.
pub struct CacheUpstream<'a> {
    pub cache: &'a Cache,
    pub commit: Oid,
    pub stub_macros: &'a BTreeMap<String, Vec<String>>,
}

impl CacheUpstream<'_> {
    /// The file at the candidate pin.
    fn file(&self, path: &str) -> Option<Vec<u8>> {
        self.cache.read(self.commit, path).ok().flatten()
    }

    /// Every file under `prefix` at the candidate pin.
    fn files_under(&self, prefix: &str) -> FileMap {
        self.cache
            .files_under(self.commit, prefix)
            .unwrap_or_default()
    }
}

/// The other backends whose definitions a drafted one is shaped like, in order of preference.
pub const REFERENCE_BACKENDS: &[&str] = &[
    "mlx/backend/no_gpu/",
    "mlx/backend/cuda/",
    "mlx/backend/metal/",
];

/// Plans one draft per finding that has a mechanical remedy, each on the backend as the earlier
/// drafts leave it (two stubs in one file come out as two drafts, in order).
pub fn plan(report: &ApiReport, backend: &FileMap, upstream: &CacheUpstream) -> DraftPlan {
    let mut files = backend.clone();
    let mut out = DraftPlan::default();
    for finding in report.live() {
        match draft_one(finding, &files, upstream) {
            Ok(draft) => {
                files.insert(draft.path.clone(), draft.content.clone().into());
                out.drafts.push(draft);
            }
            Err(reason) => out.without.push(NoDraft {
                kind: finding.kind,
                symbol: finding.symbol.clone(),
                reason,
            }),
        }
    }
    out
}

fn draft_one(finding: &Finding, files: &FileMap, upstream: &CacheUpstream) -> Drafting {
    match finding.kind {
        Kind::MissingEvalGpu => stub_eval_gpu(finding, files, upstream),
        Kind::MissingBackendDefinition => stub_definition(finding, files, upstream),
        Kind::ChangedSignature => {
            let (loc, text) = backend_file(finding, files, "the finding names no backend place")?;
            if is_definition_at(&text, loc.line, last_name(&finding.symbol)) {
                parameter_list(finding, loc, &text)
            } else {
                widen_binding(finding, loc, &text)
            }
        }
        Kind::ConstructorChanged => Err(
            "no draft: a constructor's new arguments carry values only a person can choose".into(),
        ),
        Kind::HiddenByNewDeclaration => Err(
            "no draft: which declaration the call means (qualify it, or rename the backend's) is a choice"
                .into(),
        ),
        Kind::RemovedDeclaration => Err(
            "no draft: what replaces a removed declaration is upstream's design, not a mechanical edit"
                .into(),
        ),
    }
}

/// The backend place `finding` names and its file's text; `missing` says why there is no draft
/// when it names none.
fn backend_file<'f>(
    finding: &'f Finding,
    files: &FileMap,
    missing: &str,
) -> Drafting<(&'f Loc, String)> {
    let loc = finding.backend.as_ref().ok_or(missing)?;
    Ok((loc, text_of(files, &loc.path)?))
}

fn text_of(files: &FileMap, path: &str) -> Drafting<String> {
    let bytes = files
        .get(path)
        .ok_or_else(|| format!("no draft: the backend has no `{path}`"))?;
    String::from_utf8(bytes.to_vec()).map_err(|_| format!("no draft: `{path}` is not UTF-8"))
}

/// `mlx::core::Event::error` -> `error`.
fn last_name(symbol: &str) -> &str {
    symbol.rsplit("::").next().unwrap_or(symbol)
}

/// `mlx::core::Event::error` -> `Event` (the enclosing class or namespace).
fn owner_name(symbol: &str) -> &str {
    symbol.rsplit("::").nth(1).unwrap_or("")
}

/// Byte offset of the start of 1-based `line`.
fn line_start(text: &str, line: usize) -> usize {
    text.split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum()
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Whether the statement at `line` defines `name` (its parameter list is followed by a body).
fn is_definition_at(text: &str, line: usize, name: &str) -> bool {
    let span = cpp::param_span(text, name, line_start(text, line));
    span.is_some_and(|span| {
        line_of(text, span.start) <= line + 1 && body_open(text, span.end + 1).is_some()
    })
}

/// The `{` that opens a body at or after byte `from`, when a `{` comes before any `;`.
fn body_open(text: &str, from: usize) -> Option<usize> {
    let at = from + text[from..].find(['{', ';'])?;
    text[at..].starts_with('{').then_some(at)
}

/// Each line of `text` (its line break kept) with the byte offset it starts at.
fn lines_at(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_inclusive('\n').scan(0, |offset, line| {
        let here = *offset;
        *offset += line.len();
        Some((here, line))
    })
}

/// The lines of `text` that start at the first column with code, where an out-of-line
/// definition starts, with their offsets.
fn first_column_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    lines_at(text).filter(|(_, line)| !line.starts_with([' ', '\t', '/', '#', '}']))
}

/// Lines indented like the line at byte `at`.
fn indent_at(text: &str, at: usize) -> String {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    text[start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A new primitive: the backend's stub macro, beside its siblings.
// ---------------------------------------------------------------------------------------------

/// A stub macro invocation found in a backend file: `NO_GPU(Name)` at 0-based line `line`.
struct StubLine {
    macro_name: String,
    class: String,
    line: usize,
}

/// The lines of `text` that invoke one of the configured stub macros (`stub_macros`' names) on
/// a class name.
fn stub_lines(text: &str, stub_macros: &BTreeMap<String, Vec<String>>) -> Vec<StubLine> {
    let stub = |(line, text): (usize, &str)| {
        let (macro_name, rest) = text.trim().split_once('(')?;
        let class = rest[..rest.find(')')?].trim();
        let ok = stub_macros.contains_key(macro_name.trim_end())
            && !class.is_empty()
            && class.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        ok.then(|| StubLine {
            macro_name: macro_name.trim_end().to_string(),
            class: class.to_string(),
            line,
        })
    };
    text.lines().enumerate().filter_map(stub).collect()
}

/// The `#define` of `macro_name` in `text`, continuation lines joined.
fn macro_definition(text: &str, macro_name: &str) -> Option<String> {
    let mut lines = text.lines();
    let defines = |rest: &str| rest.trim_start().starts_with(&format!("{macro_name}("));
    let first = lines.by_ref().find(|line| {
        line.trim_start()
            .strip_prefix("#define")
            .is_some_and(defines)
    })?;
    let mut body = first.trim_end_matches('\\').to_string();
    let mut continued = first.trim_end().ends_with('\\');
    while continued {
        let Some(next) = lines.next() else { break };
        continued = next.trim_end().ends_with('\\');
        body.push(' ');
        body.push_str(next.trim_end().trim_end_matches('\\'));
    }
    Some(body)
}

/// The parameter types of the first `eval_gpu(..)` in `text`.
fn eval_gpu_form(text: &str) -> Option<Vec<String>> {
    let span = cpp::param_span(text, "eval_gpu", 0)?;
    Some(
        cpp::split_top_level(&text[span])
            .iter()
            .map(|p| cpp::param_type(p))
            .collect(),
    )
}

/// A draft of `remedy` for `finding`, editing `path` into `content`; the caller says where, why
/// and what is left to judge.
fn draft_of(finding: &Finding, remedy: Remedy, path: &str, content: String) -> Draft {
    Draft {
        kind: finding.kind,
        symbol: finding.symbol.clone(),
        remedy,
        path: path.to_string(),
        line: 0,
        title: String::new(),
        why: String::new(),
        caveat: None,
        cause: finding.introduced_by.as_ref().map(|c| c.sha.clone()),
        content: content.into_bytes(),
    }
}

fn stub_eval_gpu(finding: &Finding, files: &FileMap, upstream: &CacheUpstream) -> Drafting {
    let class = owner_name(&finding.symbol).to_string();
    let missing = "no draft: the backend has no stub list to put a stub in";
    let (loc, text) = backend_file(finding, files, missing)?;
    let (_, class_text) = finding
        .evidence
        .to_text
        .clone()
        .ok_or("no draft: upstream's declaration of the primitive was not kept")?;
    let wanted =
        eval_gpu_form(&class_text).ok_or("no draft: the primitive's `eval_gpu` was not found")?;
    let stubs = stub_lines(&text, upstream.stub_macros);
    let macro_name = stub_macro(&text, &stubs, files, &wanted, &loc.path)?;
    let (insert_line, sibling) = stub_place(finding, upstream, &stubs, &class, &macro_name);
    let stub = format!("{macro_name}({class})\n");
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    lines.insert(insert_line.min(lines.len()), &stub);
    let content = lines.concat();
    let beside = sibling
        .map(|s| {
            format!(", beside `{s}`'s stub (the nearest primitive upstream declares next to it)")
        })
        .unwrap_or_default();
    Ok(Draft {
        line: insert_line + 1,
        title: format!("Draft: stub {class} on the backend with {macro_name}"),
        why: format!(
            "Upstream added the `{class}` primitive, which declares `eval_gpu`; the backend neither defined nor stubbed it, so the library would not link (`drift api`: missing-eval-gpu). Drafted by forkbook: `{macro_name}({class})` in `{}`{beside}, the backend's own stub for this `eval_gpu` form; it throws when `{class}` is scheduled on the GPU.",
            loc.path
        ),
        caveat: Some(format!(
            "a stub: `{class}` has no kernel on this backend; port one if it is used on the GPU"
        )),
        ..draft_of(finding, Remedy::Stub, &loc.path, content)
    })
}

/// The backend's macro that writes exactly the `eval_gpu` of form `wanted` and nothing else,
/// defined in the stub file `text` (at `path`) or in a header of the backend.
fn stub_macro(
    text: &str,
    stubs: &[StubLine],
    files: &FileMap,
    wanted: &[String],
    path: &str,
) -> Drafting<String> {
    let mut macros: Vec<&str> = stubs.iter().map(|s| s.macro_name.as_str()).collect();
    macros.sort();
    macros.dedup();
    let found = macros.into_iter().find(|m| {
        let definition = macro_definition(text, m).or_else(|| {
            files
                .values()
                .find_map(|b| macro_definition(&String::from_utf8_lossy(b), m))
        });
        definition.is_some_and(|def| {
            eval_gpu_form(&def).as_deref() == Some(wanted)
                && cpp::param_span(&def, "use_fallback", 0).is_none()
        })
    });
    found.map(str::to_string).ok_or_else(|| {
        format!(
            "no draft: no stub macro in `{path}` writes `eval_gpu({})`",
            wanted.join(", ")
        )
    })
}

/// Where the stub of `class` goes (0-based line) and the primitive it goes beside: after the
/// stub of the nearest primitive declared before it upstream, else before the nearest after it,
/// else after the last stub written with `macro_name`.
fn stub_place(
    finding: &Finding,
    upstream: &CacheUpstream,
    stubs: &[StubLine],
    class: &str,
    macro_name: &str,
) -> (usize, Option<String>) {
    let declared: Vec<String> = finding
        .to
        .as_ref()
        .and_then(|to| upstream.file(&to.path))
        .map(|bytes| class_names(&String::from_utf8_lossy(&bytes)))
        .unwrap_or_default();
    let stubbed = |name: &String| stubs.iter().find(|s| s.class == *name);
    if let Some(at) = declared.iter().position(|c| c == class) {
        if let Some(s) = declared[..at].iter().rev().find_map(stubbed) {
            return (s.line + 1, Some(s.class.clone()));
        }
        if let Some(s) = declared[at + 1..].iter().find_map(stubbed) {
            return (s.line, Some(s.class.clone()));
        }
    }
    // After the last stub written with `macro_name`.
    let same_macro = stubs.iter().filter(|s| s.macro_name == macro_name);
    (same_macro.map(|s| s.line + 1).max().unwrap_or(1), None)
}

/// Names of the classes a header defines, in order (`class X : public Y {`).
fn class_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l
                .strip_prefix("class ")
                .or_else(|| l.strip_prefix("struct "))?;
            let rest = rest.trim_start().strip_prefix("MLX_API ").unwrap_or(rest);
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let tail = rest[name.len()..].trim_start();
            (!name.is_empty() && (tail.starts_with(':') || tail.starts_with('{'))).then_some(name)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A member every backend defines: a definition shaped like the other backends', a stub body.
// ---------------------------------------------------------------------------------------------

/// Where a reference backend defines `Owner::name`: (path, signature up to `{`, body).
fn reference_definition(
    upstream: &CacheUpstream,
    owner: &str,
    name: &str,
) -> Option<(String, String, String)> {
    let qualified = format!("{owner}::{name}");
    for prefix in REFERENCE_BACKENDS {
        for (path, bytes) in upstream.files_under(prefix) {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            for (here, line) in first_column_lines(&text) {
                let Some(at) = line.find(&format!("{qualified}(")) else {
                    continue;
                };
                let before = &line[..at];
                if before.contains('=') || before.contains("return") {
                    continue;
                }
                let Some(span) = cpp::param_span(&text, &qualified, here) else {
                    continue;
                };
                let Some(open) = body_open(&text, span.end + 1) else {
                    continue;
                };
                let close = cpp::matching(&text, open)?;
                let signature = text[here..open].trim_end().to_string();
                let body = text[open + 1..close].trim().to_string();
                return Some((path, signature, body));
            }
        }
    }
    None
}

fn stub_definition(finding: &Finding, files: &FileMap, upstream: &CacheUpstream) -> Drafting {
    let name = last_name(&finding.symbol);
    let owner = owner_name(&finding.symbol);
    let loc = finding
        .backend
        .as_ref()
        .ok_or("no draft: the backend defines nothing of the same class to put it beside")?;
    let (ref_path, signature, body) = reference_definition(upstream, owner, name)
        .ok_or_else(|| {
            format!("no draft: no other backend ({}) defines `{owner}::{name}` out of line to shape it like", REFERENCE_BACKENDS.join(", "))
        })?;
    let text = text_of(files, &loc.path)?;
    let insert_at = after_last_member(&text, owner).ok_or_else(|| {
        format!(
            "no draft: `{}` defines no member of `{owner}` to put the definition beside",
            loc.path
        )
    })?;
    // The body and the path are other people's text: quoted so that neither can leave its comment.
    let quoted = cpp::comment_lines("//   ", &body);
    let source = cpp::comment_lines("// ", &format!("backends define it as ({ref_path}):"));
    let message = cpp::string_literal(&format!(
        "{owner}::{name} has no implementation on this backend yet."
    ));
    let definition = format!(
        "\n// Drafted by forkbook (drift api: missing-backend-definition): a stub. The other\n{source}\n{quoted}\n{signature} {{\n  throw std::runtime_error({message});\n}}\n"
    );
    let (before, after) = text.split_at(insert_at);
    let content = with_include(&format!("{before}{definition}{after}"), "stdexcept");
    let line = line_of(&content, content.find(&signature).unwrap_or(0));
    Ok(Draft {
        line,
        title: format!("Draft: define {owner}::{name} on the backend (a stub)"),
        why: format!(
            "Upstream declares `{owner}::{name}`, which every backend must define; this backend did not, so the library would not link (`drift api`: missing-backend-definition). Drafted by forkbook: a definition with the signature `{ref_path}` writes, after the backend's last `{owner}` member in `{}`; its body throws, and the other backend's body is quoted above it.",
            loc.path
        ),
        caveat: Some(format!(
            "a stub that throws: give `{owner}::{name}` a real body (see `{ref_path}`) before anything calls it"
        )),
        ..draft_of(finding, Remedy::StubDefinition, &loc.path, content)
    })
}

/// The offset just after the last out-of-line definition of a member of `owner` in `text` (the
/// line that closes its body), where a new member's definition goes.
fn after_last_member(text: &str, owner: &str) -> Option<usize> {
    let member = format!("{owner}::");
    let members = first_column_lines(text).filter(|(_, line)| line.contains(&member));
    let closes = members.filter_map(|(here, _)| cpp::matching(text, body_open(text, here)?));
    let line_end = |close: usize| {
        text[close..]
            .find('\n')
            .map_or(text.len(), |n| close + n + 1)
    };
    closes.map(line_end).last()
}

/// `text` with `#include <header>` after its last `#include` unless it includes it already.
fn with_include(text: &str, header: &str) -> String {
    if text.contains(&format!("<{header}>")) {
        return text.to_string();
    }
    let at = lines_at(text)
        .filter(|(_, line)| line.trim_start().starts_with("#include"))
        .last()
        .map_or(0, |(here, line)| here + line.len());
    format!("{}#include <{header}>\n{}", &text[..at], &text[at..])
}

// ---------------------------------------------------------------------------------------------
// A definition whose declaration changed: its parameter list brought to the new declaration.
// ---------------------------------------------------------------------------------------------

/// Pairs `old[i]` with `new[j]` by equal text, keeping order (longest common subsequence;
/// ties go to the earliest pairing). Returns for each new item the old index it keeps.
fn align(old: &[String], new: &[String]) -> Vec<Option<usize>> {
    let (n, m) = (old.len(), new.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = vec![None; m];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if old[i] == new[j] && lcs[i][j] == lcs[i + 1][j + 1] + 1 {
            out[j] = Some(i);
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Whether another alignment with as many pairs exists (two equal types side by side).
fn ambiguous(old: &[String], new: &[String]) -> bool {
    let forward = align(old, new);
    let rev = |v: &[String]| v.iter().rev().cloned().collect::<Vec<_>>();
    let backward: Vec<Option<usize>> = align(&rev(old), &rev(new))
        .into_iter()
        .rev()
        .map(|o| o.map(|i| old.len() - 1 - i))
        .collect();
    forward != backward
}

/// What a draft over a changed declaration starts from: the symbol's last name, and upstream's
/// declaration text at both commits.
fn declaration_change(finding: &Finding) -> Drafting<(&str, &str, &str)> {
    let (Some((_, old_decl)), Some((_, new_decl))) =
        (&finding.evidence.from_text, &finding.evidence.to_text)
    else {
        return Err("no draft: upstream's declarations at both commits were not kept".into());
    };
    Ok((last_name(&finding.symbol), old_decl, new_decl))
}

/// The definition at `loc` of the backend file `text` brought to its declaration's new
/// parameters.
fn parameter_list(finding: &Finding, loc: &Loc, text: &str) -> Drafting {
    let (name, old_decl, new_decl) = declaration_change(finding)?;
    let (old, new) = changed_parameters(name, old_decl, new_decl)?;
    let (old_types, new_types) = (parameter_types(&old), parameter_types(&new));
    let start = line_start(text, loc.line);
    let span = cpp::param_span(text, name, start)
        .ok_or_else(|| format!("no draft: the definition at {loc} was not found"))?;
    let defined = cpp::split_top_level(&text[span.clone()]);
    if parameter_types(&defined) != old_types {
        return Err(format!(
            "no draft: the definition at {loc} does not repeat the old declaration's parameters"
        ));
    }
    let kept = align(&old_types, &new_types);
    let written: Vec<String> = new
        .iter()
        .zip(&kept)
        .map(|(p, k)| match k {
            Some(i) => defined[*i].clone(),
            None => cpp::strip_default(p),
        })
        .collect();
    let list = parameter_text(text, span.clone(), &written);
    let content = format!("{}{list}{}", &text[..span.start], &text[span.end..]);
    let added: Vec<String> = new
        .iter()
        .zip(&kept)
        .filter(|(_, k)| k.is_none())
        .map(|(p, _)| format!("`{}`", cpp::squeeze(&cpp::strip_default(p))))
        .collect();
    let removed = old.len() + added.len() > new.len();
    let owner = owner_name(&finding.symbol);
    let caveat = parameter_caveat(&added, removed, ambiguous(&old_types, &new_types));
    Ok(Draft {
        line: loc.line,
        title: format!("Draft: bring the backend's {owner}::{name} to its new parameters"),
        why: format!(
            "Upstream changed the parameters of `{}`; the backend's definition at `{loc}` still had the old list, so it no longer matched the declaration (`drift api`: changed-signature). Drafted by forkbook: the definition's parameter list follows the new declaration, each parameter that stays as the backend wrote it, {} added.",
            finding.symbol,
            if added.is_empty() { "none".to_string() } else { added.join(", ") }
        ),
        caveat: Some(caveat),
        ..draft_of(finding, Remedy::ParameterList, &loc.path, content)
    })
}

/// What a person still judges in a parameter-list draft: the body ignores the `added`
/// parameters, uses of a `removed` one must go, and an `ambiguous` alignment.
fn parameter_caveat(added: &[String], removed: bool, ambiguous: bool) -> String {
    let mut caveat = format!(
        "the body is unchanged: it ignores {} (the new parameter's meaning is upstream's; see the introducing commit)",
        if added.is_empty() { "nothing new".to_string() } else { added.join(", ") }
    );
    if removed {
        caveat.push_str("; a removed parameter's uses in the body must go too");
    }
    if ambiguous {
        caveat.push_str("; two parameters have the same type, so check which one is new");
    }
    caveat
}

/// The types of parameters as declared.
fn parameter_types(params: &[String]) -> Vec<String> {
    params.iter().map(|p| cpp::param_type(p)).collect()
}

/// Two declarations' parameters (old, new), where only the parameters' types changed: a changed
/// return type or unchanged types have no draft.
fn changed_parameters(
    name: &str,
    old_decl: &str,
    new_decl: &str,
) -> Drafting<(Vec<String>, Vec<String>)> {
    let params = |text: &str| -> Option<Vec<String>> {
        let span = cpp::param_span(text, name, 0)?;
        Some(cpp::split_top_level(&text[span]))
    };
    let (old, new) = (
        params(old_decl).ok_or("no draft: the old declaration's parameters were not found")?,
        params(new_decl).ok_or("no draft: the new declaration's parameters were not found")?,
    );
    let (old_types, new_types) = (parameter_types(&old), parameter_types(&new));
    if cpp::return_type(old_decl, name) != cpp::return_type(new_decl, name) {
        return Err("no draft: the return type changed too, which the body must follow".into());
    }
    if old_types == new_types {
        return Err(
            "no draft: the parameters are the same; what changed (const, noexcept) needs a person"
                .into(),
        );
    }
    Ok((old, new))
}

/// The parameters `written` as the list at `span` of `text` lays them out: one a line at the
/// first parameter's indent when the list spans lines (keeping the closing line's indent), else
/// on one line.
fn parameter_text(text: &str, span: std::ops::Range<usize>, written: &[String]) -> String {
    let inner = &text[span.clone()];
    if !inner.contains('\n') {
        return written.join(", ");
    }
    let first = span.start + inner.find(|c: char| !c.is_whitespace()).unwrap_or(0);
    let indent = indent_at(text, first);
    let last = inner.rsplit('\n').next();
    let closing = last.filter(|l| !l.is_empty() && l.trim().is_empty());
    let closing = closing.map_or(String::new(), |l| format!("\n{l}"));
    format!(
        "\n{indent}{}{closing}",
        written.join(&format!(",\n{indent}"))
    )
}

// ---------------------------------------------------------------------------------------------
// A structured binding of a tuple that grew: widened with an unused name.
// ---------------------------------------------------------------------------------------------

/// The structured binding at `loc` of the backend file `text` widened to the tuple's new size.
fn widen_binding(finding: &Finding, loc: &Loc, text: &str) -> Drafting {
    let (name, old_decl, new_decl) = declaration_change(finding)?;
    let (old, new, kept) = grown_tuple(name, old_decl, new_decl)?;
    let (open, close, names) = binding_at(text, loc, name, old.len())?;
    let mut fresh = Vec::new();
    let widened = kept
        .iter()
        .enumerate()
        .map(|(j, k)| match k {
            Some(i) => names[*i].clone(),
            None => {
                // The first of `unused_J`, `unused_J_1`, … that the file does not hold yet.
                let candidate = std::iter::once(format!("unused_{j}"))
                    .chain((1..).map(|n| format!("unused_{j}_{n}")))
                    .find(|c| !text.contains(c.as_str()))
                    .expect("an endless list has a free name");
                fresh.push(format!("`{candidate}` ({})", new[j]));
                candidate
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    let content = format!("{}[{widened}]{}", &text[..open], &text[close + 1..]);
    let (s, are, them) = match fresh.len() {
        1 => ("", "is", "it"),
        _ => ("s", "are", "them"),
    };
    let mut caveat = format!(
        "the new element{s} {} {are} bound and unused: upstream returns {them} for a reason (see the introducing commit)",
        fresh.join(", "),
    );
    if ambiguous(&old, &new) {
        caveat.push_str("; two elements have the same type, so check which position is new");
    }
    Ok(Draft {
        line: line_of(&content, open),
        title: format!("Draft: bind the new result of {name} in the backend"),
        why: format!(
            "Upstream's `{}` now returns `({})` instead of `({})`, so the backend's structured binding at `{loc}` names too few elements (`drift api`: changed-signature). Drafted by forkbook: the binding is widened with {} at the new element's position.",
            finding.symbol,
            new.join(", "),
            old.join(", "),
            fresh.join(", ")
        ),
        caveat: Some(caveat),
        ..draft_of(finding, Remedy::WidenedBinding, &loc.path, content)
    })
}

/// The tuple elements `name` returns in the old and new declaration, and where each new element
/// was in the old tuple: only a tuple that grew (each old element kept, in order) has a draft.
#[allow(clippy::type_complexity)]
fn grown_tuple(
    name: &str,
    old_decl: &str,
    new_decl: &str,
) -> Drafting<(Vec<String>, Vec<String>, Vec<Option<usize>>)> {
    let elements = |decl: &str| cpp::return_type(decl, name).and_then(|t| cpp::tuple_elements(&t));
    let (Some(old), Some(new)) = (elements(old_decl), elements(new_decl)) else {
        return Err("no draft: a call whose arguments or result changed; only a tuple that grew under a structured binding has a mechanical remedy".into());
    };
    let kept = align(&old, &new);
    if kept.iter().flatten().count() != old.len() || new.len() <= old.len() {
        return Err("no draft: the tuple did not only grow (elements changed or went away)".into());
    }
    Ok((old, new, kept))
}

/// The structured binding `auto [a, b, c]` that the call of `name` at `loc` initializes, on the
/// call's line or just before it, naming `elements` elements: its brackets' offsets and names.
fn binding_at(
    text: &str,
    loc: &Loc,
    name: &str,
    elements: usize,
) -> Drafting<(usize, usize, Vec<String>)> {
    let call_line = line_start(text, loc.line);
    let from = line_start(text, loc.line.saturating_sub(3).max(1));
    let call = cpp::param_span(text, name, call_line)
        .map(|s| s.start)
        .ok_or_else(|| format!("no draft: the call at {loc} was not found"))?;
    let open = text[from..call]
        .rfind('[')
        .map(|i| from + i)
        .ok_or("no draft: the call's result is not bound with `auto [..]`")?;
    let close = cpp::matching(text, open).ok_or("no draft: unbalanced binding")?;
    let between = text[close + 1..call].trim_start();
    if !(between.starts_with('=') || between.starts_with('{'))
        || !(text[..open].trim_end().ends_with("auto") || text[..open].trim_end().ends_with('&'))
    {
        return Err("no draft: the call's result is not bound with `auto [..]`".into());
    }
    let names = cpp::split_top_level(&text[open + 1..close]);
    if names.len() != elements {
        return Err(format!(
            "no draft: the binding names {} elements, the old tuple had {}",
            names.len(),
            elements
        ));
    }
    Ok((open, close, names))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drift::api::ApiConfig;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn alignment_puts_a_new_element_where_it_was_inserted() {
        assert_eq!(
            align(
                &s(&["Shape", "Strides"]),
                &s(&["Shape", "Strides", "int64_t"])
            ),
            [Some(0), Some(1), None]
        );
        let (old, new) = (
            s(&["bool", "Shape", "V"]),
            s(&["bool", "bool", "Shape", "V"]),
        );
        assert_eq!(align(&old, &new), [Some(0), None, Some(1), Some(2)]);
        assert!(ambiguous(&old, &new));
        assert!(!ambiguous(&s(&["A", "B"]), &s(&["A", "B", "C"])));
    }

    #[test]
    fn stub_lines_and_macro_forms_are_read_from_the_backend() {
        let text = "#define NO_GPU(func) \\\n  void func::eval_gpu(const std::vector<array>& inputs, array& out) { \\\n    throw 1; }\n\nNO_GPU(Abs)\nNO_GPU_MULTI(Eig)\n";
        let stubs = stub_lines(text, &ApiConfig::default().stub_macros);
        assert_eq!(stubs.len(), 2);
        assert_eq!(
            (
                stubs[1].macro_name.as_str(),
                stubs[1].class.as_str(),
                stubs[1].line
            ),
            ("NO_GPU_MULTI", "Eig", 5)
        );
        let def = macro_definition(text, "NO_GPU").unwrap();
        assert_eq!(
            eval_gpu_form(&def).unwrap(),
            ["const std::vector<array>&", "array&"]
        );
    }

    /// The stub lines are the configured macros' (before this, only a name starting with
    /// `NO_GPU` was one, whatever `[drift.api] stub_macros` said).
    #[test]
    fn stub_lines_are_the_configured_macros() {
        let text = "ROCM_UNSUPPORTED(Abs)\nNO_GPU(Eig)\nHELPER(Sort)\n";
        let configured: BTreeMap<String, Vec<String>> =
            [("ROCM_UNSUPPORTED".to_string(), vec!["eval_gpu".to_string()])].into();
        let stubs = stub_lines(text, &configured);
        let found: Vec<(&str, &str)> = stubs
            .iter()
            .map(|s| (s.macro_name.as_str(), s.class.as_str()))
            .collect();
        assert_eq!(found, [("ROCM_UNSUPPORTED", "Abs")]);
    }

    #[test]
    fn definitions_are_told_from_calls() {
        let text = "void f(int a) {\n}\nint g() {\n  f(1);\n}\nvoid h(\n    int a);\n";
        assert!(is_definition_at(text, 1, "f"));
        assert!(!is_definition_at(text, 4, "f"));
        assert!(!is_definition_at(text, 6, "h"));
    }
}
