//! `forkbook residual`: each core file against the pin plus the fork's change, line by line.

use super::Ctx;
use crate::engine::residual_record;
use crate::engine::Result;

/// Compare each core file with the pin plus the fork's change, line by line
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write the residual into the records folder, kept by sync from then on: `CORE_RESIDUAL.diff`
    /// where the folder has one (its header and notes kept), else `residual.diff`
    #[arg(long)]
    pub write: bool,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let project = ctx.project()?;
    let cache = crate::engine::Cache::open(&project)?;
    ctx.emit(&residual_record::run(&project, &cache, args.write)?)
}
