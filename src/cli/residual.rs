//! `forkbook residual`: each core file against the pin plus the fork's change, line by line.

use super::{Ctx, OK, PROBLEMS};
use crate::engine::residual::compute_with_records;
use crate::engine::residual_record;
use crate::engine::Result;

/// Compare each core file with the pin plus the fork's change, line by line
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write the residual into the records folder, kept by sync from then on: `CORE_RESIDUAL.diff`
    /// where the folder has one (its header and notes kept), else `residual.diff`
    #[arg(long)]
    pub write: bool,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let project = ctx.project()?;
    let cache = crate::engine::Cache::open(&project)?;
    let computed = compute_with_records(&project, &cache)?;
    let written = if args.write {
        Some(residual_record::write(&project, &computed)?)
    } else {
        None
    };
    if ctx.json {
        ctx.print_json(&computed.residual)?;
        return Ok(OK);
    }
    write!(ctx.out, "{}", computed.residual.render_text())?;
    let mut code = OK;
    if let Some(written) = written {
        writeln!(ctx.out, "wrote {}", written.file)?;
        if !written.flagged.is_empty() {
            code = PROBLEMS;
        }
        for path in &written.flagged {
            writeln!(
                ctx.out,
                "review the note for `{path}`: its residual changed (flagged in {})",
                written.file
            )?;
        }
    }
    Ok(code)
}
