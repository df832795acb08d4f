//! `forkbook fixes list`: the register as forkbook reads it, entry by entry.
//! `forkbook fixes migrate`: turn a register of numbered list items or bold numbered titles
//! into one with `## N. Title` headings and states, losslessly, showing the diff.

use std::path::PathBuf;

use super::Ctx;
use crate::engine::fixes;
use crate::engine::Result;

/// Work on the register of all local fixes, LOCAL_FIXES.md; `fix add` records a new fix
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// List every entry: number, title, state (and where it was read), reason, files, links
    List {
        /// Read this register file instead of the project's (no project needed)
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
    },
    /// Propose states for an older register and show the diff (`--write` applies it)
    Migrate {
        /// Write the migrated register
        #[arg(long)]
        write: bool,
    },
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    match &args.action {
        Action::List { file: Some(path) } => {
            ctx.emit(&fixes::list_file(path, &path.display().to_string())?)
        }
        Action::List { file: None } => {
            let project = ctx.project()?;
            ctx.emit(&fixes::list(&project)?)
        }
        Action::Migrate { write } => {
            let project = ctx.project()?;
            ctx.emit(&fixes::migrate(&project, *write)?)
        }
    }
}
