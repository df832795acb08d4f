//! `forkbook fixes migrate`: turn an older LOCAL_FIXES.md (bold numbered titles, a status
//! sentence per entry) into one with `## N. Title` headings and states, showing the diff.

use super::{Ctx, OK};
use crate::engine::check::web_address;
use crate::engine::records::FIXES_FILE;
use crate::engine::register::{migrate, Migration};
use crate::engine::{fsutil, Error, Result};

/// Work on the LOCAL_FIXES.md register
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Propose states for an older register and show the diff (`--write` applies it)
    Migrate {
        /// Write the migrated register
        #[arg(long)]
        write: bool,
    },
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    match args.action {
        Action::Migrate { write } => run_migrate(write, ctx),
    }
}

fn run_migrate(write: bool, ctx: &mut Ctx) -> Result<i32> {
    let project = ctx.project()?;
    let path = project.records_dir().join(FIXES_FILE);
    let name = project.record_name(FIXES_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::new(format!("failed to read `{name}`: {e}")))?;
    let migration = migrate(
        &text,
        &name,
        web_address(&project.config.fork.url).as_deref(),
    );
    if write && !migration.diff.is_empty() {
        fsutil::replace_file(&path, migration.text.as_bytes())?;
    }
    if ctx.json {
        ctx.print_json(&migration)?;
    } else {
        print_human(&migration, &name, write, ctx)?;
    }
    Ok(OK)
}

fn print_human(migration: &Migration, name: &str, write: bool, ctx: &mut Ctx) -> Result<()> {
    if migration.proposals.is_empty() {
        writeln!(
            ctx.out,
            "`{name}` has no older-style entries (bold numbered titles): nothing to migrate"
        )?;
        return Ok(());
    }
    for p in &migration.proposals {
        let state = p.state.map_or("no state", |s| s.as_str());
        let status = p
            .status
            .as_deref()
            .map_or("no status sentence".to_string(), |s| {
                format!("from \"{s}\"")
            });
        writeln!(
            ctx.out,
            "{name}:{}: entry {}: {state} ({status})",
            p.line, p.number
        )?;
        if !p.missing.is_empty() {
            writeln!(ctx.out, "  still needs: {}", p.missing.join(", "))?;
        }
    }
    writeln!(ctx.out)?;
    write!(ctx.out, "{}", migration.diff)?;
    if write {
        writeln!(
            ctx.out,
            "wrote {name}; fill in what is still needed, then run `forkbook check`"
        )?;
    } else {
        writeln!(
            ctx.out,
            "nothing written: `forkbook fixes migrate --write` applies this diff"
        )?;
    }
    Ok(())
}
