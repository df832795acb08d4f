//! `forkbook fixes list`: the register as forkbook reads it, entry by entry.
//! `forkbook fixes migrate`: turn a register of numbered list items or bold numbered titles
//! into one with `## N. Title` headings and states, losslessly, showing the diff.

use std::path::PathBuf;

use super::{Ctx, OK};
use crate::engine::check::web_address;
use crate::engine::records::FIXES_FILE;
use crate::engine::register::{self, listing, migrate, Listed, Listing, Migration};
use crate::engine::{fsutil, Error, Result};

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
        Action::List { file } => run_list(file.as_deref(), ctx),
        Action::Migrate { write } => run_migrate(*write, ctx),
    }
}

fn run_list(file: Option<&std::path::Path>, ctx: &mut Ctx) -> Result<i32> {
    let (path, name) = match file {
        Some(path) => (path.to_path_buf(), path.display().to_string()),
        None => {
            let project = ctx.project()?;
            (
                project.records_dir().join(FIXES_FILE),
                project.record_name(FIXES_FILE),
            )
        }
    };
    if !path.is_file() {
        return Err(Error::new(format!("there is no register at `{name}`"))
            .with_note("write one entry `N. **Title.** why…` or `## N. Title` per local fix"));
    }
    let register = register::load(&path, &name)?;
    let listed = listing(&register);
    if ctx.json {
        ctx.print_json(&listed)?;
    } else {
        print_listing(&listed, ctx)?;
    }
    Ok(OK)
}

fn print_listing(listed: &Listing, ctx: &mut Ctx) -> Result<()> {
    writeln!(
        ctx.out,
        "{}: {} entries",
        terminal(&listed.file),
        listed.entries.len()
    )?;
    let mut section: Option<&str> = None;
    for entry in &listed.entries {
        if entry.section.as_deref() != section {
            section = entry.section.as_deref();
            writeln!(ctx.out)?;
            writeln!(ctx.out, "{}", terminal(section.unwrap_or("(no section)")))?;
        }
        print_entry(entry, &listed.file, ctx)?;
    }
    let states: Vec<String> = listed
        .states
        .iter()
        .filter(|s| s.entries > 0)
        .map(|s| format!("{} {}", s.entries, s.state))
        .collect();
    writeln!(ctx.out)?;
    writeln!(ctx.out, "by state: {}", states.join(", "))?;
    for problem in &listed.problems {
        writeln!(
            ctx.out,
            "{}:{}: {}",
            terminal(&listed.file),
            problem.line,
            terminal(&problem.message)
        )?;
    }
    Ok(())
}

fn print_entry(entry: &Listed, file: &str, ctx: &mut Ctx) -> Result<()> {
    let state = entry.state.map_or("no state", |s| s.as_str());
    writeln!(
        ctx.out,
        "  {:>3}. {}  [{state}]  {}:{}",
        entry.number,
        terminal(&entry.title),
        terminal(file),
        entry.line
    )?;
    match (entry.state_source, &entry.state_text, entry.state_line) {
        (Some("field"), _, Some(line)) => writeln!(ctx.out, "       state: field at line {line}")?,
        (Some(_), Some(text), Some(line)) => writeln!(
            ctx.out,
            "       state: read from {} (line {line})",
            terminal(text)
        )?,
        _ => writeln!(
            ctx.out,
            "       state: none: nothing says; add `state: …` (see `forkbook check --explain fix-state-complete`)"
        )?,
    }
    let lists = [
        ("reason", entry.reason.iter().cloned().collect::<Vec<_>>()),
        ("files", entry.files.clone()),
        ("issues", entry.issues.clone()),
        ("links", entry.links.clone()),
    ];
    for (label, values) in lists {
        if !values.is_empty() {
            let values: Vec<String> = values.iter().map(|v| terminal(v)).collect();
            writeln!(ctx.out, "       {label}: {}", values.join(", "))?;
        }
    }
    Ok(())
}

/// Register text made safe for a terminal: control characters shown as `\u{..}` escapes.
fn terminal(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
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
