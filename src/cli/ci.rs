//! `forkbook ci github`: write the GitHub Actions workflow that tests the book on pull requests
//! and publishes it from the main branch.

use super::{Ctx, OK, PROBLEMS};
use crate::engine::ci::{github_workflow, GithubOptions, WORKFLOW_FILE};
use crate::engine::{fsutil, Result};
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
    /// Print the workflow instead of writing it
    #[arg(long, conflicts_with = "check")]
    pub print: bool,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let CiCommand::Github(args) = &args.command;
    if !git2::Reference::is_valid_name(&format!("refs/heads/{}", args.branch)) {
        return Err(crate::engine::Error::new(format!(
            "`{}` is not a branch name",
            args.branch.escape_debug()
        ))
        .with_note("give the branch whose pushes publish the book, e.g. `--branch main`"));
    }
    let project = ctx.project()?;
    let mut options = GithubOptions::defaults(&project);
    options.branch = args.branch.clone();
    options.book_dir = args.book.clone();
    if let Some(install) = &args.install {
        options.install = install.clone();
    }
    let text = github_workflow(&project, &options);
    if args.print {
        write!(ctx.out, "{text}")?;
        return Ok(OK);
    }
    let rel = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(WORKFLOW_FILE));
    let path = project.root.join(&rel);
    if args.check {
        let current = std::fs::read_to_string(&path).ok();
        let same = current.as_deref() == Some(text.as_str());
        if ctx.json {
            ctx.print_json(&serde_json::json!({ "file": rel, "up_to_date": same }))?;
        } else if same {
            writeln!(ctx.out, "{}: up to date", rel.display())?;
        } else {
            let what = if current.is_some() {
                "differs from"
            } else {
                "is missing; expected"
            };
            writeln!(
                ctx.out,
                "{}: {what} what `forkbook ci github` writes; run it to update",
                rel.display()
            )?;
        }
        return Ok(if same { OK } else { PROBLEMS });
    }
    fsutil::replace_file(&path, text.as_bytes())?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "file": rel, "install": options.install }))?;
    } else {
        writeln!(ctx.out, "wrote {}", rel.display())?;
        writeln!(
            ctx.out,
            "  pull requests touching `{}`, forkbook.toml or `{}`: `forkbook book test`",
            project.config.overlay.dir, options.book_dir
        )?;
        writeln!(
            ctx.out,
            "  pushes to `{}`: the book built and published to GitHub Pages \
             (Settings > Pages > Source: GitHub Actions)",
            options.branch
        )?;
        writeln!(
            ctx.out,
            "  the runner gets forkbook with `{}` (`--install COMMAND` changes it)",
            options.install
        )?;
    }
    Ok(OK)
}
