//! `forkbook check`: the catalogue run over a project, and the catalogue itself (`--list`,
//! `--explain`).

use std::sync::Arc;

use super::every::EveryFinding;
use super::{add_overlay_facts, record_facts, Finding, Severity};
use crate::cache::Cache;
use crate::config::Layout;
use crate::digests::FileDigests;
use crate::error::{Error, Result};
use crate::overlay::{OverlayState, Records};
use crate::project::Project;
use crate::propose::pulls::Cited;
use crate::records;
use crate::report_value::{plural, CommandReport, Verdict};
use forkbook_checks::facts::Summary;
use forkbook_checks::{Needs, CHECKS};
use forkbook_records::register;
use serde::Serialize;

/// What `forkbook check` found; its JSON is the answer of `forkbook check --json`.
#[derive(Debug, Serialize)]
pub struct CheckRun {
    pub checks: usize,
    pub errors: usize,
    pub warnings: usize,
    /// Why the overlay checks could not run, when they could not.
    pub skipped: Option<String>,
    /// The checks that were skipped (or run only in part) for that reason.
    pub skipped_checks: Vec<Skipped>,
    /// What gets the objects the skipped checks need, when that is the reason.
    pub fetch: Option<String>,
    /// Every finding, when the run kept them ([`Kept::Every`]); none otherwise.
    pub findings: EveryFinding,
    /// What the grouped text shows of the findings, when the run kept only that
    /// ([`Kept::Grouped`]).
    #[serde(skip)]
    pub grouped: Option<Groups>,
    /// Print every finding with its note (`--verbose`), not the findings grouped by check and
    /// file.
    #[serde(skip)]
    pub verbose: bool,
}

/// Which findings a run keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// Every finding: for `--json`, `--verbose` and the book's gate.
    Every,
    /// Only what the grouped text shows of them (counts, lines, the first few), each check's
    /// findings folded in as they come: a register of 600,000 entries has two findings an
    /// entry, which held together took most of `check`'s memory.
    Grouped,
}

/// One check that needed the objects of the recorded commits and did not have them.
#[derive(Debug, Serialize)]
pub struct Skipped {
    pub id: &'static str,
    /// What it checked all the same, when it checked a part.
    pub checked: Option<&'static str>,
}

/// `forkbook check`: every check of the catalogue over the records and, where the cache can
/// build it, the overlay.
///
/// The register is read an entry at a time, twice, and never held whole (its lines and policy
/// found by the first reading, `register::Reading::first`): the first reading sums up each
/// entry for the checks that read entries together and the overlay's facts (its number, line,
/// files, `fork-commit`, the pulls it cites), the second hands each entry to the checks that
/// read one at a time. A register of 600,000 entries held as entries took 115 MB.
pub fn run(project: &Project, kept: Kept) -> Result<CheckRun> {
    let (files, model) = records::read_register_unparsed(project)?;
    // The files are shared, not copied: the register's text outlives the overlay's records.
    let register_bytes = files.get(records::FIXES_FILE).cloned();
    let register_text = register_bytes
        .as_deref()
        .map(|b| String::from_utf8_lossy(b));
    let register_file = model.path(records::FIXES_FILE);
    let mut facts = record_facts(project, &files, model);
    // What the first reading sums up of each entry, for the checks and the overlay's facts.
    let mut sums = (Summary::default(), Cited::default());
    let reading = register_text.as_deref().map(|text| {
        let (reading, register) = register::Reading::first(
            &register_file,
            text,
            &mut sums,
            |(summary, cited), entry| {
                summary.add(&entry);
                cited.add(project, &entry);
            },
        );
        facts.records.register = Some(register);
        reading
    });
    let (mut summary, cited) = sums;
    if reading.is_some() {
        summary.shrink_to_fit();
        facts.summary = Some(summary);
    }
    // The overlay's state never reads the register: its copy of the model has none.
    let register = facts.records.register.take();
    let for_overlay = facts.records.clone();
    facts.records.register = register;
    let records = Records::from_folder(project, files, for_overlay);
    let overlay = records.clone().and_then(|records| {
        let cache = Cache::open(project)?;
        let state = OverlayState::from_records(project, &cache, records)?;
        add_overlay_facts(&mut facts, project, &cache, &state, cited)
    });
    // Without the overlay, whole files are still the overlay as they stand: hashed for the lock.
    if let (Err(_), Ok(records), Layout::Files) =
        (&overlay, &records, project.config.overlay.layout)
    {
        let digests = FileDigests::of(&records.tree);
        facts.whole_files = Some(records::lock_knowing(&records.tree, &digests));
    }
    // Under a stand-in pin a finding that depends on the pin says so.
    let pin_core_files = (project.stand_in_pin().is_some())
        .then_some(facts.overlay.as_ref())
        .flatten()
        .map(|view| view.core_files.clone());
    // Each check's findings apart, joined in the catalogue's order: the checks that read one
    // entry at a time find theirs together, entry by entry.
    let mut every = EveryFinding::new(CHECKS.len());
    let mut kept_failed = None;
    let mut grouped: Vec<Groups> = CHECKS.iter().map(|_| Groups::default()).collect();
    let (mut errors, mut found) = (0, 0);
    // Each finding is counted and kept (or folded into its group) as its check hands it over.
    let mut take = |at: usize, mut finding: Finding| {
        if (pin_core_files.as_ref())
            .is_some_and(|core| crate::pin::depends_on_pin(&finding.file, &finding.message, core))
        {
            finding.message = crate::pin::marked(&finding.message);
        }
        found += 1;
        errors += usize::from(finding.severity == Severity::Error);
        match kept {
            Kept::Grouped => grouped[at].add(&finding),
            Kept::Every => {
                if let Err(e) = every.push(at, finding) {
                    kept_failed.get_or_insert(e);
                }
            }
        }
    };
    let read_entries = |each: &mut dyn FnMut(&register::Entry)| {
        if let Some(reading) = &reading {
            reading.each_entry(|entry| each(&entry));
        }
    };
    forkbook_checks::run_streamed(&mut facts, read_entries, &mut take);
    if let Some(e) = kept_failed {
        return Err(e);
    }
    every.close()?;
    let grouped = (kept == Kept::Grouped).then(|| {
        let mut groups = Groups::default();
        grouped.into_iter().for_each(|check| groups.append(check));
        groups
    });
    // Without the objects of the recorded commits the record checks still run and the rest are
    // named; a broken record explains why the overlay could not be built: report it, not fail.
    let (skipped, fetch) = match overlay {
        Ok(()) => (None, None),
        Err(e) if e.is_missing_object() => (Some(e.message()), e.note.clone()),
        Err(e) if errors > 0 => (Some(e.message()), None),
        Err(e) => return Err(e),
    };
    let skipped_checks = match skipped {
        None => Vec::new(),
        Some(_) => CHECKS
            .iter()
            .filter_map(|check| match check.needs {
                Needs::Objects { without } => Some(Skipped {
                    id: check.id,
                    checked: without,
                }),
                Needs::Records => None,
            })
            .collect(),
    };
    Ok(CheckRun {
        checks: CHECKS.len(),
        errors,
        warnings: found - errors,
        skipped,
        skipped_checks,
        fetch,
        findings: every,
        grouped,
        verbose: false,
    })
}

impl CommandReport for CheckRun {
    fn text(&self) -> String {
        let mut out = Vec::new();
        // Writing into a Vec fails only where the findings cannot be read back.
        let _ = self.write_text(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The findings a piece at a time: `--verbose` prints every finding, and a register of
    /// 600,000 short entries has twice as many.
    fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        match &self.grouped {
            Some(groups) => out.write_all(groups.render().as_bytes())?,
            None if self.verbose => self.findings.each(|f| writeln!(out, "{}", f.render()))?,
            None => {
                let findings = self.findings.to_vec().map_err(std::io::Error::other)?;
                out.write_all(render_findings(&findings, false).as_bytes())?
            }
        }
        out.write_all(self.rest_of_text().as_bytes())
    }

    /// An error is a problem; warnings are only reported.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(self.errors > 0)
    }
}

impl CheckRun {
    /// What follows the findings: the skipped checks, the summary and the hint.
    fn rest_of_text(&self) -> String {
        let mut out = String::new();
        if let Some(why) = &self.skipped {
            out.push_str(&format!(
                "skipped: the checks that need the base tree and the overlay ({why})\n"
            ));
            for skipped in &self.skipped_checks {
                match skipped.checked {
                    Some(part) => out.push_str(&format!("  {} (in part: {part})\n", skipped.id)),
                    None => out.push_str(&format!("  {}\n", skipped.id)),
                }
            }
            if let Some(fetch) = &self.fetch {
                out.push_str(&format!("  to run them: {fetch}\n"));
            }
        }
        out.push_str(&self.summary());
        out.push('\n');
        if self.errors + self.warnings > 0 {
            out.push_str(
                "`forkbook check --explain ID` says why a check exists and how to fix what it found\n",
            );
        }
        out
    }

    /// `all 12 checks passed`, `1 error, 0 warnings from 10 of 12 checks (2 skipped, 1 run in part)`.
    fn summary(&self) -> String {
        let whole = self
            .skipped_checks
            .iter()
            .filter(|s| s.checked.is_none())
            .count();
        let ran = self.checks - whole;
        // The list above names every check that lacked the objects: the count says both kinds.
        let in_part = match self.skipped_checks.len() - whole {
            0 => String::new(),
            n => format!(", {n} run in part"),
        };
        let of = if whole == 0 && in_part.is_empty() {
            format!("{} checks", self.checks)
        } else {
            format!("{ran} of {} checks ({whole} skipped{in_part})", self.checks)
        };
        match (self.errors, self.warnings) {
            (0, 0) if self.skipped_checks.is_empty() => format!("all {of} passed"),
            (0, 0) => format!("{of}: all passed"),
            (e, w) => format!(
                "{}, {} from {of}",
                plural(e, "error", "errors"),
                plural(w, "warning", "warnings")
            ),
        }
    }
}

/// A group of this many findings or fewer is printed whole, one line a finding.
const SHOWN_WHOLE: usize = 3;

/// How many findings of a larger group are shown before the rest are counted.
const SHOWN_PER_GROUP: usize = 2;

/// The findings for a screen: every finding with its note when `verbose`; otherwise grouped by
/// check and file with their count and lines, the first few messages, and one note per group
/// (a note already printed for another group is not repeated). `--verbose` and `--json` carry
/// every finding.
pub fn render_findings(findings: &[Finding], verbose: bool) -> String {
    if verbose {
        return findings
            .iter()
            .map(|f| format!("{}\n", f.render()))
            .collect();
    }
    let mut groups = Groups::default();
    findings.iter().for_each(|finding| groups.add(finding));
    groups.render()
}

/// The findings grouped by check and file, in the order each group first appears: what the
/// grouped text shows of them, added one finding at a time.
#[derive(Debug, Default)]
pub struct Groups(Vec<Group>);

/// One check's findings in one file: how many, their lines, the first few whole, and the notes
/// of different kinds among them in order.
#[derive(Debug)]
struct Group {
    count: usize,
    /// As `u32`, half a `usize`: two findings an entry of a register of 600,000 entries.
    lines: Vec<u32>,
    first: Vec<Finding>,
    notes: Vec<(String, Arc<str>)>,
}

impl Groups {
    /// Adds one finding to its group (a new group when it is the first of its check and file).
    pub fn add(&mut self, finding: &Finding) {
        let at = self.0.iter().position(|group| {
            let first = &group.first[0];
            first.check == finding.check && first.file == finding.file
        });
        let group = match at {
            Some(at) => &mut self.0[at],
            None => {
                self.0.push(Group {
                    count: 0,
                    lines: Vec::new(),
                    first: Vec::new(),
                    notes: Vec::new(),
                });
                self.0.last_mut().expect("a group was just added")
            }
        };
        group.count += 1;
        let line = finding
            .line
            .map(|line| u32::try_from(line).unwrap_or(u32::MAX));
        group.lines.extend(line);
        if group.first.len() < SHOWN_WHOLE {
            group.first.push(finding.clone());
        }
        if let Some(note) = &finding.note {
            // Most findings of a group share their note: the one seen last is no new kind.
            let seen = group.notes.iter().any(|(_, kept)| Arc::ptr_eq(kept, note));
            if !seen {
                let kind = note_kind(note);
                if !group.notes.iter().any(|(k, _)| *k == kind) {
                    group.notes.push((kind, note.clone()));
                }
            }
        }
    }

    /// Adds the groups of another check's findings after these: the groups of checks run apart,
    /// joined in their order, are the groups of one run (a group holds one check's findings).
    pub fn append(&mut self, other: Groups) {
        self.0.extend(other.0);
    }

    /// The grouped text: each group, then its notes of a kind not printed yet (notes that
    /// differ only in their numbers, `forkbook propose 8` and `forkbook propose 9`, are one
    /// kind), then how many findings were not shown.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut notes_shown: Vec<&str> = Vec::new();
        let mut hidden = 0;
        for group in &self.0 {
            hidden += group.render(&mut out);
            for (kind, note) in &group.notes {
                if !notes_shown.contains(&kind.as_str()) {
                    notes_shown.push(kind);
                    out.push_str(&format!("  note: {note}\n"));
                }
            }
        }
        if hidden > 0 {
            out.push_str(&format!(
                "{} not shown: `--verbose` prints every finding with its note, `--json` gives them all\n",
                plural(hidden, "finding", "findings")
            ));
        }
        out
    }
}

impl Group {
    /// The group whole when small, else its count and lines and its first messages. Returns
    /// how many findings it left out.
    fn render(&self, out: &mut String) -> usize {
        if self.count <= SHOWN_WHOLE {
            for finding in &self.first {
                let line = finding.render();
                out.push_str(&format!("{}\n", line.lines().next().unwrap_or("")));
            }
            return 0;
        }
        let first = &self.first[0];
        out.push_str(&format!(
            "{}: {}[{}]: {} findings{}\n",
            first.file,
            first.severity.as_str(),
            first.check,
            self.count,
            lines_of(&self.lines)
        ));
        for finding in self.first.iter().take(SHOWN_PER_GROUP) {
            out.push_str(&format!("  {}\n", finding.message));
        }
        let hidden = self.count.saturating_sub(SHOWN_PER_GROUP);
        if hidden > 0 {
            out.push_str(&format!("  … {hidden} more\n"));
        }
        hidden
    }
}

/// A note with its numbers blanked: what makes two notes the same advice.
fn note_kind(note: &str) -> String {
    let mut kind = String::with_capacity(note.len());
    for c in note.chars() {
        match (c.is_ascii_digit(), kind.ends_with('#')) {
            (true, true) => {}
            (true, false) => kind.push('#'),
            (false, _) => kind.push(c),
        }
    }
    kind
}

/// `, lines 12, 40, 41` (the first eight, then how many more), or nothing when none has a line.
fn lines_of(lines: &[u32]) -> String {
    let mut lines = lines.to_vec();
    lines.sort_unstable();
    lines.dedup();
    if lines.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = lines.iter().take(8).map(u32::to_string).collect();
    let more = match lines.len().saturating_sub(8) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let word = if lines.len() == 1 { "line" } else { "lines" };
    format!(", {word} {}{more}", shown.join(", "))
}

/// `forkbook check --list`: every check of the catalogue.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct Catalogue(pub Vec<Listed>);

/// One check as `--list` names it.
#[derive(Debug, Serialize)]
pub struct Listed {
    pub id: &'static str,
    pub name: &'static str,
    pub severity: Severity,
}

pub fn catalogue() -> Catalogue {
    Catalogue(
        CHECKS
            .iter()
            .map(|c| Listed {
                id: c.id,
                name: c.name,
                severity: c.severity,
            })
            .collect(),
    )
}

impl CommandReport for Catalogue {
    fn text(&self) -> String {
        let width = self.0.iter().map(|c| c.id.len()).max().unwrap_or(0);
        self.0
            .iter()
            .map(|c| format!("{:width$}  {:7}  {}\n", c.id, c.severity.as_str(), c.name))
            .collect()
    }

    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}

/// `forkbook check --explain ID`: the check's page (the same text with `--json`: it is a page).
pub fn explain(id: &str) -> Result<&'static str> {
    forkbook_checks::explain(id).ok_or_else(|| {
        let ids: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
        Error::new(format!("no check `{id}`"))
            .with_note(format!("the checks are: {}", ids.join(", ")))
    })
}
