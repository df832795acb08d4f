//! demo placeholder
use super::{Ctx, OK};
use crate::engine::Result;
/// Build a small synthetic upstream, fork and overlay, then run the procedure against it
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to build the demo (default: a new temporary folder)
    pub dir: Option<std::path::PathBuf>,
}
pub fn run(_args: &Args, _ctx: &mut Ctx) -> Result<i32> { Ok(OK) }
