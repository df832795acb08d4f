//! Name lookup, approximated from syntax: which upstream declarations a call can reach, and
//! the rule for new declarations that hide what an unqualified call used to find.
//!
//! Unqualified lookup searches the enclosing namespaces from the innermost outwards and stops
//! at the first one that declares the name. A backend that calls `ceil_div(n, 256u)` from
//! `mlx::core::rocm` and declares its own `ceil_div` in the global namespace breaks the day
//! upstream declares any `ceil_div` in `mlx::core`: lookup stops there and never sees the
//! backend's.

use super::{finding, Rules};
use crate::drift::api::index::Index;
use crate::drift::api::model::{qualify, Decl, DeclKind};
use crate::drift::api::report::Kind;
use crate::drift::api::uses::Call;
use std::collections::HashSet;

/// The upstream declarations (at the old commit) a call can reach.
pub fn call_candidates<'a>(rules: &Rules<'a>, call: &Call) -> Vec<&'a Decl> {
    let named = rules.from.named(&call.name).iter().copied();
    if call.member {
        return named.filter(|d| d.kind == DeclKind::Method).collect();
    }
    if !call.qualifier.is_empty() {
        return named
            .filter(|d| matches!(d.kind, DeclKind::Function | DeclKind::Method))
            .filter(|d| d.scope.ends_with(&call.qualifier))
            .collect();
    }
    let own = rules
        .backend_funcs
        .get(call.name.as_str())
        .map_or(&[][..], Vec::as_slice);
    let api_namespace = rules.inputs.cfg.namespace_path();
    named
        .filter(|d| d.kind == DeclKind::Function)
        // Ordinary lookup sees enclosing namespaces; argument-dependent lookup reaches the
        // API namespace itself, where the types the backend passes live.
        .filter(|d| call.namespaces.starts_with(&d.scope) || d.scope == api_namespace)
        // The backend's own function in the same or a nearer enclosing namespace wins.
        .filter(|d| {
            !own.iter()
                .any(|b| call.namespaces.starts_with(&b.scope) && b.scope.len() >= d.scope.len())
        })
        .collect()
}

/// What unqualified lookup of `name` from `namespaces` finds first.
enum Found<'a> {
    Backend(&'a Decl),
    Upstream(&'a Decl),
    Nothing,
}

fn lookup<'a>(
    upstream: &Index<'a>,
    own: &[&'a Decl],
    namespaces: &[String],
    name: &str,
) -> Found<'a> {
    for depth in (0..=namespaces.len()).rev() {
        let scope = &namespaces[..depth];
        if let Some(decl) = own.iter().find(|d| d.scope == scope) {
            return Found::Backend(decl);
        }
        if let Some(decl) = upstream.get(&qualify(scope, name)).first() {
            return Found::Upstream(decl);
        }
    }
    Found::Nothing
}

impl<'a> Rules<'a> {
    pub(super) fn hidden_by_new_declarations(&mut self) {
        let backend = self.inputs.backend;
        // Lookup depends on the name and the enclosing namespaces alone, and the first
        // finding per symbol is kept: each pair is looked up once.
        let mut judged = HashSet::new();
        for call in backend
            .uses
            .calls
            .iter()
            .filter(|c| !c.member && c.qualifier.is_empty())
        {
            if !judged.insert((call.name.as_str(), call.namespaces.as_slice())) {
                continue;
            }
            let Some(own) = self.backend_funcs.get(call.name.as_str()) else {
                continue;
            };
            let before = lookup(&self.from, own, &call.namespaces, &call.name);
            let after = lookup(&self.to, own, &call.namespaces, &call.name);
            let (Found::Backend(mine), Found::Upstream(hider)) = (before, after) else {
                continue;
            };
            let what = match (hider.kind, hider.is_template) {
                (DeclKind::Class, _) => "class",
                (_, true) => "template",
                _ => "declaration",
            };
            let message = format!(
                "the backend calls `{}(..)` unqualified from `{}`, meaning its own `{}` ({}); the new {what} `{}` in an enclosing namespace now hides it",
                call.name,
                call.namespaces.join("::"),
                if mine.scope.is_empty() { format!("::{}", mine.name) } else { mine.key() },
                mine.loc(),
                hider.key(),
            );
            let (kind, at) = (Kind::HiddenByNewDeclaration, Some(call.loc.clone()));
            self.push(finding(kind, hider.key(), message, None, Some(hider), at));
        }
    }
}
