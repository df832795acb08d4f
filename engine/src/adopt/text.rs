//! `forkbook adopt`'s report for people: what was written and what was understood, one line a
//! fact, and what needs a decision. Text from the user's records goes out through [`text`]
//! spans, escaped.

use super::Adoption;
use crate::doc::{text, words, Doc};
use crate::report_value::{plural, CommandReport, Verdict};
use crate::text::short_id;

impl CommandReport for Adoption {
    fn text(&self) -> String {
        let mut doc = Doc::default();
        setup(self, &mut doc);
        entries(self, &mut doc);
        counts(self, &mut doc);
        residual(self, &mut doc);
        decision(self, &mut doc);
        next(self, &mut doc);
        doc.text()
    }

    /// Anything that needs a person's decision is a problem.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(self.needs_decision())
    }
}

/// How many paths a list of adopt's shows before it counts the rest.
const LISTED: usize = 5;

/// Where the records are, what was written, the commits, and what was missing to build.
fn setup(a: &Adoption, doc: &mut Doc) {
    let place = match a.tree.as_deref() {
        Some(".") => "whole files in the records folder itself (tree = \".\")".to_string(),
        Some(tree) => format!("whole files in `{tree}/`"),
        None => "one patch per fix".to_string(),
    };
    let layout = format!("`{}/`: {} layout, {place}", a.records_dir, a.layout.name());
    doc.field("adopted", vec![text(layout)]);
    let wrote = match a.wrote.as_slice() {
        [] => "nothing".to_string(),
        wrote => wrote.join(", "),
    };
    doc.field("wrote", vec![text(wrote)])
        .field("lock", vec![text(String::from(a.lock))]);
    let (fork, base, pin) = (short_id(&a.fork), short_id(&a.base), short_id(&a.pin));
    doc.field(
        "commits",
        vec![text(format!("fork {fork}  base {base}  pin {pin}"))],
    );
    for missing in &a.missing {
        let mut items = vec![vec![words("to get it: "), text(&missing.command)]];
        if let Some(stand_in) = &missing.stand_in {
            items.push(vec![
                words("meanwhile, to read the records: "),
                text(stand_in),
            ]);
        }
        doc.field("missing", vec![text(&missing.why)]).list(items);
    }
    if a.missing.is_empty() {
        let (backend, core, differing) = (a.backend_files, a.core_files, a.differing);
        // Core files worked out from the series say so, and where to say them instead.
        let from_series = match &a.core_files_from_series {
            Some(prefix) => format!(
                " (the files the patches touch outside `{prefix}`: no `core_files` under \
                 `[overlay]` in forkbook.toml says them)"
            ),
            None => String::new(),
        };
        doc.field(
            "files",
            vec![words(format!(
                "{backend} backend, {core} core{from_series}; {differing} differ from the base tree"
            ))],
        );
    } else {
        doc.list(vec![vec![words(
            "the overlay could not be built: only the record checks ran",
        )]]);
    }
}

/// The register's entries by state, those with none, and the differing files no entry names.
fn entries(a: &Adoption, doc: &mut Doc) {
    let states: Vec<String> = a.states.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let states = if states.is_empty() {
        "none".to_string()
    } else {
        states.join(", ")
    };
    let register = &a.register;
    let line = format!("{} in {register}: {states}", a.entries.len());
    doc.field("entries", vec![text(line)]);
    let no_state = a.entries.iter().filter(|e| e.state().is_none()).map(|e| {
        let (number, title, line) = (e.number, &e.title, e.line);
        vec![text(format!(
            "no state: {number}. {title} ({register}:{line})"
        ))]
    });
    doc.list(no_state.collect());
    let named = plural(a.named_files.len(), "file", "files");
    doc.field("named", vec![words(format!("{named} named by entries"))]);
    if !a.unresolved_names.is_empty() {
        let names = plural(a.unresolved_names.len(), "name is", "names are");
        let why = if a.missing.is_empty() {
            ""
        } else {
            " the records folder holds (the overlay could not be built)"
        };
        doc.line(vec![words(format!(
            "  and {names} no one file of the overlay{why}:"
        ))]);
        doc.list_first(
            a.unresolved_names.iter().map(|n| vec![text(n)]).collect(),
            LISTED,
            "more",
        );
    }
    let (differ, them) = match a.unnamed.len() {
        0 => return,
        1 => ("1 file differs".to_string(), "it"),
        n => (format!("{n} files differ"), "them"),
    };
    doc.line(vec![words(format!(
        "not named: {differ} from the base tree and no entry names {them}:"
    ))]);
    // The decide list names them all again (`differing-file-named`): a few here are enough.
    doc.list_first(
        a.unnamed.iter().map(|p| vec![text(p)]).collect(),
        LISTED,
        "more",
    );
}

/// The README's counts, each against the overlay's true figure, and the sentences not read.
fn counts(a: &Adoption, doc: &mut Doc) {
    let readme = &a.readme;
    if a.counts.is_empty() && a.unread_counts.is_empty() {
        doc.field("counts", vec![text(format!("{readme} states none"))]);
    }
    for count in &a.counts {
        let actual = a.actual_counts.as_ref().map(|counts| {
            forkbook_records::readme::figure(counts, &count.name).map_or(count.stated, |n| n as u64)
        });
        let truth = match actual {
            None => "not counted: the overlay could not be built".to_string(),
            Some(actual) if actual == count.stated => "true".to_string(),
            Some(actual) => format!("the overlay has {actual}"),
        };
        let (line, stated, name) = (count.line, count.stated, &count.name);
        let said = format!("{readme}:{line}: {stated} {name} ({truth})");
        doc.field("counts", vec![text(said)]);
    }
    for unread in &a.unread_counts {
        let (line, sentence) = (unread.line, &unread.sentence);
        let said = format!("{readme}:{line}: cannot tell which count \"{sentence}\" states");
        doc.field("counts", vec![text(said)]);
    }
}

/// The residual record's notes and the core files with a residual but no note.
fn residual(a: &Adoption, doc: &mut Doc) {
    let Some(file) = &a.residual_record else {
        let none = "no residual record (`forkbook residual --write` makes one)";
        doc.field("residual", vec![words(none)]);
        return;
    };
    let notes = format!("{file}: {}", plural(a.notes.len(), "note", "notes"));
    doc.field("residual", vec![text(notes)]);
    let notes = a.notes.iter().map(|note| {
        let item = note
            .item
            .map_or("no item".to_string(), |n| format!("item {n}"));
        vec![text(format!("{}: {item}: {}", note.path, note.reason))]
    });
    doc.list(notes.collect());
    let unnoted = match a.unnoted.as_slice() {
        [] => return,
        [path] => format!("no note: {path} has a residual"),
        paths => {
            let shown = paths[..paths.len().min(LISTED)].join(", ");
            let more = match paths.len().saturating_sub(LISTED) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            let n = paths.len();
            format!("no note: {n} core files have a residual: {shown}{more}")
        }
    };
    doc.list(vec![vec![text(unnoted)]]);
}

/// What needs a person: the errors `forkbook check` reports, or that nothing does.
fn decision(a: &Adoption, doc: &mut Doc) {
    if !a.needs_decision() {
        doc.field("decide", vec![words("nothing: every check passes")]);
        return;
    }
    let errors: Vec<_> = a
        .findings
        .iter()
        .filter(|f| f.severity == forkbook_checks::Severity::Error)
        .cloned()
        .collect();
    let decide = format!(
        "{} from `forkbook check`:",
        plural(errors.len(), "error", "errors")
    );
    doc.field("decide", vec![words(decide)]);
    let rendered = crate::check::render_findings(&errors, a.verbose);
    doc.list(rendered.lines().map(|l| vec![text(l)]).collect());
}

/// The commands that go on from here: the project's book when it has none.
fn next(a: &Adoption, doc: &mut Doc) {
    if a.no_book {
        let init =
            "next: forkbook book init    # the project's executable book in book/: new files only";
        doc.line(vec![words(init)]);
    }
}
