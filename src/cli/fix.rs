//! `forkbook fix add`: record edits made in a materialized copy as the next local fix.

use super::Ctx;
use crate::engine::record::add_from;
use crate::engine::Result;
use std::path::PathBuf;

/// Record a new local fix (`fix add`) or confirm a drafted one; `fixes` works on the register
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: FixCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum FixCommand {
    /// Record the difference between an edited materialized copy and the overlay as a new fix
    Add {
        /// The edited copy (made with `forkbook materialize --out DIR`)
        #[arg(long, value_name = "DIR")]
        from: PathBuf,
        /// The fix's one-line title
        #[arg(long)]
        title: String,
    },
    /// Confirm a fix `drift api --draft` wrote: its `draft` mark becomes a `confirmed` record
    Confirm {
        /// The fix's number in LOCAL_FIXES.md
        #[arg(value_name = "N")]
        number: u32,
    },
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    match &args.command {
        FixCommand::Confirm { number } => {
            let project = ctx.project()?;
            ctx.emit(&crate::engine::drift::draft::confirm(&project, *number)?)
        }
        FixCommand::Add { from, title } => {
            let (_lock, project, cache, state) = ctx.load_to_write(true)?;
            ctx.emit(&add_from(&project, &cache, &state, from, title)?)
        }
    }
}
