//! `forkbook residual`: each core file against the pin plus the fork's change, line by line.

use super::{Ctx, OK};
use crate::engine::residual::{compute_from_records, RESIDUAL_FILE};
use crate::engine::Result;

/// Compare each core file with the pin plus the fork's change, line by line
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write the residual into the records folder (`residual.diff`), kept by sync from then on
    #[arg(long)]
    pub write: bool,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let project = ctx.project()?;
    let cache = crate::engine::Cache::open(&project)?;
    let residual = compute_from_records(&project, &cache)?;
    if args.write {
        let _lock = crate::engine::fsutil::RunLock::acquire(&project.root, "overlay")?;
        let path = project.records_dir().join(RESIDUAL_FILE);
        crate::engine::fsutil::replace_file(&path, residual.render_diff().as_bytes())?;
    }
    if ctx.json {
        ctx.print_json(&residual)?;
    } else {
        write!(ctx.out, "{}", residual.render_text())?;
        if args.write {
            writeln!(ctx.out, "wrote {}", project.record_name(RESIDUAL_FILE))?;
        }
    }
    Ok(OK)
}
