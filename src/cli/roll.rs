//! `forkbook roll`: the forecast of the next pin bump (`--check`), or the bump itself.

use super::Ctx;
use crate::engine::roll::{self, RollRequest};
use crate::engine::run::Run;
use crate::engine::Result;
use std::path::PathBuf;

/// Forecast how far the overlay can follow upstream (--check), or make that bump
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write nothing: walk upstream's first-parent history from the pin and name every commit at
    /// which a conflict, a drift finding or a droppable fix appears, and the two candidates
    #[arg(long)]
    pub check: bool,
    /// With --check: the upstream revision to walk to [default: the upstream branch's tip].
    /// Without: the commit to move to [default: the clean candidate]
    #[arg(long, value_name = "REV")]
    pub to: Option<String>,
    /// Write a draft fix for each drift finding with a mechanical remedy; the default target is
    /// then the newest commit where every finding left has a draft
    #[arg(long, conflicts_with = "check")]
    pub draft: bool,
    /// Where to write the pull request's body (`report --pr-body` of the new state)
    /// [default: forkbook-roll-<pin>.md in the temporary folder]
    #[arg(long, value_name = "FILE", conflicts_with = "check")]
    pub body: Option<PathBuf>,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    // The bump writes records: the project's lock before they are read.
    let (_lock, project, cache, state) = ctx.load_to_write(!args.check)?;
    let run = Run::new(&project, &cache);
    if args.check {
        return ctx.emit(&roll::forecast(&run, &state, args.to.as_deref())?);
    }
    let request = RollRequest {
        to: args.to.clone(),
        draft: args.draft,
        body: args.body.clone(),
    };
    ctx.emit(&roll::roll(&run, &state, &request)?)
}
