//! The rules: upstream declarations at both commits against what the backend uses and
//! defines, turned into findings.
//!
//! Uses are matched by spelled name, qualifier and argument count (there is no type checker
//! here), so a rule reports a call only when every upstream overload it could reach breaks:
//! an overloaded name the backend may be calling through an unchanged overload stays quiet.
//!
//! A function whose arguments still fit but whose return type changed breaks a call only
//! where the call site depends on the type ([`result_fits`]):
//! - `auto [a, b] = f(..)` (also `auto&`, `const auto&`, `auto [..]{f(..)}`) breaks exactly
//!   when the new type is not a `std::tuple` or `std::pair` of as many elements as there are
//!   names: `std::array`, structs with public members and user tuple-likes are always
//!   reported, and the bound names' new element types are not followed into their uses;
//! - `auto r = f(..)` (by value or reference, or `decltype(auto)`) and a discarded `f(..);`
//!   or `(void)f(..);` do not break by themselves (unless the new type is `void` where a
//!   variable is initialized); what the code later does with `r` is not checked, so
//!   `r.first` on a result that is no longer a pair goes unreported;
//! - every other use (an argument, `return f(..)`, `Shape s = f(..)`, `f(..).first`) breaks,
//!   as with no type checker nothing else can be told apart.

use super::config::ApiConfig;
use super::facts::Backend;
use super::index::Index;
use super::model::{call_form, tuple_arity};
use super::model::{qualify, Decl, DeclKind, Loc};
use super::parses::Parses;
use super::report::{Evidence, Finding, Kind};
use super::sources::Side;
use super::syntax::Prep;
use super::syntax::StubUse;
use super::uses::{Call, ResultUse};
use crate::FileMap;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

mod interface;
mod lookup;

/// Everything the rules read.
pub struct Inputs<'a> {
    pub cfg: &'a ApiConfig,
    pub from: &'a Side,
    pub to: &'a Side,
    /// The upstream files at the new commit (reference backends are read from here on demand).
    pub to_files: &'a FileMap,
    pub backend: &'a Backend,
    pub prep: &'a Prep,
    pub parses: &'a Parses<'a>,
}

/// The rules' shared state: indexes and the findings so far, one per kind and symbol.
pub struct Rules<'a> {
    pub inputs: &'a Inputs<'a>,
    pub from: Index<'a>,
    pub to: Index<'a>,
    /// Definitions at the new commit in headers and shared backend sources.
    pub upstream_defs: Index<'a>,
    pub backend_defs: Index<'a>,
    pub backend_funcs: HashMap<&'a str, Vec<&'a Decl>>,
    findings: BTreeMap<(Kind, String), Finding>,
}

/// Runs every rule; findings come out sorted by kind and symbol.
pub fn classify(inputs: &Inputs) -> Vec<Finding> {
    let namespace = inputs.cfg.namespace_path();
    let shared: Vec<&Decl> = inputs.to.shared_definitions(inputs.cfg).collect();
    let header_defs = inputs.to.visible_decls(&namespace).filter(|d| d.has_body);
    let mut rules = Rules {
        inputs,
        from: Index::new(inputs.from.visible_decls(&namespace)),
        to: Index::new(inputs.to.visible_decls(&namespace)),
        upstream_defs: Index::new(header_defs.chain(shared)),
        backend_defs: Index::new(inputs.backend.decls.iter().filter(|d| d.has_body)),
        backend_funcs: inputs.backend.free_functions(),
        findings: BTreeMap::new(),
    };
    rules.definitions();
    rules.stubs();
    rules.calls();
    rules.constructs();
    rules.missing_eval_gpu();
    rules.missing_backend_definitions();
    rules.hidden_by_new_declarations();
    rules.removed_names();
    rules.findings.into_values().collect()
}

/// A finding before history and suppressions: the declarations at both commits and the backend
/// place it points at.
pub fn finding(
    kind: Kind,
    symbol: String,
    message: String,
    from: Option<&Decl>,
    to: Option<&Decl>,
    backend: Option<Loc>,
) -> Finding {
    Finding {
        kind,
        symbol,
        message,
        from: from.map(Decl::loc),
        to: to.map(Decl::loc),
        backend,
        introduced_by: None,
        suppressed: None,
        evidence: Evidence {
            to_text: to.map(|d| (d.path.clone(), d.text.clone())),
            from_text: from.map(|d| (d.path.clone(), d.text.clone())),
        },
    }
}

impl<'a> Rules<'a> {
    fn push(&mut self, finding: Finding) {
        self.findings
            .entry((finding.kind, finding.symbol.clone()))
            .or_insert(finding);
    }

    /// The backend uses `decl` at `at` and upstream removed it: a removed-declaration finding.
    fn removed(&mut self, decl: &Decl, at: Loc, message: String) {
        let kind = Kind::RemovedDeclaration;
        self.push(finding(
            kind,
            decl.key(),
            message,
            Some(decl),
            None,
            Some(at),
        ));
    }

    /// `old`, which the backend uses or defines at `at`, broke: a `kind` finding against the
    /// closest of `news`, or a removed-declaration one when there are none. `message` says how,
    /// from the symbol and that closest overload.
    fn broke(
        &mut self,
        kind: Kind,
        old: &'a Decl,
        news: &[&'a Decl],
        at: &Loc,
        message: impl FnOnce(&str, Option<&Decl>) -> String,
    ) {
        let (key, to) = (old.key(), closest(old, news));
        let kind = to.map_or(Kind::RemovedDeclaration, |_| kind);
        let message = message(&key, to);
        self.push(finding(kind, key, message, Some(old), to, Some(at.clone())));
    }

    fn has_finding(&self, kind: Kind, symbol: &str) -> bool {
        self.findings.contains_key(&(kind, symbol.to_string()))
    }

    /// Out-of-line definitions in the backend of upstream declarations that changed.
    fn definitions(&mut self) {
        let backend = self.inputs.backend;
        for def in backend
            .decls
            .iter()
            .filter(|d| d.has_body && d.is_callable())
        {
            let olds = self.from.callables(&def.key());
            let Some(old) = matching_declaration(def, &olds) else {
                continue;
            };
            let news = self.to.callables(&def.key());
            // A definition inside `namespace x { .. }` of a function no longer declared is
            // merely unused; a qualified one (`void Event::wait()`) no longer compiles.
            let unused = news.is_empty() && !def.qualified_name;
            if unused || news.iter().any(|new| same_definition(old, new)) {
                continue;
            }
            let kind = match def.kind {
                DeclKind::Constructor => Kind::ConstructorChanged,
                _ => Kind::ChangedSignature,
            };
            self.broke(kind, old, &news, &def.loc(), |key, new| match new {
                None => format!("the backend defines `{key}`, which upstream no longer declares"),
                Some(new) => format!(
                    "the backend defines `{}{}`; upstream now declares `{}`",
                    def.name,
                    old.describe(),
                    new.describe()
                ),
            });
        }
    }

    /// Stub macros (`NO_GPU(Abs)`) define members of classes that must still be declared
    /// with the signature the macro writes.
    fn stubs(&mut self) {
        let inputs = self.inputs;
        for (at, stub) in &inputs.backend.stubs {
            let members = inputs.prep.stubs.get(&stub.macro_name);
            for class in self.from.classes(&[], &stub.argument) {
                let class_key = class.key();
                if !self.to.has_class(&class_key) {
                    let message = format!(
                        "the backend stubs `{}` with `{}`, a class upstream removed",
                        stub.argument, stub.macro_name
                    );
                    self.removed(class, at.clone(), message);
                    continue;
                }
                for member in members.into_iter().flatten() {
                    self.stubbed_member(&class_key, member, stub, at);
                }
            }
        }
    }

    fn stubbed_member(&mut self, class_key: &str, member: &str, stub: &StubUse, at: &Loc) {
        let key = format!("{class_key}::{member}");
        let news = self.to.callables(&key);
        let olds = self.from.callables(&key);
        let Some(broken) = olds
            .iter()
            .find(|old| !news.iter().any(|new| same_definition(old, new)))
        else {
            return;
        };
        let used = format!("{}({})", stub.macro_name, stub.argument);
        let message = |key: &str, new: Option<&Decl>| match new {
            None => format!("`{used}` defines `{key}`, which upstream no longer declares"),
            Some(new) => format!(
                "`{used}` defines `{member}{}`; upstream now declares `{}`",
                broken.describe(),
                new.describe()
            ),
        };
        self.broke(Kind::ChangedSignature, broken, &news, at, message);
    }

    /// Calls of upstream functions and members whose every reachable overload broke: the
    /// arguments no longer fit, or the result changed in a way the call site notices.
    fn calls(&mut self) {
        let backend = self.inputs.backend;
        // A call decides the same as the first one spelled alike (only its place differs,
        // and the first finding per kind and symbol is kept): each spelling is judged once.
        let mut judged = HashSet::new();
        for call in &backend.uses.calls {
            let spelling = (
                call.name.as_str(),
                call.qualifier.as_slice(),
                call.member,
                call.args,
                call.namespaces.as_slice(),
                call.result,
            );
            if !judged.insert(spelling) {
                continue;
            }
            if !call.member {
                let classes = self.from.classes(&call.qualifier, &call.name);
                if !classes.is_empty() {
                    self.construct(&classes, call.args, &call.loc);
                    continue;
                }
            }
            let candidates = lookup::call_candidates(self, call);
            let fitting: Vec<&Decl> = candidates
                .into_iter()
                .filter(|d| d.fits(call.args))
                .collect();
            let news = |old: &Decl| self.to.callables(&old.key());
            let broke = |old: &&Decl| !news(old).iter().any(|new| still_compiles(old, new, call));
            if let Some(&old) = fitting.first().filter(|_| fitting.iter().all(broke)) {
                self.report_call(old, &news(old), call);
            }
        }
    }

    fn report_call(&mut self, old: &'a Decl, news: &[&'a Decl], call: &Call) {
        let dot = if call.member { "." } else { "" };
        let how = format!(
            "`{dot}{}(..)` with {} argument(s)",
            qualify(&call.qualifier, &call.name),
            call.args
        );
        let message = |key: &str, new: Option<&Decl>| match new {
            None => format!("the backend calls {how}; upstream no longer declares `{key}`"),
            Some(new) => format!(
                "the backend calls {how}{}: `{}{}` became `{}{}`",
                binding_note(old, new, call),
                old.name,
                old.describe(),
                new.name,
                new.describe()
            ),
        };
        self.broke(Kind::ChangedSignature, old, news, &call.loc, message);
    }

    /// Objects the backend builds (`Buffer b(p)`, `new Buffer(p)`, `make_shared<Buffer>(p)`).
    fn constructs(&mut self) {
        let backend = self.inputs.backend;
        let mut judged = HashSet::new();
        for construct in &backend.uses.constructs {
            let spelling = (
                construct.name.as_str(),
                construct.qualifier.as_slice(),
                construct.args,
            );
            if !judged.insert(spelling) {
                continue; // decided by the first one spelled alike
            }
            let classes = self.from.classes(&construct.qualifier, &construct.name);
            self.construct(&classes, construct.args, &construct.loc);
        }
    }

    /// Each class the backend constructs with `args` arguments: one finding where upstream
    /// removed it, or where no new constructor takes what an old one that fits did.
    fn construct(&mut self, classes: &[&'a Decl], args: usize, at: &Loc) {
        for class in classes {
            let key = class.key();
            let olds = self.from.constructors(&key);
            let fitting: Vec<&Decl> = olds.iter().copied().filter(|c| c.fits(args)).collect();
            if fitting.is_empty() {
                continue; // implicit constructors, or not this class
            }
            if !self.to.has_class(&key) {
                let name = &class.name;
                let message = format!("the backend constructs `{name}`, a class upstream removed");
                self.removed(class, at.clone(), message);
                continue;
            }
            let news = self.to.constructors(&key);
            let compatible = |old: &&Decl| news.iter().any(|new| old.call_compatible(new, args));
            if !fitting.iter().any(compatible) {
                self.constructor_changed(class, fitting[0], &news, args, at);
            }
        }
    }

    fn constructor_changed(
        &mut self,
        class: &Decl,
        old: &Decl,
        news: &[&Decl],
        args: usize,
        at: &Loc,
    ) {
        let now: Vec<String> = news
            .iter()
            .map(|n| format!("`{}{}`", n.name, n.describe()))
            .collect();
        let now = if now.is_empty() {
            "implicit".to_string()
        } else {
            now.join(" or ")
        };
        let message = format!(
            "the backend constructs `{}` with {args} argument(s): `{}{}` became {now}",
            class.name,
            old.name,
            old.describe()
        );
        let (kind, to) = (Kind::ConstructorChanged, closest(old, news));
        self.push(finding(
            kind,
            old.key(),
            message,
            Some(old),
            to,
            Some(at.clone()),
        ));
    }

    /// Upstream classes and enumerators the backend names that are gone (functions are
    /// covered by the call rules).
    fn removed_names(&mut self) {
        let inputs = self.inputs;
        let to_names: BTreeSet<(&str, DeclKind)> =
            self.to.decls().map(|d| (d.name.as_str(), d.kind)).collect();
        let mut gone: Vec<&Decl> = self
            .from
            .decls()
            .filter(|d| matches!(d.kind, DeclKind::Class | DeclKind::Enumerator))
            .filter(|d| !to_names.contains(&(d.name.as_str(), d.kind)))
            .collect();
        gone.sort_by_key(|d| d.key());
        for decl in gone {
            let Some(used) = inputs.backend.uses.names.get(&decl.name) else {
                continue;
            };
            let what = match decl.kind {
                DeclKind::Class => "class",
                _ => "enumerator",
            };
            let message = format!(
                "the backend names `{}`, a {what} upstream removed",
                decl.name
            );
            self.removed(decl, used.clone(), message);
        }
    }
}

/// Whether `call`, written against `old`, still compiles against `new`: its arguments fit,
/// and the result type is the same or changed in a way the call site does not notice.
fn still_compiles(old: &Decl, new: &Decl, call: &Call) -> bool {
    old.accepts_same_arguments(new, call.args)
        && (old.same_result(new) || result_fits(call.result, &new.ret))
}

/// Whether a call site using the result as `result` compiles with a result of type `ret`
/// (see the module doc for what is covered).
fn result_fits(result: ResultUse, ret: &str) -> bool {
    match result {
        ResultUse::Structured(names) => tuple_arity(ret) == Some(names),
        ResultUse::Deduced => call_form(ret) != "void",
        ResultUse::Discarded => true,
        ResultUse::Other => false,
    }
}

/// `, binding 3 names` when a structured binding meets a changed result type, so the message
/// says why the call breaks.
fn binding_note(old: &Decl, new: &Decl, call: &Call) -> String {
    match call.result {
        ResultUse::Structured(names) if !old.same_result(new) => {
            let elements = tuple_arity(&new.ret).map_or("not a tuple or pair".to_string(), |n| {
                format!("{n} element(s)")
            });
            format!(" binding {names} name(s) (the new result: {elements})")
        }
        _ => String::new(),
    }
}

/// The upstream declaration a backend definition implements: the one with its exact
/// signature, or the only one with as many parameters.
fn matching_declaration<'d>(def: &Decl, olds: &[&'d Decl]) -> Option<&'d Decl> {
    let form = def.definition_form();
    if let Some(exact) = olds.iter().find(|o| o.definition_form() == form) {
        return Some(exact);
    }
    let same_arity: Vec<&&Decl> = olds
        .iter()
        .filter(|o| o.params.len() == def.params.len())
        .collect();
    (same_arity.len() == 1).then(|| *same_arity[0])
}

fn same_definition(old: &Decl, new: &Decl) -> bool {
    old.definition_form() == new.definition_form() && old.ret == new.ret
}

/// The new overload most like `old` (most leading parameters of the same type).
fn closest<'d>(old: &Decl, news: &[&'d Decl]) -> Option<&'d Decl> {
    news.iter().copied().max_by_key(|new| {
        let shared = old
            .params
            .iter()
            .zip(&new.params)
            .take_while(|(a, b)| a.ty == b.ty)
            .count();
        (
            shared,
            usize::MAX - new.params.len().abs_diff(old.params.len()),
        )
    })
}
