//! `forkbook fixes list` and `forkbook fixes migrate`: the register of local fixes
//! (LOCAL_FIXES.md) as forkbook reads it, and an older register turned into one with states.

use crate::cache::Cache;
use crate::doc::{code, text, words, Doc};
use crate::error::{Error, Result};
use crate::project::Project;
use crate::records::FIXES_FILE;
use crate::register::{self, Listed, Listing, Migration};
use crate::report_value::{plural, CommandReport, Verdict};
use forkbook_records::names::Names;
use forkbook_records::remote::web_address;
use serde::Serialize;
use std::path::Path;

/// `forkbook fixes list`: the project's register, entry by entry, with the state of each pull
/// request it cites as the fork's and upstream's pull refs say (none where the object cache
/// cannot be opened). An entry's files are the overlay's files it names, the overlay's files
/// being what its lock lists (offline), where the project has a lock.
pub fn list(project: &Project) -> Result<Listing> {
    let path = project.records_dir().join(FIXES_FILE);
    let name = project.record_name(FIXES_FILE);
    let register = read_register(&path, &name)?;
    let pulls = match Cache::open(project) {
        Ok(cache) => crate::propose::pulls::states(project, &cache, &register),
        Err(_) => Vec::new(),
    };
    let lock = std::fs::read(project.records_dir().join(crate::records::LOCK_FILE)).ok();
    let files: Option<Vec<String>> = lock.map(|bytes| {
        let lock = forkbook_records::lock::Lock::read(&String::from_utf8_lossy(&bytes));
        lock.files.into_keys().collect()
    });
    let prefix = &project.config.overlay.backend_prefix;
    let names = files.as_ref().map(|files| Names::new(files, prefix));
    Ok(register::listing_with(
        &register,
        &pulls,
        names.as_ref(),
        prefix,
    ))
}

/// `forkbook fixes list --file PATH`: the register at `path` (named `name`), no project needed:
/// an entry's files are the names that look like paths.
pub fn list_file(path: &Path, name: &str) -> Result<Listing> {
    Ok(register::listing(&read_register(path, name)?, None, ""))
}

fn read_register(path: &Path, name: &str) -> Result<register::Register> {
    if !path.is_file() {
        return Err(Error::new(format!("there is no register at `{name}`"))
            .with_note("write one entry `N. **Title.** why…` or `## N. Title` per local fix"));
    }
    register::load(path, name)
}

impl CommandReport for Listing {
    fn text(&self) -> String {
        let mut doc = Doc::default();
        let file = &self.file;
        let entries = plural(self.entries.len(), "entry", "entries");
        doc.line(vec![text(format!("{file}: {entries}"))]);
        let mut section: Option<&str> = None;
        for entry in &self.entries {
            if entry.section.as_deref() != section {
                section = entry.section.as_deref();
                doc.gap()
                    .line(vec![text(section.unwrap_or("(no section)"))]);
            }
            entry_lines(&mut doc, entry, file);
        }
        let states: Vec<String> = self
            .states
            .iter()
            .filter(|s| s.entries > 0)
            .map(|s| format!("{} {}", s.entries, s.name()))
            .collect();
        doc.gap()
            .line(vec![words(format!("by state: {}", states.join(", ")))]);
        for problem in &self.problems {
            let (line, message) = (problem.line, &problem.message);
            doc.line(vec![text(format!("{file}:{line}: {message}"))]);
        }
        doc.text()
    }

    /// A listing shows the register's problems; `forkbook check` is what fails on them.
    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}

/// An entry's line, then its state's source and its fields, each under the title.
fn entry_lines(doc: &mut Doc, entry: &Listed, file: &str) {
    let state = entry.state.map_or("no state", |s| s.as_str());
    let (number, title, line) = (entry.number, &entry.title, entry.line);
    doc.line(vec![text(format!(
        "  {number:>3}. {title}  [{state}]  {file}:{line}"
    ))]);
    let source = match (entry.state_source, &entry.state_text, entry.state_line) {
        (Some("field"), _, Some(line)) => format!("field at line {line}"),
        (Some(_), Some(text), Some(line)) => format!("read from {text} (line {line})"),
        _ => {
            "none: nothing says; add `state: …` (see `forkbook check --explain fix-state-complete`)"
                .to_string()
        }
    };
    let lists = [
        ("state", vec![source]),
        ("reason", entry.reason.iter().cloned().collect()),
        ("files", entry.files.clone()),
        ("issues", entry.issues.clone()),
        ("links", entry.links.clone()),
        ("pull requests", pull_states(entry)),
    ];
    for (label, values) in lists.iter().filter(|(_, values)| !values.is_empty()) {
        doc.line(vec![text(format!("       {label}: {}", values.join(", ")))]);
    }
}

/// `fork #101 merged at 1a2b3c4d5e6f`, one per citation whose pull refs were read.
fn pull_states(entry: &Listed) -> Vec<String> {
    (entry.pulls.iter())
        .map(|p| format!("{} #{} {}", p.repo, p.number, p.state.describe()))
        .collect()
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
    let _lock = write.then(|| project.lock_records()).transpose()?;
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
        let mut doc = Doc::default();
        if self.migration.proposals.is_empty() {
            let nothing = " has no older-style entries (bold numbered titles): nothing to migrate";
            doc.line(vec![code(name), words(nothing)]);
            return doc.text();
        }
        for p in &self.migration.proposals {
            let state = p.state.map_or("no state", |s| s.as_str());
            let status = p
                .status
                .as_deref()
                .map_or("no status sentence".to_string(), |s| {
                    format!("from \"{s}\"")
                });
            let (line, number) = (p.line, p.number);
            doc.line(vec![text(format!(
                "{name}:{line}: entry {number}: {state} ({status})"
            ))]);
            if !p.missing.is_empty() {
                let needs = format!("still needs: {}", p.missing.join(", "));
                doc.list(vec![vec![words(needs)]]);
            }
        }
        let done = if self.wrote {
            format!("wrote {name}; fill in what is still needed, then run `forkbook check`")
        } else {
            "nothing written: `forkbook fixes migrate --write` applies this diff".to_string()
        };
        format!("{}\n{}{done}\n", doc.text(), self.migration.diff)
    }

    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}
