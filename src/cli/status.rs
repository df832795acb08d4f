//! `forkbook status`: the records, counts, lock state and fixes on one screen.

use super::Ctx;
use crate::engine::status;
use crate::engine::Result;

/// Show the overlay's commits, counts, lock state and local fixes (exit 1 when conflict markers
/// are left); offline without the objects, what the records alone say
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let project = ctx.project()?;
    let cache = crate::engine::Cache::open(&project)?;
    ctx.emit(&status::run(&project, &cache)?)
}
