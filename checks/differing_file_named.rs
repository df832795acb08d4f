//! `differing-file-named`: every file that differs from the base tree is named by an entry.

use crate::facts::Facts;
use crate::names::{Names, Resolved};
use crate::{pages::differing_file_named as CHECK, Findings};
use std::collections::HashSet;

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let Some(tree) = facts.tree() else {
        return;
    };
    let file = facts.register_file();
    let names = Names::new(&tree.files, &facts.backend_prefix);
    // Every name the entries write, each once, resolved: the files the register names.
    let summary = facts.summary();
    let named: HashSet<&str> = (summary.names())
        .filter_map(|name| match names.resolve(name) {
            Resolved::File(path) => Some(path),
            _ => None,
        })
        .collect();
    for path in &tree.differing {
        if named.contains(path.as_str()) {
            continue;
        }
        let message = format!("`{path}` differs from the base tree but no entry names it");
        let note = "name it in the entry whose fix changes it (full path, path under the backend \
                    folder, or bare file name where unique), or drop the change";
        findings.push(CHECK.finding(&file, None, message).with_note(note));
    }
}
