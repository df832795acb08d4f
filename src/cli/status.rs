//! `forkbook status`: the records, counts, lock state and fixes on one screen.

use super::{Ctx, OK};
use crate::engine::status::status;
use crate::engine::Result;

/// Show the overlay's commits, counts, lock state and local fixes
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let (project, _cache, state) = ctx.load()?;
    let status = status(&project, &state);
    if ctx.json {
        ctx.print_json(&status)?;
    } else {
        write!(ctx.out, "{}", status.render_text())?;
    }
    Ok(OK)
}
