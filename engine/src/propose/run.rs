//! `forkbook propose`: the packages made, written and pushed, and `--record`, each reported.

use super::pulls::{self, CitedPull};
use super::{build_proposal, push, record, write, Package, Skipped, DEFAULT_OUT, INDEX_FILE};
use crate::cache::Cache;
use crate::config::Layout;
use crate::error::{Error, Result};
use crate::overlay::{OverlayState, Records};
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

/// What `forkbook propose` made. Its JSON: the packages, the entries skipped and those not
/// packaged (each with its reason and note), and the state of every pull request the register
/// cites.
#[derive(Debug, Clone, Serialize)]
pub struct Proposed {
    pub packages: Vec<Package>,
    /// The folder the packages and their index were written to.
    #[serde(skip)]
    pub out: PathBuf,
    /// The remote each package was pushed to, when one was given.
    #[serde(skip)]
    pub pushed: Option<String>,
    /// Entries left out because the fork already holds their change (a run without numbers).
    pub skipped: Vec<Skipped>,
    /// Entries that could not be packaged, each with what to add (a run without numbers).
    pub not_packaged: Vec<Skipped>,
    /// Every pull request or issue of the fork or upstream the register cites, with its state.
    pub pulls: Vec<CitedPull>,
    /// Why the pull refs of the fork or upstream could not be read, where they could not.
    pub pulls_unread: Vec<String>,
    /// Other repositories the register cites, with how many numbers each: not read.
    pub cited_elsewhere: Vec<(String, usize)>,
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
    let (state, without_pin) = state_for_packages(project, &cache)?;
    let name = project.record_name(FIXES_FILE);
    let register = register::load(&project.records_dir().join(FIXES_FILE), &name)?;
    let proposal = build_proposal(
        project,
        &cache,
        &state,
        without_pin.as_ref(),
        &register,
        numbers,
    )?;
    let cited = pulls::read(project, &cache, &register);
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
        not_packaged: proposal.not_packaged,
        pulls: cited.states,
        pulls_unread: cited.unread,
        cited_elsewhere: cited.elsewhere,
    })
}

/// The overlay the packages are made from, and, where an upstream commit (the pin) is missing
/// in the files layout, why: a package is the fix carried onto the fork commit, and a backend
/// file's base is the fork's file, so the backend files alone are had without the pin
/// ([`OverlayState::backend_only`]); a fix naming a core file is refused with that error.
fn state_for_packages(project: &Project, cache: &Cache) -> Result<(OverlayState, Option<Error>)> {
    let records = Records::read(project)?;
    match OverlayState::from_records(project, cache, records.clone()) {
        Ok(state) => Ok((state, None)),
        Err(e)
            if e.is_missing_object()
                && project.config.overlay.layout == Layout::Files
                && project.stand_in_pin().is_none() =>
        {
            // Without the fork commit there is nothing to make a package on: its error is `e`.
            let fork = records.fork(project, cache).map_err(|_| e.clone())?;
            let state = OverlayState::backend_only(project, cache, records, fork)?;
            crate::notice::leave(format!(
                "{}: the packages of backend files are made on the fork commit, which is all \
                 they need; a fix that names a core file waits for the pin (or a stand-in)",
                e.chain.first().map_or("", String::as_str)
            ));
            Ok((state, Some(e)))
        }
        Err(e) => Err(e),
    }
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
            package_lines(&mut out, p, self.pushed.as_deref());
        }
        for left in &self.not_packaged {
            let _ = writeln!(out, "entry {}: not packaged: {}", left.number, left.reason);
            if !left.note.is_empty() {
                let _ = writeln!(out, "  note: {}", left.note);
            }
        }
        let pulls = pull_lines(&self.pulls);
        if !pulls.is_empty() {
            let _ = writeln!(out, "pull requests the register cites:\n{pulls}");
        }
        for unread in &self.pulls_unread {
            let _ = writeln!(out, "{unread}: their state is not said");
        }
        for (repo, count) in &self.cited_elsewhere {
            let cited = plural(*count, "number", "numbers");
            let _ = writeln!(
                out,
                "{cited} of {repo} cited, not read: it is neither the fork nor upstream"
            );
        }
        let _ = writeln!(
            out,
            "wrote {} and {}",
            plural(self.packages.len(), "package", "packages"),
            self.out.join(INDEX_FILE).display()
        );
        if !self.not_packaged.is_empty() {
            let _ = writeln!(
                out,
                "{} not packaged: add what each note says, then run `forkbook propose` again",
                plural(self.not_packaged.len(), "entry", "entries")
            );
        }
        if !self.packages.is_empty() {
            out.push_str("once a pull request is open: `forkbook propose --record N URL`\n");
        }
        crate::terminal::escape_controls(&out).into_owned()
    }

    /// Some entry could not be packaged: what was made is written, and the run says so.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(!self.not_packaged.is_empty())
    }
}

/// A package's lines: its file, entries, evidence, `git apply --check`, stack and branch.
fn package_lines(out: &mut String, p: &Package, pushed: Option<&str>) {
    let files = plural(p.paths.len(), "file", "files");
    let _ = writeln!(out, "entry {}: {} ({files})", p.number, p.file);
    let _ = writeln!(out, "  title: {}", p.pr_title);
    if p.entries.len() > 1 {
        let entries: Vec<String> = p.entries.iter().map(u32::to_string).collect();
        let _ = writeln!(
            out,
            "  one package for entries {}: they share `{}`, and no commit of the project's history tells their changes apart",
            entries.join(", "),
            p.shared.join("`, `")
        );
    }
    let _ = writeln!(out, "  change from: {}", p.evidence.describe());
    for check in &p.apply_checks {
        let onto = &check.onto[..12.min(check.onto.len())];
        let what = if check.onto == p.fork_commit {
            format!("fork commit {onto}")
        } else {
            format!("{onto} (the package below it)")
        };
        let said = match check.applies {
            Some(true) => "applies".to_string(),
            Some(false) => format!("does not apply: {}", check.said),
            None => format!("not checked: {}", check.said),
        };
        let _ = writeln!(out, "  git apply --check onto {what}: {said}");
    }
    if !p.depends_on.is_empty() {
        let depends: Vec<String> = p.depends_on.iter().map(u32::to_string).collect();
        let _ = writeln!(
            out,
            "  stacked on entry {} (their changes touch the same lines)",
            depends.join(", ")
        );
    }
    if let Some(remote) = pushed {
        let _ = writeln!(out, "  pushed as branch `{}` to {remote}", p.branch);
    }
}

/// `  entry 4: fork #102: open (…/pull/102)`, one line per citation.
pub(crate) fn pull_lines(pulls: &[CitedPull]) -> String {
    let mut out = String::new();
    for pull in pulls {
        let _ = writeln!(
            out,
            "  entry {}: {} #{}: {} ({})",
            pull.entry,
            pull.repo,
            pull.number,
            pull.state.describe(),
            pull.cited
        );
    }
    out
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
