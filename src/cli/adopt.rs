//! `forkbook adopt`: take on an overlay a project already keeps, as it stands.

use super::Ctx;
use crate::engine::adopt::{self, AdoptFlags};
use crate::engine::config::Layout;
use crate::engine::Result;

/// An overlay's layout as the command line names it (the engine's [`Layout`] knows no clap).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LayoutArg {
    Patch,
    Files,
}

impl From<LayoutArg> for Layout {
    fn from(layout: LayoutArg) -> Layout {
        match layout {
            LayoutArg::Patch => Layout::Patch,
            LayoutArg::Files => Layout::Files,
        }
    }
}

/// Take on an existing overlay where it is: write its lock, change none of its files, and say
/// what was understood (exit 1 when something needs a decision)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The records folder (holding UPSTREAM), relative to the project root; written into a new
    /// forkbook.toml [default: patches-rocm]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<String>,
    /// Where the whole files sit inside the records folder: `.` for the folder itself, beside
    /// UPSTREAM (the files layout)
    #[arg(long, value_name = "PATH")]
    pub tree: Option<String>,
    /// `files` (whole files) or `patch` (one patch per fix); default: what the folder holds
    #[arg(long, value_name = "LAYOUT")]
    pub layout: Option<LayoutArg>,
    /// Also add a counts block to the README (without it, adopt changes no byte of your files)
    #[arg(long)]
    pub counts: bool,
    /// List every error to decide with its note (default: grouped by check and file, with counts)
    #[arg(long, short)]
    pub verbose: bool,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let root = match &ctx.global.root {
        Some(root) => root.clone(),
        None => std::env::current_dir()?,
    };
    let flags = AdoptFlags {
        dir: args.dir.clone(),
        tree: args.tree.clone(),
        layout: args.layout.map(Layout::from),
    };
    let mut adoption = adopt::run(&root, &ctx.overrides(), &flags, args.counts)?;
    adoption.verbose = args.verbose;
    ctx.emit(&adoption)
}
