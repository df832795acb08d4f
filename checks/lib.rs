//! The check catalogue of forkbook: every rule the records of an overlay must keep.
//!
//! Each check is one file named by its id (`fixes-numbered` lives in `fixes_numbered.rs`) with
//! its page of documentation beside it (`fixes-numbered.md`): why it exists, what it finds, how
//! to fix it. A check is a plain function over [`Facts`]: the records as `forkbook_records`
//! reads them, the register, and one view of the overlay that the engine fills from the object
//! cache. This crate depends on no part of the
//! application, so the catalogue can be tested with facts written by hand and rendered into the
//! book without a repository.

use serde::Serialize;

pub mod facts;
pub mod markers;
pub mod names;

pub use facts::Facts;
pub use fix_state_complete::states_and_fields;
pub use forkbook_records::finding::{Finding, Severity};
use forkbook_records::register::Entry;

/// Each check's entry, its header read from its page's front matter by `build.rs`.
#[allow(non_upper_case_globals)]
mod pages {
    use crate::{Chapter, Check, Needs, Severity};
    include!(concat!(env!("OUT_DIR"), "/pages.rs"));
}

/// Declares the check modules and registers each in [`CHECKS`], in catalogue order.
///
/// Adding a check: a file `<id_with_underscores>.rs` with its `pub(crate) fn run`, its page
/// `<id>.md` starting with its header (`build.rs` says the keys), and one line here. The build
/// fails when one of the three is missing or names disagree.
macro_rules! catalogue {
    ($($module:ident),* $(,)?) => {
        $(mod $module;)*
        /// Every check, in the order the catalogue lists them.
        pub static CHECKS: &[Check] = &[$(pages::$module),*];
    };
}

catalogue![
    upstream_well_formed,
    upstream_names_the_fork,
    pin_matches_build,
    pin_on_upstream,
    fixes_numbered,
    fix_state_complete,
    fix_link_present,
    fork_commit_on_fork,
    fix_pull_state,
    differing_file_named,
    named_file_differs,
    overlay_matches_lock,
    overlay_files_in_scope,
    residual_hunks_noted,
    readme_counts,
    fork_hooks_explained,
    no_conflict_markers,
    fix_draft_confirmed,
    residual_record_current,
    residual_notes,
    patch_not_empty,
];

/// Whether a check with this id reads the objects of the recorded commits (each check says so
/// itself, in its [`Check::needs`]).
pub fn needs_objects(id: &str) -> bool {
    find(id).is_some_and(|check| matches!(check.needs, Needs::Objects { .. }))
}

/// What a check reads. Without the objects of the recorded commits `forkbook check` runs every
/// check that reads the records alone and names the others as skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Needs {
    /// The records alone: it finds the same with or without the objects.
    Records,
    /// The base tree and the overlay ([`facts::OverlayView`]); `without` says what it still
    /// checks when they are missing (`None`: nothing).
    Objects { without: Option<&'static str> },
}

/// The chapter of the book that shows a check's subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Chapter {
    /// The LOCAL_FIXES register page (`{{#forkbook register}}`).
    Register,
    /// The check catalogue page (`{{#forkbook checks}}`).
    Checks,
}

impl Chapter {
    /// The directive name of the page.
    pub fn as_str(self) -> &'static str {
        match self {
            Chapter::Register => "register",
            Chapter::Checks => "checks",
        }
    }
}

/// One rule of the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// Stable id, kebab-case; what `--explain` and the JSON output use.
    pub id: &'static str,
    /// A short human name, shown by `--list` and in the catalogue.
    pub name: &'static str,
    pub severity: Severity,
    /// The book chapter that shows what this check looks at: where the gate sends a reader.
    pub chapter: Chapter,
    /// The documentation page, Markdown, starting with `# <id>` (its front matter left out).
    pub doc: &'static str,
    /// Whether it needs the objects of the recorded commits.
    pub needs: Needs,
    /// Hands each finding to the sink as it is found, in the check's order.
    pub run: fn(&Facts, &mut Findings),
    /// For a check that reads the register one entry at a time (its page's `reads: one entry
    /// at a time`): the check as a function of one entry over the facts.
    pub one_entry: Option<for<'f> fn(&'f Facts) -> OneEntry<'f>>,
}

/// Where a check hands its findings, one at a time as it finds them: `forkbook check` renders
/// or counts each as it comes, so a register of 600,000 entries is never held as 600,000
/// findings beside itself.
pub struct Findings<'s>(&'s mut dyn FnMut(Finding));

impl<'s> Findings<'s> {
    pub fn new(sink: &'s mut dyn FnMut(Finding)) -> Self {
        Findings(sink)
    }

    pub fn push(&mut self, finding: Finding) {
        (self.0)(finding)
    }
}

impl Extend<Finding> for Findings<'_> {
    fn extend<T: IntoIterator<Item = Finding>>(&mut self, findings: T) {
        findings.into_iter().for_each(|finding| self.push(finding))
    }
}

impl Check {
    /// Every finding of this check over the facts, in its order.
    pub fn findings(&self, facts: &Facts) -> Vec<Finding> {
        let mut found = Vec::new();
        (self.run)(
            facts,
            &mut Findings::new(&mut |finding| found.push(finding)),
        );
        found
    }

    /// A finding of this check at `file` and `line`.
    pub fn finding(&self, file: &str, line: Option<usize>, message: impl Into<String>) -> Finding {
        Finding::new(self.id, self.severity, file, line, message)
    }
}

/// A check that reads the register one entry at a time, as a function of one entry, its
/// context (the names of the tree, the pulls each entry cites) built once over the facts: what
/// `forkbook check` hands each entry as it reads the register, holding none. Its check's `run`
/// is this over each held entry.
pub struct OneEntry<'f>(Box<EntryCheck<'f>>);

/// What a check finds in one entry, handed to the sink.
type EntryCheck<'f> = dyn Fn(&Entry, &mut Findings) + 'f;

impl<'f> OneEntry<'f> {
    fn new(check: impl Fn(&Entry, &mut Findings) + 'f) -> Self {
        OneEntry(Box::new(check))
    }

    /// What finds nothing: the check's context is missing (no register, no overlay).
    fn nothing() -> Self {
        OneEntry::new(|_, _| {})
    }

    /// Hands the findings of one entry to the sink.
    pub fn check(&self, entry: &Entry, findings: &mut Findings) {
        (self.0)(entry, findings)
    }

    /// The findings of every entry the facts hold, in order: a check's `run`.
    fn over_held_entries(self, facts: &Facts, findings: &mut Findings) {
        let entries = facts.records.register.iter().flat_map(|r| &r.entries);
        entries.for_each(|entry| self.check(entry, findings));
    }
}

impl Check {
    /// This check as a function of one entry over `facts` when it reads the register one entry
    /// at a time; `None` for a check that reads entries together (it reads
    /// [`Facts::summary`]) or none.
    pub fn one_entry<'f>(&self, facts: &'f Facts) -> Option<OneEntry<'f>> {
        self.one_entry.map(|made| made(facts))
    }

    /// Whether it reads the register one entry at a time.
    pub fn reads_one_entry_at_a_time(&self) -> bool {
        self.one_entry.is_some()
    }
}

/// The check with this id.
pub fn find(id: &str) -> Option<&'static Check> {
    CHECKS.iter().find(|check| check.id == id)
}

/// The documentation page of the check with this id.
pub fn explain(id: &str) -> Option<&'static str> {
    find(id).map(|check| check.doc)
}

/// Runs every check over the facts; findings in catalogue order, each check's in its own order.
pub fn run_all(facts: &Facts) -> Vec<Finding> {
    CHECKS
        .iter()
        .flat_map(|check| check.findings(facts))
        .collect()
}

/// Runs every check with the register's entries read one at a time, none held: the facts hold
/// the register without its entries and their [`Facts::summary`], which the checks that read
/// entries together read; the summary is dropped then, and `read_entries` hands each entry to
/// the checks that read one at a time ([`Check::one_entry`]). Each finding goes to `found`
/// with its check's place in [`CHECKS`]: kept apart by check and joined in that order, they
/// are [`run_all`]'s.
pub fn run_streamed(
    facts: &mut Facts,
    read_entries: impl FnOnce(&mut dyn FnMut(&Entry)),
    found: &mut dyn FnMut(usize, Finding),
) {
    for (at, check) in CHECKS.iter().enumerate() {
        if !check.reads_one_entry_at_a_time() {
            (check.run)(facts, &mut Findings::new(&mut |finding| found(at, finding)));
        }
    }
    facts.summary = None;
    let facts = &*facts;
    let one_entry: Vec<(usize, OneEntry)> = (CHECKS.iter().enumerate())
        .filter_map(|(at, check)| Some((at, check.one_entry(facts)?)))
        .collect();
    read_entries(&mut |entry| {
        for (at, check) in &one_entry {
            check.check(
                entry,
                &mut Findings::new(&mut |finding| found(*at, finding)),
            );
        }
    });
}

/// Whether any finding is an error (what decides exit status 1 and the book's gate).
pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Error)
}

/// The catalogue as one Markdown chapter: a table of every check, then each check's page with
/// its headings moved one level down.
pub fn render_catalogue_markdown() -> String {
    let mut text =
        String::from("# Check catalogue\n\n| id | check | severity |\n| --- | --- | --- |\n");
    for check in CHECKS {
        text.push_str(&format!(
            "| [`{id}`](#{id}) | {} | {} |\n",
            check.name,
            check.severity.as_str(),
            id = check.id
        ));
    }
    for check in CHECKS {
        text.push('\n');
        text.push_str(&demote_headings(check.doc));
    }
    text
}

/// Moves every ATX heading one level down, leaving fenced code alone.
fn demote_headings(page: &str) -> String {
    let mut in_fence = false;
    let mut text = String::new();
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        if !in_fence && line.starts_with('#') {
            text.push('#');
        }
        text.push_str(line);
        text.push('\n');
    }
    text
}
