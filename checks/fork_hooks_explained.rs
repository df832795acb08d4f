//! `fork-hooks-explained`: upstream files the fork changes but the overlay does not carry are
//! explained, in the register or the overlay's README.

use crate::facts::{Facts, Summary};
use crate::names::{Names, Resolved};
use crate::{pages::fork_hooks_explained as CHECK, Findings};
use std::collections::HashSet;

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let file = match &facts.records.readme {
        Some(readme) => readme.file.clone(),
        None => facts.record_path("README.md"),
    };
    let summary = facts.summary();
    let named = NamedInRegister::of(facts, &summary);
    findings.extend(
        facts
            .overlay
            .iter()
            .flat_map(|o| &o.fork_hooks)
            .filter(|hook| !explained(hook, facts, &named))
            .map(|hook| {
                let message = format!("the fork changes `{hook}`, which the overlay does not carry, and nothing says why");
                CHECK
                    .finding(&file, None, message)
                    .with_note("say in the overlay's README why the hook is left out (or carry the file as a core file)")
            })
    );
}

/// What the register's entries name, as written and as resolved: gathered once, not per hook.
struct NamedInRegister<'a> {
    written: HashSet<&'a str>,
    resolved: HashSet<&'a str>,
}

impl<'a> NamedInRegister<'a> {
    fn of(facts: &'a Facts, summary: &'a Summary) -> NamedInRegister<'a> {
        let names = Names::new(facts.tree_files(), &facts.backend_prefix);
        let mut named = NamedInRegister {
            written: HashSet::new(),
            resolved: HashSet::new(),
        };
        for name in summary.names() {
            named.written.insert(name);
            if let Resolved::File(path) = names.resolve(name) {
                named.resolved.insert(path);
            }
        }
        named
    }
}

/// Named by an entry, or mentioned in the README by full path or by a folder holding it
/// (`` `python/` `` explains every hook under `python/`).
fn explained(hook: &str, facts: &Facts, named: &NamedInRegister) -> bool {
    let in_readme = facts
        .records
        .readme
        .as_ref()
        .is_some_and(|r| r.text.contains(hook) || folder_mentioned(&r.text, hook));
    in_readme
        || named.written.contains(hook)
        || named.resolved.contains(hook)
        || facts
            .records
            .register
            .iter()
            .flat_map(|r| &r.left_out)
            .any(|section| {
                section.text.contains(hook)
                    || folder_mentioned(&section.text, hook)
                    || said_in_words(&section.text, hook)
            })
}

/// Whether a section's words name what `path` is: the first word of its top folder or of its
/// file name (`python/tests/…` is the Python bindings, `docs/…` the docs, `benchmarks/…` and
/// `benchmark_llm.py` the benchmarks, `test_generation.py` the tests), singular or plural. Only
/// the first word of the path counts, so a word every path shares (`mlx`, `rocm`) elsewhere in
/// it explains nothing.
fn said_in_words(text: &str, path: &str) -> bool {
    let first = path
        .trim_start_matches('.')
        .split(['/', '_', '-', '.'])
        .next()
        .unwrap_or("");
    let stem = word_stem(first);
    if stem.len() < 3 {
        return false;
    }
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| word_stem(word) == stem)
}

/// A word lowercased without a plural `s` (`Benchmarks` and `benchmark` are one word).
fn word_stem(word: &str) -> String {
    let lower = word.to_ascii_lowercase();
    match lower.strip_suffix('s') {
        Some(stem) if stem.len() >= 3 => stem.to_string(),
        _ => lower,
    }
}

/// Whether `text` has a code span naming a folder (ending in `/`) that holds `path`.
fn folder_mentioned(text: &str, path: &str) -> bool {
    text.split('`')
        .skip(1)
        .step_by(2)
        .any(|span| span.ends_with('/') && span.len() > 1 && path.starts_with(span))
}
