//! `forkbook check`: every check of the catalogue over the records and the overlay.

use super::{Ctx, OK};
use crate::engine::check;
use crate::engine::Result;

/// Run every check of the records and the overlay (exit 1 when any error is found)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// List the checks instead of running them
    #[arg(long, conflicts_with = "explain")]
    pub list: bool,
    /// Print the documentation of one check
    #[arg(long, value_name = "ID")]
    pub explain: Option<String>,
    /// Print every finding with its note (default: grouped by check and file, with counts)
    #[arg(long, short)]
    pub verbose: bool,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    if args.list {
        return ctx.emit(&check::catalogue());
    }
    if let Some(id) = &args.explain {
        // A check's page is a page, with `--json` too.
        write!(ctx.out, "{}", check::explain(id)?)?;
        return Ok(OK);
    }
    let project = ctx.project()?;
    // The grouped text needs only what it shows of the findings; `--json` and `--verbose` every one.
    let kept = if args.verbose || ctx.global.json {
        check::Kept::Every
    } else {
        check::Kept::Grouped
    };
    let mut run = check::run(&project, kept)?;
    run.verbose = args.verbose;
    ctx.emit(&run)
}
