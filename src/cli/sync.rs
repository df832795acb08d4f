//! `forkbook sync` and `forkbook retarget`: move the overlay, carrying every local fix.

use super::{Ctx, OK, PROBLEMS};
use crate::engine::base::CoreOutcome;
use crate::engine::cache::short;
use crate::engine::overlay::materialize;
use crate::engine::sync::{self, FileOutcome, FixOutcome, Move, Target};
use crate::engine::Result;
use std::path::PathBuf;

/// Move the overlay to a new fork commit (default: the fork branch's tip), carrying every local fix
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// The fork revision to move to; left out with --check: reproduce the recorded commits
    #[arg(value_name = "REV")]
    pub rev: Option<String>,
    /// Write nothing: without REV, rebuild every record at the recorded commits and compare byte for byte
    #[arg(long)]
    pub check: bool,
    /// Write the materialized overlay into DIR too
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Accept a fork that has merged upstream past the pin
    #[arg(long)]
    pub allow_fork_ahead: bool,
}

/// Move the core files to a new upstream pin, carrying every local fix
#[derive(Debug, clap::Args)]
pub struct RetargetArgs {
    /// The upstream revision to pin
    #[arg(value_name = "REV")]
    pub rev: String,
    /// Write nothing: report what the retarget would do
    #[arg(long)]
    pub check: bool,
    /// Write the materialized overlay into DIR too
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Accept a fork that has merged upstream past the new pin
    #[arg(long)]
    pub allow_fork_ahead: bool,
}

pub fn run_sync(args: &SyncArgs, ctx: &mut Ctx) -> Result<i32> {
    if args.check && args.rev.is_none() {
        return run_check(ctx);
    }
    let project = ctx.project()?;
    let rev = args
        .rev
        .clone()
        .unwrap_or_else(|| format!("fork/{}", project.config.fork.branch));
    let target = Target {
        fork: Some(rev),
        pin: None,
        allow_fork_ahead: args.allow_fork_ahead,
    };
    run_move(ctx, target, args.check, args.out.as_ref())
}

pub fn run_retarget(args: &RetargetArgs, ctx: &mut Ctx) -> Result<i32> {
    let target = Target {
        fork: None,
        pin: Some(args.rev.clone()),
        allow_fork_ahead: args.allow_fork_ahead,
    };
    run_move(ctx, target, args.check, args.out.as_ref())
}

fn run_check(ctx: &mut Ctx) -> Result<i32> {
    let (project, cache, state) = ctx.load()?;
    let mismatches = sync::check(&project, &cache, &state)?;
    if ctx.json {
        ctx.print_json(&mismatches)?;
    } else if mismatches.is_empty() {
        writeln!(
            ctx.out,
            "sync --check: {} files and every record of {} reproduced byte for byte at {}",
            state.overlay.len(),
            project.record_name(""),
            state.commits.describe()
        )?;
    } else {
        writeln!(
            ctx.out,
            "sync --check: {} records differ from what {} gives:",
            mismatches.len(),
            state.commits.describe()
        )?;
        for m in &mismatches {
            writeln!(ctx.out, "  {}: {}", m.path, m.why)?;
        }
        writeln!(
            ctx.out,
            "\nnote: run `forkbook sync {}` to rewrite them, and review the diff",
            short(state.commits.fork)
        )?;
    }
    Ok(if mismatches.is_empty() { OK } else { PROBLEMS })
}

fn run_move(ctx: &mut Ctx, target: Target, dry_run: bool, out: Option<&PathBuf>) -> Result<i32> {
    let (project, cache, state) = ctx.load()?;
    let new = sync::resolve_target(&cache, state.commits, &target)?;
    let planned = sync::plan(&project, &cache, &state, new)?;
    if !dry_run {
        sync::write(&project, &planned)?;
    }
    if let Some(dir) = out {
        materialize(&planned.overlay, dir)?;
    }
    if ctx.json {
        ctx.print_json(&planned)?;
    } else {
        print_move(ctx, &planned, dry_run)?;
    }
    Ok(if planned.conflicts() > 0 {
        PROBLEMS
    } else {
        OK
    })
}

fn print_move(ctx: &mut Ctx, planned: &Move, dry_run: bool) -> Result<()> {
    let verb = if dry_run { "would move" } else { "moved" };
    writeln!(
        ctx.out,
        "{verb} {} -> {}",
        planned.old.describe(),
        planned.new.describe()
    )?;
    print_core(ctx, planned)?;
    let base_conflicts: Vec<&str> = planned
        .core
        .iter()
        .filter(|(_, o)| matches!(o, CoreOutcome::Conflict(_)))
        .map(|(p, _)| p.as_str())
        .collect();
    for (path, outcome) in &planned.files {
        if *outcome == FileOutcome::Taken && base_conflicts.contains(&path.as_str()) {
            continue;
        }
        let line = match outcome {
            FileOutcome::Taken => "taken".to_string(),
            FileOutcome::Added => "added (new in the fork)".to_string(),
            FileOutcome::Removed => "removed (deleted by the fork)".to_string(),
            FileOutcome::Merged => "merged (local fix carried)".to_string(),
            FileOutcome::Kept => "kept (local fix; base unchanged)".to_string(),
            FileOutcome::Contained => {
                "contained: the new base already holds the local change (its fix is droppable)"
                    .to_string()
            }
            FileOutcome::LocalOnly => "kept (local-only file)".to_string(),
            FileOutcome::Conflict { regions, fix, why } => {
                let by = fix.map(|n| format!(", fix {n}")).unwrap_or_default();
                format!("CONFLICT ({regions} regions{by}): {why}")
            }
        };
        writeln!(ctx.out, "  {path}: {line}")?;
    }
    for fix in &planned.fixes {
        let line = match &fix.outcome {
            FixOutcome::Unchanged => "applies as before".to_string(),
            FixOutcome::Carried => "carried onto the new base".to_string(),
            FixOutcome::Droppable => {
                "already in the new base: droppable (mark it merged and remove its patch)"
                    .to_string()
            }
            FixOutcome::Conflict { paths } => format!("CONFLICT in {}", paths.join(", ")),
        };
        writeln!(ctx.out, "  fix {} ({}): {line}", fix.number, fix.patch)?;
    }
    if !planned.hooks_outside.is_empty() {
        writeln!(
            ctx.out,
            "fork changes outside the overlay ({}): {}",
            planned.hooks_outside.len(),
            planned.hooks_outside.join(", ")
        )?;
    }
    let conflicts = planned.conflicts();
    if conflicts > 0 {
        writeln!(ctx.out, "\n{conflicts} conflict regions left with markers; resolve them and record each resolution as a local fix")?;
        writeln!(ctx.out, "note: `forkbook materialize --out DIR`, edit, then `forkbook fix add --from DIR --title \"...\"`")?;
    }
    Ok(())
}

/// The core files and how the base tree made each.
pub fn print_core(ctx: &mut Ctx, planned: &Move) -> Result<()> {
    let merged = planned
        .core
        .iter()
        .filter(|(_, o)| {
            matches!(
                o,
                CoreOutcome::Merged | CoreOutcome::Pin | CoreOutcome::ForkOnly
            )
        })
        .count();
    writeln!(
        ctx.out,
        "core files: {merged} of {} merged cleanly",
        planned.core.len()
    )?;
    for (path, outcome) in &planned.core {
        if let CoreOutcome::Conflict(n) = outcome {
            writeln!(ctx.out, "  {path}: CONFLICT ({n} regions, pin vs fork)")?;
        }
    }
    Ok(())
}
