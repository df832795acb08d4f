//! `residual-hunks-noted`: every hunk of the residual (a local change to a core file) belongs to
//! an entry that names the file.

use crate::facts::{Facts, ResidualHunk};
use crate::names::{resolve, Resolved};
use crate::register::Register;
use crate::{Check, Finding, Severity};

pub(crate) const CHECK: Check = Check {
    id: "residual-hunks-noted",
    name: "every residual hunk is noted by its entry",
    severity: Severity::Error,
    doc: include_str!("residual-hunks-noted.md"),
    source: file!(),
    run,
};

fn run(facts: &Facts) -> Vec<Finding> {
    let empty = Register::default();
    let register = facts.register.as_ref().unwrap_or(&empty);
    facts
        .residual
        .iter()
        .filter_map(|hunk| problem(hunk, register, facts))
        .map(|message| CHECK.finding(facts.register_file(), None, message))
        .collect()
}

fn problem(hunk: &ResidualHunk, register: &Register, facts: &Facts) -> Option<String> {
    let place = format!("`{}:{}`", hunk.file, hunk.line);
    let Some(number) = hunk.fix else {
        return Some(format!("residual hunk at {place} belongs to no local fix"));
    };
    let Some(entry) = register.entry(number) else {
        return Some(format!("residual hunk at {place} belongs to fix {number}, which the register does not have"));
    };
    let named = entry.files.iter().any(|named| {
        resolve(&named.name, &facts.overlay_files, &facts.backend_prefix) == Resolved::File(&hunk.file)
    });
    (!named).then(|| format!("residual hunk at {place} belongs to entry {number}, which does not name `{}`", hunk.file))
}
