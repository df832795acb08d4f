//! `fork-hooks-explained`: upstream files the fork changes but the overlay does not carry are
//! explained, in the register or the overlay's README.

use crate::facts::Facts;
use crate::names::{resolve, Resolved};
use crate::{Chapter, Check, Finding, Severity};

pub(crate) const CHECK: Check = Check {
    id: "fork-hooks-explained",
    name: "fork hooks outside the overlay are explained",
    severity: Severity::Warning,
    chapter: Chapter::Checks,
    doc: include_str!("fork-hooks-explained.md"),
    source: file!(),
    run,
};

fn run(facts: &Facts) -> Vec<Finding> {
    let file = match &facts.readme {
        Some(readme) => readme.file.clone(),
        None => facts.record_path("README.md"),
    };
    facts
        .fork_hooks
        .iter()
        .filter(|hook| !explained(hook, facts))
        .map(|hook| {
            let message = format!("the fork changes `{hook}`, which the overlay does not carry, and nothing says why");
            CHECK
                .finding(&file, None, message)
                .with_note("say in the overlay's README why the hook is left out (or carry the file as a core file)")
        })
        .collect()
}

/// Named by an entry, or mentioned in the README by full path or by a folder holding it
/// (`` `python/` `` explains every hook under `python/`).
fn explained(hook: &str, facts: &Facts) -> bool {
    let in_readme = facts
        .readme
        .as_ref()
        .is_some_and(|r| r.text.contains(hook) || folder_mentioned(&r.text, hook));
    let files = facts.tree.as_ref().map_or(&[][..], |t| &t.files[..]);
    let in_register = facts
        .register
        .iter()
        .flat_map(|r| &r.entries)
        .flat_map(|e| &e.files)
        .any(|named| {
            named.name == hook
                || resolve(&named.name, files, &facts.backend_prefix) == Resolved::File(hook)
        });
    in_readme || in_register
}

/// Whether `text` has a code span naming a folder (ending in `/`) that holds `path`.
fn folder_mentioned(text: &str, path: &str) -> bool {
    text.split('`')
        .skip(1)
        .step_by(2)
        .any(|span| span.ends_with('/') && span.len() > 1 && path.starts_with(span))
}
