//! `forkbook drift api` and `forkbook drift build`: what breaks at a candidate pin.

use super::{Ctx, OK, PROBLEMS};
use crate::engine::candidate::{self, BuildRequest};
use crate::engine::drift;
use crate::engine::Result;
use std::path::PathBuf;

/// What the backend will fail to compile or link at a candidate pin
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: DriftCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum DriftCommand {
    /// Static drift: parse the upstream headers at both commits and the backend, no compiler needed
    Api {
        /// The candidate pin (default: the recorded pin)
        #[arg(long, value_name = "REV")]
        to: Option<String>,
        /// The upstream the backend was written against (default: the fork base)
        #[arg(long, value_name = "REV")]
        from: Option<String>,
        /// Write a draft local fix for each finding with a mechanical remedy (marked `draft`
        /// in the register until `forkbook fix confirm N`), then run the drift again
        #[arg(long)]
        draft: bool,
    },
    /// The real build: export the tree at REV, configure with CMake and build with the HIP compiler
    Build {
        /// The candidate pin (default: the recorded pin)
        #[arg(long, value_name = "REV")]
        to: Option<String>,
        /// The compiler (default: `[build] compiler`, hipcc)
        #[arg(long, value_name = "C")]
        compiler: Option<String>,
        /// Parallel build jobs
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// GPU architectures, `;`-separated (default: `[build] arch`)
        #[arg(long, value_name = "LIST")]
        arch: Option<String>,
        /// Where to export and build (default: a folder beside the object cache)
        #[arg(long, value_name = "DIR")]
        work: Option<PathBuf>,
        /// Also run the static drift and show which of its findings the build confirmed
        #[arg(long)]
        with_api: bool,
    },
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let (project, cache, state) = ctx.load()?;
    match &args.command {
        DriftCommand::Api {
            to,
            from,
            draft: true,
        } => {
            let (from, to) = candidate::api_range(&cache, &state, from.as_deref(), to.as_deref())?;
            let drafted = drift::draft::write_drafts(&project, &cache, &state, from, to)?;
            ctx.emit(&drafted)
        }
        DriftCommand::Api { to, from, .. } => {
            let (from, to) = candidate::api_range(&cache, &state, from.as_deref(), to.as_deref())?;
            let report = candidate::drift_api(&project, &cache, &state, from, to)?;
            if ctx.json {
                ctx.print_json(&report)?;
            } else {
                write!(ctx.out, "{}", report.render_text())?;
            }
            Ok(if report.breaks() > 0 { PROBLEMS } else { OK })
        }
        DriftCommand::Build {
            to,
            compiler,
            jobs,
            arch,
            work,
            with_api,
        } => {
            let (from, to) = candidate::api_range(&cache, &state, None, to.as_deref())?;
            let api = if *with_api {
                Some(candidate::drift_api(&project, &cache, &state, from, to)?)
            } else {
                None
            };
            let work = work
                .clone()
                .unwrap_or_else(|| cache.dir().with_file_name("forkbook-drift-build"));
            let request = BuildRequest {
                compiler: compiler.as_deref(),
                jobs: *jobs,
                arch: arch.as_deref(),
            };
            let (report, confirmation) = candidate::drift_build(
                &project,
                &cache,
                &state,
                to,
                &work,
                &request,
                api.as_ref(),
            )?;
            if ctx.json {
                ctx.print_json(
                    &serde_json::json!({ "build": report, "confirmation": confirmation }),
                )?;
            } else {
                write!(ctx.out, "{}", report.render_text())?;
                if let Some(confirmation) = &confirmation {
                    write!(ctx.out, "\n{}", confirmation.render_text())?;
                }
            }
            Ok(if report.problems().is_empty() {
                OK
            } else {
                PROBLEMS
            })
        }
    }
}
