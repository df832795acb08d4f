//! `forkbook check`: every check of the catalogue over the records and the overlay.

use super::{Ctx, OK, PROBLEMS};
use crate::engine::check::{add_overlay_facts, gather_record_facts, run_checks, Finding, Severity};
use crate::engine::overlay::OverlayState;
use crate::engine::report_value::plural;
use crate::engine::{Cache, Error, Result};
use forkbook_checks::CHECKS;
use serde::Serialize;

/// Run every check of the records and the overlay (exit 1 when any error is found)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// List the checks instead of running them
    #[arg(long, conflicts_with = "explain")]
    pub list: bool,
    /// Print the documentation of one check
    #[arg(long, value_name = "ID")]
    pub explain: Option<String>,
}

/// The JSON answer of `forkbook check --json`.
#[derive(Serialize)]
struct Report<'a> {
    checks: usize,
    errors: usize,
    warnings: usize,
    /// Why the overlay checks could not run, when they could not.
    skipped: Option<String>,
    /// The checks that were skipped (or run only in part) for that reason.
    skipped_checks: Vec<Skipped>,
    /// What gets the objects the skipped checks need, when that is the reason.
    fetch: Option<String>,
    findings: &'a [Finding],
}

/// One check that needed the objects of the recorded commits and did not have them.
#[derive(Serialize)]
struct Skipped {
    id: &'static str,
    /// What it checked all the same, when it checked a part.
    checked: Option<&'static str>,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    if args.list {
        return list(ctx);
    }
    if let Some(id) = &args.explain {
        return explain(id, ctx);
    }
    let project = ctx.project()?;
    let mut facts = gather_record_facts(&project)?;
    let overlay = Cache::open(&project).and_then(|cache| {
        let state = OverlayState::load(&project, &cache)?;
        add_overlay_facts(&mut facts, &project, &cache, &state)
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
        Some(_) => forkbook_checks::NEED_OBJECTS
            .iter()
            .map(|(id, checked)| Skipped {
                id,
                checked: *checked,
            })
            .collect(),
    };
    let report = Report {
        checks: CHECKS.len(),
        errors,
        warnings: findings.len() - errors,
        skipped,
        skipped_checks,
        fetch,
        findings: &findings,
    };
    if ctx.json {
        ctx.print_json(&report)?;
    } else {
        print_human(&report, ctx)?;
    }
    Ok(if errors > 0 { PROBLEMS } else { OK })
}

fn print_human(report: &Report, ctx: &mut Ctx) -> Result<()> {
    for finding in report.findings {
        writeln!(ctx.out, "{}", finding.render())?;
    }
    if let Some(why) = &report.skipped {
        writeln!(
            ctx.out,
            "skipped: the checks that need the base tree and the overlay ({why})"
        )?;
        for skipped in &report.skipped_checks {
            match skipped.checked {
                Some(part) => writeln!(ctx.out, "  {} (in part: {part})", skipped.id)?,
                None => writeln!(ctx.out, "  {}", skipped.id)?,
            }
        }
        if let Some(fetch) = &report.fetch {
            writeln!(ctx.out, "  to run them: {fetch}")?;
        }
    }
    let whole = report
        .skipped_checks
        .iter()
        .filter(|s| s.checked.is_none())
        .count();
    let ran = report.checks - whole;
    let of = if whole == 0 {
        format!("{} checks", report.checks)
    } else {
        format!("{ran} of {} checks ({whole} skipped)", report.checks)
    };
    let summary = match (report.errors, report.warnings) {
        (0, 0) if whole == 0 => format!("all {of} passed"),
        (0, 0) => format!("{of}: all passed"),
        (e, w) => format!(
            "{}, {} from {of}",
            plural(e, "error", "errors"),
            plural(w, "warning", "warnings")
        ),
    };
    writeln!(ctx.out, "{summary}")?;
    if report.errors + report.warnings > 0 {
        writeln!(
            ctx.out,
            "`forkbook check --explain ID` says why a check exists and how to fix what it found"
        )?;
    }
    Ok(())
}

fn list(ctx: &mut Ctx) -> Result<i32> {
    if ctx.json {
        let checks: Vec<serde_json::Value> = CHECKS
            .iter()
            .map(|c| serde_json::json!({ "id": c.id, "name": c.name, "severity": c.severity }))
            .collect();
        ctx.print_json(&checks)?;
        return Ok(OK);
    }
    let width = CHECKS.iter().map(|c| c.id.len()).max().unwrap_or(0);
    for check in CHECKS {
        writeln!(
            ctx.out,
            "{:width$}  {:7}  {}",
            check.id,
            check.severity.as_str(),
            check.name
        )?;
    }
    Ok(OK)
}

fn explain(id: &str, ctx: &mut Ctx) -> Result<i32> {
    match forkbook_checks::explain(id) {
        Some(doc) => {
            write!(ctx.out, "{doc}")?;
            Ok(OK)
        }
        None => Err(unknown(id)),
    }
}

fn unknown(id: &str) -> Error {
    let ids: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
    Error::new(format!("no check `{id}`")).with_note(format!("the checks are: {}", ids.join(", ")))
}
