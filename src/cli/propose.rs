//! `forkbook propose`: a `git format-patch` package per local fix, against the fork commit, with
//! its pull request text; `--push` makes it a branch of a remote, `--record` writes the link.

use std::path::PathBuf;

use super::{Ctx, OK};
use crate::engine::overlay::OverlayState;
use crate::engine::propose::{self, Package, DEFAULT_OUT};
use crate::engine::records::FIXES_FILE;
use crate::engine::{register, Cache, Error, Result};

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
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| project.root.join(DEFAULT_OUT));
    if let Some(record) = &args.record {
        return run_record(record, &project, &out, ctx);
    }
    let cache = Cache::open(&project)?;
    let state = OverlayState::load(&project, &cache)?;
    let name = project.record_name(FIXES_FILE);
    let register = register::load(&project.records_dir().join(FIXES_FILE), &name)?;
    let proposal = propose::build_proposal(&project, &cache, &state, &register, &args.numbers)?;
    let packages = proposal.packages;
    propose::write(&out, &packages)?;
    if let Some(remote) = &args.push {
        for package in &packages {
            propose::push(&cache, remote, package)?;
        }
    }
    if ctx.json {
        ctx.print_json(&packages)?;
    } else {
        for skipped in &proposal.skipped {
            writeln!(
                ctx.out,
                "entry {}: skipped: {} ({})",
                skipped.number, skipped.reason, skipped.note
            )?;
        }
        print_human(&packages, &out, args.push.as_deref(), ctx)?;
    }
    Ok(OK)
}

fn print_human(
    packages: &[Package],
    out: &std::path::Path,
    pushed: Option<&str>,
    ctx: &mut Ctx,
) -> Result<()> {
    for p in packages {
        writeln!(
            ctx.out,
            "entry {}: {} ({} file{}), applies to fork commit {}",
            p.number,
            p.file,
            p.paths.len(),
            if p.paths.len() == 1 { "" } else { "s" },
            &p.fork_commit[..12]
        )?;
        writeln!(ctx.out, "  title: {}", p.pr_title)?;
        if !p.depends_on.is_empty() {
            let depends: Vec<String> = p.depends_on.iter().map(|n| n.to_string()).collect();
            writeln!(
                ctx.out,
                "  stacked on entry {} (their changes touch the same lines)",
                depends.join(", ")
            )?;
        }
        if let Some(remote) = pushed {
            writeln!(ctx.out, "  pushed as branch `{}` to {remote}", p.branch)?;
        }
    }
    writeln!(
        ctx.out,
        "wrote {} packages and {}",
        packages.len(),
        out.join(propose::INDEX_FILE).display()
    )?;
    if !packages.is_empty() {
        writeln!(
            ctx.out,
            "once a pull request is open: `forkbook propose --record N URL`"
        )?;
    }
    Ok(())
}

fn run_record(
    record: &[String],
    project: &crate::engine::Project,
    out: &std::path::Path,
    ctx: &mut Ctx,
) -> Result<i32> {
    let [number, url] = record else {
        return Err(Error::new("`--record` takes an entry number and a URL"));
    };
    let number: u32 = number
        .parse()
        .map_err(|_| Error::new(format!("`{number}` is not an entry number")))?;
    propose::record(project, number, url, out)?;
    writeln!(
        ctx.out,
        "entry {number} is now proposed: {url} (recorded in {})",
        project.record_name(FIXES_FILE)
    )?;
    Ok(OK)
}
