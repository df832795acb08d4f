//! `forkbook report`: the "ROCm overlay" section of a pin-bump or fork-sync PR, from live results.
//!
//! "Old" is the overlay as committed in the project's git history (`HEAD` by default, or the
//! revision given), "new" the records in the work tree. The section says: pin or fork old to new;
//! core files merged n of N and the conflicts, each with the fixes that resolve it; whether the
//! residual changed, each hunk with its fix; the drift the move had to fix, each finding with the
//! fix that touches its backend file; and the verify result.

use super::base::CoreOutcome;
use super::cache::Cache;
use super::doc::{code, text, words, Doc, Span};
use super::drift::api::Finding;
use super::drift::draft::{answers, Answer};
use super::error::{Context, Result};
use super::markdown::PageLinks;
use super::overlay::{OverlayState, Records};
use super::project::Project;
use super::report_value::{CommandReport, Verdict};
use super::residual;
use super::run::Run;
use super::verify::Outcome;
use super::FileMap;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub old: Option<String>,
    pub new: String,
    pub pin_moved: bool,
    pub fork_moved: bool,
    pub core: Vec<(String, String)>,
    pub conflicts: Vec<Conflict>,
    /// Each pin/fork conflict region and the upstream commits that changed its pin side.
    pub conflict_causes: Vec<super::trace::RegionTrace>,
    /// The upstream's web address, for links (from `forkbook.toml`, never a mirror's path).
    #[serde(skip)]
    pub upstream_web: Option<String>,
    pub residual_changed: Option<bool>,
    pub residual: Vec<residual::Hunk>,
    pub drift: Vec<DriftAnswered>,
    pub verify: Vec<super::verify::Item>,
    pub verify_failed: usize,
    /// The verification in one line: `passed`, `passed, 2 not run: ...`, or `FAILED, ...`.
    pub verdict: String,
}

/// A core file that conflicts between pin and fork, and the fixes that resolve it (none while
/// markers are left in).
#[derive(Debug, Clone, Serialize)]
pub struct Conflict {
    pub path: String,
    pub fixes: Vec<FixRef>,
}

/// A fix of the register: its number and its title (the register's text).
#[derive(Debug, Clone, Serialize)]
pub struct FixRef {
    pub number: usize,
    pub title: String,
}

/// An API drift finding of the move and the fixes that answer it, each with how.
#[derive(Debug, Clone, Serialize)]
pub struct DriftAnswered {
    #[serde(flatten)]
    pub finding: Finding,
    pub answers: Vec<FixAnswer>,
}

/// A fix that answers a finding, and how it came to be (drafted, confirmed, by hand).
#[derive(Debug, Clone, Serialize)]
pub struct FixAnswer {
    #[serde(flatten)]
    pub fix: FixRef,
    pub how: Answer,
}

/// `forkbook report`: the section for the records as they are against the records as committed at
/// `since`, with a fresh verification.
pub fn pr_report(run: &Run, state: &OverlayState, since: &str) -> Result<Report> {
    let old = committed_state(run.project, run.cache, since)?;
    report(run, state, old.as_ref())
}

impl CommandReport for Report {
    fn text(&self) -> String {
        self.render_markdown()
    }

    /// A report that says FAILED is a failure, whether it is printed for a PR body or not.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(self.verify_failed > 0)
    }
}

/// The overlay as committed at `rev` of the project's git repository, when there is one.
pub fn committed_state(
    project: &Project,
    cache: &Cache,
    rev: &str,
) -> Result<Option<OverlayState>> {
    let Ok(repo) = git2::Repository::discover(&project.root) else {
        return Ok(None);
    };
    let Some(workdir) = repo.workdir() else {
        return Ok(None);
    };
    let records = project.records_dir();
    let rel = records.canonicalize().ok().and_then(|r| {
        r.strip_prefix(workdir.canonicalize().ok()?)
            .ok()
            .map(|p| p.to_path_buf())
    });
    let Some(rel) = rel else { return Ok(None) };
    let Ok(commit) = repo.revparse_single(rev).and_then(|o| o.peel_to_commit()) else {
        return Ok(None);
    };
    let tree = commit.tree()?;
    let Ok(entry) = tree.get_path(&rel) else {
        return Ok(None);
    };
    let sub = repo
        .find_tree(entry.id())
        .with_context(|| format!("`{}` at `{rev}` is not a folder", rel.display()))?;
    let mut files = FileMap::new();
    sub.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
        if let (Ok(name), Ok(blob)) = (e.name(), e.to_object(&repo).and_then(|o| o.peel_to_blob()))
        {
            files.insert(format!("{dir}{name}"), blob.content().to_vec().into());
        }
        git2::TreeWalkResult::Ok
    })?;
    let records = Records::from_files(project, files)?;
    Ok(Some(OverlayState::from_records(project, cache, records)?))
}

/// Builds the report from the new state, the old one (if any) and the new state's verification.
pub fn report(run: &Run, new: &OverlayState, old: Option<&OverlayState>) -> Result<Report> {
    let verification = super::verify::verify(run, new)?;
    let core = new
        .base
        .core
        .iter()
        .map(|(p, o)| (p.clone(), o.name()))
        .collect();
    let new_residual = residual::compute(new);
    let residual_changed =
        old.map(|old| residual::compute(old).render_diff() != new_residual.render_diff());
    let drift = drift_answered(run, new, old)?;
    Ok(Report {
        conflict_causes: super::trace::recorded_conflicts(run.cache, new)?,
        upstream_web: super::trace::web_base(&run.project.canonical_urls.1),
        old: old.map(|o| o.commits.describe()),
        new: new.commits.describe(),
        pin_moved: old.is_some_and(|o| o.commits.pin != new.commits.pin),
        fork_moved: old.is_some_and(|o| o.commits.fork != new.commits.fork),
        core,
        conflicts: resolved_conflicts(new),
        residual_changed,
        residual: new_residual.hunks,
        drift,
        verify: verification.items.clone(),
        verify_failed: verification.failed(),
        verdict: verification.summary(),
    })
}

/// Each core file that conflicts between pin and fork, with the fixes that resolve it.
fn resolved_conflicts(new: &OverlayState) -> Vec<Conflict> {
    let conflicted = new
        .base
        .core
        .iter()
        .filter(|(_, o)| matches!(o, CoreOutcome::Conflict(_)));
    conflicted
        .map(|(path, _)| {
            let marked = new
                .overlay
                .get(path)
                .is_some_and(|b| !forkbook_checks::markers::scan(b).is_empty());
            // Markers left in: no fix resolves it yet, whatever fixes touch the file.
            let fixes = if marked {
                Vec::new()
            } else {
                fixes_touching(new, path)
            };
            Conflict {
                path: path.clone(),
                fixes,
            }
        })
        .collect()
}

/// The API drift from the old pin to the new one, each finding with what answers it; none
/// where the pin did not move.
fn drift_answered(
    run: &Run,
    new: &OverlayState,
    old: Option<&OverlayState>,
) -> Result<Vec<DriftAnswered>> {
    let Some(old) = old.filter(|old| old.commits.pin != new.commits.pin) else {
        return Ok(Vec::new());
    };
    let api = run.drift_api(old, old.commits.pin, new.commits.pin)?;
    let answered = |finding: Finding| {
        let answers = answers(new, &finding, old.steps.len()).into_iter();
        let answers = answers.map(|(number, title, how)| FixAnswer {
            fix: FixRef { number, title },
            how,
        });
        DriftAnswered {
            answers: answers.collect(),
            finding,
        }
    };
    Ok(api.live().cloned().map(answered).collect())
}

/// The fixes whose patches change `path`.
pub(crate) fn fixes_touching(state: &OverlayState, path: &str) -> Vec<FixRef> {
    let touching = state
        .steps
        .iter()
        .filter(|s| s.changed_paths().contains(&path));
    let fix = |s: &super::overlay::FixStep| FixRef {
        number: s.number(),
        title: s.patch.title(),
    };
    touching.map(fix).collect()
}

impl Report {
    /// The section as Markdown, for a PR body or the technical report: what moved, the core
    /// files and their conflicts (each region with its upstream commits, linked), the residual,
    /// the drift the change fixed and the verification. Its lines are Markdown already.
    fn render_markdown(&self) -> String {
        let mut doc = Doc::default();
        doc.line(vec![words(self.moved())]);
        let clean = self.core.iter().filter(|(_, o)| !o.starts_with("conflict"));
        let (clean, all) = (clean.count(), self.core.len());
        let listed = if self.conflicts.is_empty() {
            ""
        } else {
            ". Conflicts:"
        };
        let merged = format!("Core files: {clean} of {all} merged cleanly{listed}");
        doc.line(vec![words(merged)]);
        for Conflict { path, fixes } in &self.conflicts {
            let mut item = vec![code(path), words(": ")];
            if fixes.is_empty() {
                item.push(words("UNRESOLVED"));
            } else {
                item.push(words("resolved by "));
                let named = fixes.iter().map(|fix| fix.spans());
                item.extend(named.collect::<Vec<_>>().join(&words(", ")));
            }
            doc.list(vec![item]).sublist(self.causes(path));
        }
        let changed = match self.residual_changed {
            Some(true) => "changed",
            Some(false) => "unchanged",
            None => "first recorded",
        };
        let hunks = super::report_value::plural(self.residual.len(), "hunk", "hunks");
        doc.line(vec![words(format!("Residual: {changed}, {hunks}"))])
            .list(self.residual.iter().map(hunk_item).collect());
        if !self.drift.is_empty() {
            let n = self.drift.len();
            doc.line(vec![words(format!(
                "API drift fixed by this change ({n}):"
            ))])
            .list(self.drift.iter().map(|d| self.drift_item(d)).collect());
        }
        let verdict = super::verify::summary_spans(&self.verify);
        doc.line([vec![words("Verify: ")], verdict].concat())
            .list(self.verify.iter().map(verify_item).collect());
        format!("## ROCm overlay\n\n{}", doc.markdown())
    }

    /// What moved, from what to what.
    fn moved(&self) -> String {
        let new = &self.new;
        match &self.old {
            Some(old) if old != new => {
                let what = match (self.pin_moved, self.fork_moved) {
                    (true, true) => "Pin and fork",
                    (true, false) => "Pin",
                    (false, true) => "Fork",
                    _ => "Records",
                };
                format!("{what}: {old} -> {new}")
            }
            Some(_) => format!("Overlay at {new} (no change to the recorded commits)"),
            None => format!("Overlay at {new} (no committed records to compare with)"),
        }
    }

    /// The finding, its upstream commit (linked) and the fixes that answer it.
    fn drift_item(&self, answered: &DriftAnswered) -> Vec<Span> {
        let finding = &answered.finding;
        let mut item = vec![
            words(format!("{} ", finding.kind.as_str())),
            code(&finding.symbol),
        ];
        if let Some(c) = &finding.introduced_by {
            let links = PageLinks {
                upstream_web: self.upstream_web.clone(),
                register_page: None,
            };
            let commit = super::doc::commit(&links, &c.sha, &c.summary);
            item.extend([words(" (upstream "), commit, words(")")]);
        }
        item.push(words(": "));
        if answered.answers.is_empty() {
            item.push(words("no fix yet"));
        }
        let how = |how: &Answer| match how {
            Answer::Drafted => "drafted, not confirmed: ",
            Answer::Confirmed => "drafted and confirmed: ",
            Answer::HandWritten => "",
        };
        let answers = answered.answers.iter();
        let answers =
            answers.map(|answer| [vec![words(how(&answer.how))], answer.fix.spans()].concat());
        item.extend(answers.collect::<Vec<_>>().join(&words(", ")));
        item
    }

    /// The regions of `path`, each with its upstream commits (linked).
    fn causes(&self, path: &str) -> Vec<Vec<Span>> {
        let web = self.upstream_web.as_deref().unwrap_or("");
        let traces = self.conflict_causes.iter().filter(|t| t.path == path);
        let cause = |t: &super::trace::RegionTrace| {
            let causes = if t.commits.is_empty() {
                "no upstream commit since the fork base".to_string()
            } else {
                let commits: Vec<String> = t.commits.iter().map(|c| c.markdown(web)).collect();
                commits.join("; ")
            };
            let (region, lines) = (t.region, t.describe_lines());
            vec![words(format!(
                "region {region} ({lines}): upstream {causes}"
            ))]
        };
        traces.map(cause).collect()
    }
}

impl FixRef {
    /// `fix N (title)`: the title is the register's text.
    fn spans(&self) -> Vec<Span> {
        let number = self.number;
        vec![
            words(format!("fix {number} (")),
            text(&self.title),
            words(")"),
        ]
    }
}

/// A residual hunk: where, its size and the fixes that change its file.
fn hunk_item(hunk: &residual::Hunk) -> Vec<Span> {
    let (removed, added) = (hunk.removed, hunk.added);
    vec![
        code(format!("{}:{}", hunk.file, hunk.line)),
        words(format!(" (-{removed} +{added}): ")),
        super::doc::fixes(&PageLinks::default(), &hunk.fixes),
    ]
}

/// One verify step and how it ended.
fn verify_item(item: &super::verify::Item) -> Vec<Span> {
    let (how, why) = match &item.outcome {
        Outcome::Passed => ("passed", None),
        Outcome::Failed(why) => ("FAILED", Some(why)),
        Outcome::Skipped(why) => ("skipped", Some(why)),
    };
    let mut spans = vec![code(&item.name), words(format!(": {how}"))];
    if let Some(why) = why {
        spans.extend([words(" ("), Span::Prose(why.clone()), words(")")]);
    }
    spans
}
