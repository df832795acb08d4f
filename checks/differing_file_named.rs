//! `differing-file-named`: every file that differs from the base tree is named by an entry.

use crate::facts::Facts;
use crate::names::{named_files, Names};
use crate::{pages::differing_file_named as CHECK, Findings};
use forkbook_records::register::Register;

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let Some(tree) = facts.tree() else {
        return;
    };
    let empty = Register::default();
    let register = facts.records.register.as_ref().unwrap_or(&empty);
    let file = facts.register_file();
    let names = Names::new(&tree.files, &facts.backend_prefix);
    let (named, _) = named_files(&register.entries, &names);
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
