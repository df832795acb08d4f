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
//!
//! Every file is read through tree-sitter's parse, as `drift api` prepares it (`cpp`): an edit
//! goes where the parse's nodes are, never where a text search would put it.

mod cpp;
pub mod record;

pub use record::{
    answers, confirm, drift_api_drafts, write_drafts, Answer, CONFIRMED_KEY, DRAFT_KEY,
};

pub use super::api::kind::Remedy;
use super::api::{squeeze, ApiConfig, ApiReport, Finding, Kind, Loc, Prep, StubUse};
use crate::cache::Cache;
use crate::FileMap;
use cpp::{Cpp, Function};
use git2::Oid;
use serde::Serialize;

/// A draft (or what a step towards one finds), or why there is none.
type Drafting<T = Draft> = std::result::Result<T, String>;

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
/// the object cache, and the `[drift.api]` settings the analysis read them by (the backend's
/// stub macros, the macros to blank, the backends a definition is shaped like).
pub struct CacheUpstream<'a> {
    pub cache: &'a Cache,
    pub commit: Oid,
    pub cfg: &'a ApiConfig,
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

/// What a draft reads by: upstream's side and the preparation `drift api` parses the backend
/// with (its own stub and statement macros learned, the configured ones).
struct Reading<'a> {
    upstream: &'a CacheUpstream<'a>,
    prep: Prep,
}

impl Reading<'_> {
    fn parse<'t>(&self, text: &'t str) -> Cpp<'t> {
        Cpp::parse(text, &self.prep)
    }
}

/// Plans one draft per finding that has a mechanical remedy, each on the backend as the earlier
/// drafts leave it (two stubs in one file come out as two drafts, in order).
pub fn plan(report: &ApiReport, backend: &FileMap, upstream: &CacheUpstream) -> DraftPlan {
    let reading = Reading {
        upstream,
        prep: super::api::prep(upstream.cfg, &[], backend, &super::api::Parses::new(None)),
    };
    let mut files = backend.clone();
    let mut out = DraftPlan::default();
    for finding in report.live() {
        match draft_one(finding, &files, &reading) {
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

fn draft_one(finding: &Finding, files: &FileMap, reading: &Reading) -> Drafting {
    match finding.kind {
        Kind::MissingEvalGpu => stub_eval_gpu(finding, files, reading),
        Kind::MissingBackendDefinition => stub_definition(finding, files, reading),
        Kind::ChangedSignature => {
            let (loc, text) = backend_file(finding, files, "the finding names no backend place")?;
            let cpp = reading.parse(&text);
            match definition_at(&cpp, loc.line, last_name(&finding.symbol)) {
                Some(definition) => parameter_list(finding, loc, &cpp, &definition, reading),
                None => widen_binding(finding, loc, &cpp, reading),
            }
        }
        by_hand => Err(by_hand.remedy().err().unwrap_or("no draft").into()),
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

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The definition of `name` whose name is on 1-based `line` or the next (a return type or a
/// template head may take a line of its own).
fn definition_at<'c>(cpp: &'c Cpp, line: usize, name: &str) -> Option<Function<'c>> {
    let on_line = |f: &Function| (line..=line + 1).contains(&(f.name.start_position().row + 1));
    let functions = cpp.functions_named(name).into_iter();
    functions.filter(on_line).find(|f| f.body.is_some())
}

/// The offset just after the line break that ends the line holding byte `at`.
fn line_end(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |n| at + n + 1)
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

/// The invocations of the configured stub macros (`[drift.api] stub_macros`) in `cpp`, each on
/// one class name (`NO_GPU(Abs)`), in order.
fn stub_lines<'c>(cpp: &'c Cpp, cfg: &ApiConfig) -> Vec<&'c StubUse> {
    let configured = |s: &&StubUse| cfg.stub_macros.contains_key(&s.macro_name);
    cpp.stubs.iter().filter(configured).collect()
}

/// The parameter types of the first `eval_gpu` `cpp` declares.
fn eval_gpu_form(cpp: &Cpp) -> Option<Vec<String>> {
    let eval_gpu = *cpp.functions_named("eval_gpu").first()?;
    Some(cpp.param_types(&eval_gpu))
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

fn stub_eval_gpu(finding: &Finding, files: &FileMap, reading: &Reading) -> Drafting {
    let class = owner_name(&finding.symbol).to_string();
    let missing = "no draft: the backend has no stub list to put a stub in";
    let (loc, text) = backend_file(finding, files, missing)?;
    let (_, class_text) = finding
        .evidence
        .to_text
        .clone()
        .ok_or("no draft: upstream's declaration of the primitive was not kept")?;
    let wanted = eval_gpu_form(&reading.parse(&class_text))
        .ok_or("no draft: the primitive's `eval_gpu` was not found")?;
    let cpp = reading.parse(&text);
    let stubs = stub_lines(&cpp, reading.upstream.cfg);
    let macro_name = stub_macro(&text, &stubs, files, &wanted, &loc.path)?;
    let (insert_line, sibling) = stub_place(finding, reading, &stubs, &class, &macro_name);
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
/// defined in the stub file `text` (at `path`) or in a file of the backend: its `#define` as
/// `drift api` reads it (the body's tokens), parsed.
fn stub_macro(
    text: &str,
    stubs: &[&StubUse],
    files: &FileMap,
    wanted: &[String],
    path: &str,
) -> Drafting<String> {
    let mut macros: Vec<&str> = stubs.iter().map(|s| s.macro_name.as_str()).collect();
    macros.sort();
    macros.dedup();
    let definition = |bytes: &[u8], name: &str| {
        let mut definitions = super::api::macro_definitions(bytes).into_iter();
        definitions.find(|d| d.function_like && d.name == name)
    };
    let found = macros.into_iter().find(|m| {
        let files = std::iter::once(text.as_bytes()).chain(files.values().map(|b| &b[..]));
        let Some(def) = files.into_iter().find_map(|bytes| definition(bytes, m)) else {
            return false;
        };
        let body = def.body.join(" ");
        eval_gpu_form(&Cpp::parse(&body, &Prep::default())).as_deref() == Some(wanted)
            && !def.body.iter().any(|token| token == "use_fallback")
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
    reading: &Reading,
    stubs: &[&StubUse],
    class: &str,
    macro_name: &str,
) -> (usize, Option<String>) {
    let header = finding
        .to
        .as_ref()
        .and_then(|to| reading.upstream.file(&to.path));
    let header = header.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let declared = header.map_or(Vec::new(), |h| reading.parse(&h).class_names());
    let stubbed = |name: &String| stubs.iter().find(|s| s.argument == *name);
    if let Some(at) = declared.iter().position(|c| c == class) {
        if let Some(s) = declared[..at].iter().rev().find_map(stubbed) {
            return (s.line, Some(s.argument.clone()));
        }
        if let Some(s) = declared[at + 1..].iter().find_map(stubbed) {
            return (s.line - 1, Some(s.argument.clone()));
        }
    }
    // After the last stub written with `macro_name`.
    let same_macro = stubs.iter().filter(|s| s.macro_name == macro_name);
    (same_macro.map(|s| s.line).max().unwrap_or(1), None)
}

// ---------------------------------------------------------------------------------------------
// A member every backend defines: a definition shaped like the other backends', a stub body.
// ---------------------------------------------------------------------------------------------

/// Where a reference backend defines `Owner::name` out of line: (path, signature up to its
/// body, the body's text).
fn reference_definition(
    reading: &Reading,
    owner: &str,
    name: &str,
) -> Option<(String, String, String)> {
    let qualified = format!("{owner}::{name}");
    for prefix in &reading.upstream.cfg.draft_backends {
        for (path, bytes) in reading.upstream.files_under(prefix) {
            let text = String::from_utf8_lossy(&bytes);
            // A file that does not name it is not worth a parse.
            let defined = text.contains(&qualified).then(|| reading.parse(&text));
            if let Some((signature, body)) = defined.and_then(|cpp| definition(&cpp, &qualified)) {
                return Some((path, signature, body));
            }
        }
    }
    None
}

/// The first definition of `qualified` (`Event::wait`) in `cpp`: its signature, from its
/// first word to its body, and its body's text.
fn definition(cpp: &Cpp, qualified: &str) -> Option<(String, String)> {
    let mut defined = cpp.functions_named(qualified).into_iter();
    let (holder, body) = defined.find_map(|f| Some((f.holder, f.body?)))?;
    let signature = &cpp.text[holder.start_byte()..body.start_byte()];
    let inside = &cpp.text[cpp.inner(body)?];
    Some((signature.trim_end().to_string(), inside.trim().to_string()))
}

fn stub_definition(finding: &Finding, files: &FileMap, reading: &Reading) -> Drafting {
    let name = last_name(&finding.symbol);
    let owner = owner_name(&finding.symbol);
    let loc = finding
        .backend
        .as_ref()
        .ok_or("no draft: the backend defines nothing of the same class to put it beside")?;
    let (ref_path, signature, body) = reference_definition(reading, owner, name)
        .ok_or_else(|| {
            format!("no draft: no other backend ({}) defines `{owner}::{name}` out of line to shape it like", reading.upstream.cfg.draft_backends.join(", "))
        })?;
    let text = text_of(files, &loc.path)?;
    let insert_at = after_last_member(&reading.parse(&text), owner).ok_or_else(|| {
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
    let comment = format!(
        "\n// Drafted by forkbook (drift api: missing-backend-definition): a stub. The other\n{source}\n{quoted}\n"
    );
    let definition = format!("{signature} {{\n  throw std::runtime_error({message});\n}}\n");
    let (before, after) = text.split_at(insert_at);
    let drafted = format!("{before}{comment}{definition}{after}");
    let signature_at = insert_at + comment.len();
    let (content, include) = with_include(reading.parse(&drafted), "stdexcept");
    let shifted = include.is_some_and(|at| at <= signature_at);
    let line = line_of(&drafted, signature_at) + usize::from(shifted);
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

/// The offset just after the last out-of-line definition of a member of `owner` in `cpp` (the
/// line that closes its body), where a new member's definition goes.
fn after_last_member(cpp: &Cpp, owner: &str) -> Option<usize> {
    let member = |f: &Function| {
        let name = squeeze(cpp.text(f.name));
        name.rsplit("::").nth(1) == Some(owner)
    };
    let functions = cpp.functions().into_iter().filter(member);
    let last = functions.filter_map(|f| f.body).next_back()?;
    Some(line_end(cpp.text, last.end_byte() - 1))
}

/// `cpp`'s text with `#include <header>` after its last `#include` unless one includes it
/// already, and where it went.
fn with_include(cpp: Cpp, header: &str) -> (String, Option<usize>) {
    let includes = cpp.includes();
    let text = cpp.text;
    if includes
        .iter()
        .any(|(_, path)| *path == format!("<{header}>"))
    {
        return (text.to_string(), None);
    }
    let at = includes
        .last()
        .map_or(0, |(node, _)| line_end(text, node.end_byte() - 1));
    let content = format!("{}#include <{header}>\n{}", &text[..at], &text[at..]);
    (content, Some(at))
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

/// The definition at `loc` of the backend file `cpp` brought to its declaration's new
/// parameters.
fn parameter_list(
    finding: &Finding,
    loc: &Loc,
    cpp: &Cpp,
    definition: &Function,
    reading: &Reading,
) -> Drafting {
    let (name, old_decl, new_decl) = declaration_change(finding)?;
    let (old_cpp, new_cpp) = (reading.parse(old_decl), reading.parse(new_decl));
    let (old, new) = changed_parameters(name, &old_cpp, &new_cpp)?;
    let (old_types, new_types) = (old_cpp.param_types(&old), new_cpp.param_types(&new));
    if cpp.param_types(definition) != old_types {
        return Err(format!(
            "no draft: the definition at {loc} does not repeat the old declaration's parameters"
        ));
    }
    let text = cpp.text;
    let defined = cpp.items(definition.params);
    let new_items = new_cpp.items(new.params);
    let kept = align(&old_types, &new_types);
    let written: Vec<&str> = new_items
        .iter()
        .zip(&kept)
        .map(|(p, k)| match k {
            Some(i) => defined[*i].text,
            None => new_cpp.without_default(p),
        })
        .collect();
    let span = cpp
        .inner(definition.params)
        .ok_or("no draft: the definition's parameter list is not closed")?;
    let list = parameter_text(text, span.clone(), &written);
    let content = format!("{}{list}{}", &text[..span.start], &text[span.end..]);
    let added: Vec<String> = new_items
        .iter()
        .zip(&kept)
        .filter(|(_, k)| k.is_none())
        .map(|(p, _)| format!("`{}`", squeeze(new_cpp.without_default(p))))
        .collect();
    let removed = old_types.len() + added.len() > new_types.len();
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

/// The declarations of `name` in two declarations' text (old, new), where only the
/// parameters' types changed: a changed return type or unchanged types have no draft.
fn changed_parameters<'c>(
    name: &str,
    old_decl: &'c Cpp,
    new_decl: &'c Cpp,
) -> Drafting<(Function<'c>, Function<'c>)> {
    let declared = |cpp: &'c Cpp| cpp.functions_named(name).first().copied();
    let (old, new) = (
        declared(old_decl).ok_or("no draft: the old declaration's parameters were not found")?,
        declared(new_decl).ok_or("no draft: the new declaration's parameters were not found")?,
    );
    if old_decl.return_type(&old) != new_decl.return_type(&new) {
        return Err("no draft: the return type changed too, which the body must follow".into());
    }
    if old_decl.param_types(&old) == new_decl.param_types(&new) {
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
fn parameter_text(text: &str, span: std::ops::Range<usize>, written: &[&str]) -> String {
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

/// The structured binding at `loc` of the backend file `cpp` widened to the tuple's new size.
fn widen_binding(finding: &Finding, loc: &Loc, cpp: &Cpp, reading: &Reading) -> Drafting {
    let (name, old_decl, new_decl) = declaration_change(finding)?;
    let (old, new, kept) = grown_tuple(name, &reading.parse(old_decl), &reading.parse(new_decl))?;
    let (binding, names) = binding_at(cpp, loc, name, old.len())?;
    let (text, open, close) = (cpp.text, binding.start_byte(), binding.end_byte() - 1);
    let mut fresh = Vec::new();
    let widened = kept
        .iter()
        .enumerate()
        .map(|(j, k)| match k {
            Some(i) => names[*i].to_string(),
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
    old_decl: &Cpp,
    new_decl: &Cpp,
) -> Drafting<(Vec<String>, Vec<String>, Vec<Option<usize>>)> {
    let elements = |cpp: &Cpp| {
        let declared = *cpp.functions_named(name).first()?;
        super::api::tuple_elements(&cpp.return_type(&declared)?)
    };
    let (Some(old), Some(new)) = (elements(old_decl), elements(new_decl)) else {
        return Err("no draft: a call whose arguments or result changed; only a tuple that grew under a structured binding has a mechanical remedy".into());
    };
    let kept = align(&old, &new);
    if kept.iter().flatten().count() != old.len() || new.len() <= old.len() {
        return Err("no draft: the tuple did not only grow (elements changed or went away)".into());
    }
    Ok((old, new, kept))
}

/// The structured binding `auto [a, b, c]` (or `auto& [..]`) that the first call of `name` at or
/// after `loc`'s line initializes, itself on that line or the three before, naming `elements`
/// elements: the binding's `[..]` and its names.
fn binding_at<'c>(
    cpp: &'c Cpp,
    loc: &Loc,
    name: &str,
    elements: usize,
) -> Drafting<(tree_sitter::Node<'c>, Vec<&'c str>)> {
    let row = |node: tree_sitter::Node| node.start_position().row + 1;
    let mut calls = cpp.calls(name).into_iter();
    let call = calls
        .find(|call| row(*call) >= loc.line)
        .ok_or_else(|| format!("no draft: the call at {loc} was not found"))?;
    let binding = cpp
        .bindings()
        .into_iter()
        .find(|(_, bound)| bound.id() == call.id())
        .map(|(binding, _)| binding)
        .filter(|b| cpp.inner(*b).is_some() && row(*b) + 3 >= loc.line)
        .ok_or("no draft: the call's result is not bound with `auto [..]`")?;
    let names: Vec<&str> = cpp.items(binding).iter().map(|i| i.text).collect();
    if names.len() != elements {
        return Err(format!(
            "no draft: the binding names {} elements, the old tuple had {}",
            names.len(),
            elements
        ));
    }
    Ok((binding, names))
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

    fn parsed(text: &str) -> Cpp<'_> {
        parsed_with(text, &ApiConfig::default())
    }

    /// `text` parsed as `drift api` prepares it under `cfg`, with no store of parses.
    fn parsed_with<'t>(text: &'t str, cfg: &ApiConfig) -> Cpp<'t> {
        let parses = crate::drift::api::Parses::new(None);
        Cpp::parse(
            text,
            &crate::drift::api::prep(cfg, &[], &FileMap::new(), &parses),
        )
    }

    #[test]
    fn stub_lines_and_macro_forms_are_read_from_the_backend() {
        let text = "#define NO_GPU(func) \\\n  void func::eval_gpu(const std::vector<array>& inputs, array& out) { \\\n    throw 1; }\n\nNO_GPU(Abs)\nNO_GPU_MULTI(Eig)\n";
        let cpp = parsed(text);
        let stubs = stub_lines(&cpp, &ApiConfig::default());
        assert_eq!(stubs.len(), 2);
        assert_eq!(
            (
                stubs[1].macro_name.as_str(),
                stubs[1].argument.as_str(),
                stubs[1].line
            ),
            ("NO_GPU_MULTI", "Eig", 6)
        );
        let wanted = ["const std::vector<array>&", "array&"].map(String::from);
        let found = stub_macro(text, &stubs, &FileMap::new(), &wanted, "p.cpp");
        assert_eq!(found.unwrap(), "NO_GPU");
    }

    /// The stub lines are the configured macros' (before this, only a name starting with
    /// `NO_GPU` was one, whatever `[drift.api] stub_macros` said).
    #[test]
    fn stub_lines_are_the_configured_macros() {
        let text = "ROCM_UNSUPPORTED(Abs)\nNO_GPU(Eig)\nHELPER(Sort)\n";
        let cfg = ApiConfig {
            stub_macros: [("ROCM_UNSUPPORTED".to_string(), vec!["eval_gpu".to_string()])].into(),
            ..ApiConfig::default()
        };
        let cpp = parsed_with(text, &cfg);
        let stubs = stub_lines(&cpp, &cfg);
        let found: Vec<(&str, &str)> = stubs
            .iter()
            .map(|s| (s.macro_name.as_str(), s.argument.as_str()))
            .collect();
        assert_eq!(found, [("ROCM_UNSUPPORTED", "Abs")]);
    }

    /// Fails on main before this change, which read the stub list line by line: a stub in a
    /// block comment counted as the backend's, and a draft went beside it, into the comment.
    #[test]
    fn a_stub_in_a_comment_is_no_sibling() {
        let text = "NO_GPU(Abs)\n/* gone:\nNO_GPU(Old)\n*/\n";
        let cpp = parsed(text);
        let stubs = stub_lines(&cpp, &ApiConfig::default());
        let found: Vec<&str> = stubs.iter().map(|s| s.argument.as_str()).collect();
        assert_eq!(found, ["Abs"]);
    }

    /// Fails on main before this change: the header's classes were read from lines starting with
    /// `class X :` or `class X {`, so a `final` class or a name on the next line was no primitive
    /// to put a stub beside.
    #[test]
    fn every_class_a_header_defines_is_read() {
        let text = "class MLX_API A : public P {};\nclass B final : public P {};\ntemplate <typename T>\nclass C : public P {};\nclass\nD : public P {};\nclass E;\n";
        assert_eq!(parsed(text).class_names(), ["A", "B", "C", "D"]);
    }

    /// Fails on main before this change: a definition was read from the line naming it, so a
    /// return type on a line of its own was left out of the drafted signature, and a member of
    /// `MyEvent` counted as one of `Event`.
    #[test]
    fn definitions_are_read_whole_and_by_their_class() {
        let text = "// Event::is_signaled() is below.\nbool\nEvent::is_signaled() const {\n  return s; // }\n}\nvoid MyEvent::run() {}\n";
        let cpp = parsed(text);
        let (signature, body) = definition(&cpp, "Event::is_signaled").unwrap();
        assert_eq!(signature, "bool\nEvent::is_signaled() const");
        assert_eq!(body, "return s; // }");
        let after = after_last_member(&cpp, "Event").unwrap();
        assert_eq!(&text[after..], "void MyEvent::run() {}\n");
    }

    /// Fails on main before this change, which took the first line holding `Sort::eval_gpu(`:
    /// `ArgSort::eval_gpu`'s line, its body and `Sort`'s signature became the drafted signature,
    /// and a lambda in a constructor's initializers was taken for its body.
    #[test]
    fn a_name_ending_another_is_not_it() {
        let text = "void ArgSort::eval_gpu(Stream s) {\n  sort(s, true);\n}\n\nvoid Sort::eval_gpu(Stream s) {\n  sort(s, false);\n}\nPool::Pool()\n    : free_([](Block* b) { return b->size; }) {\n  grow();\n}\n";
        let cpp = parsed(text);
        let (signature, body) = definition(&cpp, "Sort::eval_gpu").unwrap();
        assert_eq!(
            (signature.as_str(), body.as_str()),
            ("void Sort::eval_gpu(Stream s)", "sort(s, false);")
        );
        let (signature, body) = definition(&cpp, "Pool::Pool").unwrap();
        assert_eq!(
            signature,
            "Pool::Pool()\n    : free_([](Block* b) { return b->size; })"
        );
        assert_eq!(body, "grow();");
    }

    /// A file cut short inside a body has no definition to copy or to put one after.
    #[test]
    fn a_body_cut_short_is_no_definition() {
        let cpp = parsed("void X::f() {\n  int a = g(1);\n");
        assert_eq!(definition(&cpp, "X::f"), None);
        assert_eq!(after_last_member(&cpp, "X"), None);
    }

    /// Fails on main before this change: any `<stdexcept>` in the text, a comment's too, counted
    /// as its include.
    #[test]
    fn an_include_is_added_unless_a_directive_has_it() {
        let text = "#include <atomic>\n// throws, see <stdexcept>\nint f();\n";
        let (content, at) = with_include(parsed(text), "stdexcept");
        assert_eq!(
            content,
            "#include <atomic>\n#include <stdexcept>\n// throws, see <stdexcept>\nint f();\n"
        );
        assert_eq!(at, Some(18));
        let (same, at) = with_include(parsed(&content), "stdexcept");
        assert_eq!((same.as_str(), at), (content.as_str(), None));
    }

    /// Fails on main before this change, which took the last `[` before the call: a call on
    /// the line after another binding widened that binding.
    #[test]
    fn a_binding_is_the_one_the_call_initializes() {
        let text = "auto [shape, strides] =\n    collapse(a, b);\nconst auto& [x, y]{collapse(c, d)};\nauto z = g(collapse(e, f));\n";
        let cpp = parsed(text);
        let at = |line| Loc {
            path: "copy.cpp".into(),
            line,
        };
        let names = |line| binding_at(&cpp, &at(line), "collapse", 2).map(|(_, names)| names);
        assert_eq!(names(2).unwrap(), ["shape", "strides"]);
        assert_eq!(names(3).unwrap(), ["x", "y"]);
        assert!(names(4).unwrap_err().contains("not bound with `auto [..]`"));
    }

    #[test]
    fn definitions_are_told_from_calls() {
        let text = "void f(int a) {\n}\nint g() {\n  f(1);\n}\nvoid h(\n    int a);\n";
        let cpp = parsed(text);
        assert!(definition_at(&cpp, 1, "f").is_some());
        assert!(definition_at(&cpp, 4, "f").is_none());
        assert!(definition_at(&cpp, 6, "h").is_none());
    }
}
