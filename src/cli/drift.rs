//! `forkbook drift api` and `forkbook drift build`: what breaks at a candidate pin.

use super::Ctx;
use crate::engine::candidate::{self, BuildRequest};
use crate::engine::run::Run;
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
    /// The real build: export the tree at REV, configure with CMake and build with the HIP compiler;
    /// with `--to`, the recorded pin too, and only what is new at REV is drift
    Build {
        /// The candidate pin: build it and the recorded pin, report what is new (default: build
        /// the recorded pin alone)
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
        /// With `--to`: fail on what the recorded pin has too, not only on what is new
        #[arg(long)]
        strict: bool,
        /// The pin to compare with, the overlay retargeted there (default: the recorded pin)
        #[arg(long, value_name = "REV")]
        baseline: Option<String>,
        /// Write stub headers for the libraries this machine lacks into DIR (headers the
        /// backend includes that neither the tree nor the compiler has), and build with them
        /// (in place of `[build] stubs`); files in DIR forkbook did not write are kept
        #[arg(long, value_name = "DIR")]
        stubs: Option<PathBuf>,
        /// Build the candidate as the retarget makes it before the local fixes, against the
        /// fork at its upstream base (or `--baseline`), and tie what is new to the fix that
        /// answers it; only what no fix answers fails
        #[arg(long)]
        without_fixes: bool,
    },
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let drafts = matches!(args.command, DriftCommand::Api { draft: true, .. });
    let (_lock, project, cache, state) = ctx.load_to_write(drafts)?;
    let run = Run::new(&project, &cache);
    match &args.command {
        DriftCommand::Api { to, from, draft } => {
            let (from, to) = (from.as_deref(), to.as_deref());
            if *draft {
                ctx.emit(&crate::engine::drift::draft::drift_api_drafts(
                    &run, &state, from, to,
                )?)
            } else {
                ctx.emit(&candidate::drift_api_report(&run, &state, from, to)?)
            }
        }
        DriftCommand::Build {
            to,
            compiler,
            jobs,
            arch,
            work,
            with_api,
            strict,
            baseline,
            stubs,
            without_fixes,
        } => {
            let request = BuildRequest {
                compiler: compiler.as_deref(),
                jobs: *jobs,
                arch: arch.as_deref(),
                strict: *strict,
                baseline: baseline.as_deref(),
                stubs: stubs.as_deref(),
                without_fixes: *without_fixes,
            };
            ctx.emit(&candidate::drift_build_report(
                &run,
                &state,
                to.as_deref(),
                work.as_deref(),
                &request,
                *with_api,
            )?)
        }
    }
}
