//! `forkbook verify` and `forkbook report`: what a pin-bump or fork-sync change must pass, and
//! the PR section that says so.

use super::{Ctx, OK, PROBLEMS};
use crate::engine::report::{committed_state, report};
use crate::engine::verify::verify;
use crate::engine::Result;

/// Run every check, sync --check, the residual, drift api at the pin and the configured verify steps
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Print the "ROCm overlay" section of a pin-bump or fork-sync PR from live results
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Compare with the records as committed at this revision of the project
    #[arg(long, value_name = "REV", default_value = "HEAD")]
    pub since: String,
    /// Print only the Markdown for the PR body
    #[arg(long)]
    pub pr_body: bool,
}

pub fn run(_args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let (project, cache, state) = ctx.load()?;
    let verification = verify(&project, &cache, &state)?;
    if ctx.json {
        ctx.print_json(&verification)?;
    } else {
        write!(ctx.out, "{}", verification.render_text())?;
    }
    Ok(if verification.failed() == 0 {
        OK
    } else {
        PROBLEMS
    })
}

pub fn run_report(args: &ReportArgs, ctx: &mut Ctx) -> Result<i32> {
    let (project, cache, state) = ctx.load()?;
    let old = committed_state(&project, &cache, &args.since)?;
    let verification = verify(&project, &cache, &state)?;
    let report = report(&project, &cache, &state, old.as_ref(), &verification)?;
    if ctx.json {
        ctx.print_json(&report)?;
    } else {
        write!(ctx.out, "{}", report.render_markdown())?;
    }
    // A report that says FAILED is a failure, whether it is printed for a PR body or not.
    Ok(if report.verify_failed == 0 {
        OK
    } else {
        PROBLEMS
    })
}
