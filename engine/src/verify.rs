//! `forkbook verify`: everything a pin-bump or fork-sync change must pass, in one run.
//!
//! Every check of the catalogue, `sync --check`, the residual (each hunk owned by a fix), static
//! drift from the fork base to the pin, and the steps `[verify]` names (the ROCm build, the
//! generation smoke). A step whose tool or GPU is missing is skipped with the reason; it never
//! counts as passed.

use super::check;
use super::config::Config;
use super::doc::{text, words, Doc, Span};
use super::error::Result;
use super::overlay::OverlayState;
use super::report_value::{plural, CommandReport, Verdict};
use super::residual;
use super::run::Run;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::{Duration, Instant};

/// `[verify]` in forkbook.toml.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VerifyConfig {
    pub steps: Vec<StepConfig>,
}

pub use super::config::StepConfig;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "status", content = "reason")]
pub enum Outcome {
    Passed,
    Failed(String),
    Skipped(String),
}

#[derive(Debug, Clone, Serialize)]
pub struct Item {
    pub name: String,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// What it found, one line each.
    pub details: Vec<String>,
    pub millis: u128,
}

#[derive(Debug, Clone, Serialize)]
pub struct Verification {
    pub commits: String,
    pub items: Vec<Item>,
}

impl Verification {
    pub fn failed(&self) -> usize {
        self.items
            .iter()
            .filter(|i| matches!(i.outcome, Outcome::Failed(_)))
            .count()
    }

    /// One line for the whole run (see [`summary_spans`]), as a terminal shows it.
    pub fn summary(&self) -> String {
        let mut doc = Doc::default();
        doc.line(summary_spans(&self.items));
        doc.text().trim_end().to_string()
    }
}

/// One line for a whole run: `passed` only when every step ran and passed; otherwise what
/// failed and what did not run, each with its reason. A step's name is the configuration's
/// text; a reason is forkbook's words, naming things in backticks.
///
/// `passed, 2 not run: ROCm build (`hipcc` is not on PATH), generation smoke (...)`
pub fn summary_spans(items: &[Item]) -> Vec<Span> {
    let mut failed = Vec::new();
    let mut not_run = Vec::new();
    for item in items {
        let (list, why) = match &item.outcome {
            Outcome::Passed => continue,
            Outcome::Failed(why) => (&mut failed, why),
            Outcome::Skipped(why) => (&mut not_run, why),
        };
        let reason = [words(" ("), Span::Prose(why.clone()), words(")")];
        list.push([vec![text(&item.name)], reason.to_vec()].concat());
    }
    let mut spans = vec![words("passed")];
    if !failed.is_empty() {
        spans = vec![words(format!("FAILED, {} failed: ", failed.len()))];
        spans.extend(failed.join(&words(", ")));
    }
    if !not_run.is_empty() {
        spans.push(words(format!(", {} not run: ", not_run.len())));
        spans.extend(not_run.join(&words(", ")));
    }
    spans
}

impl CommandReport for Verification {
    fn text(&self) -> String {
        let mut doc = Doc::default();
        doc.line(vec![words("verify at "), text(&self.commits)]);
        let mut skipped = 0;
        for item in &self.items {
            let status = match &item.outcome {
                Outcome::Passed => "passed".to_string(),
                Outcome::Failed(why) => format!("FAILED: {why}"),
                Outcome::Skipped(why) => {
                    skipped += 1;
                    format!("skipped: {why}")
                }
            };
            let (name, millis) = (&item.name, item.millis);
            doc.list(vec![vec![text(format!(
                "{name:<28} {status} ({millis} ms)"
            ))]]);
            for detail in &item.details {
                doc.line(vec![text(format!("      {detail}"))]);
            }
        }
        let (failed, all) = (self.failed(), self.items.len());
        let passed = all - failed - skipped;
        doc.line(vec![words(format!(
            "{passed} passed, {failed} failed, {skipped} skipped"
        ))])
        .line([vec![words("verify: ")], summary_spans(&self.items)].concat());
        doc.text()
    }

    /// A failed step is a problem; a skipped one is named in the text, not counted.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(self.failed() > 0)
    }
}

/// `forkbook verify`: runs every verification of the overlay at its recorded commits.
pub fn verify(run: &Run, state: &OverlayState) -> Result<Verification> {
    let (project, cache) = (run.project, run.cache);
    let cfg: VerifyConfig = Config::section(&project.config.verify, "verify")?;
    let mut items = vec![
        timed("checks", || checks(run, state)),
        timed("sync --check", || sync_check(run, state)),
        timed("residual", || residual_owned(state)),
        timed("drift api (base to pin)", || drift(run, state)),
    ];
    // A step may run forkbook itself (`forkbook fetch` writes the cache), so this run lets go
    // of the cache's lock before the steps: holding it, the step was refused, or with
    // FORKBOOK_LOCK_WAIT=1 waited for this run, which waited for the step. Everything read
    // from the cache stays valid (objects are never removed); a later write takes it again.
    if !cfg.steps.is_empty() {
        cache.release_lock();
    }
    for step in &cfg.steps {
        items.push(timed(&step.name, || {
            Ok(run_step(step, &project.root, &project.overrides))
        }));
    }
    Ok(Verification {
        commits: state.commits.describe(),
        items,
    })
}

/// Passed, or failed for `why` when `failed`.
fn failed_if(failed: bool, why: impl FnOnce() -> String) -> Outcome {
    if failed {
        Outcome::Failed(why())
    } else {
        Outcome::Passed
    }
}

fn timed(name: &str, f: impl FnOnce() -> Result<(Outcome, Vec<String>)>) -> Item {
    let start = Instant::now();
    let (outcome, details) =
        f().unwrap_or_else(|e| (Outcome::Failed(e.message()), e.note.into_iter().collect()));
    Item {
        name: name.to_string(),
        outcome,
        details,
        millis: start.elapsed().as_millis(),
    }
}

fn checks(run: &Run, state: &OverlayState) -> Result<(Outcome, Vec<String>)> {
    let facts = run.facts(state)?;
    let findings = check::run_checks(&facts);
    let errors = findings
        .iter()
        .filter(|f| f.severity == check::Severity::Error)
        .count();
    let details = findings
        .iter()
        .map(|f| f.render().lines().next().unwrap_or_default().to_string())
        .collect();
    let outcome = failed_if(errors > 0, || plural(errors, "error", "errors"));
    Ok((outcome, details))
}

fn sync_check(run: &Run, state: &OverlayState) -> Result<(Outcome, Vec<String>)> {
    let mismatches = run.sync_check(state)?;
    let details = mismatches
        .iter()
        .map(|m| format!("{}: {}", m.place(), m.message))
        .collect();
    let regions = |n| plural(n, "conflict region", "conflict regions");
    let differ = |n| format!("{} differ", plural(n, "record", "records"));
    let markers = mismatches.iter().filter(|m| m.line.is_some()).count();
    let records = mismatches.len() - markers;
    let outcome = match (records, markers) {
        (0, 0) => Outcome::Passed,
        (0, m) => Outcome::Failed(format!("{} left", regions(m))),
        (r, 0) => Outcome::Failed(differ(r)),
        (r, m) => Outcome::Failed(format!("{}, {} left", differ(r), regions(m))),
    };
    Ok((outcome, details))
}

/// The residual passes when every hunk lies in a file some fix's patch changes. In the files
/// layout there are no patches to own hunks: the register does, and the `residual-hunks-noted`
/// check (under "checks") judges that, so this item says so instead of passing unchecked.
fn residual_owned(state: &OverlayState) -> Result<(Outcome, Vec<String>)> {
    let residual = residual::compute(state);
    let details: Vec<String> = residual
        .hunks
        .iter()
        .map(|h| {
            format!(
                "{}:{} -{} +{} fixes {:?}",
                h.file, h.line, h.removed, h.added, h.fixes
            )
        })
        .collect();
    if state.layout == super::config::Layout::Files {
        let why = "files layout: the register owns the hunks, judged by `residual-hunks-noted` under checks";
        return Ok((Outcome::Skipped(why.into()), details));
    }
    let orphans = residual.hunks.iter().filter(|h| h.fixes.is_empty()).count();
    let outcome = failed_if(orphans > 0, || {
        format!("{} belong to no fix", plural(orphans, "hunk", "hunks"))
    });
    Ok((outcome, details))
}

fn drift(run: &Run, state: &OverlayState) -> Result<(Outcome, Vec<String>)> {
    let report = run.drift_api(state, state.commits.base, state.commits.pin)?;
    let details = report
        .live()
        .map(|f| format!("{}: {}", f.kind.as_str(), f.symbol))
        .collect();
    let breaks = report.breaks();
    Ok((
        failed_if(breaks > 0, || plural(breaks, "break", "breaks")),
        details,
    ))
}

/// Runs a configured step with the project's tools, cache and mirrors (a `forkbook` in it works
/// on what this verify works on).
fn run_step(
    step: &StepConfig,
    root: &Path,
    overrides: &super::project::Overrides,
) -> (Outcome, Vec<String>) {
    // What the step runs with, both from the overrides: its environment and the search path
    // its requirements are looked up on.
    let (env, search) = (overrides.child_env(), overrides.search_path());
    if let Some(why) = crate::tools::missing_requirement_in(&step.requires, step.gpu, &search) {
        return (Outcome::Skipped(why), Vec::new());
    }
    let timeout = Duration::from_secs(step.timeout.unwrap_or(3600));
    match run_shell_with(&step.command, root, timeout, &env) {
        Ok((0, _)) => (Outcome::Passed, Vec::new()),
        Ok((code, tail)) => (Outcome::Failed(format!("exit {code}")), tail),
        Err(why) => (Outcome::Failed(why), Vec::new()),
    }
}

/// Runs `sh -c command` through [`super::process`] (its own session, killed with everything
/// it started at the timeout); returns the exit status and the output's last lines.
pub fn run_shell(
    command: &str,
    dir: &Path,
    timeout: Duration,
) -> std::result::Result<(i32, Vec<String>), String> {
    run_shell_with(command, dir, timeout, &[])
}

/// [`run_shell`] with these variables set over forkbook's environment.
pub fn run_shell_with(
    command: &str,
    dir: &Path,
    timeout: Duration,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> std::result::Result<(i32, Vec<String>), String> {
    use super::process::{run, Ended, Spec};
    let mut spec = Spec::new("sh", dir).arg("-c").arg(command);
    for (name, value) in env {
        spec = spec.env(name.clone(), value.clone());
    }
    let done = run(&spec.timeout(Some(timeout))).map_err(|e| e.to_string())?;
    let lines: Vec<String> = done.output.lines().map(str::to_string).collect();
    let tail = lines[lines.len().saturating_sub(20)..].to_vec();
    match done.ended {
        Ended::TimedOut(after) => Err(format!(
            "timed out after {} s; its last lines: {}",
            after.as_secs(),
            tail.join(" | ")
        )),
        _ => Ok((done.code().unwrap_or(-1), tail)),
    }
}
