//! `differing-file-named`: every file that differs from the base tree is named by an entry.

use crate::facts::Facts;
use crate::names::{named_files, Names};
use crate::{Chapter, Check, Finding, Needs, Severity};
use forkbook_records::register::Register;

pub(crate) const CHECK: Check = Check {
    id: "differing-file-named",
    name: "every differing file is named by an entry",
    severity: Severity::Error,
    chapter: Chapter::Register,
    doc: include_str!("differing-file-named.md"),
    source: file!(),
    needs: Needs::Objects { without: None },
    run,
};

fn run(facts: &Facts) -> Vec<Finding> {
    let Some(tree) = facts.tree() else {
        return Vec::new();
    };
    let empty = Register::default();
    let register = facts.records.register.as_ref().unwrap_or(&empty);
    let file = facts.register_file();
    let names = Names::new(&tree.files, &facts.backend_prefix);
    let (named, _) = named_files(&register.entries, &names);
    let mut findings = Vec::new();
    for path in &tree.differing {
        if named.contains(path.as_str()) {
            continue;
        }
        let message = format!("`{path}` differs from the base tree but no entry names it");
        let note = "name it in the entry whose fix changes it (full path, path under the backend \
                    folder, or bare file name where unique), or drop the change";
        findings.push(CHECK.finding(&file, None, message).with_note(note));
    }
    findings
}
