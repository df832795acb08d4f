//! `forkbook propose`: a `git format-patch` package per local fix, against the fork commit, with
//! its pull request text; `--push` makes it a branch of a remote, `--record` writes the link.

use std::path::PathBuf;

use super::Ctx;
use crate::engine::propose;
use crate::engine::{Error, Result};

/// Make upstream packages of local fixes: a patch against the fork commit, verified, with a PR title and body
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Entry numbers (default: every entry that applies to the fork)
    #[arg(value_name = "N")]
    pub numbers: Vec<u32>,
    /// Folder for the packages and their index [default: propose/ in the project]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Push each package as a branch of this git remote (a URL or a path)
    #[arg(long, value_name = "REMOTE", conflicts_with = "record")]
    pub push: Option<String>,
    /// Record the pull request of entry N in LOCAL_FIXES.md and set its state to `proposed`
    #[arg(long, num_args = 2, value_names = ["N", "URL"])]
    pub record: Option<Vec<String>>,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let project = ctx.project()?;
    let out = args.out.as_deref();
    match args.record.as_deref() {
        Some([number, url]) => {
            let number: u32 = number
                .parse()
                .map_err(|_| Error::new(format!("`{number}` is not an entry number")))?;
            ctx.emit(&propose::record_pr(&project, number, url, out)?)
        }
        Some(_) => Err(Error::new("`--record` takes an entry number and a URL")),
        None => ctx.emit(&propose::propose(
            &project,
            &args.numbers,
            out,
            args.push.as_deref(),
        )?),
    }
}
