//! `forkbook adopt`: take on an overlay a project already keeps, as it stands.

use super::{Ctx, OK, PROBLEMS};
use crate::engine::adopt::{adopt, AdoptRequest, Adoption};
use crate::engine::config::{Config, CONFIG_FILE};
use crate::engine::project::Project;
use crate::engine::records::{Upstream, UPSTREAM_FILE};
use crate::engine::{Cache, Error, Result};
use std::path::Path;

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
    pub layout: Option<String>,
    /// Also add a counts block to the README (without it, adopt changes no byte of your files)
    #[arg(long)]
    pub counts: bool,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let root = match &ctx.global.root {
        Some(root) => root.clone(),
        None => std::env::current_dir()?,
    };
    let (project, config_text) = if root.join(CONFIG_FILE).is_file() {
        let project = Project::open(&root, &ctx.overrides())?;
        agrees(&project.config, args)?;
        (project, None)
    } else {
        let text = config_text(&root, args)?;
        let config =
            Config::parse(&text).map_err(|e| e.context("the forkbook.toml adopt composed"))?;
        let canonical_urls = (config.fork.url.clone(), config.upstream.url.clone());
        let mut project = Project {
            root: root.clone(),
            config,
            overrides: ctx.overrides(),
            canonical_urls,
        };
        if let Some(url) = &project.overrides.fork_url {
            project.config.fork.url = url.clone();
        }
        if let Some(url) = &project.overrides.upstream_url {
            project.config.upstream.url = url.clone();
        }
        (project, Some(text))
    };
    let cache = Cache::open(&project)?;
    let request = AdoptRequest {
        counts: args.counts,
        config_text,
    };
    let adoption = adopt(&project, &cache, &request)?;
    if ctx.json {
        ctx.print_json(&adoption)?;
    } else {
        print(&adoption, ctx)?;
    }
    Ok(if adoption.needs_decision() {
        PROBLEMS
    } else {
        OK
    })
}

/// An existing forkbook.toml is never rewritten: flags that contradict it are an error.
fn agrees(config: &Config, args: &Args) -> Result<()> {
    let overlay = &config.overlay;
    let mut differ = Vec::new();
    if let Some(dir) = &args.dir {
        if dir.trim_end_matches('/') != overlay.dir.trim_end_matches('/') {
            differ.push(format!("`dir = \"{}\"`", overlay.dir));
        }
    }
    if let Some(tree) = &args.tree {
        let have = overlay.tree_prefix();
        let want = tree.trim_matches('/');
        let want = if want == "." { "" } else { want };
        if have.trim_end_matches('/') != want {
            differ.push(format!(
                "`tree = \"{}\"`",
                overlay.tree.as_deref().unwrap_or("tree")
            ));
        }
    }
    if let Some(layout) = &args.layout {
        if layout != overlay.layout.name() {
            differ.push(format!("`layout = \"{}\"`", overlay.layout.name()));
        }
    }
    if differ.is_empty() {
        return Ok(());
    }
    Err(Error::new(format!(
        "`{CONFIG_FILE}` already says {} under `[overlay]`; adopt does not change it",
        differ.join(", ")
    ))
    .with_note(format!(
        "edit `{CONFIG_FILE}`, or run adopt without the flags it already answers"
    )))
}

/// The forkbook.toml adopt writes when the project has none: the records folder and layout
/// from the flags (or what the folder holds), the fork from `UPSTREAM`.
fn config_text(root: &Path, args: &Args) -> Result<String> {
    let dir = args.dir.clone().unwrap_or_else(|| "patches-rocm".into());
    let records = root.join(&dir);
    let upstream_path = records.join(UPSTREAM_FILE);
    let name = format!("{}/{UPSTREAM_FILE}", dir.trim_end_matches('/'));
    let text = std::fs::read_to_string(&upstream_path).map_err(|e| {
        Error::new(format!("cannot read `{name}`: {e}")).with_note(
            "run adopt in the folder that holds the records folder, and name it with `--dir DIR`",
        )
    })?;
    let upstream = Upstream::parse(&text, &name)?;
    let layout = match (&args.layout, &args.tree) {
        (Some(layout), _) => layout.clone(),
        (None, Some(_)) => "files".into(),
        (None, None) if records.join("patches").is_dir() => "patch".into(),
        (None, None) => "files".into(),
    };
    if layout != "files" && layout != "patch" {
        return Err(Error::new(format!(
            "`--layout {layout}`: expected `files` or `patch`"
        )));
    }
    let tree = match (&args.tree, layout.as_str()) {
        (Some(tree), _) => Some(tree.clone()),
        (None, "files") if records.join("tree").is_dir() => None,
        (None, "files") => Some(".".into()),
        _ => None,
    };
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut out = format!(
        "# Written by `forkbook adopt`; README.md, section `forkbook.toml`, has every key.\n[overlay]\ndir = {}\nlayout = {}\n",
        quote(&dir),
        quote(&layout)
    );
    if let Some(tree) = tree {
        out.push_str(&format!("tree = {}\n", quote(&tree)));
    }
    let fork_url = upstream.get("source").unwrap_or_default();
    let branch = upstream.get("branch").unwrap_or_default();
    if !fork_url.is_empty() || !branch.is_empty() {
        out.push_str("\n[fork]\n");
        if !fork_url.is_empty() {
            out.push_str(&format!("url = {}\n", quote(fork_url)));
        }
        if !branch.is_empty() {
            out.push_str(&format!("branch = {}\n", quote(branch)));
        }
    }
    Ok(out)
}

/// Text from the user's records, safe on a terminal: control characters escaped.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn print(a: &Adoption, ctx: &mut Ctx) -> Result<()> {
    let out = &mut ctx.out;
    let short = |s: &str| s[..8.min(s.len())].to_string();
    let place = match a.tree.as_deref() {
        Some(".") => "whole files in the records folder itself (tree = \".\")".to_string(),
        Some(tree) => format!("whole files in `{}/`", clean(tree)),
        None => "one patch per fix".to_string(),
    };
    writeln!(
        out,
        "adopted  `{}/`: {} layout, {place}",
        clean(&a.records_dir),
        a.layout
    )?;
    let wrote = if a.wrote.is_empty() {
        "nothing".to_string()
    } else {
        a.wrote.join(", ")
    };
    writeln!(out, "wrote    {wrote}")?;
    writeln!(out, "lock     {}", a.lock)?;
    writeln!(
        out,
        "commits  fork {}  base {}  pin {}",
        short(&a.fork),
        short(&a.base),
        short(&a.pin)
    )?;
    writeln!(
        out,
        "files    {} backend, {} core; {} differ from the base tree",
        a.backend_files, a.core_files, a.differing
    )?;
    let states: Vec<String> = a.states.iter().map(|(s, n)| format!("{s} {n}")).collect();
    writeln!(
        out,
        "entries  {} in {}: {}",
        a.entries.len(),
        clean(&a.register),
        if states.is_empty() {
            "none".to_string()
        } else {
            states.join(", ")
        }
    )?;
    for entry in a.entries.iter().filter(|e| e.state.is_none()) {
        writeln!(
            out,
            "  no state: {}. {} ({}:{})",
            entry.number,
            clean(&entry.title),
            clean(&a.register),
            entry.line
        )?;
    }
    writeln!(
        out,
        "named    {} files named by entries",
        a.named_files.len()
    )?;
    if !a.unnamed.is_empty() {
        writeln!(
            out,
            "not named: {} files differ from the base tree and no entry names them:",
            a.unnamed.len()
        )?;
        for path in &a.unnamed {
            writeln!(out, "  {}", clean(path))?;
        }
    }
    if a.counts.is_empty() && a.unread_counts.is_empty() {
        writeln!(out, "counts   {} states none", clean(&a.readme))?;
    }
    for count in &a.counts {
        let truth = if count.stated == count.actual {
            "true".to_string()
        } else {
            format!("the overlay has {}", count.actual)
        };
        writeln!(
            out,
            "counts   {}:{}: {} {} ({truth})",
            clean(&a.readme),
            count.line,
            count.stated,
            clean(&count.name)
        )?;
    }
    for (line, sentence) in &a.unread_counts {
        writeln!(
            out,
            "counts   {}:{line}: cannot tell which count \"{}\" states",
            clean(&a.readme),
            clean(sentence)
        )?;
    }
    match &a.residual_record {
        None => writeln!(
            out,
            "residual no residual record (`forkbook residual --write` makes one)"
        )?,
        Some(file) => {
            writeln!(out, "residual {}: {} notes", clean(file), a.notes.len())?;
            for note in &a.notes {
                let item = note
                    .item
                    .map_or("no item".to_string(), |n| format!("item {n}"));
                writeln!(
                    out,
                    "  {}: {item}: {}",
                    clean(&note.path),
                    clean(&note.reason)
                )?;
            }
            for path in &a.unnoted {
                writeln!(out, "  no note: {} has a residual", clean(path))?;
            }
        }
    }
    let errors: Vec<_> = a
        .findings
        .iter()
        .filter(|f| f.severity == forkbook_checks::Severity::Error)
        .collect();
    if a.needs_decision() {
        writeln!(
            out,
            "decide   {} errors from `forkbook check`:",
            errors.len()
        )?;
        for finding in errors {
            for line in finding.render().lines() {
                writeln!(out, "  {}", clean(line))?;
            }
        }
    } else {
        writeln!(out, "decide   nothing: every check passes")?;
    }
    Ok(())
}
