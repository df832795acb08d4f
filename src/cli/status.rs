//! `forkbook status`: the records, counts, lock state and fixes on one screen.

use super::{Ctx, OK, PROBLEMS};
use crate::engine::status::status;
use crate::engine::Result;

/// Show the overlay's commits, counts, lock state and local fixes (exit 1 when conflict markers are left)
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
    // Markers left in the overlay are a problem whatever else is right.
    Ok(if status.markers.is_empty() {
        OK
    } else {
        PROBLEMS
    })
}
