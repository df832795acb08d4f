//! `forkbook check`: every check of the catalogue over the records and the overlay.

use super::{Ctx, OK, PROBLEMS};
use crate::engine::check::{add_overlay_facts, gather_record_facts, run_checks, Finding, Severity};
use crate::engine::overlay::OverlayState;
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
    findings: &'a [Finding],
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
    // A broken record explains why the overlay could not be built: report it rather than fail.
    let skipped = match overlay {
        Ok(()) => None,
        Err(e) if errors > 0 => Some(e.message()),
        Err(e) => return Err(e),
    };
    let report = Report {
        checks: CHECKS.len(),
        errors,
        warnings: findings.len() - errors,
        skipped,
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
        writeln!(ctx.out, "overlay checks skipped: {why}")?;
    }
    let summary = match (report.errors, report.warnings) {
        (0, 0) => format!("all {} checks passed", report.checks),
        (e, w) => format!("{e} errors, {w} warnings from {} checks", report.checks),
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
