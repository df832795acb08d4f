//! How `forkbook adopt` finds its project: the `forkbook.toml` there (which its flags must agree
//! with), or one composed from the flags and what the records folder holds.

use crate::config::{Config, Layout, CONFIG_FILE};
use crate::error::{Error, Result};
use crate::project::{Overrides, Project};
use crate::records::{Upstream, UPSTREAM_FILE};
use std::path::Path;

/// The flags of `forkbook adopt` that say where the records are and how they are laid out.
#[derive(Debug, Clone, Default)]
pub struct AdoptFlags {
    /// The records folder, relative to the project root (default: `patches-rocm`).
    pub dir: Option<String>,
    /// Where the whole files sit inside the records folder (`.` for the folder itself).
    pub tree: Option<String>,
    /// Default: what the folder holds.
    pub layout: Option<Layout>,
}

/// The project at `root`, and the forkbook.toml to write when it has none.
pub fn project_at(
    root: &Path,
    overrides: &Overrides,
    flags: &AdoptFlags,
) -> Result<(Project, Option<String>)> {
    if root.join(CONFIG_FILE).is_file() {
        let project = Project::open(root, overrides)?;
        agrees(&project.config, flags)?;
        return Ok((project, None));
    }
    let text = config_text(root, flags)?;
    let config = Config::parse(&text).map_err(|e| e.context("the forkbook.toml adopt composed"))?;
    Ok((Project::with_config(root, config, overrides), Some(text)))
}

/// An existing forkbook.toml is never rewritten: flags that contradict it are an error.
fn agrees(config: &Config, args: &AdoptFlags) -> Result<()> {
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
    if let Some(layout) = args.layout {
        if layout != overlay.layout {
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
fn config_text(root: &Path, args: &AdoptFlags) -> Result<String> {
    let dir = args.dir.clone().unwrap_or_else(|| "patches-rocm".into());
    let records = root.join(&dir);
    let upstream = read_upstream(&records, &dir)?;
    let (layout, tree) = layout_and_tree(args, &records)?;
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut out = format!(
        "# Written by `forkbook adopt`; README.md, section `forkbook.toml`, has every key.\n[overlay]\ndir = {}\nlayout = {}\n",
        quote(&dir),
        quote(layout.name())
    );
    if let Some(tree) = tree {
        out.push_str(&format!("tree = {}\n", quote(&tree)));
    }
    let fork = [("url", "source"), ("branch", "branch")]
        .map(|(key, upstream_key)| (key, upstream.get(upstream_key).unwrap_or_default()));
    if fork.iter().any(|(_, value)| !value.is_empty()) {
        out.push_str("\n[fork]\n");
    }
    for (key, value) in fork.iter().filter(|(_, value)| !value.is_empty()) {
        out.push_str(&format!("{key} = {}\n", quote(value)));
    }
    Ok(out)
}

/// The records folder's `UPSTREAM` (`dir` is the folder as the user names it).
fn read_upstream(records: &Path, dir: &str) -> Result<Upstream> {
    let name = format!("{}/{UPSTREAM_FILE}", dir.trim_end_matches('/'));
    crate::fsutil::refuse_special_files(records)?;
    let text = std::fs::read_to_string(records.join(UPSTREAM_FILE)).map_err(|e| {
        Error::new(format!("cannot read `{name}`: {e}")).with_note(
            "run adopt in the folder that holds the records folder, and name it with `--dir DIR`",
        )
    })?;
    Ok(Upstream::parse(&text, &name)?)
}

/// The layout (the flag, else `patch` where the folder has `patches/`) and, for whole files,
/// the tree folder (the flag, else the records folder itself unless it has `tree/`).
fn layout_and_tree(args: &AdoptFlags, records: &Path) -> Result<(Layout, Option<String>)> {
    let layout = match (args.layout, &args.tree) {
        (Some(layout), _) => layout,
        (None, Some(_)) => Layout::Files,
        (None, None) if records.join("patches").is_dir() => Layout::Patch,
        (None, None) => Layout::Files,
    };
    let tree = match (&args.tree, layout) {
        (Some(tree), _) => Some(tree.clone()),
        (None, Layout::Files) if records.join("tree").is_dir() => None,
        (None, Layout::Files) => Some(".".into()),
        _ => None,
    };
    Ok((layout, tree))
}
