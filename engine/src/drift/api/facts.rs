//! What parsing gives: one file's facts, and the backend's model made of them. Data only, so
//! the parse (`sources.rs`) and the store of kept parses (`parses.rs`) can both name it.

use super::model::{Decl, DeclKind, Loc};
use super::syntax::StubUse;
use super::uses::Uses;
use serde::Serialize;
use std::collections::HashMap;

/// What one parsed file holds.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct FileFacts {
    pub decls: Vec<Decl>,
    pub includes: Vec<String>,
    pub stubs: Vec<StubUse>,
    /// ERROR and MISSING nodes left after blanking: how much of the file may have been missed.
    pub errors: usize,
}

/// The backend: its declarations and definitions, what it uses, and its stubs.
#[derive(Debug, Default)]
pub struct Backend {
    pub decls: Vec<Decl>,
    pub uses: Uses,
    /// Stub macro invocations with their place.
    pub stubs: Vec<(Loc, StubUse)>,
    /// `(including file, include as written)`.
    pub includes: Vec<(String, String)>,
    pub files: usize,
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
