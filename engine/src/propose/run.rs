//! `forkbook propose`: the packages made, written and pushed, and `--record`, each reported.

use super::{build_proposal, push, record, write, Package, Skipped, DEFAULT_OUT, INDEX_FILE};
use crate::cache::Cache;
use crate::error::Result;
use crate::overlay::OverlayState;
use crate::project::Project;
use crate::records::FIXES_FILE;
use crate::register;
use crate::report_value::{plural, CommandReport, Verdict};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The packages' folder: `out`, or `propose/` in the project.
fn out_dir(project: &Project, out: Option<&Path>) -> PathBuf {
    out.map_or_else(|| project.root.join(DEFAULT_OUT), Path::to_path_buf)
}

/// What `forkbook propose` made. Its JSON is the list of packages.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Proposed {
    pub packages: Vec<Package>,
    /// The folder the packages and their index were written to.
    #[serde(skip)]
    pub out: PathBuf,
    /// The remote each package was pushed to, when one was given.
    #[serde(skip)]
    pub pushed: Option<String>,
    /// Entries left out because the fork already holds their change (a run without numbers).
    #[serde(skip)]
    pub skipped: Vec<Skipped>,
}

/// `forkbook propose`: a package per entry of `numbers` (default: every entry that applies to
/// the fork), written into `out` with their index, and with `push` each pushed as a branch.
pub fn propose(
    project: &Project,
    numbers: &[u32],
    out: Option<&Path>,
    push_to: Option<&str>,
) -> Result<Proposed> {
    let out = out_dir(project, out);
    // Packages in the records folder would be taken for overlay files; over the project, for its own.
    crate::fsutil::refuse_guarded(&out, &project.root, &project.records_dir())?;
    let cache = Cache::create(project)?;
    let state = OverlayState::load(project, &cache)?;
    let name = project.record_name(FIXES_FILE);
    let register = register::load(&project.records_dir().join(FIXES_FILE), &name)?;
    let proposal = build_proposal(project, &cache, &state, &register, numbers)?;
    let packages = proposal.packages;
    write(&out, &packages)?;
    if let Some(remote) = push_to {
        for package in &packages {
            push(&cache, remote, package)?;
        }
    }
    Ok(Proposed {
        packages,
        out,
        pushed: push_to.map(str::to_string),
        skipped: proposal.skipped,
    })
}

impl CommandReport for Proposed {
    fn text(&self) -> String {
        let mut out = String::new();
        for skipped in &self.skipped {
            let _ = writeln!(
                out,
                "entry {}: skipped: {} ({})",
                skipped.number, skipped.reason, skipped.note
            );
        }
        for p in &self.packages {
            let _ = writeln!(
                out,
                "entry {}: {} ({} file{}), applies to fork commit {}",
                p.number,
                p.file,
                p.paths.len(),
                if p.paths.len() == 1 { "" } else { "s" },
                &p.fork_commit[..12]
            );
            let _ = writeln!(out, "  title: {}", p.pr_title);
            if !p.depends_on.is_empty() {
                let depends: Vec<String> = p.depends_on.iter().map(|n| n.to_string()).collect();
                let _ = writeln!(
                    out,
                    "  stacked on entry {} (their changes touch the same lines)",
                    depends.join(", ")
                );
            }
            if let Some(remote) = &self.pushed {
                let _ = writeln!(out, "  pushed as branch `{}` to {remote}", p.branch);
            }
        }
        let _ = writeln!(
            out,
            "wrote {} and {}",
            plural(self.packages.len(), "package", "packages"),
            self.out.join(INDEX_FILE).display()
        );
        if !self.packages.is_empty() {
            out.push_str("once a pull request is open: `forkbook propose --record N URL`\n");
        }
        out
    }

    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}

/// What `forkbook propose --record N URL` recorded.
#[derive(Debug, Clone, Serialize)]
pub struct Recorded {
    pub number: u32,
    pub url: String,
    /// The register's name in the records folder.
    pub register: String,
}

/// `forkbook propose --record N URL`: entry `number`'s pull request recorded in the register and
/// its state set to `proposed` (its package in `out` named too, when there is one).
pub fn record_pr(
    project: &Project,
    number: u32,
    url: &str,
    out: Option<&Path>,
) -> Result<Recorded> {
    record(project, number, url, &out_dir(project, out))?;
    Ok(Recorded {
        number,
        url: url.to_string(),
        register: project.record_name(FIXES_FILE),
    })
}

impl CommandReport for Recorded {
    fn text(&self) -> String {
        format!(
            "entry {} is now proposed: {} (recorded in {})\n",
            self.number, self.url, self.register
        )
    }

    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}
