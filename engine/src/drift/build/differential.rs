//! The differential drift build: the recorded pin and the candidate built with the same
//! toolchain, and only what is new at the candidate reported as drift.
//!
//! A toolchain older or newer than the one the fork was written for fails on its own (a member
//! its runtime lacks, a language feature its compiler does not take): those failures are at the
//! recorded pin as much as at the candidate, and are listed apart as "also at the recorded pin".
//! Compile errors are matched by file and normalized message (line and column numbers, the two
//! trees' roots and temporary paths taken out), as a multiset: a message the candidate shows
//! more often than the recorded pin is new that many times. Undefined symbols are matched by
//! name. A header the compiler cannot find and neither tree holds is the machine's (a ROCm
//! library not installed): "missing header (toolchain)", never drift.

use crate::text::short_id;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::{describe, error_row, BuildReport, Diagnostic, UndefinedSymbol};
use crate::doc::{code, codes, text, words, Doc};

/// A header the compiler could not find, and no tree holds: the toolchain lacks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingHeader {
    /// As written in the `#include`.
    pub header: String,
    /// The files (relative to the tree) that include it.
    pub included_by: Vec<String>,
}

/// A file the candidate's tree holds with conflict markers: the retarget to the candidate leaves
/// it in conflict, so its compile errors follow from the markers and are counted here instead of
/// being listed as drift, one by one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConflictedFile {
    pub path: String,
    /// The compile errors new at the candidate in this file.
    pub errors: usize,
}

/// An error new at the candidate that the machine's toolchain explains: new upstream code meeting
/// a limit of this compiler or ROCm. Not drift; `--strict` fails on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolchainError {
    pub error: Diagnostic,
    /// Why it is the toolchain's: the same message at the baseline (`at the recorded pin in
    /// FILE:LINE`) or the known limit it meets.
    pub evidence: String,
}

/// A local fix as the differential ties drift to it: its number, title, the files it changes
/// and the lines it adds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FixText {
    pub number: usize,
    pub title: String,
    pub paths: Vec<String>,
    pub added: String,
}

/// One drift item and the local fixes that answer it (none: unanswered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answer {
    /// `error`, `conflict` or `undefined`.
    pub kind: &'static str,
    /// The item as a problem line names it.
    pub item: String,
    /// The file (an error's, a conflicted one) or the symbol.
    pub subject: String,
    pub fixes: Vec<usize>,
}

/// What the candidate's build shows beside the recorded pin's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Differential {
    pub recorded_pin: String,
    pub candidate_pin: String,
    /// The recorded pin's build; None when the candidate is the recorded pin (built once).
    pub recorded: Option<BuildReport>,
    /// The candidate's build (in the command's JSON as `build`).
    #[serde(skip)]
    pub candidate: BuildReport,
    /// Drift: compile errors (configure errors too) the recorded pin does not have, but those in
    /// a conflicted file.
    pub new_errors: Vec<Diagnostic>,
    /// The candidate's files in conflict, with the errors new at the candidate in each.
    pub in_conflict: Vec<ConflictedFile>,
    /// Drift: symbols the candidate leaves undefined that the recorded pin does not.
    pub new_undefined: Vec<UndefinedSymbol>,
    /// Not drift: the errors the recorded pin has as well.
    pub known_errors: Vec<Diagnostic>,
    /// Not drift: the undefined symbols the recorded pin has as well.
    pub known_undefined: Vec<UndefinedSymbol>,
    /// Not drift: headers the machine lacks.
    pub missing_headers: Vec<MissingHeader>,
    /// Not drift: errors new at the candidate that a limit of this toolchain explains.
    pub toolchain_new: Vec<ToolchainError>,
    /// Not drift: symbols the candidate lacks because the source that defines them at the
    /// baseline (`probably_in`) failed to compile at the candidate; they follow from its errors.
    pub after_failed_compiles: Vec<UndefinedSymbol>,
    /// Each drift item and the local fixes that answer it, once [`Differential::answer`] ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<Answer>,
    /// The fixes [`Differential::answer`] was given, by number and title.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixes: Vec<(usize, String)>,
    /// The candidate is built without the local fixes: an answered item is what its fix is for,
    /// and only what no fix answers fails.
    pub without_fixes: bool,
    /// The candidate's build failed with nothing forkbook recognised, where the recorded pin's
    /// did not: a problem, since nothing else explains it.
    pub unexplained_failure: Option<String>,
    /// `--strict`: what is at the recorded pin fails too.
    pub strict: bool,
}

impl Differential {
    /// Compares `candidate` with `recorded` (None: the candidate is the recorded pin, so all it
    /// shows is there already).
    pub fn compare(
        recorded_pin: String,
        candidate_pin: String,
        recorded: Option<BuildReport>,
        candidate: BuildReport,
        strict: bool,
    ) -> Differential {
        let trees: Vec<&BuildReport> = recorded.iter().chain([&candidate]).collect();
        let machine_lacks = |d: &Diagnostic| {
            missing_header_name(&d.message).filter(|h| !trees.iter().any(|t| tree_has(&t.tree, h)))
        };
        let missing_headers = missing_headers(&candidate, machine_lacks);
        // Without a recorded pin's build, the candidate is its own baseline: nothing is new.
        let baseline = recorded.as_ref().unwrap_or(&candidate);
        let (new_errors, known_errors) = split_errors(baseline, &candidate, machine_lacks);
        let undefined_at_baseline: BTreeSet<&str> = (baseline.undefined.iter())
            .chain(&baseline.undefined_after_errors)
            .map(|u| u.symbol.as_str())
            .collect();
        let (after_failed_compiles, undefined) = after_failed_compiles(baseline, &candidate);
        let (new_undefined, known_undefined) = (undefined.into_iter())
            .partition(|u| !undefined_at_baseline.contains(u.symbol.as_str()));
        let (new_errors, in_conflict) = set_aside_conflicts(new_errors, &candidate.conflicted);
        let (new_errors, toolchain_new) = toolchain_instances(new_errors, baseline, &candidate);
        let mut differential = Differential {
            recorded_pin,
            candidate_pin,
            recorded,
            candidate,
            new_errors,
            in_conflict,
            new_undefined,
            known_errors,
            known_undefined,
            missing_headers,
            toolchain_new,
            after_failed_compiles,
            answers: Vec::new(),
            fixes: Vec::new(),
            without_fixes: false,
            unexplained_failure: None,
            strict,
        };
        differential.unexplained_failure = differential.unexplained_failure();
        differential
    }

    /// The candidate's build failed with nothing forkbook recognised where the recorded pin's
    /// did not: what to say of it.
    fn unexplained_failure(&self) -> Option<String> {
        let recognised = !(self.new_errors.is_empty()
            && self.in_conflict.is_empty()
            && self.toolchain_new.is_empty()
            && self.known_errors.is_empty()
            && self.candidate.undefined.is_empty()
            && self.missing_headers.is_empty());
        let recorded_ok =
            (self.recorded.as_ref()).is_some_and(|r| r.build.as_ref().is_none_or(|b| b.ok()));
        let build = self.candidate.build.as_ref();
        build
            .filter(|b| !b.ok() && !recognised && recorded_ok)
            .map(|b| {
                format!(
                    "the candidate's build failed with no error forkbook recognised; see `{}`",
                    b.log.display()
                )
            })
    }

    /// What makes `drift build` exit 1, one line each: what is new at the candidate; with
    /// `--strict`, what is at the recorded pin too.
    pub fn problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = match self.without_fixes {
            true => (self.answers.iter())
                .filter(|a| a.fixes.is_empty())
                .map(|a| format!("{} (answered by no local fix)", a.item))
                .collect(),
            false => self.drift_items().map(|(_, item, _)| item).collect(),
        };
        problems.extend(self.unexplained_failure.clone());
        if self.strict {
            let known = (self.known_errors.iter().map(describe))
                .chain(self.known_undefined.iter().map(UndefinedSymbol::problem));
            problems.extend(known.map(|p| format!("{p} (also at the recorded pin)")));
            problems.extend(
                self.toolchain_new
                    .iter()
                    .map(|t| format!("{} (toolchain, new instance)", describe(&t.error))),
            );
            problems.extend(
                self.missing_headers
                    .iter()
                    .map(|m| format!("missing header (toolchain): `{}`", m.header)),
            );
        }
        problems
    }

    /// Each drift item: its kind, its problem line, and its subject (a file or a symbol).
    fn drift_items(&self) -> impl Iterator<Item = (&'static str, String, String)> + '_ {
        let errors = (self.new_errors.iter()).map(|e| ("error", describe(e), e.file.clone()));
        errors.chain(self.other_items())
    }

    /// The drift items that are not compile errors: the conflicts and the undefined symbols.
    fn other_items(&self) -> impl Iterator<Item = (&'static str, String, String)> + '_ {
        let conflicts = self.in_conflict.iter().map(|c| {
            let item = format!(
                "`{}` is in conflict at the candidate ({} compile errors follow from its markers)",
                c.path, c.errors
            );
            ("conflict", item, c.path.clone())
        });
        let undefined =
            (self.new_undefined.iter()).map(|u| ("undefined", u.problem(), u.symbol.clone()));
        conflicts.chain(undefined)
    }

    /// Ties each drift item to the local fixes that answer it: an error or a conflict in a file
    /// the fix changes, an undefined symbol the fix's added lines name (`Owner::member`, or the
    /// owner of a missing `eval_gpu`, which a stub macro names alone).
    pub fn answer(&mut self, fixes: &[FixText]) {
        let ns = &self.candidate.namespace;
        // An error the compiler places in a header outside the tree (a template of the standard
        // library) is answered by a fix of a file its notes name (where it was instantiated).
        let context = |e: &Diagnostic| e.context.join("\n");
        let errors =
            (self.new_errors.iter()).map(|e| ("error", describe(e), e.file.clone(), context(e)));
        let others =
            (self.other_items()).map(|(kind, item, subject)| (kind, item, subject, String::new()));
        let answers = errors.chain(others).map(|(kind, item, subject, context)| {
            let in_context = |fix: &&FixText| {
                fix.paths
                    .iter()
                    .any(|p| context.contains(&format!("/{p}:")))
            };
            let fixes = (fixes.iter())
                .filter(|fix| answers(fix, kind, &subject, ns) || in_context(fix))
                .map(|fix| fix.number)
                .collect();
            Answer {
                kind,
                item,
                subject,
                fixes,
            }
        });
        self.answers = answers.collect();
        self.fixes = fixes.iter().map(|f| (f.number, f.title.clone())).collect();
    }

    /// The candidate's build with only what is new at the candidate in it: what `--with-api`
    /// matches the static findings against.
    pub fn new_only(&self) -> BuildReport {
        BuildReport {
            configure_errors: Vec::new(),
            errors: self.new_errors.clone(),
            undefined: self.new_undefined.clone(),
            ..self.candidate.clone()
        }
    }

    /// The report: the candidate's build with what is new at the candidate and what the
    /// recorded pin has too apart.
    pub fn doc(&self) -> Doc {
        let Some(recorded) = &self.recorded else {
            let mut doc = self.candidate.doc();
            doc.say(format!(
                "the candidate is the recorded pin `{}`: nothing is new",
                short_id(&self.recorded_pin)
            ));
            return doc;
        };
        let (c, mut doc) = (&self.candidate, Doc::default());
        let pins = format!(
            "recorded pin `{}` and candidate `{}`",
            short_id(&self.recorded_pin),
            short_id(&self.candidate_pin)
        );
        let (compiler, generator, jobs) = (&c.compiler, &c.generator, c.jobs);
        doc.say(format!(
            "drift build with `{compiler}` ({generator}, {jobs} jobs), differential: {pins}"
        ))
        .list(vec![
            vec![words(format!("recorded pin: {}", recorded.summary_line()))],
            vec![words(format!("candidate: {}", c.summary_line()))],
        ]);
        c.device_line(&mut doc);
        c.symbols_line(&mut doc);
        let (new, new_undefined) = (&self.new_errors, &self.new_undefined);
        found(&mut doc, "new at the candidate (drift)", new, new_undefined);
        self.answers_doc(&mut doc);
        if let Some(failure) = &self.unexplained_failure {
            doc.say(failure);
        }
        self.not_drift(&mut doc);
        if let Some(build) = &c.build {
            doc.path_line("log", &build.log);
        }
        doc
    }

    /// The files in conflict, what the recorded pin has too, and the headers the machine lacks.
    fn not_drift(&self, doc: &mut Doc) {
        if !self.in_conflict.is_empty() {
            doc.say("in conflict at the candidate (the retarget leaves markers; resolve them, then build again):")
            .table(
                &["file", "compile errors that follow from the markers"],
                self.in_conflict
                    .iter()
                    .map(|c| vec![vec![code(&c.path)], vec![words(c.errors.to_string())]])
                    .collect(),
            );
        }
        let strict = if self.strict {
            "; --strict fails on it"
        } else {
            ""
        };
        if !self.toolchain_new.is_empty() {
            doc.say(format!(
                "toolchain, new instance (new upstream code meets a limit of this toolchain; not drift{strict}): {}",
                self.toolchain_new.len()
            ))
            .table(
                &["where", "error", "evidence"],
                (self.toolchain_new.iter())
                    .map(|t| [error_row(&t.error), vec![vec![words(&t.evidence)]]].concat())
                    .collect(),
            );
        }
        if !self.after_failed_compiles.is_empty() {
            doc.say(format!(
                "undefined because the source that defines them at the baseline failed to compile at the candidate (they follow from its errors; not drift): {}",
                self.after_failed_compiles.len()
            ))
            .records(
                &["undefined symbol", "needed by", "defined at the baseline in"],
                (self.after_failed_compiles.iter())
                    .map(|u| {
                        let source = u.probably_in.iter().map(code).collect();
                        vec![vec![code(&u.symbol)], codes(&u.needed_by), source]
                    })
                    .collect(),
            );
        }
        let what = format!("also at the recorded pin (not drift{strict})");
        found(doc, &what, &self.known_errors, &self.known_undefined);
        for missing in &self.missing_headers {
            let mut line = vec![words("missing header (toolchain): "), code(&missing.header)];
            line.push(words(", included by "));
            line.extend(codes(&missing.included_by));
            line.push(words(
                "; install it, or put a header declaring what the backend uses in the \
                 `[build] stubs` folder",
            ));
            doc.line(line);
        }
    }
}

impl Differential {
    /// The drift items and the fixes that answer them, then the fixes that answer none.
    fn answers_doc(&self, doc: &mut Doc) {
        if self.fixes.is_empty() && self.answers.is_empty() {
            return;
        }
        let title = |n: &usize| {
            let found = self.fixes.iter().find(|(number, _)| number == n);
            found.map_or(format!("{n}"), |(n, title)| format!("{n}. {title}"))
        };
        let unanswered = self.answers.iter().filter(|a| a.fixes.is_empty()).count();
        let (what, column) = match self.without_fixes {
            true => ("the local fix that answers it", "answered by"),
            false => (
                "the local fix it lies in (update it; none: a new fix is needed)",
                "fix",
            ),
        };
        doc.say(format!(
            "drift and {what}: {} items, {unanswered} answered by no fix",
            self.answers.len()
        ))
        .table(
            &["item", column],
            (self.answers.iter())
                .map(|a| {
                    let by = match a.fixes.is_empty() {
                        true => "unanswered".to_string(),
                        false => a.fixes.iter().map(title).collect::<Vec<_>>().join("; "),
                    };
                    vec![
                        vec![code(&a.subject), words(format!(" ({})", a.kind))],
                        vec![text(by)],
                    ]
                })
                .collect(),
        );
        let idle: Vec<String> = (self.fixes.iter())
            .filter(|(n, _)| !self.answers.iter().any(|a| a.fixes.contains(n)))
            .map(|(n, _)| title(n))
            .collect();
        if self.without_fixes && !idle.is_empty() {
            doc.say(format!(
                "local fixes no item of this build shows: {}",
                idle.len()
            ))
            .list(idle.into_iter().map(|t| vec![text(t)]).collect());
        }
    }
}

/// Whether `fix` answers the drift item of `kind` about `subject`.
fn answers(fix: &FixText, kind: &str, subject: &str, namespace: &str) -> bool {
    if kind != "undefined" {
        return fix.paths.iter().any(|p| p == subject);
    }
    let name = super::nm::qualified_name(subject);
    let inner = super::nm::inside(name, namespace).unwrap_or(name);
    let parts: Vec<&str> = inner.split("::").collect();
    let word = |w: &str| super::confirm::contains_word(&fix.added, w);
    match parts.as_slice() {
        [.., owner, "eval_gpu"] => word(&format!("{owner}::eval_gpu")) || word(owner),
        [.., owner, member] => word(&format!("{owner}::{member}")),
        [name] => word(&format!("{name}(")) || word(name),
        [] => false,
    }
}

/// The candidate's undefined symbols split: those the baseline defines in a source that failed
/// to compile at the candidate (with that source as `probably_in`), and the rest.
fn after_failed_compiles(
    baseline: &BuildReport,
    candidate: &BuildReport,
) -> (Vec<UndefinedSymbol>, Vec<UndefinedSymbol>) {
    let failed: BTreeSet<&str> = candidate.failed.iter().map(String::as_str).collect();
    let mut after = Vec::new();
    let mut rest = Vec::new();
    for symbol in &candidate.undefined {
        let sources = baseline
            .defined_by
            .get(&symbol.symbol)
            .into_iter()
            .flatten();
        match sources.into_iter().find(|s| failed.contains(s.as_str())) {
            Some(source) => after.push(UndefinedSymbol {
                probably_in: Some(source.clone()),
                ..symbol.clone()
            }),
            None => rest.push(symbol.clone()),
        }
    }
    (after, rest)
}

/// The new errors split: drift, and those a limit of this toolchain explains: the same message
/// (places and roots taken out) is at the baseline, or a known limit matches it.
fn toolchain_instances(
    errors: Vec<Diagnostic>,
    baseline: &BuildReport,
    candidate: &BuildReport,
) -> (Vec<Diagnostic>, Vec<ToolchainError>) {
    let mut at_baseline: BTreeMap<String, &Diagnostic> = BTreeMap::new();
    for error in baseline.all_errors() {
        at_baseline
            .entry(error_key(error, baseline).1)
            .or_insert(error);
    }
    let mut drift = Vec::new();
    let mut toolchain = Vec::new();
    for error in errors {
        let message = error_key(&error, candidate).1;
        let evidence = match at_baseline.get(&message) {
            Some(seen) => Some(format!(
                "the same message at the recorded pin in {}",
                seen.place()
            )),
            None => super::toolchain::limit_of(&message)
                .map(|limit| format!("known limit: {}", limit.name)),
        };
        match evidence {
            Some(evidence) => toolchain.push(ToolchainError { error, evidence }),
            None => drift.push(error),
        }
    }
    (drift, toolchain)
}

/// The headers the candidate's errors name that the machine `lacks`, with the files that
/// include each.
fn missing_headers(
    candidate: &BuildReport,
    lacks: impl Fn(&Diagnostic) -> Option<String>,
) -> Vec<MissingHeader> {
    let mut missing: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for error in candidate.all_errors() {
        if let Some(header) = lacks(error) {
            missing
                .entry(header)
                .or_default()
                .insert(error.file.clone());
        }
    }
    let header = |(header, by): (String, BTreeSet<String>)| MissingHeader {
        header,
        included_by: by.into_iter().collect(),
    };
    missing.into_iter().map(header).collect()
}

/// The candidate's errors (but those of a header the machine `lacks`) that `baseline` does not
/// have, and those it has, matched as a multiset: an error the candidate shows more often than
/// the baseline is new that many times.
fn split_errors(
    baseline: &BuildReport,
    candidate: &BuildReport,
    lacks: impl Fn(&Diagnostic) -> Option<String>,
) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    let mut at_baseline: BTreeMap<(String, String), usize> = BTreeMap::new();
    for error in baseline.all_errors().filter(|e| lacks(e).is_none()) {
        *at_baseline.entry(error_key(error, baseline)).or_default() += 1;
    }
    let errors = candidate.all_errors().filter(|e| lacks(e).is_none());
    errors.cloned().partition(
        |error| match at_baseline.get_mut(&error_key(error, candidate)) {
            Some(count) if *count > 0 => {
                *count -= 1;
                false
            }
            _ => true,
        },
    )
}

/// `what: N compile errors, M undefined symbols`, and them as rows of one table: where, and
/// what.
fn found(doc: &mut Doc, what: &str, errors: &[Diagnostic], undefined: &[UndefinedSymbol]) {
    let (e, u) = (errors.len(), undefined.len());
    let undefined = undefined.iter().map(|u| {
        vec![
            codes(&u.needed_by),
            vec![words("undefined symbol "), code(&u.symbol)],
        ]
    });
    let rows = errors.iter().map(error_row).chain(undefined).collect();
    doc.say(format!("{what}: {e} compile errors, {u} undefined symbols"))
        .table(&["where", "error"], rows);
}

/// Takes the errors in `conflicted` files out of `errors`, counted by file.
fn set_aside_conflicts(
    errors: Vec<Diagnostic>,
    conflicted: &[String],
) -> (Vec<Diagnostic>, Vec<ConflictedFile>) {
    let (in_conflict, kept): (Vec<_>, Vec<_>) = errors
        .into_iter()
        .partition(|e| conflicted.contains(&e.file));
    let files = conflicted
        .iter()
        .map(|path| ConflictedFile {
            path: path.clone(),
            errors: in_conflict.iter().filter(|e| e.file == *path).count(),
        })
        .collect();
    (kept, files)
}

/// The header a "file not found" error names: clang's `'X' file not found`, gcc's
/// `X: No such file or directory`.
pub fn missing_header_name(message: &str) -> Option<String> {
    if let Some(rest) = message.strip_suffix(" file not found") {
        let name = rest.trim().trim_matches(['\'', '"', '<', '>']);
        return (!name.is_empty()).then(|| name.to_string());
    }
    let name = message.strip_suffix(": No such file or directory")?.trim();
    (!name.is_empty() && !name.contains(' ')).then(|| name.to_string())
}

/// Whether the tree holds `header` (as included: `mlx/x.h`, or a name some folder of the tree
/// holds), so its absence is the tree's, not the machine's.
fn tree_has(tree: &Path, header: &str) -> bool {
    if header.contains("..") || header.starts_with('/') {
        return false;
    }
    let files = || crate::fsutil::files_below(tree, false, |_, _| false).unwrap_or_default();
    tree.join(header).is_file() || files().iter().any(|f| tree.join(f).ends_with(header))
}

/// What an error is matched by: its file and its message with the places taken out.
fn error_key(error: &Diagnostic, report: &BuildReport) -> (String, String) {
    let roots = [&report.tree, &report.build_dir].map(|root| root.display().to_string());
    let message = normalize_message(&error.message, &roots);
    (error.file.clone(), message)
}

/// `message` without what differs between two builds of the same code: the trees' roots,
/// temporary paths, and `:LINE[:COLUMN]` numbers.
pub fn normalize_message(message: &str, roots: &[String]) -> String {
    static TMP: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"/tmp/[^\s'"`:()]*"#).expect("a valid pattern"));
    static NUMBER: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r":[0-9]+").expect("a valid pattern"));
    let roots = roots.iter().filter(|r| !r.is_empty());
    let text = roots.fold(message.to_string(), |text, root| {
        text.replace(root, "<tree>")
    });
    NUMBER
        .replace_all(&TMP.replace_all(&text, "<tmp>"), "")
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_lose_their_places_and_roots() {
        let roots = ["/w/a1b2/tree".to_string(), "/w/a1b2/build".to_string()];
        assert_eq!(
            normalize_message(
                "no matching function for call to 'f' (declared at /w/a1b2/tree/mlx/x.h:12:5)",
                &roots
            ),
            "no matching function for call to 'f' (declared at <tree>/mlx/x.h)"
        );
        assert_eq!(
            normalize_message("in /tmp/hipcc-8f2a1c/x.cpp:3: crashed", &[]),
            "in <tmp>: crashed"
        );
        assert_eq!(
            normalize_message("std::vector<int>::size", &[]),
            "std::vector<int>::size"
        );
    }

    #[test]
    fn a_fix_answers_the_errors_in_its_files_and_the_symbols_its_lines_name() {
        let fix = FixText {
            number: 6,
            title: "Stub it".into(),
            paths: vec!["mlx/backend/rocm/primitives.cpp".into()],
            added: "NO_GPU(GatherQQMM)\nbool Event::error() const { return false; }\n".into(),
        };
        let ns = "mlx::core";
        let eval = "mlx::core::GatherQQMM::eval_gpu(std::vector<mlx::core::array> const&)";
        assert!(answers(&fix, "undefined", eval, ns));
        assert!(answers(
            &fix,
            "undefined",
            "mlx::core::Event::error() const",
            ns
        ));
        assert!(!answers(
            &fix,
            "undefined",
            "mlx::core::GatherQMM::eval_gpu()",
            ns
        ));
        assert!(!answers(&fix, "undefined", "mlx::core::Event::wait()", ns));
        assert!(answers(
            &fix,
            "error",
            "mlx/backend/rocm/primitives.cpp",
            ns
        ));
        assert!(!answers(&fix, "conflict", "mlx/fast.cpp", ns));
    }

    #[test]
    fn missing_headers_are_read_from_clang_and_gcc() {
        assert_eq!(
            missing_header_name("'rocblas/rocblas.h' file not found").as_deref(),
            Some("rocblas/rocblas.h")
        );
        assert_eq!(
            missing_header_name("hipblaslt/hipblaslt.h: No such file or directory").as_deref(),
            Some("hipblaslt/hipblaslt.h")
        );
        assert_eq!(missing_header_name("expected ';' after expression"), None);
    }
}
