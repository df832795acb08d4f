//! `differing-file-named`: every file that differs from the base tree is named by an entry.

use crate::facts::Facts;
use crate::names::{resolve, Resolved};
use crate::register::Register;
use crate::{Chapter, Check, Finding, Severity};

pub(crate) const CHECK: Check = Check {
    id: "differing-file-named",
    name: "every differing file is named by an entry",
    severity: Severity::Error,
    chapter: Chapter::Register,
    doc: include_str!("differing-file-named.md"),
    source: file!(),
    run,
};

fn run(facts: &Facts) -> Vec<Finding> {
    let Some(tree) = &facts.tree else {
        return Vec::new();
    };
    let empty = Register::default();
    let register = facts.register.as_ref().unwrap_or(&empty);
    let file = facts.register_file();
    let mut findings = Vec::new();
    for path in &tree.differing {
        if names_file(register, &tree.files, &facts.backend_prefix, path) {
            continue;
        }
        let message = format!("`{path}` differs from the base tree but no entry names it");
        let note = "name it in the entry whose fix changes it (full path, path under the backend \
                    folder, or bare file name where unique), or drop the change";
        findings.push(CHECK.finding(&file, None, message).with_note(note));
    }
    findings
}

/// Whether some entry names `path` (unambiguously).
fn names_file(register: &Register, files: &[String], prefix: &str, path: &str) -> bool {
    register
        .entries
        .iter()
        .flat_map(|e| &e.files)
        .any(|named| resolve(&named.name, files, prefix) == Resolved::File(path))
}
