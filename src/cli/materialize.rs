//! `forkbook materialize` and `forkbook export-tree`: write the overlay's files out.

use super::Ctx;
use crate::engine::candidate::export_at;
use crate::engine::overlay::materialize_state;
use crate::engine::Result;
use std::path::PathBuf;

/// Write the overlay's files (the base tree plus the local fixes) into a folder, replacing it whole
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The folder to write (replaced as a whole, never half-written): new, empty, or one forkbook wrote
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Replace DIR even though forkbook did not write it (never the project or its records)
    #[arg(long)]
    pub force: bool,
}

/// Write the upstream tree at the pin (or REV) with the overlay laid over it (retargeted to REV)
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The folder to write (replaced as a whole): new, empty, or one forkbook wrote
    #[arg(long, value_name = "DIR")]
    pub dest: PathBuf,
    /// Replace DIR even though forkbook did not write it (never the project or its records)
    #[arg(long)]
    pub force: bool,
    /// Upstream commit to export (default: the recorded pin)
    #[arg(long, value_name = "REV")]
    pub at: Option<String>,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let (project, _cache, state) = ctx.load()?;
    ctx.emit(&materialize_state(&project, &state, &args.out, args.force)?)
}

pub fn run_export(args: &ExportArgs, ctx: &mut Ctx) -> Result<i32> {
    let (project, cache, state) = ctx.load()?;
    ctx.emit(&export_at(
        &crate::engine::run::Run::new(&project, &cache),
        &state,
        args.at.as_deref(),
        &args.dest,
        args.force,
    )?)
}
