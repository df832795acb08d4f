//! `forkbook init`: start an overlay at a fork commit on a pin, with no local fixes.

use super::Ctx;
use crate::engine::init::{self, InitRequest};
use crate::engine::{Cache, Result};

/// Create the overlay records for a fork commit on a pin
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The fork commit to vendor
    #[arg(long, value_name = "REV")]
    pub fork: String,
    /// The upstream pin (default: the fork's merge base with upstream)
    #[arg(long, value_name = "REV")]
    pub pin: Option<String>,
    /// A core file the overlay carries (repeatable; default: `[overlay] core_files`)
    #[arg(long = "core", value_name = "PATH")]
    pub core: Vec<String>,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let project = ctx.project()?;
    let cache = Cache::create(&project)?;
    let request = InitRequest {
        fork: args.fork.clone(),
        pin: args.pin.clone(),
        core_files: args.core.clone(),
    };
    ctx.emit(&init::run(&project, &cache, &request)?)
}
