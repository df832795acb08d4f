//! `named-file-differs`: every file an entry names is a file that really differs from the base
//! tree.

use crate::facts::Facts;
use crate::names::{Names, Resolved};
use crate::{pages::named_file_differs as CHECK, Findings, OneEntry};
use forkbook_records::register::{Entry, NamedFile, State};
use std::collections::HashSet;

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    one_entry(facts).over_held_entries(facts, findings)
}

pub(crate) fn one_entry(facts: &Facts) -> OneEntry<'_> {
    let (Some(register), Some(tree)) = (&facts.records.register, facts.tree()) else {
        return OneEntry::nothing();
    };
    let names = Names::new(&tree.files, &facts.backend_prefix);
    let differing: HashSet<&str> = tree.differing.iter().map(String::as_str).collect();
    OneEntry::new(move |entry, findings| {
        // One file written several ways in one entry (`quantized/qmm.hip` and its full path) is
        // one file: checked once, at its first mention.
        let mut seen = HashSet::new();
        let listed = declares_files(entry);
        // Names read from prose are mentions as much as claims: while one of them differs, the
        // entry's fix is there, and the others (`binary.hip` among the sites that clamp, the
        // CPU backend's `conv.cpp`) are asides. An entry whose words name no differing file at
        // all is reported: its fix was dropped or moved.
        let prose_fix_present = !listed
            && entry.files.iter().any(|named| {
                matches!(names.resolve(&named.name), Resolved::File(path) if differing.contains(path))
            });
        for named in &entry.files {
            let resolved = names.resolve(&named.name);
            let key = match &resolved {
                Resolved::File(path) => path.to_string(),
                _ => named.name.trim().trim_start_matches("./").to_string(),
            };
            if !seen.insert(key) {
                continue;
            }
            if !listed && resolved == Resolved::NotFound && !claims_overlay(&named.name, facts) {
                continue;
            }
            if prose_fix_present
                && !matches!(resolved, Resolved::File(path) if differing.contains(path))
            {
                continue;
            }
            if let Some(message) = problem(entry, named, &names, &differing) {
                findings.push(CHECK.finding(&register.file, Some(named.line), message));
            }
        }
    })
}

/// Whether the entry declares its files (a `files:` field or a `Files:` line) rather than
/// leaving them to be read from the code spans of its prose.
fn declares_files(entry: &Entry) -> bool {
    entry.field("files").is_some()
        || entry
            .prose
            .lines()
            .any(|l| l.trim_start().to_ascii_lowercase().starts_with("files:"))
}

/// Whether a name read from an entry's prose is a claim about the overlay: a path under the
/// backend folder. Prose that mentions another file (upstream's CUDA source, a script of the
/// project, a header of upstream's that the overlay does not carry) says nothing about what
/// differs; a `files:` field names the overlay by definition.
fn claims_overlay(name: &str, facts: &Facts) -> bool {
    let prefix = facts.backend_prefix.trim_end_matches('/');
    let name = name.trim().trim_start_matches("./");
    !prefix.is_empty() && name.starts_with(&format!("{prefix}/"))
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
