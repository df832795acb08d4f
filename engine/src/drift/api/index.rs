//! Upstream declarations indexed the two ways the rules look them up: by qualified name and
//! by last name.

use super::model::{Decl, DeclKind};
use std::collections::HashMap;

#[derive(Default)]
pub struct Index<'a> {
    pub by_key: HashMap<String, Vec<&'a Decl>>,
    pub by_name: HashMap<&'a str, Vec<&'a Decl>>,
}

impl<'a> Index<'a> {
    pub fn new(decls: impl Iterator<Item = &'a Decl>) -> Index<'a> {
        let mut index = Index::default();
        for decl in decls {
            index.by_key.entry(decl.key()).or_default().push(decl);
            index
                .by_name
                .entry(decl.name.as_str())
                .or_default()
                .push(decl);
        }
        index
    }

    /// Every declaration, in no order.
    pub fn decls(&self) -> impl Iterator<Item = &'a Decl> + '_ {
        self.by_key.values().flatten().copied()
    }

    /// Everything declared under a qualified name.
    pub fn get(&self, key: &str) -> &[&'a Decl] {
        self.by_key.get(key).map_or(&[], Vec::as_slice)
    }

    /// The callables (functions, members, constructors) declared under a qualified name.
    pub fn callables(&self, key: &str) -> Vec<&'a Decl> {
        self.get(key)
            .iter()
            .copied()
            .filter(|d| d.is_callable())
            .collect()
    }

    pub fn named(&self, name: &str) -> &[&'a Decl] {
        self.by_name.get(name).map_or(&[], Vec::as_slice)
    }

    /// Classes called `name` whose qualified name ends with `qualifier::name`.
    pub fn classes(&self, qualifier: &[String], name: &str) -> Vec<&'a Decl> {
        self.named(name)
            .iter()
            .copied()
            .filter(|d| d.kind == DeclKind::Class && d.scope.ends_with(qualifier))
            .collect()
    }

    pub fn has_class(&self, key: &str) -> bool {
        self.get(key).iter().any(|d| d.kind == DeclKind::Class)
    }

    /// The constructors of the class with this qualified name.
    pub fn constructors(&self, class_key: &str) -> Vec<&'a Decl> {
        let name = class_key.rsplit("::").next().unwrap_or(class_key);
        self.callables(&format!("{class_key}::{name}"))
            .into_iter()
            .filter(|d| d.kind == DeclKind::Constructor)
            .collect()
    }
}
