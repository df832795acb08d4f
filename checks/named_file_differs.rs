//! `named-file-differs`: every file an entry names is a file that really differs from the base
//! tree.

use crate::facts::Facts;
use crate::names::{Names, Resolved};
use std::collections::HashSet;
use crate::register::{Entry, NamedFile, State};
use crate::{Chapter, Check, Finding, Needs, Severity};

pub(crate) const CHECK: Check = Check {
    id: "named-file-differs",
    name: "every named file differs from the base tree",
    severity: Severity::Error,
    chapter: Chapter::Register,
    doc: include_str!("named-file-differs.md"),
    source: file!(),
    needs: Needs::Objects { without: None },
    run,
};

fn run(facts: &Facts) -> Vec<Finding> {
    let (Some(register), Some(tree)) = (&facts.register, facts.tree()) else {
        return Vec::new();
    };
    let names = Names::new(&tree.files, &facts.backend_prefix);
    let differing: HashSet<&str> = tree.differing.iter().map(String::as_str).collect();
    let mut findings = Vec::new();
    for entry in &register.entries {
        for named in &entry.files {
            if let Some(message) = problem(entry, named, &names, &differing) {
                findings.push(CHECK.finding(&register.file, Some(named.line), message));
            }
        }
    }
    findings
}

fn problem(
    entry: &Entry,
    named: &NamedFile,
    names: &Names,
    differing: &HashSet<&str>,
) -> Option<String> {
    let n = entry.number;
    match names.resolve(&named.name) {
        Resolved::File(path) if differing.contains(path) => None,
        Resolved::File(path) if entry.state() == Some(State::Merged) => Some(format!(
            "entry {n} is merged and `{path}` no longer differs from the base tree: drop the entry"
        )),
        Resolved::File(path) => Some(format!(
            "entry {n} names `{path}`, which does not differ from the base tree"
        )),
        Resolved::Ambiguous(paths) => Some(format!(
            "entry {n} names `{}`, which could be any of {}: write the path",
            named.name,
            paths
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Resolved::NotFound => Some(format!(
            "entry {n} names `{}`, which is no file of the base tree or the overlay",
            named.name
        )),
    }
}
