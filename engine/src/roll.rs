//! `forkbook roll`: how far the overlay can follow upstream, and the bump itself.
//!
//! `roll --check` walks upstream's first-parent history from the recorded pin to a target (the
//! upstream branch's tip by default) and names every commit at which something new happens to
//! the overlay: a core file starts or stops conflicting, a drift finding appears or goes away, a
//! local fix becomes droppable because upstream now holds it. From those events it names two
//! candidates: the newest commit the overlay moves to with no conflict and no drift (the clean
//! candidate), and the newest one where every drift finding left has a mechanical draft.
//!
//! The cost grows with the events, not with the commits:
//! - conflicts are exact: for each core file only the commits that change it are merged again
//!   (one 3-way merge per new blob id of the file), as `retarget --stepwise` does;
//! - the rest of the overlay's state (the drift findings as a set, the fixes a retarget finds
//!   droppable, conflicts of carried fixes) is known only where a retarget is planned and the
//!   drift analysed (a probe). Probes are made at the recorded pin, at the target, on both sides
//!   of each conflict event and of the commit each finding at the target names as its cause;
//!   then between two neighbouring probes whose states differ the middle commit is probed, until
//!   every change sits between two adjacent commits. Two neighbouring probes with the same state
//!   are taken to have none between them: changes are rare, and both ends are verified.
//!
//! Every probe reuses the drift cache (finished analyses by blob ids) and the merge cache, and
//! within one run the parse of every file is kept by its blob id, so no file is parsed twice.
//!
//! `roll` makes the bump: a retarget to the clean candidate (or the commit asked for), written,
//! with the drafts when asked, and the pull request's body (`report --pr-body` of the new state)
//! written to a file it names.

use super::base;
use super::cache::{short, Cache};
use super::doc::{code, commit, either, fixes, text, words, Described, Doc, Row, Span};
use super::drift::api::{self, ApiReport};
use super::drift::draft::{self, CacheUpstream};
use super::drift::setup::DriftSetup;
use super::error::{Context, Error, Result};
use super::markdown::PageLinks;
use super::overlay::OverlayState;
use super::project::Project;
use super::report_value::{plural, CommandReport, Verdict};
use super::run::Run;
use super::sync::{self, FixOutcome};
use super::trace::UpstreamCommit;
use crate::text::short_id;
use git2::{Oid, Repository, Sort};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// What happens to the overlay at one upstream commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "event")]
pub enum Change {
    /// The fork's change to a core file no longer merges into upstream's version.
    ConflictStarts { path: String, regions: usize },
    /// It merges again.
    ConflictStops { path: String },
    /// A static drift finding appears; `draft` says whether `--draft` has a mechanical fix.
    DriftAppears {
        kind: api::Kind,
        symbol: String,
        draft: Option<DraftNote>,
        /// Why there is no draft, when there is none.
        no_draft: Option<String>,
    },
    /// A finding goes away (upstream undid it, or the overlay's core files now answer it).
    DriftGoes { kind: api::Kind, symbol: String },
    /// A local fix is held by upstream now: a retarget here finds its patch empty.
    FixDroppable { number: usize, title: String },
    /// A fix that was droppable is needed again.
    FixNeeded { number: usize, title: String },
}

/// The draft `--draft` would write for a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DraftNote {
    pub remedy: draft::Remedy,
    pub title: String,
    pub path: String,
    pub line: usize,
}

/// One event of the forecast: the commit and what happens there.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    pub commit: UpstreamCommit,
    /// First-parent commits after the recorded pin: 1 is the pin's child.
    pub position: usize,
    #[serde(flatten)]
    pub change: Change,
}

/// A commit the overlay can move to.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub commit: UpstreamCommit,
    pub position: usize,
    /// Whether it is past the recorded pin (a bump to make).
    pub moves: bool,
    /// Drift findings left there (`kind symbol`), each with a draft for the drafted candidate.
    pub drift_left: Vec<String>,
}

/// `roll --check`: the forecast.
#[derive(Debug, Clone, Serialize)]
pub struct Forecast {
    /// The recorded pin.
    pub pin: String,
    /// The commit the walk went up to.
    pub to: String,
    /// First-parent commits from the pin (exclusive) to `to`.
    pub commits: usize,
    pub events: Vec<Event>,
    /// The newest commit with no conflict and no drift.
    pub clean: Candidate,
    /// The newest commit with no conflict where every drift finding has a draft.
    pub drafted: Candidate,
    /// Commits at which a retarget was planned and the drift analysed.
    pub probes: usize,
}

/// The overlay's state at one probed commit, beyond the exactly tracked core-file conflicts.
#[derive(Debug, Clone, Default)]
struct Probe {
    /// Files the planned retarget leaves with markers that the exact walk does not track.
    conflicts: BTreeSet<String>,
    /// Unsuppressed findings by (kind, symbol), with their draft or why there is none.
    drift: BTreeMap<(api::Kind, String), Drafting>,
    droppable: BTreeMap<usize, String>,
    /// The commits the findings name as their cause: where the next probes go.
    causes: Vec<String>,
}

/// Each core file the exact walk tracks, with its conflict regions at every commit of the line.
type Exact = BTreeMap<String, Vec<usize>>;

/// The probes made, by position on the line.
type Probes = BTreeMap<usize, Probe>;

/// A finding's draft, or the reason there is none.
type Drafting = std::result::Result<DraftNote, String>;

impl Probe {
    fn same(&self, other: &Probe) -> bool {
        self.conflicts == other.conflicts
            && self.drift.keys().eq(other.drift.keys())
            && self.droppable.keys().eq(other.droppable.keys())
    }
}

/// The commits from `pin` (first) to `to` (last) along first parents.
fn first_parent_line(repo: &Repository, pin: Oid, to: Oid) -> Result<Vec<Oid>> {
    let mut walk = repo.revwalk()?;
    walk.push(to)?;
    walk.simplify_first_parent()?;
    walk.set_sorting(Sort::TOPOLOGICAL)?;
    let mut line = Vec::new();
    for oid in walk {
        let oid = oid?;
        line.push(oid);
        if oid == pin {
            line.reverse();
            return Ok(line);
        }
    }
    Err(Error::new(format!(
        "the recorded pin `{}` is not on the first-parent history of `{}`",
        short(pin),
        short(to)
    ))
    .with_note(
        "roll forward only: name with `--to` an upstream commit that follows the pin on its branch",
    ))
}

/// The blob id of `path` at `commit`, from the tree alone.
fn blob_id(repo: &Repository, commit: Oid, path: &str) -> Result<Option<Oid>> {
    let tree = repo.find_commit(commit)?.tree()?;
    Ok(tree.get_path(Path::new(path)).ok().map(|e| e.id()))
}

/// For each core file that merges cleanly at the pin: its conflict regions at every commit of
/// `line`, merging only where the file's blob changes (and each blob id once).
fn exact_conflicts(cache: &Cache, state: &OverlayState, line: &[Oid]) -> Result<Exact> {
    let repo = cache.repo();
    let mut out = BTreeMap::new();
    for path in &state.core_files {
        let base_file = cache.read(state.commits.base, path)?;
        let fork_file = cache.read(state.commits.fork, path)?;
        let mut by_blob: HashMap<Option<Oid>, usize> = HashMap::new();
        let mut regions = Vec::with_capacity(line.len());
        for &commit in line {
            let id = blob_id(repo, commit, path)?;
            if let std::collections::hash_map::Entry::Vacant(slot) = by_blob.entry(id) {
                let pin_file = id.map(|id| cache.blob(id)).transpose()?;
                let n = base::conflict_regions(
                    path,
                    base_file.as_deref(),
                    pin_file.as_deref(),
                    fork_file.as_deref(),
                    base::SIDE_LABELS,
                )?;
                slot.insert(n);
            }
            regions.push(by_blob[&id]);
        }
        // A file that conflicts at the pin already is resolved by the overlay's fixes: whether
        // they still carry is the planned retarget's to say, at the probes.
        if regions.first() == Some(&0) {
            out.insert(path.clone(), regions);
        }
    }
    Ok(out)
}

/// Plans the retarget to `commit`, analyses its drift, and drafts what can be drafted.
struct Prober<'a> {
    run: &'a Run<'a>,
    state: &'a OverlayState,
    setup: DriftSetup,
    tracked: BTreeSet<String>,
}

impl Prober<'_> {
    /// Probes the commits of `line` at the positions `at` that `probes` does not hold yet.
    fn probe_all(&self, line: &[Oid], at: &[usize], probes: &mut Probes) -> Result<()> {
        for &i in at {
            if let std::collections::btree_map::Entry::Vacant(slot) = probes.entry(i) {
                slot.insert(self.probe(line[i])?);
            }
        }
        Ok(())
    }

    fn probe(&self, commit: Oid) -> Result<Probe> {
        let new = base::Commits {
            pin: commit,
            ..self.state.commits
        };
        let planned = if commit == self.state.commits.pin {
            None
        } else {
            Some(self.run.plan(self.state, new)?)
        };
        let overlay = planned.as_ref().map_or(&self.state.overlay, |p| &p.overlay);
        let mut probe = Probe::default();
        if let Some(planned) = &planned {
            for left in &planned.remaining {
                if !self.tracked.contains(&left.path) {
                    probe.conflicts.insert(left.path.clone());
                }
            }
            for fix in &planned.fixes {
                if fix.outcome == FixOutcome::Droppable {
                    probe.droppable.insert(fix.number, fix.title.clone());
                }
            }
        }
        let base = self.state.commits.base;
        let report = self.setup.run(self.run.cache, base, commit, overlay)?;
        self.drafts_into(&report, commit, &mut probe);
        Ok(probe)
    }

    fn drafts_into(&self, report: &ApiReport, commit: Oid, probe: &mut Probe) {
        let upstream = CacheUpstream {
            cache: self.run.cache,
            commit,
            cfg: &self.setup.cfg,
        };
        // The plan answers every live finding, with a draft or with the reason there is none
        // (drafting's words); a kind and symbol that several findings share has a draft only
        // when each of them has one.
        let planned = draft::plan(report, &self.setup.backend, &upstream);
        for d in &planned.drafts {
            let note = DraftNote {
                remedy: d.remedy,
                title: d.title.clone(),
                path: d.path.clone(),
                line: d.line,
            };
            probe.drift.insert((d.kind, d.symbol.clone()), Ok(note));
        }
        for n in &planned.without {
            probe
                .drift
                .insert((n.kind, n.symbol.clone()), Err(n.reason.clone()));
        }
        let causes = report.live().filter_map(|f| f.introduced_by.as_ref());
        probe.causes.extend(causes.map(|c| c.sha.clone()));
    }
}

/// `forkbook roll --check`: the forecast from the recorded pin to `to` (default: the upstream
/// branch's tip, as last fetched: `forkbook fetch` brings it up to date).
pub fn forecast(run: &Run, state: &OverlayState, to: Option<&str>) -> Result<Forecast> {
    let (project, cache) = (run.project, run.cache);
    let branch = project.config.upstream.branch.as_str();
    let to = super::pin::upstream_commit(cache, to.unwrap_or(branch))?;
    let repo = cache.repo();
    let pin = state.commits.pin;
    let line = first_parent_line(repo, pin, to)?;
    let last = line.len() - 1;
    let _memo = api::ParseMemo::scope();
    let exact = exact_conflicts(cache, state, &line)?;
    let probes = probe_line(run, state, &line, &exact)?;
    let commit_of = |i: usize| UpstreamCommit::of(repo, line[i]);
    let mut events = Vec::new();
    for i in 1..=last {
        let here = changes_at(&exact, &probes, i);
        if !here.is_empty() {
            let commit = commit_of(i);
            events.extend(here.into_iter().map(|change| Event {
                commit: commit.clone(),
                position: i,
                change,
            }));
        }
    }
    let (clean, drafted) = newest_ready(&exact, &probes, last);
    let candidate = |i: usize| Candidate {
        commit: commit_of(i),
        position: i,
        moves: i > 0,
        drift_left: (by_name(state_at(&probes, i).drift.iter()).into_iter())
            .map(|((kind, symbol), _)| format!("{} {symbol}", kind.as_str()))
            .collect(),
    };
    Ok(Forecast {
        pin: pin.to_string(),
        to: to.to_string(),
        commits: last,
        events,
        clean: candidate(clean),
        drafted: candidate(drafted),
        // Each position is probed once, so the probes made are the positions held.
        probes: probes.len(),
    })
}

/// Probes `line` where its state may change: both ends, both sides of every exact conflict
/// event and of every commit a finding at the target names as its cause; then bisects every
/// stretch whose ends differ until each change sits between adjacent commits. Returns the probes
/// by position.
fn probe_line(run: &Run, state: &OverlayState, line: &[Oid], exact: &Exact) -> Result<Probes> {
    let prober = Prober {
        run,
        state,
        setup: DriftSetup::new(run.project, run.cache, state, state.commits.base)?,
        tracked: exact.keys().cloned().collect(),
    };
    let last = line.len() - 1;
    let mut probes = Probes::new();
    prober.probe_all(line, &[0, last], &mut probes)?;
    let sides = |i: usize| [i - 1, i];
    // Both sides of every exact conflict event, and of each commit named as a cause.
    let events: Vec<usize> = exact
        .values()
        .flat_map(|r| (1..=last).filter(move |&i| (r[i] > 0) != (r[i - 1] > 0)))
        .flat_map(sides)
        .collect();
    prober.probe_all(line, &events, &mut probes)?;
    let position: HashMap<Oid, usize> = line.iter().enumerate().map(|(i, c)| (*c, i)).collect();
    let hints: Vec<usize> = probes[&last]
        .causes
        .iter()
        .filter_map(|sha| Oid::from_str(sha).ok())
        .filter_map(|oid| position.get(&oid).copied())
        .filter(|&i| i > 0)
        .flat_map(sides)
        .collect();
    prober.probe_all(line, &hints, &mut probes)?;
    loop {
        let known: Vec<usize> = probes.keys().copied().collect();
        let split: Vec<usize> = known
            .windows(2)
            .filter(|w| w[1] > w[0] + 1 && !probes[&w[0]].same(&probes[&w[1]]))
            .map(|w| w[0] + (w[1] - w[0]) / 2)
            .collect();
        if split.is_empty() {
            return Ok(probes);
        }
        prober.probe_all(line, &split, &mut probes)?;
    }
}

/// What changes from commit `i - 1` of the line to commit `i`: the exact walk's conflicts, then
/// what the probes on both sides (where both were probed) differ in.
fn changes_at(exact: &Exact, probes: &Probes, i: usize) -> Vec<Change> {
    let mut here = Vec::new();
    for (path, regions) in exact {
        let path = path.clone();
        match (regions[i - 1] > 0, regions[i] > 0) {
            (false, true) => here.push(Change::ConflictStarts {
                path,
                regions: regions[i],
            }),
            (true, false) => here.push(Change::ConflictStops { path }),
            _ => {}
        }
    }
    if let (Some(before), Some(after)) = (probes.get(&(i - 1)), probes.get(&i)) {
        here.extend(before.changes_to(after));
    }
    here
}

impl Probe {
    /// What changes from this probe to `after`: conflicts, drift and droppable fixes that start
    /// or stop.
    fn changes_to(&self, after: &Probe) -> Vec<Change> {
        let mut here = Vec::new();
        for path in &after.conflicts - &self.conflicts {
            here.push(Change::ConflictStarts { path, regions: 0 });
        }
        for path in &self.conflicts - &after.conflicts {
            here.push(Change::ConflictStops { path });
        }
        for ((kind, symbol), draft) in by_name(missing_from(&after.drift, &self.drift)) {
            let (kind, symbol) = (*kind, symbol.clone());
            let (draft, no_draft) = (draft.clone().ok(), draft.clone().err());
            here.push(Change::DriftAppears {
                kind,
                symbol,
                draft,
                no_draft,
            });
        }
        for ((kind, symbol), _) in by_name(missing_from(&self.drift, &after.drift)) {
            let (kind, symbol) = (*kind, symbol.clone());
            here.push(Change::DriftGoes { kind, symbol });
        }
        for (&number, title) in missing_from(&after.droppable, &self.droppable) {
            let title = title.clone();
            here.push(Change::FixDroppable { number, title });
        }
        for (&number, title) in missing_from(&self.droppable, &after.droppable) {
            let title = title.clone();
            here.push(Change::FixNeeded { number, title });
        }
        here
    }
}

/// The entries of `map` whose key `other` lacks.
fn missing_from<'m, K: Ord, V>(
    map: &'m BTreeMap<K, V>,
    other: &'m BTreeMap<K, V>,
) -> impl Iterator<Item = (&'m K, &'m V)> {
    map.iter().filter(|(key, _)| !other.contains_key(key))
}

/// Findings in the order of their kind's name, then symbol: the forecast's order, which is not
/// the kinds' own (the report's).
fn by_name<'m, V>(
    findings: impl Iterator<Item = (&'m (api::Kind, String), V)>,
) -> Vec<(&'m (api::Kind, String), V)> {
    let mut findings: Vec<_> = findings.collect();
    findings.sort_by_key(|((kind, symbol), _)| (kind.as_str(), symbol));
    findings
}

/// The state at commit `i` of the line: the nearest probe at or before it.
fn state_at(probes: &Probes, i: usize) -> &Probe {
    probes
        .range(..=i)
        .next_back()
        .map(|(_, p)| p)
        .expect("the pin is probed")
}

/// The newest commits with no conflict and no drift, and with no conflict and a draft for
/// every finding (the pin, 0, where none is).
fn newest_ready(exact: &Exact, probes: &Probes, last: usize) -> (usize, usize) {
    let conflict_free =
        |i: usize| exact.values().all(|r| r[i] == 0) && state_at(probes, i).conflicts.is_empty();
    let newest = |ok: &dyn Fn(usize) -> bool| (0..=last).rev().find(|&i| ok(i)).unwrap_or(0);
    let clean = newest(&|i| conflict_free(i) && state_at(probes, i).drift.is_empty());
    let drafted =
        newest(&|i| conflict_free(i) && state_at(probes, i).drift.values().all(|d| d.is_ok()));
    (clean, drafted)
}

impl Change {
    /// What happens: forkbook's words, the path, symbol or title each as the span it is, so a
    /// page shows a symbol as code (a symbol quoted in backticks inside escaped text showed its
    /// backticks) and a terminal shows it in backticks.
    pub fn spans(&self) -> Vec<Span> {
        let around = |before: String, title: &str, after: &str| {
            vec![words(before), text(title), words(after)]
        };
        match self {
            Change::ConflictStarts { path, regions } if *regions > 0 => {
                let regions = plural(*regions, "region", "regions");
                vec![
                    Span::Path(path.clone()),
                    words(format!(" starts conflicting ({regions})")),
                ]
            }
            Change::ConflictStarts { path, .. } => {
                vec![Span::Path(path.clone()), words(" starts conflicting")]
            }
            Change::ConflictStops { path } => {
                vec![Span::Path(path.clone()), words(" merges cleanly again")]
            }
            Change::DriftAppears { kind, symbol, .. } => {
                vec![
                    words("drift: "),
                    text(kind.as_str()),
                    words(" "),
                    code(symbol),
                ]
            }
            Change::DriftGoes { kind, symbol } => {
                let kind = text(kind.as_str());
                vec![words("drift gone: "), kind, words(" "), code(symbol)]
            }
            Change::FixDroppable { number, title } => around(
                format!("fix {number} droppable: upstream holds it ("),
                title,
                ")",
            ),
            Change::FixNeeded { number, title } => {
                around(format!("fix {number} needed again ("), title, ")")
            }
        }
    }

    /// Whether a draft exists: `draft`, `no draft`, or nothing to draft.
    fn draft_words(&self) -> Option<String> {
        match self {
            Change::DriftAppears { draft: Some(d), .. } => {
                let remedy = d.remedy.as_str();
                Some(format!("draft: {remedy} at {}:{}", d.path, d.line))
            }
            Change::DriftAppears { no_draft, .. } => no_draft.clone(),
            Change::ConflictStarts { .. } => Some("no draft: resolve by hand".to_string()),
            _ => None,
        }
    }
}

impl Described for Forecast {
    /// The forecast: the walk, each event under its upstream commit (on a page a timeline table,
    /// each event linked upstream and to its draft or fix), then the two candidates.
    fn doc(&self, links: &PageLinks) -> Doc {
        let mut doc = Doc::default();
        let commits = plural(self.commits, "first-parent commit", "first-parent commits");
        doc.line(vec![
            words("roll forecast from the pin "),
            sha(links, &self.pin),
            words(" to "),
            sha(links, &self.to),
            words(format!(" ({commits}, {} probed):", self.probes)),
        ]);
        if self.events.is_empty() {
            doc.list(vec![vec![words("nothing changes for the overlay")]]);
        }
        let mut last = None;
        for e in &self.events {
            if last != Some(e.position) {
                let pr = e.commit.pr.map(|n| format!(" [PR #{n}]"));
                let commit = text(e.commit.describe());
                doc.list(vec![vec![commit, words(pr.unwrap_or_default())]]);
                doc.terminal_only();
                last = Some(e.position);
            }
            let mut change = e.change.spans();
            if let Some(said) = e.change.draft_words() {
                change.extend([words(" ["), text(said), words("]")]);
            }
            doc.sublist(vec![change]).terminal_only();
        }
        let header = ["#", "upstream commit", "what happens", "draft or fix"];
        let rows = self.events.iter().map(|e| event_row(e, links));
        doc.table(&header, rows.collect()).page_only();
        candidate_line(&mut doc, links, &self.clean, CLEAN);
        candidate_line(&mut doc, links, &self.drafted, DRAFTED);
        if !self.drafted.drift_left.is_empty() {
            let left = self.drafted.drift_left.join(", ");
            doc.list(vec![vec![words("drafts there for: "), text(left)]]);
        }
        doc
    }

    /// A forecast is information: it never fails.
    fn found_problems(&self) -> bool {
        false
    }
}

/// A candidate under its name (`what`: on a terminal, on a page), linked upstream on a page.
fn candidate_line(doc: &mut Doc, links: &PageLinks, c: &Candidate, what: [&str; 2]) {
    let mut line = vec![either(what[0], what[1]), words(": ")];
    if c.moves {
        let after = plural(c.position, "commit", "commits");
        line.push(commit(links, &c.commit.sha, &c.commit.summary));
        line.push(words(format!(" ({after} after the pin)")));
    } else {
        line.push(either(
            "the recorded pin (no move)",
            "the recorded pin: no move",
        ));
    }
    doc.line(line);
}

/// The candidates' names on a terminal and on a page.
const CLEAN: [&str; 2] = [
    "clean candidate",
    "**Clean candidate** (no conflict, no drift)",
];
const DRAFTED: [&str; 2] = [
    "with drafts",
    "**With drafts** (every finding left has a draft)",
];

/// A commit's short sha, linked upstream on a page.
fn sha(links: &PageLinks, sha: &str) -> Span {
    either(short_id(sha), links.upstream_commit(sha, "").trim_end())
}

/// One row of the timeline: the position, the upstream commit, what happens and its draft or fix.
fn event_row(e: &Event, links: &PageLinks) -> Row {
    let fix = match &e.change {
        Change::DriftAppears { draft: Some(d), .. } => vec![
            words("draft ("),
            text(d.remedy.as_str()),
            words("): "),
            text(&d.title),
            words(" at "),
            code(format!("{}:{}", d.path, d.line)),
        ],
        Change::FixDroppable { number, .. } | Change::FixNeeded { number, .. } => {
            vec![fixes(links, &[*number])]
        }
        other => other.draft_words().map(text).into_iter().collect(),
    };
    vec![
        vec![words(e.position.to_string())],
        vec![commit(links, &e.commit.sha, &e.commit.summary)],
        e.change.spans(),
        fix,
    ]
}

/// What `roll` is asked for.
#[derive(Debug, Clone, Default)]
pub struct RollRequest {
    /// The commit to move to; default: the clean candidate (the drafted one with `draft`).
    pub to: Option<String>,
    /// Write a draft fix for each finding with a mechanical remedy.
    pub draft: bool,
    /// Where the pull request's body goes; default: a file in the temporary folder.
    pub body: Option<PathBuf>,
}

/// What `roll` did.
#[derive(Debug, Clone, Serialize)]
pub struct Rolled {
    pub from: String,
    /// The pin the overlay is at now.
    pub to: UpstreamCommit,
    pub moved: bool,
    /// Conflict regions the retarget left with markers.
    pub conflicts: usize,
    /// Fixes drafted (register numbers).
    pub drafted: Vec<usize>,
    /// Findings no draft answers, left for a person.
    pub left: Vec<String>,
    /// The pull request's body, `report --pr-body` of the new state.
    pub body: Option<PathBuf>,
    /// The `verify` steps that body shows as failed: the bump is not done while it says FAILED.
    pub body_failed: usize,
}

/// `forkbook roll`: the bump to the clean candidate (or `request.to`), written.
pub fn roll(run: &Run, state: &OverlayState, request: &RollRequest) -> Result<Rolled> {
    let (project, cache) = (run.project, run.cache);
    // A dirty overlay is refused before anything is computed, as sync and retarget refuse it;
    // so is a body that would be written over a record.
    sync::refuse_marked(state, false)?;
    (request.body.as_deref()).map_or(Ok(()), |body| refuse_record_as_body(project, body))?;
    let to = roll_target(run, state, request)?;
    let from = state.commits.pin;
    let mut rolled = Rolled {
        from: from.to_string(),
        to: UpstreamCommit::of(cache.repo(), to),
        moved: to != from,
        conflicts: 0,
        drafted: Vec::new(),
        left: Vec::new(),
        body: None,
        body_failed: 0,
    };
    if !rolled.moved {
        return Ok(rolled);
    }
    // The move `retarget` makes, from its parts: the commits (a fork that merged upstream past
    // the new pin refused, as retarget refuses it), the plan, the write.
    let target = sync::Target {
        fork: None,
        pin: Some(to.to_string()),
        allow_fork_ahead: false,
    };
    let new = sync::resolve_target(cache, state.commits, &target)?;
    let moved = run.plan(state, new)?;
    sync::write(project, &moved)?;
    rolled.conflicts = moved.conflicts();
    // The records folder is now what the move wrote and nothing else (`sync::write` swaps in
    // exactly `moved.records`, or fails): the state made from those files is the one a reload
    // from disk would read, so it is not read again.
    let records = super::overlay::Records::from_files(project, moved.records.clone())?;
    let mut now = OverlayState::from_records(project, cache, records)?;
    if request.draft && rolled.conflicts == 0 {
        let drafted = draft::write_drafts(run, &now, now.commits.base, now.commits.pin)?;
        rolled.drafted = drafted.written.iter().map(|w| w.number).collect();
        now = drafted.state.unwrap_or(now);
    }
    let drift = run.drift_api(&now, now.commits.base, now.commits.pin)?;
    // Findings a written draft answers are gone from the backend's drift now.
    rolled.left = drift
        .live()
        .map(|f| format!("{} {}", f.kind.as_str(), f.symbol))
        .collect();
    let (body, failed) = write_body(run, state, &now, request, to)?;
    (rolled.body, rolled.body_failed) = (Some(body), failed);
    Ok(rolled)
}

/// The commit `roll` moves to: `request.to`, or the forecast's candidate up to the upstream
/// branch's tip (the drafted one with `draft`); refused unless it follows the pin.
fn roll_target(run: &Run, state: &OverlayState, request: &RollRequest) -> Result<Oid> {
    let cache = run.cache;
    let to = match &request.to {
        Some(rev) => super::pin::upstream_commit(cache, rev)?,
        None => {
            let forecast = forecast(run, state, None)?;
            let chosen = if request.draft {
                &forecast.drafted
            } else {
                &forecast.clean
            };
            Oid::from_str(&chosen.commit.sha)?
        }
    };
    let from = state.commits.pin;
    if to != from && !cache.is_ancestor(from, to)? {
        return Err(Error::new(format!(
            "`{}` does not follow the recorded pin `{}`",
            short(to),
            short(from)
        ))
        .with_note("roll moves forward: use `forkbook retarget REV` to move elsewhere"));
    }
    Ok(to)
}

/// Refuses a `--body` file in the records folder or the project's configuration: the body is
/// written over whatever the file held.
fn refuse_record_as_body(project: &Project, body: &Path) -> Result<()> {
    let config = project.root.join(super::config::CONFIG_FILE);
    let same = |a: &Path, b: &Path| {
        a.canonicalize()
            .ok()
            .is_some_and(|a| b.canonicalize().is_ok_and(|b| a == b))
    };
    if same(body, &config) {
        return Err(Error::new(format!(
            "refusing to write the pull request's body over `{}`",
            body.display()
        ))
        .with_note("name a new file, or leave `--body` out for one in the temporary folder"));
    }
    super::fsutil::refuse_guarded(body, &project.root, &project.records_dir())
}

/// Writes the pull request's body (`report --pr-body` of the moved state against the state
/// before the move); where it is and how many verify steps it shows as failed. The state before
/// is the one roll moved from, not the records as git last committed them: the project may be
/// no git checkout, or hold changes not committed yet.
fn write_body(
    run: &Run,
    before: &OverlayState,
    now: &OverlayState,
    request: &RollRequest,
    to: Oid,
) -> Result<(PathBuf, usize)> {
    let report = super::report::report(run, now, Some(before))?;
    let path = match &request.body {
        Some(p) => p.clone(),
        None => std::env::temp_dir().join(format!("forkbook-roll-{}.md", short(to))),
    };
    super::fsutil::replace_file(&path, report.text().as_bytes()).with_context(|| {
        format!(
            "failed to write the pull request's body `{}`",
            path.display()
        )
    })?;
    Ok((path, report.verify_failed))
}

impl CommandReport for Rolled {
    fn text(&self) -> String {
        let mut doc = Doc::default();
        let from = short_id(&self.from);
        if self.moved {
            let to = text(self.to.describe());
            doc.line(vec![words(format!("rolled the pin from {from} to ")), to]);
        } else {
            doc.line(vec![words(format!(
                "nothing to roll: the pin {from} is the candidate"
            ))]);
        }
        let mut items = Vec::new();
        if self.conflicts > 0 {
            let regions = plural(self.conflicts, "conflict region", "conflict regions");
            items.push(vec![words(format!("{regions} left with markers: resolve them, then record each resolution as a local fix"))]);
        }
        if !self.drafted.is_empty() {
            let numbers: Vec<String> = self.drafted.iter().map(usize::to_string).collect();
            let numbers = numbers.join(", ");
            items.push(vec![words(format!(
                "drafted fixes {numbers}: review each, then `forkbook fix confirm N`"
            ))]);
        }
        let left = self
            .left
            .iter()
            .map(|l| vec![words("left for a person: "), text(l)]);
        items.extend(left);
        if self.body_failed > 0 {
            let steps = plural(self.body_failed, "verify step fails", "verify steps fail");
            items.push(vec![words(format!(
                "the pull request's body says FAILED: {steps} at the new pin"
            ))]);
        }
        doc.list(items);
        if let Some(body) = &self.body {
            let body = text(body.display().to_string());
            doc.line(vec![
                words("pull request body (`report --pr-body`): "),
                body,
            ]);
        }
        doc.text()
    }

    /// A bump that leaves conflicts, drift, drafts to review or a failing step is not done yet.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(
            self.conflicts > 0
                || !self.left.is_empty()
                || !self.drafted.is_empty()
                || self.body_failed > 0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(sha: char, summary: &str) -> UpstreamCommit {
        UpstreamCommit {
            sha: sha.to_string().repeat(40),
            summary: summary.to_string(),
            pr: crate::markdown::pr_number(summary),
        }
    }

    #[test]
    fn the_timeline_links_each_event_upstream_and_to_its_draft_or_fix() {
        let pin = commit('a', "pin");
        let forecast = Forecast {
            pin: pin.sha.clone(),
            to: "c".repeat(40),
            commits: 9,
            events: vec![
                Event {
                    commit: commit('b', "Add <b>GatherQMM</b> (#12)"),
                    position: 3,
                    change: Change::DriftAppears {
                        kind: api::Kind::MissingEvalGpu,
                        symbol: "mlx::core::GatherQMM::eval_gpu".into(),
                        draft: Some(DraftNote {
                            remedy: draft::Remedy::Stub,
                            title: "Draft: stub GatherQMM".into(),
                            path: "mlx/backend/rocm/primitives.cpp".into(),
                            line: 7,
                        }),
                        no_draft: None,
                    },
                },
                Event {
                    commit: commit('c', "Take the fix upstream (#13)"),
                    position: 9,
                    change: Change::FixDroppable {
                        number: 2,
                        title: "Free pooled buffers".into(),
                    },
                },
            ],
            clean: Candidate {
                commit: commit('d', "Docs (#11)"),
                position: 2,
                moves: true,
                drift_left: Vec::new(),
            },
            drafted: Candidate {
                commit: commit('c', "Take the fix upstream (#13)"),
                position: 9,
                moves: true,
                drift_left: vec!["missing-eval-gpu mlx::core::GatherQMM::eval_gpu".into()],
            },
            probes: 4,
        };
        let links = PageLinks {
            upstream_web: Some("https://github.com/ml-explore/mlx".into()),
            register_page: Some("register.md".into()),
        };
        let md = forecast.doc(&links).markdown();
        let web = "https://github.com/ml-explore/mlx";
        assert!(
            md.contains(&format!("({web}/commit/{})", "b".repeat(40))),
            "{md}"
        );
        assert!(md.contains(&format!("({web}/pull/12)")), "{md}");
        assert!(md.contains("[fix 2](register.md#fix-2)"), "{md}");
        assert!(
            md.contains(&crate::markdown::code_cell(
                "mlx/backend/rocm/primitives.cpp:7"
            )),
            "{md}"
        );
        assert!(!md.contains("<b>"), "upstream's text stays text: {md}");
        assert!(
            md.contains(&format!(
                "**Clean candidate** (no conflict, no drift): [`dddddddd`]({web}/commit/"
            )),
            "{md}"
        );
        let text = forecast.text();
        assert!(
            text.contains("fix 2 droppable: upstream holds it"),
            "{text}"
        );
        assert!(
            text.contains("clean candidate: dddddddd Docs (#11) (2 commits after the pin)"),
            "{text}"
        );
    }
}
