//! `forkbook check`: the catalogue run over a project, and the catalogue itself (`--list`,
//! `--explain`).

use super::{add_overlay_facts, gather_record_facts, run_checks, Finding, Severity};
use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::overlay::OverlayState;
use crate::project::Project;
use crate::report_value::{plural, CommandReport, Verdict};
use forkbook_checks::{Needs, CHECKS};
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
    pub findings: Vec<Finding>,
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
pub fn run(project: &Project) -> Result<CheckRun> {
    let mut facts = gather_record_facts(project)?;
    let overlay = Cache::open(project).and_then(|cache| {
        let state = OverlayState::load(project, &cache)?;
        add_overlay_facts(&mut facts, project, &cache, &state)
    });
    let findings = run_checks(&facts);
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
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
        warnings: findings.len() - errors,
        skipped,
        skipped_checks,
        fetch,
        findings,
    })
}

impl CommandReport for CheckRun {
    fn text(&self) -> String {
        let mut out = String::new();
        for finding in &self.findings {
            out.push_str(&format!("{}\n", finding.render()));
        }
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

    /// An error is a problem; warnings are only reported.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(self.errors > 0)
    }
}

impl CheckRun {
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
