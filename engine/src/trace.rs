//! Conflicts traced to upstream: which upstream commits changed the pin side of each conflict.
//!
//! A conflict region of a core file is where the pin's version and the fork's change collide.
//! Its pin side is a range of lines of the pin's file; the upstream commits that made those
//! lines what they are are found by walking upstream's history of that file backwards from the
//! pin to the fork base (first parents, as `git log --first-parent -- FILE`), diffing each
//! commit's change of the file against the range and carrying the range back through it, as
//! blame does. A region whose pin side is empty (upstream deleted what the fork changed) is a
//! position, and a commit touching that position counts.
//!
//! The walk starts at the fork base, not at the recorded pin: the base is the 3-way ancestor,
//! so every commit from there on is part of why the pin side differs. Where the fork base is the
//! recorded pin (the usual case before a bump) the two are the same.
//!
//! [`first_conflicts`] is the stepwise view: for each core file, the first upstream commit at
//! which merging the fork's change into upstream's version of the file conflicts.

use super::base::{self, Commits, CoreOutcome};
use super::cache::{short, Cache};
use super::doc::{self, code, text, words, Described, Doc};
use super::error::Result;
pub use super::markdown::{pr_number, web_base};
use super::merge::count_conflicts;
use super::overlay::OverlayState;
use super::project::Project;
use super::report_value::{plural, CommandReport, Verdict};
use super::sync::{FileOutcome, Move};
use super::FileMap;
use crate::markdown::PageLinks;
use forkbook_checks::markers::{marker_kind, MarkerKind};
use git2::{Oid, Repository};
use serde::Serialize;
use similar::{Algorithm, DiffOp};
use std::ops::Range;

/// An upstream commit named as a cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpstreamCommit {
    pub sha: String,
    pub summary: String,
    /// The pull request number its subject carries ("... (#3720)").
    pub pr: Option<u64>,
}

impl UpstreamCommit {
    pub fn of(repo: &Repository, oid: Oid) -> UpstreamCommit {
        let summary = repo
            .find_commit(oid)
            .ok()
            .and_then(|c| c.summary().ok().flatten().map(str::to_string))
            .unwrap_or_default();
        UpstreamCommit {
            sha: oid.to_string(),
            pr: pr_number(&summary),
            summary,
        }
    }

    /// `b5404c99 Subject (#3720)`: for terminals, with control characters made visible.
    pub fn describe(&self) -> String {
        let summary: String = self
            .summary
            .chars()
            .map(|c| if c.is_control() { '\u{fffd}' } else { c })
            .collect();
        format!("{} {summary}", crate::text::short_id(&self.sha))
    }

    /// A Markdown link to the commit (and its pull request) on `upstream_url`, when that is a
    /// GitHub-like `https://` URL; plain text otherwise (see [`crate::markdown::commit_link`]).
    pub fn markdown(&self, upstream_url: &str) -> String {
        crate::markdown::commit_link(
            web_base(upstream_url).as_deref(),
            &self.sha,
            &self.summary,
            self.pr,
        )
    }
}

/// Whether a region is still in the files or a local fix resolves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "state")]
pub enum RegionState {
    /// Markers are left in the file.
    Left,
    /// The overlay holds no markers there: these fixes change the file.
    Resolved { fixes: Vec<usize> },
}

/// One conflict region and the upstream commits behind its pin side.
#[derive(Debug, Clone, Serialize)]
pub struct RegionTrace {
    pub path: String,
    /// 1-based number of the region in its file.
    pub region: usize,
    /// The pin side's lines in the pin's file, 1-based, inclusive; `(n, n - 1)` for an empty
    /// side sitting before line `n`.
    pub pin_lines: (usize, usize),
    /// `pin/fork` for a base-tree conflict, `fix N` for a local fix that did not carry.
    pub between: String,
    #[serde(flatten)]
    pub state: RegionState,
    /// Newest first, as `git log` shows them.
    pub commits: Vec<UpstreamCommit>,
}

impl RegionTrace {
    pub fn describe_lines(&self) -> String {
        let (a, b) = self.pin_lines;
        if b < a {
            format!("pin side empty, before line {a}")
        } else if a == b {
            format!("pin line {a}")
        } else {
            format!("pin lines {a}-{b}")
        }
    }
}

/// Lines of `bytes`, each with its `\n`.
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

/// The "ours" side's line ranges of the conflict regions of `merged`, in `ours`'s lines.
///
/// Resolving every region to its ours side gives `ours` plus the other side's clean changes;
/// diffing `ours` against that maps each region back to `ours`'s lines.
pub fn ours_regions(merged: &[u8], ours: &[u8]) -> Vec<Range<usize>> {
    #[derive(PartialEq)]
    enum At {
        Outside,
        Ours,
        Base,
        Theirs,
    }
    let mut at = At::Outside;
    let mut resolved: Vec<&[u8]> = Vec::new();
    let mut regions: Vec<Range<usize>> = Vec::new();
    for line in lines(merged) {
        let marker = marker_kind(line.strip_suffix(b"\n").unwrap_or(line));
        match (&at, marker) {
            (At::Outside, Some(MarkerKind::Ours)) => {
                at = At::Ours;
                regions.push(resolved.len()..resolved.len());
            }
            (At::Outside, _) => resolved.push(line),
            (At::Ours, Some(MarkerKind::Base)) => at = At::Base,
            (At::Ours | At::Base, Some(MarkerKind::Separator)) => at = At::Theirs,
            (At::Ours, _) => {
                resolved.push(line);
                if let Some(r) = regions.last_mut() {
                    r.end = resolved.len();
                }
            }
            (At::Theirs, Some(MarkerKind::Theirs)) => at = At::Outside,
            (At::Base | At::Theirs, _) => {}
        }
    }
    let ours_lines = lines(ours);
    let ops = similar::capture_diff_slices(Algorithm::Myers, &ours_lines, &resolved);
    regions
        .into_iter()
        .map(|r| map_back(&ops, r, ours_lines.len()))
        .collect()
}

/// A range in a diff's new side, carried to its old side: lines kept map exactly, lines a
/// change made map to the lines it replaced.
fn map_back(ops: &[DiffOp], range: Range<usize>, old_len: usize) -> Range<usize> {
    let pos = |p: usize, end: bool| -> usize {
        for op in ops {
            let (_, old, new) = op.as_tag_tuple();
            let inside = if end {
                new.start < p && p <= new.end
            } else {
                new.start <= p && p < new.end
            };
            if !inside {
                continue;
            }
            return match op {
                DiffOp::Equal { .. } => old.start + (p - new.start),
                _ if end => old.end,
                _ => old.start,
            };
        }
        old_len
    };
    if range.is_empty() {
        // A position: where a line inserted there would go on the old side.
        let p = range.start;
        for op in ops {
            let (_, old, new) = op.as_tag_tuple();
            if new.start <= p && p < new.end {
                return match op {
                    DiffOp::Equal { .. } => {
                        let q = old.start + (p - new.start);
                        q..q
                    }
                    _ => old.start..old.start,
                };
            }
        }
        return old_len..old_len;
    }
    let start = pos(range.start, false);
    let end = pos(range.end, true).max(start);
    start..end
}

/// Whether a change of new-side lines `changed` (empty: a deletion at that position) touches
/// `range` (empty: a position).
fn touches(changed: &Range<usize>, range: &Range<usize>) -> bool {
    match (changed.is_empty(), range.is_empty()) {
        (false, false) => changed.start < range.end && range.start < changed.end,
        (true, false) => range.start < changed.start && changed.start < range.end,
        (_, true) => changed.start <= range.start && range.start <= changed.end,
    }
}

/// The commits of `history` that changed the lines `range` of `path` as it is at the line's
/// newest commit; newest first.
fn commits_changing(
    repo: &Repository,
    history: &History,
    path: &str,
    range: Range<usize>,
) -> Result<Vec<Oid>> {
    let mut found = Vec::new();
    let mut range = range;
    let mut ids = BlobIds::default();
    for step in history {
        let Some((new, old)) = ids.change(repo, step, path)? else {
            continue;
        };
        let Some(new) = new else {
            // Absent here but present later: re-added after a deletion; the lines start later.
            break;
        };
        let Some(old) = old else {
            found.push(step.commit);
            break;
        };
        let (old_lines, new_lines) = (lines(&old), lines(&new));
        let ops = similar::capture_diff_slices(Algorithm::Myers, &old_lines, &new_lines);
        let touched = ops.iter().any(|op| {
            let (tag, _, new) = op.as_tag_tuple();
            tag != similar::DiffTag::Equal && touches(&new, &range)
        });
        if touched {
            found.push(step.commit);
        }
        range = map_back(&ops, range, old_lines.len());
    }
    Ok(found)
}

/// The first-parent line from a fork base to a pin, walked (or loaded) once a run and only if a
/// conflict region asks for it: every region of every file is traced along the same line.
struct Line {
    since: Oid,
    until: Oid,
    history: std::cell::OnceCell<History>,
}

impl Line {
    fn new(since: Oid, until: Oid) -> Line {
        Line {
            since,
            until,
            history: std::cell::OnceCell::new(),
        }
    }

    fn history(&self, cache: &Cache) -> Result<&History> {
        if let Some(history) = self.history.get() {
            return Ok(history);
        }
        let history = first_parent_history(cache, self.since, self.until)?;
        Ok(self.history.get_or_init(|| history))
    }
}

/// One commit of a first-parent line, with what tracing reads of it: its tree, and its first
/// parent's id and tree (`None` for a root commit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Step {
    commit: Oid,
    tree: Oid,
    parent: Option<Oid>,
    parent_tree: Option<Oid>,
}

/// A first-parent line, newest first.
type History = Vec<Step>;

/// The first-parent line from `until` back to, not including, `since` (as `git log
/// --first-parent since..until`), from the first-parent line cache where it holds it.
fn first_parent_history(cache: &Cache, since: Oid, until: Oid) -> Result<History> {
    if since == until {
        return Ok(Vec::new());
    }
    let store = cache.first_parent_store();
    let key = kept_line::key(since, until);
    if let Some(kept) = kept_line::load(cache.repo(), &store, &key, since, until) {
        return Ok(kept);
    }
    let history = walk_first_parents(cache.repo(), since, until)?;
    kept_line::save(&store, &key, &history, since);
    Ok(history)
}

/// [`first_parent_history`] walked in `repo`, every commit parsed.
fn walk_first_parents(repo: &Repository, since: Oid, until: Oid) -> Result<History> {
    let mut walk = repo.revwalk()?;
    walk.push(until)?;
    walk.hide(since)?;
    walk.simplify_first_parent()?;
    let mut out: History = Vec::new();
    for oid in walk {
        let commit = repo.find_commit(oid?)?;
        out.push(Step {
            commit: commit.id(),
            tree: commit.tree_id(),
            parent: commit.parent_ids().next(),
            parent_tree: None,
        });
    }
    // A parent is the next step's commit, except where the line leaves the walk.
    let trees: std::collections::HashMap<Oid, Oid> =
        out.iter().map(|s| (s.commit, s.tree)).collect();
    for step in &mut out {
        step.parent_tree = match step.parent {
            Some(parent) => match trees.get(&parent) {
                Some(tree) => Some(*tree),
                None => Some(repo.find_commit(parent)?.tree_id()),
            },
            None => None,
        };
    }
    Ok(out)
}

/// The first-parent line cache: a line by its two ends, one `commit tree parent parent-tree`
/// line a step under a `steps N` line. Only a line that ends on `since` is kept, and one is
/// used only if it is a line from `until` to `since`: its first commit is `until` with
/// `until`'s tree, each parent the next step with its tree, the last parent `since` with its
/// tree, and as many steps as it says. A cache may make the trace faster, never change it.
mod kept_line {
    use super::{History, Step};
    use forkbook_records::cache_entry::{Key, KeyBuilder, Store};
    use git2::{Oid, Repository};

    const KIND: &str = "first-parent line";

    pub fn key(since: Oid, until: Oid) -> Key {
        let mut key = KeyBuilder::new(KIND);
        key.part(since.as_bytes()).part(until.as_bytes());
        key.finish()
    }

    pub fn save(store: &Store, key: &Key, history: &History, since: Oid) {
        if history.last().and_then(|s| s.parent) != Some(since) {
            return; // the line left the walk elsewhere: nothing to check it against later
        }
        let none = || "-".to_string();
        let mut text = format!("steps {}\n", history.len());
        for step in history {
            text.push_str(&format!(
                "{} {} {} {}\n",
                step.commit,
                step.tree,
                step.parent.map_or_else(none, |p| p.to_string()),
                step.parent_tree.map_or_else(none, |p| p.to_string()),
            ));
        }
        // Failing to keep it costs the next run its reuse, never this one its result.
        let _ = store.save(key, text.as_bytes());
    }

    pub fn load(
        repo: &Repository,
        store: &Store,
        key: &Key,
        since: Oid,
        until: Oid,
    ) -> Option<History> {
        let payload = store.load(key)?;
        let text = std::str::from_utf8(&payload).ok()?;
        let mut lines = text.lines();
        let count: usize = lines.next()?.strip_prefix("steps ")?.parse().ok()?;
        let history = lines.map(step).collect::<Option<History>>()?;
        let tree_of = |commit: Oid| repo.find_commit(commit).ok().map(|c| c.tree_id());
        let first = history.first()?;
        let last = history.last()?;
        let linked = history.windows(2).all(|pair| {
            pair[0].parent == Some(pair[1].commit) && pair[0].parent_tree == Some(pair[1].tree)
        });
        let whole = history.len() == count
            && linked
            && first.commit == until
            && Some(first.tree) == tree_of(until)
            && last.parent == Some(since)
            && last.parent_tree == tree_of(since);
        whole.then_some(history)
    }

    fn step(line: &str) -> Option<Step> {
        let mut ids = line.split(' ').map(|word| match word {
            "-" => Some(None),
            id => Oid::from_str(id).ok().filter(|_| id.len() == 40).map(Some),
        });
        let mut next = || ids.next().flatten();
        let step = Step {
            commit: next()??,
            tree: next()??,
            parent: next()?,
            parent_tree: next()?,
        };
        ids.next().is_none().then_some(step)
    }
}

/// Which blob each tree holds at one path, each tree looked up once: a commit's parent tree is
/// the next commit's tree.
#[derive(Default)]
struct BlobIds(std::collections::HashMap<Oid, Option<Oid>>);

impl BlobIds {
    /// The id of the entry at `path` in `tree`, `None` where there is none.
    fn at(&mut self, repo: &Repository, tree: Oid, path: &str) -> Result<Option<Oid>> {
        if let Some(id) = self.0.get(&tree) {
            return Ok(*id);
        }
        let tree_object = repo.find_tree(tree)?;
        let id = tree_object
            .get_path(std::path::Path::new(path))
            .ok()
            .map(|e| e.id());
        self.0.insert(tree, id);
        Ok(id)
    }
}

impl BlobIds {
    /// What `step` did to the file `path`: `None` where it left it alone, else the file after
    /// and before it (`None` where there is none). Ids first, the files only where they differ:
    /// most commits of a line leave a file alone.
    fn change(&mut self, repo: &Repository, step: &Step, path: &str) -> Result<Option<Change>> {
        let new = self.at(repo, step.tree, path)?;
        let old = match step.parent_tree {
            Some(tree) => self.at(repo, tree, path)?,
            None => None,
        };
        if new == old {
            return Ok(None);
        }
        let (new, old) = (
            new.and_then(|id| read_blob(repo, id)),
            old.and_then(|id| read_blob(repo, id)),
        );
        Ok((new.is_some() || old.is_some()).then_some((new, old)))
    }
}

/// A file after and before a commit (`None`: no such file).
type Change = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The content of blob `id`, `None` where it is no blob this cache holds (a folder or a
/// submodule at the path): such an entry counts as no file.
fn read_blob(repo: &Repository, id: Oid) -> Option<Vec<u8>> {
    repo.find_blob(id).ok().map(|b| b.content().to_vec())
}

/// Regions of `merged` whose ours side is a version of `pin_file`, traced along `line`.
fn trace_regions(
    cache: &Cache,
    path: &str,
    merged: &[u8],
    pin_file: &[u8],
    line: &Line,
    between: &str,
    state: &RegionState,
) -> Result<Vec<RegionTrace>> {
    let mut out = Vec::new();
    for (i, range) in ours_regions(merged, pin_file).into_iter().enumerate() {
        let commits = commits_changing(cache.repo(), line.history(cache)?, path, range.clone())?
            .into_iter()
            .map(|oid| UpstreamCommit::of(cache.repo(), oid))
            .collect();
        out.push(RegionTrace {
            path: path.to_string(),
            region: i + 1,
            pin_lines: (range.start + 1, range.end),
            between: between.to_string(),
            state: state.clone(),
            commits,
        });
    }
    Ok(out)
}

/// The base tree's pin/fork conflicts of one core file at `commits`, traced.
fn trace_core_file(
    cache: &Cache,
    commits: Commits,
    line: &Line,
    path: &str,
    state: &RegionState,
) -> Result<Vec<RegionTrace>> {
    let read = |c: Oid| cache.read(c, path);
    let (b, p, f) = (read(commits.base)?, read(commits.pin)?, read(commits.fork)?);
    let labels = base::SIDE_LABELS;
    let (merged, _) = base::merge_core(path, b.as_deref(), p.as_deref(), f.as_deref(), labels)?;
    let (Some(merged), Some(pin_file)) = (merged, p) else {
        return Ok(Vec::new());
    };
    trace_regions(cache, path, &merged, &pin_file, line, "pin/fork", state)
}

/// Which fixes change `path` (patch layout), for a conflict the overlay no longer shows.
fn fixes_changing(state: &OverlayState, path: &str) -> Vec<usize> {
    state
        .steps
        .iter()
        .filter(|s| s.changed_paths().contains(&path))
        .map(|s| s.number())
        .collect()
}

/// A core file's conflict regions in `overlay`: left marked, or resolved by the fixes that
/// change the file.
fn region_state(state: &OverlayState, overlay: &FileMap, path: &str) -> RegionState {
    if overlay.get(path).is_some_and(|b| count_conflicts(b) > 0) {
        RegionState::Left
    } else {
        RegionState::Resolved {
            fixes: fixes_changing(state, path),
        }
    }
}

/// Every pin/fork conflict of the recorded base tree (the ones local fixes resolve), traced
/// from the fork base to the pin.
pub fn recorded_conflicts(cache: &Cache, state: &OverlayState) -> Result<Vec<RegionTrace>> {
    let mut out = Vec::new();
    let line = Line::new(state.commits.base, state.commits.pin);
    for (path, outcome) in &state.base.core {
        if !matches!(outcome, CoreOutcome::Conflict(_)) {
            continue;
        }
        let region_state = region_state(state, &state.overlay, path);
        out.extend(trace_core_file(
            cache,
            state.commits,
            &line,
            path,
            &region_state,
        )?);
    }
    Ok(out)
}

/// Every conflict region a planned move leaves in or resolves in core files, traced from the
/// new fork base to the new pin: the new base tree's pin/fork conflicts, and the regions of
/// local fixes that did not carry onto core files.
pub fn move_conflicts(
    cache: &Cache,
    state: &OverlayState,
    planned: &Move,
    backend_prefix: &str,
) -> Result<Vec<RegionTrace>> {
    let new = planned.new;
    let line = Line::new(new.base, new.pin);
    let mut out = Vec::new();
    for (path, outcome) in &planned.core {
        if !matches!(outcome, CoreOutcome::Conflict(_)) {
            continue;
        }
        let fix_conflict = matches!(
            planned.files.get(path),
            Some(FileOutcome::Conflict { fix: Some(_), .. })
        );
        let region_state = region_state(state, &planned.overlay, path);
        if !fix_conflict {
            out.extend(trace_core_file(cache, new, &line, path, &region_state)?);
        }
    }
    for (path, outcome) in &planned.files {
        let FileOutcome::Conflict { fix: Some(n), .. } = outcome else {
            continue;
        };
        if path.starts_with(backend_prefix) {
            continue; // the fork's own file: no upstream history behind it
        }
        let (Some(merged), Some(pin_file)) =
            (planned.overlay.get(path), cache.read(new.pin, path)?)
        else {
            continue;
        };
        out.extend(trace_regions(
            cache,
            path,
            merged,
            &pin_file,
            &line,
            &format!("fix {n}"),
            &RegionState::Left,
        )?);
    }
    Ok(out)
}

/// The first upstream commit at which one core file conflicts.
#[derive(Debug, Clone, Serialize)]
pub struct FirstConflict {
    pub path: String,
    /// Upstream commits after the fork base that change the file, up to the candidate.
    pub commits_touching: usize,
    /// `None`: the fork's change merges cleanly at every one of them.
    pub first: Option<UpstreamCommit>,
    /// Conflict regions at that commit.
    pub regions: usize,
    /// Conflict regions at the candidate.
    pub regions_at_candidate: usize,
}

/// For each core file, walks the upstream commits from the fork base to `candidate` that change
/// it (oldest first) and names the first at which the fork's change no longer merges.
pub fn first_conflicts(
    cache: &Cache,
    commits: Commits,
    candidate: Oid,
    core_files: &[String],
) -> Result<Vec<FirstConflict>> {
    let history = first_parent_history(cache, commits.base, candidate)?;
    core_files
        .iter()
        .map(|path| first_conflict(cache, commits, &history, candidate, path))
        .collect()
}

/// [`first_conflicts`] of one core file, over the first-parent `history`.
fn first_conflict(
    cache: &Cache,
    commits: Commits,
    history: &History,
    candidate: Oid,
    path: &str,
) -> Result<FirstConflict> {
    let repo = cache.repo();
    let base_file = cache.read(commits.base, path)?;
    let fork_file = cache.read(commits.fork, path)?;
    let mut touching = Vec::new();
    let mut ids = BlobIds::default();
    for step in history.iter().rev() {
        if ids.change(repo, step, path)?.is_some() {
            touching.push(step.commit);
        }
    }
    let conflicts_at = |commit: Oid| -> Result<usize> {
        let pin_file = cache.read(commit, path)?;
        base::conflict_regions(
            path,
            base_file.as_deref(),
            pin_file.as_deref(),
            fork_file.as_deref(),
            base::SIDE_LABELS,
        )
    };
    let mut first = None;
    for commit in &touching {
        let n = conflicts_at(*commit)?;
        if n > 0 {
            first = Some((*commit, n));
            break;
        }
    }
    Ok(FirstConflict {
        path: path.to_string(),
        commits_touching: touching.len(),
        first: first.map(|(c, _)| UpstreamCommit::of(repo, c)),
        regions: first.map_or(0, |(_, n)| n),
        regions_at_candidate: conflicts_at(candidate)?,
    })
}

/// `first_conflicts` for a terminal.
pub fn render_first_conflicts(found: &[FirstConflict], candidate: Oid) -> String {
    let mut out = format!(
        "first upstream commit at which each core file conflicts, up to {}:\n",
        short(candidate)
    );
    for f in found {
        let line = match &f.first {
            Some(c) => format!(
                "first conflicts at {} ({}; {} at {})",
                c.describe(),
                plural(f.regions, "region", "regions"),
                f.regions_at_candidate,
                short(candidate)
            ),
            None => "merges cleanly at every commit".to_string(),
        };
        let touching = match f.commits_touching {
            1 => "1 upstream commit changes it".to_string(),
            n => format!("{n} upstream commits change it"),
        };
        out.push_str(&format!("  {}: {line} [{touching}]\n", f.path));
    }
    out
}

/// A move with its conflict regions traced: what `sync` and `retarget` print.
#[derive(Debug, Clone, Serialize)]
pub struct TracedMove {
    #[serde(flatten)]
    pub planned: Move,
    pub conflict_causes: Vec<RegionTrace>,
}

/// Traces the conflicts of a planned (or written) move.
pub fn traced(
    project: &Project,
    cache: &Cache,
    state: &OverlayState,
    planned: Move,
) -> Result<TracedMove> {
    let prefix = &project.config.overlay.backend_prefix;
    let conflict_causes = move_conflicts(cache, state, &planned, prefix)?;
    Ok(TracedMove {
        planned,
        conflict_causes,
    })
}

impl Described for TracedMove {
    /// The move, then its conflict regions and their causes.
    fn doc(&self, links: &PageLinks) -> Doc {
        let mut doc = self.planned.doc(links);
        doc.append(causes_doc(&self.conflict_causes, links));
        doc
    }

    fn found_problems(&self) -> bool {
        self.planned.found_problems()
    }
}

/// Conflict regions, each with its state and the upstream commits (linked on a page) that
/// changed its pin side; nothing when there are none.
pub fn causes_doc(causes: &[RegionTrace], links: &PageLinks) -> Doc {
    let rows = causes.iter().map(|t| {
        let state = match &t.state {
            RegionState::Left => vec![words("markers left")],
            RegionState::Resolved { fixes } if fixes.is_empty() => vec![words("resolved locally")],
            RegionState::Resolved { fixes } => {
                vec![words("resolved by "), doc::fixes(links, fixes)]
            }
        };
        let commits = t
            .commits
            .iter()
            .map(|c| doc::commit(links, &c.sha, &c.summary));
        let mut commits = doc::separated(commits, " · ");
        if commits.is_empty() {
            commits.push(words("none since the fork base changed these lines"));
        }
        let lines = format!(
            " region {} ({}, {})",
            t.region,
            t.between,
            t.describe_lines()
        );
        vec![vec![code(&t.path), text(lines)], state, commits]
    });
    let mut doc = Doc::default();
    if !causes.is_empty() {
        doc.say("conflict regions and the upstream commits that changed their pin side:")
            .records(&["conflict", "state", "upstream"], rows.collect());
    }
    doc
}

/// `retarget REV --stepwise`: each core file's first conflicting upstream commit up to REV.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Stepwise {
    pub files: Vec<FirstConflict>,
    #[serde(skip)]
    pub candidate: Option<Oid>,
}

pub fn stepwise(cache: &Cache, state: &OverlayState, rev: &str) -> Result<Stepwise> {
    // A candidate is a pin to be: upstream's by the one rule, or refused.
    let candidate = super::pin::upstream_commit(cache, rev)?;
    Ok(Stepwise {
        files: first_conflicts(cache, state.commits, candidate, &state.core_files)?,
        candidate: Some(candidate),
    })
}

impl CommandReport for Stepwise {
    fn text(&self) -> String {
        let render = |c| render_first_conflicts(&self.files, c);
        self.candidate.map_or(String::new(), render)
    }

    fn verdict(&self) -> Verdict {
        Verdict::problems_if(self.files.iter().any(|f| f.first.is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pr_number_is_the_last_parenthesized_hash() {
        assert_eq!(pr_number("Fix compiled (#3720)"), Some(3720));
        assert_eq!(pr_number("Revert \"x (#1)\" (#22)"), Some(22));
        assert_eq!(pr_number("see #12 and (#x)"), None);
        assert_eq!(pr_number("no number"), None);
    }

    #[test]
    fn web_base_takes_only_plain_https_urls() {
        assert_eq!(
            web_base("https://github.com/ml-explore/mlx.git").as_deref(),
            Some("https://github.com/ml-explore/mlx")
        );
        assert_eq!(web_base("/tmp/upstream.git"), None);
        assert_eq!(web_base("https://github.com/a/b)<script>"), None);
        assert_eq!(web_base("https://user:pw@github.com/a/b"), None);
        assert_eq!(web_base("javascript:alert(1)"), None);
    }

    #[test]
    fn hostile_summaries_stay_text_in_markdown() {
        let c = UpstreamCommit {
            sha: "0123456789abcdef0123456789abcdef01234567".into(),
            summary: "<img src=x onerror=alert(1)> [x](javascript:y) (#5)".into(),
            pr: Some(5),
        };
        let md = c.markdown("https://github.com/ml-explore/mlx");
        assert!(!md.contains("<img"), "{md}");
        assert!(!md.contains("](javascript"), "{md}");
        assert!(
            md.contains("(https://github.com/ml-explore/mlx/pull/5)"),
            "{md}"
        );
        assert!(md.starts_with("[`01234567`](https://github.com/ml-explore/mlx/commit/0123"));
    }

    #[test]
    fn regions_map_to_the_ours_file_around_clean_changes_of_the_other_side() {
        let ours = b"a\nb\nP\nd\ne\n";
        // The other side's clean change before the region shifts the merged lines by two.
        let merged = b"x\ny\na\nb\n<<<<<<< pin\nP\n=======\nF\n>>>>>>> fork\nd\ne\n";
        assert_eq!(ours_regions(merged, ours), vec![2..3]);
        let empty = b"a\n<<<<<<< pin\n=======\nF\n>>>>>>> fork\nd\n";
        assert_eq!(ours_regions(empty, b"a\nd\n"), vec![1..1]);
    }

    #[test]
    fn a_range_is_carried_back_through_a_change_above_it() {
        let old: Vec<&[u8]> = lines(b"a\nb\nc\n");
        let new: Vec<&[u8]> = lines(b"z\nz\na\nb\nc\n");
        let ops = similar::capture_diff_slices(Algorithm::Myers, &old, &new);
        assert_eq!(map_back(&ops, 3..5, old.len()), 1..3);
        assert!(!ops
            .iter()
            .any(|op| op.tag() != similar::DiffTag::Equal && touches(&op.new_range(), &(3..5))));
    }
}
