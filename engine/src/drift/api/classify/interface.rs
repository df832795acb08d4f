//! Declarations the backend must define: `eval_gpu` of new primitives, and new members or
//! functions of the interfaces backends implement.
//!
//! Which declarations every backend must define is not written anywhere in C++. The rule
//! used here: a declaration new at the target commit, with no body in a header, in a scope
//! (class or namespace) where this backend already defines upstream-declared siblings, that
//! no header or shared backend source defines, and that another backend does define. The
//! last condition is the evidence: it keeps out functions that core code defines.

use super::{finding, Rules};
use crate::drift::api::model::{qualify, Decl, DeclKind, Loc};
use crate::drift::api::report::Kind;
use crate::drift::api::sources::reference_definitions;
use std::collections::BTreeMap;

impl<'a> Rules<'a> {
    /// The members the backend's stub macros define, by qualified name.
    fn stubbed(&self) -> BTreeMap<String, Loc> {
        let mut out = BTreeMap::new();
        for (at, stub) in &self.inputs.backend.stubs {
            let members = self.inputs.prep.stubs.get(&stub.macro_name);
            for class in self.to.classes(&[], &stub.argument) {
                for member in members.into_iter().flatten() {
                    out.entry(qualify(&class.scope, &format!("{}::{member}", class.name)))
                        .or_insert_with(|| at.clone());
                }
            }
        }
        out
    }

    /// Whether the backend, a stub, a header or a shared backend source defines `decl`.
    fn defined(&self, decl: &Decl, stubbed: &BTreeMap<String, Loc>) -> bool {
        let key = decl.key();
        let form = decl.definition_form();
        let same = |d: &&Decl| d.definition_form() == form;
        stubbed.contains_key(&key)
            || self.backend_defs.get(&key).iter().any(same)
            || self.upstream_defs.get(&key).iter().any(same)
    }

    pub(super) fn missing_eval_gpu(&mut self) {
        let stubbed = self.stubbed();
        let mut classes: Vec<&Decl> = self
            .to
            .decls()
            .filter(|d| d.kind == DeclKind::Class)
            .collect();
        classes.sort_by_key(|d| d.key());
        for class in classes {
            let key = format!("{}::eval_gpu", class.key());
            let declared = self.to.callables(&key);
            let Some(eval) = declared.iter().find(|d| !d.has_body && !d.is_pure) else {
                continue;
            };
            if !self.from.callables(&key).is_empty() || self.defined(eval, &stubbed) {
                continue;
            }
            let configured = &self.inputs.cfg.stub_macros;
            let stubs: Vec<&str> = configured.keys().map(String::as_str).collect();
            let (name, stubs) = (&class.name, stubs.join(", "));
            let message = format!(
                "new primitive `{name}` declares `eval_gpu`; the backend neither defines `{name}::eval_gpu` nor stubs it ({stubs})"
            );
            // Where the backend stubs the primitives it does not implement: where a stub goes.
            let stub_list = self.inputs.backend.stubs.iter();
            let backend = stub_list
                .filter(|(_, s)| configured.contains_key(&s.macro_name))
                .map(|(at, _)| at.clone())
                .next();
            let kind = Kind::MissingEvalGpu;
            let mut found = finding(kind, key, message, None, Some(eval), backend);
            // `void eval_gpu(..) override;` reads the same in every primitive; the class does not.
            found.evidence.to_text = Some((class.path.clone(), class.text.clone()));
            self.push(found);
        }
    }

    /// Scopes (classes and namespaces) in which the backend defines something upstream
    /// declared at the old commit: the interfaces this backend implements. The value is one
    /// such definition, to show where the missing one belongs.
    fn implemented_scopes(&self, stubbed: &BTreeMap<String, Loc>) -> BTreeMap<String, Loc> {
        let backend = self.inputs.backend.decls.iter();
        let defined = backend.filter(|d| d.has_body && d.is_callable());
        let defined = defined.map(|d| (d.key(), d.loc()));
        let mut scopes = BTreeMap::new();
        for (key, loc) in defined.chain(stubbed.iter().map(|(k, l)| (k.clone(), l.clone()))) {
            if !self.from.callables(&key).is_empty() {
                let scope = key.rsplit_once("::").map_or("", |(scope, _)| scope);
                scopes.entry(scope.to_string()).or_insert(loc);
            }
        }
        scopes
    }

    pub(super) fn missing_backend_definitions(&mut self) {
        let stubbed = self.stubbed();
        let scopes = self.implemented_scopes(&stubbed);
        let pending = self.new_undefined(&scopes, &stubbed);
        let inputs = self.inputs;
        let (files, cfg, prep) = (inputs.to_files, inputs.cfg, inputs.prep);
        let evidence = reference_definitions(files, cfg, prep, &pending, inputs.parses);
        for decl in pending {
            let key = decl.key();
            let Some(defined_at) = evidence.get(&(key.clone(), decl.definition_form())) else {
                continue;
            };
            let message = format!(
                "new `{}{}` must be defined by every backend ({defined_at} defines it); this backend does not",
                decl.name,
                decl.describe(),
            );
            let backend = scopes.get(&decl.scope.join("::")).cloned();
            let kind = Kind::MissingBackendDefinition;
            self.push(finding(kind, key, message, None, Some(decl), backend));
        }
    }

    /// Upstream's new callables declared out of line in a scope the backend implements, that
    /// the backend neither defines nor stubs and no other finding reports.
    fn new_undefined(
        &self,
        scopes: &BTreeMap<String, Loc>,
        stubbed: &BTreeMap<String, Loc>,
    ) -> Vec<&'a Decl> {
        let mut candidates: Vec<&Decl> = self
            .to
            .decls()
            .filter(|d| {
                d.is_callable()
                    && !d.has_body
                    && !d.is_pure
                    && !d.is_template
                    && d.name != "eval_gpu"
            })
            .filter(|d| scopes.contains_key(&d.scope.join("::")))
            .collect();
        candidates.sort_by_key(|d| (d.key(), d.lines));
        let mut pending = Vec::new();
        for decl in candidates {
            let key = decl.key();
            let form = decl.definition_form();
            let existed = self
                .from
                .callables(&key)
                .iter()
                .any(|old| old.definition_form() == form);
            let reported = self.has_finding(Kind::ChangedSignature, &key)
                || self.has_finding(Kind::ConstructorChanged, &key);
            if !(existed || reported || self.defined(decl, stubbed)) {
                pending.push(decl);
            }
        }
        pending
    }
}
