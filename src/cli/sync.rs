//! `forkbook sync` and `forkbook retarget`: move the overlay, carrying every local fix.

use super::Ctx;
use crate::engine::sync::{self, MoveOptions};
use crate::engine::trace;
use crate::engine::Result;
use std::path::PathBuf;

/// Move the overlay to a new fork commit (default: the fork branch's tip), carrying every local fix
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// The fork revision to move to; left out with --check: reproduce the recorded commits
    #[arg(value_name = "REV")]
    pub rev: Option<String>,
    /// Write nothing: without REV, rebuild every record at the recorded commits and compare byte for byte
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub moving: MoveArgs,
}

/// Move the core files to a new upstream pin, carrying every local fix
#[derive(Debug, clap::Args)]
pub struct RetargetArgs {
    /// The upstream revision to pin
    #[arg(value_name = "REV")]
    pub rev: String,
    /// Write nothing: report what the retarget would do
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub moving: MoveArgs,
    /// Write nothing: name, for each core file, the first upstream commit at which it conflicts
    #[arg(long, conflicts_with_all = ["out"])]
    pub stepwise: bool,
}

/// What `sync` and `retarget` both take: how the overlay moves.
#[derive(Debug, clap::Args)]
pub struct MoveArgs {
    /// Write the materialized overlay into DIR too
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Accept a fork that has merged upstream past the pin it moves to
    #[arg(long)]
    pub allow_fork_ahead: bool,
    /// Move even though the overlay still holds conflict markers (they are carried as text)
    #[arg(long)]
    pub allow_conflicts: bool,
}

impl MoveArgs {
    /// The move's options; `check` writes nothing.
    fn options(&self, check: bool) -> MoveOptions {
        MoveOptions {
            write: !check,
            out: self.out.clone(),
            allow_fork_ahead: self.allow_fork_ahead,
            allow_conflicts: self.allow_conflicts,
        }
    }
}

pub fn run_sync(args: &SyncArgs, ctx: &mut Ctx) -> Result<i32> {
    let (_lock, project, cache, state) = ctx.load_to_write(!args.check)?;
    if args.check && args.rev.is_none() {
        return ctx.emit(&sync::check_report(&project, &cache, &state)?);
    }
    let options = args.moving.options(args.check);
    let planned = sync::sync(&project, &cache, &state, args.rev.as_deref(), &options)?;
    ctx.emit(&trace::traced(&project, &cache, &state, planned)?)
}

pub fn run_retarget(args: &RetargetArgs, ctx: &mut Ctx) -> Result<i32> {
    let writes = !args.check && !args.stepwise;
    let (_lock, project, cache, state) = ctx.load_to_write(writes)?;
    if args.stepwise {
        return ctx.emit(&trace::stepwise(&cache, &state, &args.rev)?);
    }
    let options = args.moving.options(args.check);
    let planned = sync::retarget(&project, &cache, &state, &args.rev, &options)?;
    ctx.emit(&trace::traced(&project, &cache, &state, planned)?)
}
