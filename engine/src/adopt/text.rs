//! `forkbook adopt`'s report for people: what was written and what was understood, one line a
//! fact, and what needs a decision.

use super::Adoption;
use crate::report_value::{CommandReport, Verdict};
use std::fmt::Write as _;

impl CommandReport for Adoption {
    fn text(&self) -> String {
        let mut out = String::new();
        render(self, &mut out);
        out
    }

    /// Anything that needs a person's decision is a problem.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(self.needs_decision())
    }
}

/// Text from the user's records, safe on a terminal (the one rule, `terminal::escape_field`).
fn clean(text: &str) -> String {
    crate::terminal::escape_field(text).into_owned()
}

/// How many paths a list of adopt's shows before it counts the rest.
const LISTED: usize = 5;

fn render(a: &Adoption, out: &mut String) {
    let short = |s: &str| s[..8.min(s.len())].to_string();
    let place = match a.tree.as_deref() {
        Some(".") => "whole files in the records folder itself (tree = \".\")".to_string(),
        Some(tree) => format!("whole files in `{}/`", clean(tree)),
        None => "one patch per fix".to_string(),
    };
    let _ = writeln!(
        out,
        "adopted  `{}/`: {} layout, {place}",
        clean(&a.records_dir),
        a.layout
    );
    let wrote = if a.wrote.is_empty() {
        "nothing".to_string()
    } else {
        a.wrote.join(", ")
    };
    let _ = writeln!(out, "wrote    {wrote}");
    let _ = writeln!(out, "lock     {}", a.lock);
    let _ = writeln!(
        out,
        "commits  fork {}  base {}  pin {}",
        short(&a.fork),
        short(&a.base),
        short(&a.pin)
    );
    for missing in &a.missing {
        let _ = writeln!(out, "missing  {}", clean(&missing.why));
        let _ = writeln!(out, "  to get it: {}", clean(&missing.command));
    }
    if !a.missing.is_empty() {
        let _ = writeln!(
            out,
            "  the overlay could not be built: no lock written, only the record checks ran"
        );
    }
    if a.missing.is_empty() {
        let _ = writeln!(
            out,
            "files    {} backend, {} core; {} differ from the base tree",
            a.backend_files, a.core_files, a.differing
        );
    }
    let states: Vec<String> = a.states.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let _ = writeln!(
        out,
        "entries  {} in {}: {}",
        a.entries.len(),
        clean(&a.register),
        if states.is_empty() {
            "none".to_string()
        } else {
            states.join(", ")
        }
    );
    for entry in a.entries.iter().filter(|e| e.state().is_none()) {
        let _ = writeln!(
            out,
            "  no state: {}. {} ({}:{})",
            entry.number,
            clean(&entry.title),
            clean(&a.register),
            entry.line
        );
    }
    let _ = writeln!(
        out,
        "named    {} named by entries",
        crate::report_value::plural(a.named_files.len(), "file", "files")
    );
    if !a.unnamed.is_empty() {
        let _ = writeln!(
            out,
            "not named: {} from the base tree and no entry names {}:",
            match a.unnamed.len() {
                1 => "1 file differs".to_string(),
                n => format!("{n} files differ"),
            },
            if a.unnamed.len() == 1 { "it" } else { "them" }
        );
        // The decide list names them all again (`differing-file-named`): a few here are enough.
        for path in a.unnamed.iter().take(LISTED) {
            let _ = writeln!(out, "  {}", clean(path));
        }
        if a.unnamed.len() > LISTED {
            let _ = writeln!(out, "  … {} more", a.unnamed.len() - LISTED);
        }
    }
    if a.counts.is_empty() && a.unread_counts.is_empty() {
        let _ = writeln!(out, "counts   {} states none", clean(&a.readme));
    }
    for count in &a.counts {
        let actual = forkbook_records::readme::figure(&a.actual_counts, &count.name)
            .map_or(count.stated, |n| n as u64);
        let truth = if count.stated == actual {
            "true".to_string()
        } else {
            format!("the overlay has {actual}")
        };
        let _ = writeln!(
            out,
            "counts   {}:{}: {} {} ({truth})",
            clean(&a.readme),
            count.line,
            count.stated,
            clean(&count.name)
        );
    }
    for unread in &a.unread_counts {
        let (line, sentence) = (unread.line, &unread.sentence);
        let _ = writeln!(
            out,
            "counts   {}:{line}: cannot tell which count \"{}\" states",
            clean(&a.readme),
            clean(sentence)
        );
    }
    match &a.residual_record {
        None => {
            let _ = writeln!(
                out,
                "residual no residual record (`forkbook residual --write` makes one)"
            );
        }
        Some(file) => {
            let _ = writeln!(out, "residual {}: {} notes", clean(file), a.notes.len());
            for note in &a.notes {
                let item = note
                    .item
                    .map_or("no item".to_string(), |n| format!("item {n}"));
                let _ = writeln!(
                    out,
                    "  {}: {item}: {}",
                    clean(&note.path),
                    clean(&note.reason)
                );
            }
            match a.unnoted.as_slice() {
                [] => {}
                [path] => {
                    let _ = writeln!(out, "  no note: {} has a residual", clean(path));
                }
                paths => {
                    let shown: Vec<String> = paths.iter().take(LISTED).map(|p| clean(p)).collect();
                    let more = match paths.len().saturating_sub(LISTED) {
                        0 => String::new(),
                        n => format!(" and {n} more"),
                    };
                    let _ = writeln!(
                        out,
                        "  no note: {} core files have a residual: {}{more}",
                        paths.len(),
                        shown.join(", ")
                    );
                }
            }
        }
    }
    let errors: Vec<_> = a
        .findings
        .iter()
        .filter(|f| f.severity == forkbook_checks::Severity::Error)
        .collect();
    if a.needs_decision() {
        let _ = writeln!(
            out,
            "decide   {} errors from `forkbook check`:",
            errors.len()
        );
        let errors: Vec<_> = errors.into_iter().cloned().collect();
        for line in crate::check::render_findings(&errors, a.verbose).lines() {
            let _ = writeln!(out, "  {}", clean(line));
        }
    } else {
        let _ = writeln!(out, "decide   nothing: every check passes");
    }
}
