//! `forkbook fetch`: fill the object cache with the recorded commits or named revisions.

use super::Ctx;
use crate::engine::fetch::fetch;
use crate::engine::{Cache, Result};

/// Fetch the recorded commits (or the named revisions) into the object cache
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A fork revision to fetch (repeatable); default: the recorded fork commit
    #[arg(long = "fork", value_name = "REV")]
    pub fork: Vec<String>,
    /// An upstream revision to fetch (repeatable); default: the recorded base and pin
    #[arg(long = "upstream", value_name = "REV")]
    pub upstream: Vec<String>,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let project = ctx.project()?;
    let cache = Cache::create(&project)?;
    ctx.emit(&fetch(&project, &cache, &args.fork, &args.upstream)?)
}
