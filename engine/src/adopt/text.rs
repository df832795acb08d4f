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
    render_setup(a, out);
    render_entries(a, out);
    render_counts(a, out);
    render_residual(a, out);
    render_decision(a, out);
}

/// Where the records are, what was written, the commits, and what was missing to build.
fn render_setup(a: &Adoption, out: &mut String) {
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
    let _ = if a.missing.is_empty() {
        writeln!(
            out,
            "files    {} backend, {} core; {} differ from the base tree",
            a.backend_files, a.core_files, a.differing
        )
    } else {
        writeln!(
            out,
            "  the overlay could not be built: no lock written, only the record checks ran"
        )
    };
}

/// The register's entries by state, those with none, and the differing files no entry names.
fn render_entries(a: &Adoption, out: &mut String) {
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
    if a.unnamed.is_empty() {
        return;
    }
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

/// The README's counts, each against the overlay's true figure, and the sentences not read.
fn render_counts(a: &Adoption, out: &mut String) {
    let readme = clean(&a.readme);
    if a.counts.is_empty() && a.unread_counts.is_empty() {
        let _ = writeln!(out, "counts   {readme} states none");
    }
    for count in &a.counts {
        let actual = forkbook_records::readme::figure(&a.actual_counts, &count.name)
            .map_or(count.stated, |n| n as u64);
        let truth = if count.stated == actual {
            "true".to_string()
        } else {
            format!("the overlay has {actual}")
        };
        let (line, stated, name) = (count.line, count.stated, clean(&count.name));
        let _ = writeln!(out, "counts   {readme}:{line}: {stated} {name} ({truth})");
    }
    for unread in &a.unread_counts {
        let (line, sentence) = (unread.line, clean(&unread.sentence));
        let _ = writeln!(
            out,
            "counts   {readme}:{line}: cannot tell which count \"{sentence}\" states"
        );
    }
}

/// The residual record's notes and the core files with a residual but no note.
fn render_residual(a: &Adoption, out: &mut String) {
    let Some(file) = &a.residual_record else {
        let _ = writeln!(
            out,
            "residual no residual record (`forkbook residual --write` makes one)"
        );
        return;
    };
    let _ = writeln!(out, "residual {}: {} notes", clean(file), a.notes.len());
    for note in &a.notes {
        let item = note
            .item
            .map_or("no item".to_string(), |n| format!("item {n}"));
        let (path, reason) = (clean(&note.path), clean(&note.reason));
        let _ = writeln!(out, "  {path}: {item}: {reason}");
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

/// What needs a person: the errors `forkbook check` reports, or that nothing does.
fn render_decision(a: &Adoption, out: &mut String) {
    if !a.needs_decision() {
        let _ = writeln!(out, "decide   nothing: every check passes");
        return;
    }
    let errors: Vec<_> = a
        .findings
        .iter()
        .filter(|f| f.severity == forkbook_checks::Severity::Error)
        .cloned()
        .collect();
    let _ = writeln!(
        out,
        "decide   {} errors from `forkbook check`:",
        errors.len()
    );
    for line in crate::check::render_findings(&errors, a.verbose).lines() {
        let _ = writeln!(out, "  {}", clean(line));
    }
}
