//! `forkbook fixes list` and `forkbook fixes migrate`: the register of local fixes
//! (LOCAL_FIXES.md) as forkbook reads it, and an older register turned into one with states.

use crate::check::web_address;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::records::FIXES_FILE;
use crate::register::{self, Listed, Listing, Migration};
use crate::report_value::{CommandReport, Verdict};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// `forkbook fixes list`: the project's register, entry by entry.
pub fn list(project: &Project) -> Result<Listing> {
    list_file(
        &project.records_dir().join(FIXES_FILE),
        &project.record_name(FIXES_FILE),
    )
}

/// `forkbook fixes list --file PATH`: the register at `path` (named `name`), no project needed.
pub fn list_file(path: &Path, name: &str) -> Result<Listing> {
    if !path.is_file() {
        return Err(Error::new(format!("there is no register at `{name}`"))
            .with_note("write one entry `N. **Title.** why…` or `## N. Title` per local fix"));
    }
    Ok(register::listing(&register::load(path, name)?))
}

impl CommandReport for Listing {
    fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{}: {} entries",
            terminal(&self.file),
            self.entries.len()
        );
        let mut section: Option<&str> = None;
        for entry in &self.entries {
            if entry.section.as_deref() != section {
                section = entry.section.as_deref();
                out.push('\n');
                let _ = writeln!(out, "{}", terminal(section.unwrap_or("(no section)")));
            }
            render_entry(&mut out, entry, &self.file);
        }
        let states: Vec<String> = self
            .states
            .iter()
            .filter(|s| s.entries > 0)
            .map(|s| format!("{} {}", s.entries, s.state))
            .collect();
        out.push('\n');
        let _ = writeln!(out, "by state: {}", states.join(", "));
        for problem in &self.problems {
            let _ = writeln!(
                out,
                "{}:{}: {}",
                terminal(&self.file),
                problem.line,
                terminal(&problem.message)
            );
        }
        out
    }

    /// A listing shows the register's problems; `forkbook check` is what fails on them.
    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}

fn render_entry(out: &mut String, entry: &Listed, file: &str) {
    let state = entry.state.map_or("no state", |s| s.as_str());
    let _ = writeln!(
        out,
        "  {:>3}. {}  [{state}]  {}:{}",
        entry.number,
        terminal(&entry.title),
        terminal(file),
        entry.line
    );
    let _ = match (entry.state_source, &entry.state_text, entry.state_line) {
        (Some("field"), _, Some(line)) => writeln!(out, "       state: field at line {line}"),
        (Some(_), Some(text), Some(line)) => writeln!(
            out,
            "       state: read from {} (line {line})",
            terminal(text)
        ),
        _ => writeln!(
            out,
            "       state: none: nothing says; add `state: …` (see `forkbook check --explain fix-state-complete`)"
        ),
    };
    let lists = [
        ("reason", entry.reason.iter().cloned().collect::<Vec<_>>()),
        ("files", entry.files.clone()),
        ("issues", entry.issues.clone()),
        ("links", entry.links.clone()),
    ];
    for (label, values) in lists {
        if !values.is_empty() {
            let values: Vec<String> = values.iter().map(|v| terminal(v)).collect();
            let _ = writeln!(out, "       {label}: {}", values.join(", "));
        }
    }
}

/// Register text, safe on a terminal (the one rule, `terminal::escape_field`).
fn terminal(text: &str) -> String {
    crate::terminal::escape_field(text).into_owned()
}

/// What `forkbook fixes migrate` proposed (and with `--write` wrote). Its JSON is the migration.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct Migrated {
    pub migration: Migration,
    /// The register's name in the records folder.
    #[serde(skip)]
    pub file: String,
    #[serde(skip)]
    pub wrote: bool,
}

/// `forkbook fixes migrate`: states proposed for an older register, the diff, and with `write`
/// the migrated register written in place.
pub fn migrate(project: &Project, write: bool) -> Result<Migrated> {
    // A writing run reads under the project's lock, so what it writes over is what it read.
    let _lock = write
        .then(|| crate::fsutil::ProjectLock::acquire(&project.root))
        .transpose()?;
    let path = project.records_dir().join(FIXES_FILE);
    let name = project.record_name(FIXES_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::new(format!("failed to read `{name}`: {e}")))?;
    let migration = register::migrate(
        &text,
        &name,
        web_address(&project.config.fork.url).as_deref(),
    );
    if write && !migration.diff.is_empty() {
        crate::fsutil::replace_file(&path, migration.text.as_bytes())?;
    }
    Ok(Migrated {
        migration,
        file: name,
        wrote: write,
    })
}

impl CommandReport for Migrated {
    fn text(&self) -> String {
        let name = &self.file;
        let mut out = String::new();
        if self.migration.proposals.is_empty() {
            let _ = writeln!(
                out,
                "`{name}` has no older-style entries (bold numbered titles): nothing to migrate"
            );
            return out;
        }
        for p in &self.migration.proposals {
            let state = p.state.map_or("no state", |s| s.as_str());
            let status = p
                .status
                .as_deref()
                .map_or("no status sentence".to_string(), |s| {
                    format!("from \"{s}\"")
                });
            let _ = writeln!(
                out,
                "{name}:{}: entry {}: {state} ({status})",
                p.line, p.number
            );
            if !p.missing.is_empty() {
                let _ = writeln!(out, "  still needs: {}", p.missing.join(", "));
            }
        }
        out.push('\n');
        out.push_str(&self.migration.diff);
        if self.wrote {
            let _ = writeln!(
                out,
                "wrote {name}; fill in what is still needed, then run `forkbook check`"
            );
        } else {
            let _ = writeln!(
                out,
                "nothing written: `forkbook fixes migrate --write` applies this diff"
            );
        }
        out
    }

    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}
