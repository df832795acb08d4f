//! `forkbook verify` and `forkbook report`: what a pin-bump or fork-sync change must pass, and
//! the PR section that says so.

use super::Ctx;
use crate::engine::report::pr_report;
use crate::engine::run::Run;
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
    /// Say that the output is for a PR body. The output is that Markdown with or without it
    /// (kept so scripts and the book can say what they print)
    #[arg(long)]
    pub pr_body: bool,
}

pub fn run(_args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let (project, cache, state) = ctx.load()?;
    ctx.emit(&verify(&Run::new(&project, &cache), &state)?)
}

pub fn run_report(args: &ReportArgs, ctx: &mut Ctx) -> Result<i32> {
    let (project, cache, state) = ctx.load()?;
    let run = Run::new(&project, &cache);
    ctx.emit(&pr_report(&run, &state, &args.since)?)
}
