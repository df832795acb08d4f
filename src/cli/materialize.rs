//! `forkbook materialize` and `forkbook export-tree`: write the overlay's files out.

use super::{Ctx, OK};
use crate::engine::cache::Remote;
use crate::engine::overlay::{export_tree, materialize};
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
    materialize(&project, &state.overlay, &args.out, args.force)?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "files": state.overlay.len(), "out": args.out }))?;
    } else {
        writeln!(
            ctx.out,
            "wrote {} files to {}",
            state.overlay.len(),
            args.out.display()
        )?;
    }
    Ok(OK)
}

pub fn run_export(args: &ExportArgs, ctx: &mut Ctx) -> Result<i32> {
    let (project, cache, state) = ctx.load()?;
    let commit = match &args.at {
        Some(rev) => cache.commit(rev, Remote::Upstream)?,
        None => state.commits.pin,
    };
    // At another commit the overlay is what a retarget there would make, conflicts and all.
    let overlay = if commit == state.commits.pin {
        state.overlay
    } else {
        let target = crate::engine::base::Commits {
            pin: commit,
            ..state.commits
        };
        crate::engine::sync::plan(&project, &cache, &state, target)?.overlay
    };
    let laid = export_tree(&project, &cache, commit, &overlay, &args.dest, args.force)?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "commit": commit.to_string(), "overlay_files": laid, "dest": args.dest }))?;
        return Ok(OK);
    }
    writeln!(
        ctx.out,
        "wrote upstream {} with {laid} overlay files to {}",
        crate::engine::cache::short(commit),
        args.dest.display()
    )?;
    Ok(OK)
}
