//! `forkbook ci github`: write the GitHub Actions workflow that tests the book on pull requests
//! and publishes it from the main branch.

use super::{Ctx, OK};
use crate::engine::ci::{self, GithubRequest};
use crate::engine::Result;
use std::path::PathBuf;

/// Set up the project's CI: the book as the pull-request gate and the contributors' site
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: CiCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum CiCommand {
    /// Write a GitHub Actions workflow: `forkbook book test` on pull requests touching the
    /// overlay, the book built and published to GitHub Pages from the main branch
    Github(GithubArgs),
}

#[derive(Debug, clap::Args)]
pub struct GithubArgs {
    /// Where to write it, relative to the project [default: .github/workflows/book.yml]
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The branch whose pushes publish the book
    #[arg(long, default_value = "main")]
    pub branch: String,
    /// The book folder, relative to the project
    #[arg(long, value_name = "DIR", default_value = "book")]
    pub book: String,
    /// How the runner gets forkbook [default: `cargo install --locked --path .` in forkbook's
    /// own repository, else `cargo install --locked forkbook`]
    #[arg(long, value_name = "COMMAND")]
    pub install: Option<String>,
    /// Write nothing: exit 1 when the file is missing or differs from what would be written
    #[arg(long)]
    pub check: bool,
    /// Add a scheduled job: `forkbook roll --check`, and when the clean candidate moved,
    /// `forkbook roll` on a branch with one pull request for it
    #[arg(long)]
    pub roll: bool,
    /// The roll job's cron schedule, UTC [default: "17 5 * * *", daily]
    #[arg(long, value_name = "CRON", requires = "roll")]
    pub schedule: Option<String>,
    /// Print the workflow instead of writing it
    #[arg(long, conflicts_with = "check")]
    pub print: bool,
    /// Add the optional ROCm job: on pull requests that move the pin, install a HIP compiler and
    /// run the differential drift build (ccache kept between runs)
    #[arg(long)]
    pub rocm: bool,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let CiCommand::Github(args) = &args.command;
    let mut request = GithubRequest::new(&args.branch, &args.book, args.install.as_deref())?;
    request.rocm = args.rocm;
    if args.roll {
        request = request.with_roll(args.schedule.as_deref())?;
    }
    let project = ctx.project()?;
    if args.print {
        // The workflow itself, with `--json` too: it is the file.
        write!(ctx.out, "{}", ci::github_text(&project, &request))?;
        return Ok(OK);
    }
    ctx.emit(&ci::github(
        &project,
        &request,
        args.out.as_deref(),
        args.check,
    )?)
}
