//! Moving the overlay: `sync` to a new fork commit, `retarget` to a new pin, and `sync --check`.
//!
//! Both moves are one operation: rebuild the base tree from B(f1, b1, p1) to B(f2, b2, p2) and
//! carry every local fix across with 3-way merges. In the patch layout that is `git am -3` done
//! file by file: a fix's new post-image is merge(new pre-image, old pre-image, old post-image),
//! and its patch is written again against the new chain. In the files layout each file is
//! merge(new B, old B, overlay). Nothing is applied with fuzz; a collision is a conflict named
//! by its file and fix, with markers whose labels name the commits.

mod text;

use super::base::{self, BaseTree, Commits};
use super::cache::{short, Cache, Remote};
use super::config::Layout;
use super::error::{Error, Result};
use super::fsutil::{stage_changes, StagedDir};
use super::merge::{merge3, ConflictKind, Labels, Outcome};
use super::overlay::{self, Image, OverlayState, PatchFile};
use super::patch;
use super::project::Project;
use super::records;
use super::{Bytes, FileMap};
use forkbook_records::{Finding, Severity};
use serde::Serialize;
use std::collections::BTreeMap;

/// Where to move to; `None` keeps the recorded commit.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub fork: Option<String>,
    pub pin: Option<String>,
    /// Accept a fork that has merged upstream past the pin.
    pub allow_fork_ahead: bool,
}

/// What happened to one overlay file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum FileOutcome {
    /// The new base's file, with no local fix on it.
    Taken,
    /// New in the fork.
    Added,
    /// The fork (or pin) deleted it and it had no local fix.
    Removed,
    /// Local fix carried onto a changed file cleanly.
    Merged,
    /// The base did not change it: the local version stays.
    Kept,
    /// The new base now holds exactly the local change: the fix is contained by the fork.
    Contained,
    /// Only the overlay has it (a local-only backend file).
    LocalOnly,
    /// Markers left in; `fix` names the local fix in the patch layout.
    Conflict {
        regions: usize,
        fix: Option<usize>,
        why: String,
    },
}

impl FileOutcome {
    /// A file no local fix touches, moved from the old base (`had`) to the new one (`has`).
    fn of_base_move(had: bool, has: bool) -> FileOutcome {
        match (had, has) {
            (false, true) => FileOutcome::Added,
            (true, false) => FileOutcome::Removed,
            _ => FileOutcome::Taken,
        }
    }
}

/// What happened to one local fix (patch layout).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum FixOutcome {
    /// Applies as before.
    Unchanged,
    /// Re-based onto changed files cleanly.
    Carried,
    /// The new base already contains it: the patch is empty and the entry can be dropped.
    Droppable,
    Conflict {
        paths: Vec<String>,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct FixReport {
    pub number: usize,
    pub patch: String,
    pub title: String,
    #[serde(flatten)]
    pub outcome: FixOutcome,
    /// The patch as rewritten against the new chain.
    #[serde(skip)]
    pub text: String,
    /// The files the fix changes in the new chain.
    #[serde(skip)]
    pub changed: Vec<String>,
}

/// The result of a move, before anything is written.
#[derive(Debug, Clone, Serialize)]
pub struct Move {
    #[serde(serialize_with = "ser_commits")]
    pub old: Commits,
    #[serde(serialize_with = "ser_commits")]
    pub new: Commits,
    /// Core files and how the new base made them.
    pub core: Vec<(String, base::CoreOutcome)>,
    /// Every overlay path that changed, or carries a fix.
    pub files: BTreeMap<String, FileOutcome>,
    pub fixes: Vec<FixReport>,
    /// Upstream files the fork changes that the overlay does not carry.
    pub hooks_outside: Vec<String>,
    /// Conflict regions left with markers in the moved overlay, after every fix is carried.
    pub remaining: Vec<LeftConflict>,
    /// Pin-vs-fork conflicts of the new base tree that the carried fixes resolve (informational).
    pub resolved: Vec<ResolvedConflict>,
    #[serde(skip)]
    pub overlay: FileMap,
    /// The records folder as it should be after the move (relative paths).
    #[serde(skip)]
    pub records: FileMap,
    /// Whether the move was written to the records (false for a `--check` preview).
    #[serde(skip)]
    pub written: bool,
    /// The records folder as the move read it: [`fn@write`] writes only while the folder still
    /// holds exactly these, so a record another run wrote since is never overwritten.
    #[serde(skip)]
    pub read_from: FileMap,
    /// The core files, marked on a terminal and a page when the move started from a stand-in
    /// pin (what a core file becomes depends on the pin); empty otherwise.
    #[serde(skip)]
    pub stand_in_core: Vec<String>,
}

fn ser_commits<S: serde::Serializer>(c: &Commits, s: S) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(3))?;
    m.serialize_entry("fork", &c.fork.to_string())?;
    m.serialize_entry("base", &c.base.to_string())?;
    m.serialize_entry("pin", &c.pin.to_string())?;
    m.end()
}

impl Move {
    /// Conflict regions left with markers in the moved overlay: what the user must resolve.
    /// A pin-vs-fork conflict of the base tree that a fix resolves is not one of them.
    pub fn conflicts(&self) -> usize {
        self.remaining.iter().map(|c| c.lines.len()).sum()
    }
}

/// Resolves the target commits: a new fork commit gets its merge base with upstream; a fork
/// that has merged upstream past the pin is refused unless allowed.
pub fn resolve_target(cache: &Cache, old: Commits, target: &Target) -> Result<Commits> {
    let fork = match &target.fork {
        Some(rev) => cache.commit(rev, Remote::Fork)?,
        None => old.fork,
    };
    let pin = match &target.pin {
        // A pin must be upstream's: a fork's commit the cache also holds is refused.
        Some(rev) => super::pin::upstream_commit(cache, rev)?,
        None => old.pin,
    };
    let base = if fork == old.fork {
        old.base
    } else {
        let upstream_tip = cache.branch_tip(Remote::Upstream).unwrap_or(pin);
        let tip = if cache.is_ancestor(pin, upstream_tip)? {
            upstream_tip
        } else {
            pin
        };
        cache.merge_base(fork, tip)?
    };
    if !cache.is_ancestor(base, pin)? && !target.allow_fork_ahead {
        return Err(Error::new(format!(
            "fork commit `{}` has merged upstream up to `{}`, which the pin `{}` does not contain",
            short(fork),
            short(base),
            short(pin)
        ))
        .with_note(format!(
            "retarget to `{}` or later first, or pass `--allow-fork-ahead` to take the fork's upstream changes too",
            short(base)
        )));
    }
    Ok(Commits { fork, base, pin })
}

/// The overlay carried onto the base tree at new commits: what a move writes is made from it.
struct Carried<'a> {
    new_base: std::borrow::Cow<'a, BaseTree>,
    overlay: FileMap,
    files: BTreeMap<String, FileOutcome>,
    fixes: Vec<FixReport>,
}

/// Carries every local fix of `state` onto the base tree at `new`.
fn carry<'a>(
    project: &Project,
    cache: &Cache,
    state: &'a OverlayState,
    new: Commits,
) -> Result<Carried<'a>> {
    let prefix = &project.config.overlay.backend_prefix;
    // At the recorded commits the base tree is the one the state already holds: borrowed, not
    // copied (a whole-tree copy is the overlay's size again in memory).
    let new_base = if new == state.commits {
        std::borrow::Cow::Borrowed(&state.base)
    } else {
        std::borrow::Cow::Owned(base::build(cache, new, &state.core_files, prefix)?)
    };
    let labels = MoveLabels::new(state.commits, new);
    let (overlay, files, fixes) = match state.layout {
        Layout::Patch => carry_patches(state, &new_base, &labels)?,
        Layout::Files => {
            let (overlay, files) = carry_files(state, &new_base, &labels)?;
            (overlay, files, Vec::new())
        }
    };
    Ok(Carried {
        new_base,
        overlay,
        files,
        fixes,
    })
}

/// Plans the move of `state` to `new` without writing anything.
pub fn plan(project: &Project, cache: &Cache, state: &OverlayState, new: Commits) -> Result<Move> {
    let prefix = &project.config.overlay.backend_prefix;
    let Carried {
        new_base,
        overlay,
        files,
        fixes,
    } = carry(project, cache, state, new)?;
    let mut hooks_outside = cache.changed_paths(new.base, new.fork, prefix)?;
    hooks_outside.retain(|p| !state.core_files.contains(p));
    let remaining = left_conflicts(&overlay, &files);
    let resolved = resolved_conflicts(project, state, &new_base, &overlay, &fixes);
    let records = records_after(project, state, new, &new_base.files, &overlay, &fixes);
    Ok(Move {
        old: state.commits,
        new,
        core: new_base.core.clone(),
        files,
        fixes,
        hooks_outside,
        remaining,
        resolved,
        overlay,
        records,
        written: false,
        read_from: state.records.files.clone(),
        stand_in_core: stand_in_core(project, state),
    })
}

/// The core files whose findings depend on the pin, under a stand-in pin; none without one.
fn stand_in_core(project: &Project, state: &OverlayState) -> Vec<String> {
    match project.stand_in_pin() {
        Some(_) => state.core_files.clone(),
        None => Vec::new(),
    }
}

struct MoveLabels {
    new_base: String,
    old_base: String,
    /// The base tree's conflict labels at the old commits and at the new, where they differ
    /// (`fork 4f39b0dc` -> `fork c8aa7c95`).
    renamed: Vec<(String, String)>,
}

impl MoveLabels {
    fn new(old: Commits, new: Commits) -> MoveLabels {
        let name = |c: Commits| format!("fork {} pin {}", short(c.fork), short(c.pin));
        let renamed = base::conflict_labels(old)
            .into_iter()
            .zip(base::conflict_labels(new))
            .filter(|(a, b)| a != b)
            .collect();
        MoveLabels {
            new_base: format!("new base ({})", name(new)),
            old_base: format!("old base ({})", name(old)),
            renamed,
        }
    }

    /// `file` of the old base (or a fix made over it) with the base tree's marker lines labelled
    /// as the new base labels them. A region of the base tree that a fix resolved names the
    /// commits in its marker lines; without this, a fork or pin that moved without touching the
    /// region changes those lines, and the move reads the label as a change that collides with
    /// the fix's resolution.
    fn relabel<'a>(&self, file: Option<&'a Bytes>) -> Option<std::borrow::Cow<'a, [u8]>> {
        use forkbook_checks::markers::{marker_kind, MarkerKind, MARKER_SIZE};
        let file = file?;
        // The label after a marker and its space, on the three marker lines that carry one.
        let label = |line: &'a [u8]| -> Option<&'a [u8]> {
            match marker_kind(line)? {
                MarkerKind::Separator => None,
                _ => line.get(MARKER_SIZE + 1..),
            }
        };
        let labelled = |line: &'a [u8]| label(line).is_some();
        if self.renamed.is_empty() || !file.split(|&b| b == b'\n').any(labelled) {
            return Some(std::borrow::Cow::Borrowed(file.as_slice()));
        }
        let mut out = Vec::with_capacity(file.len());
        for line in file.split_inclusive(|&b| b == b'\n') {
            let (body, end) = match line.strip_suffix(b"\n") {
                Some(body) => (body, &b"\n"[..]),
                None => (line, &b""[..]),
            };
            let renamed = label(body).and_then(|old| {
                let (_, new) = self.renamed.iter().find(|(o, _)| o.as_bytes() == old)?;
                Some([&body[..=MARKER_SIZE], new.as_bytes(), end].concat())
            });
            out.extend_from_slice(renamed.as_deref().unwrap_or(line));
        }
        Some(std::borrow::Cow::Owned(out))
    }
}

/// Files layout: each path is merge(new B, old B, overlay).
fn carry_files(
    state: &OverlayState,
    new_base: &BaseTree,
    labels: &MoveLabels,
) -> Result<(FileMap, BTreeMap<String, FileOutcome>)> {
    let old_base = &state.base.files;
    let mut overlay = FileMap::new();
    let mut outcomes = BTreeMap::new();
    let paths: std::collections::BTreeSet<&String> = old_base
        .keys()
        .chain(new_base.files.keys())
        .chain(state.overlay.keys())
        .collect();
    for path in paths {
        let (b0, b1, local) = (
            old_base.get(path),
            new_base.files.get(path),
            state.overlay.get(path),
        );
        let (content, outcome) = carry_one(path, b0, b1, local, labels, "overlay")?;
        if let Some(content) = content {
            overlay.insert(path.clone(), content);
        }
        if let Some(outcome) = outcome {
            outcomes.insert(path.clone(), outcome);
        }
    }
    Ok((overlay, outcomes))
}

/// One file: the local side `local` was made from `b0`; the base moved to `b1`.
/// Returns the new content and an outcome when anything happened.
fn carry_one(
    path: &str,
    b0: Option<&Bytes>,
    b1: Option<&Bytes>,
    local: Option<&Bytes>,
    labels: &MoveLabels,
    local_label: &str,
) -> Result<(Image, Option<FileOutcome>)> {
    // Where the base did not move under the file, the overlay's copy is the result, as merge3
    // decides it (ours is the base): shared, not copied. At the recorded commits (`sync --check`)
    // that is every file, and the copies were a sixth of its CPU (the copy and fresh pages).
    if b0 == b1 {
        let outcome = (local != b0).then_some(match b0 {
            None => FileOutcome::LocalOnly,
            Some(_) => FileOutcome::Kept,
        });
        return Ok((local.cloned(), outcome));
    }
    // The base moved under the file: its labels are the new ones.
    let (b0, local) = (labels.relabel(b0), labels.relabel(local));
    let labels = Labels {
        ours: &labels.new_base,
        base: &labels.old_base,
        theirs: local_label,
    };
    let merged = merge3(path, b0.as_deref(), as_side(b1), local.as_deref(), labels)?;
    let outcome = match merged.outcome {
        Outcome::Unchanged => None,
        Outcome::Ours => Some(FileOutcome::of_base_move(b0.is_some(), b1.is_some())),
        Outcome::Theirs if b0.is_none() => Some(FileOutcome::LocalOnly),
        Outcome::Theirs => Some(FileOutcome::Kept),
        Outcome::Same => Some(FileOutcome::Contained),
        Outcome::Merged => Some(FileOutcome::Merged),
        Outcome::Conflict { regions, kind } => Some(FileOutcome::Conflict {
            regions,
            fix: None,
            why: conflict_why(kind).to_string(),
        }),
    };
    Ok((merged.content.map(Bytes::from), outcome))
}

fn as_side(file: Option<&Bytes>) -> Option<&[u8]> {
    file.map(|bytes| bytes.as_slice())
}

/// The words for a conflict between the new base (ours) and the overlay (theirs).
fn conflict_why(kind: ConflictKind) -> &'static str {
    match kind {
        ConflictKind::OursDeletes => "the new base deletes a file the overlay changes",
        ConflictKind::TheirsDeletes => "the overlay deletes a file the new base changes",
        ConflictKind::BothAdded => "both the new base and the overlay add this file",
        ConflictKind::BothChanged => "the new base and the overlay change the same lines",
    }
}

/// Patch layout: replays every fix over the new base, merging where the base moved under it.
fn carry_patches(
    state: &OverlayState,
    new_base: &BaseTree,
    labels: &MoveLabels,
) -> Result<(FileMap, BTreeMap<String, FileOutcome>, Vec<FixReport>)> {
    let mut current = new_base.files.clone();
    let mut outcomes = BTreeMap::new();
    for (path, b0, b1) in super::overlay::differences(&state.base.files, &new_base.files) {
        outcomes.insert(path, FileOutcome::of_base_move(b0.is_some(), b1.is_some()));
    }
    let reports = state
        .steps
        .iter()
        .map(|step| carry_step(step, &mut current, &mut outcomes, labels))
        .collect::<Result<Vec<_>>>()?;
    Ok((current, outcomes, reports))
}

/// One fix replayed over `current` (the new chain so far), which it then moves on: each file it
/// touches merged from its old pre- and post-image, the outcome of each file that did not come
/// across as it was noted in `outcomes`, and the patch written again against the new chain.
fn carry_step(
    step: &overlay::FixStep,
    current: &mut FileMap,
    outcomes: &mut BTreeMap<String, FileOutcome>,
    labels: &MoveLabels,
) -> Result<FixReport> {
    let carried = carry_step_files(step, current, outcomes, labels)?;
    let CarriedFiles {
        pre,
        post,
        conflicted,
        moved,
    } = carried;
    overlay::apply_images(current, &post);
    let outcome = if !conflicted.is_empty() {
        FixOutcome::Conflict { paths: conflicted }
    } else if !step.changed_paths().is_empty() && pre == post {
        FixOutcome::Droppable
    } else if moved {
        FixOutcome::Carried
    } else {
        FixOutcome::Unchanged
    };
    let changed = post
        .iter()
        .filter(|(path, image)| pre.get(*path) != Some(image))
        .map(|(path, _)| path.clone())
        .collect();
    Ok(FixReport {
        number: step.number(),
        patch: step.patch.name.clone(),
        title: step.patch.title(),
        outcome,
        text: rewrite_patch(&step.patch, &pre, &post)?,
        changed,
    })
}

/// A fix's files carried onto the new chain: their new pre- and post-images, the files left in
/// conflict, and whether the chain moved under any of them.
#[derive(Default)]
struct CarriedFiles {
    pre: BTreeMap<String, Image>,
    post: BTreeMap<String, Image>,
    conflicted: Vec<String>,
    moved: bool,
}

/// Each file the fix `step` touches, merged from its old pre- and post-image onto its image in
/// `current`; what did not come across as it was goes into `outcomes`.
fn carry_step_files(
    step: &overlay::FixStep,
    current: &FileMap,
    outcomes: &mut BTreeMap<String, FileOutcome>,
    labels: &MoveLabels,
) -> Result<CarriedFiles> {
    let number = step.number();
    let fix_label = format!("fix {number}: {}", step.patch.title());
    let mut out = CarriedFiles::default();
    for (path, old_pre) in &step.pre {
        let old_post = &step.post[path];
        let pre_now = current.get(path).cloned();
        let base_moved = &pre_now != old_pre;
        out.moved |= base_moved;
        let (post_now, outcome) = carry_one(
            path,
            old_pre.as_ref(),
            pre_now.as_ref(),
            old_post.as_ref(),
            labels,
            &fix_label,
        )?;
        if let Some(FileOutcome::Conflict { regions, why, .. }) = outcome {
            out.conflicted.push(path.clone());
            let fix = Some(number);
            outcomes.insert(path.clone(), FileOutcome::Conflict { regions, fix, why });
        } else if base_moved && old_pre != old_post {
            // Equal sides mean the new base already holds the fix's change.
            let outcome = if post_now == pre_now {
                FileOutcome::Contained
            } else {
                FileOutcome::Merged
            };
            outcomes.insert(path.clone(), outcome);
        }
        out.pre.insert(path.clone(), pre_now);
        out.post.insert(path.clone(), post_now);
    }
    Ok(out)
}

/// The patch file again, its header kept and its diff made against the new chain.
fn rewrite_patch(
    old: &PatchFile,
    pre: &BTreeMap<String, Image>,
    post: &BTreeMap<String, Image>,
) -> Result<String> {
    let diff = patch::render(&overlay::present(pre), &overlay::present(post))?;
    Ok(format!("{}{}", old.header(), diff))
}

/// The records folder after a move of `state` to `new`, the pieces the move computed handed
/// down to [`records::after_move`].
fn records_after(
    project: &Project,
    state: &OverlayState,
    new: Commits,
    new_base: &FileMap,
    overlay: &FileMap,
    fixes: &[FixReport],
) -> FileMap {
    let moved = records::Moved {
        before: &state.records.files,
        upstream: &state.records.upstream,
        model: &state.records.model,
        tree_prefix: &state.records.tree_prefix,
        core_files: &state.core_files,
        commits: new.recorded(),
        new_base,
        overlay,
        digests: &state.digests,
        patches: (fixes.iter())
            .map(|f| (f.patch.as_str(), f.text.as_str()))
            .collect(),
    };
    records::after_move(project, &moved)
}

/// Writes the planned records in one swap, holding the project's lock, and only while the
/// records folder still holds what the move was planned from: a record another run wrote
/// between this run's read and its write is kept, and this run is refused (run it again). The
/// comparison is made under the lock, so nothing changes after it. A record whose bytes do not
/// change is a link to the old one in the new folder, so a move writes what it changes
/// ([`stage_changes`]).
pub fn write(project: &Project, planned: &Move) -> Result<()> {
    let _lock = project.lock_records()?;
    let now = super::fsutil::read_tree(&project.records_dir())?;
    if now != planned.read_from {
        let read_from = &planned.read_from;
        let changed = now
            .iter()
            .filter(|(path, bytes)| read_from.get(*path) != Some(*bytes))
            .map(|(path, _)| path)
            .chain(read_from.keys().filter(|path| !now.contains_key(*path)))
            .next()
            .cloned()
            .unwrap_or_default();
        return Err(Error::new(format!(
            "`{}` changed while this run was working (first at `{changed}`): another forkbook run wrote the records; nothing was written",
            project.record_name(&changed)
        ))
        .with_note("run the command again: it reads the records as they are now (FORKBOOK_LOCK_WAIT=1 queues runs one after another)"));
    }
    let staged = StagedDir::new(&project.records_dir())?;
    stage_changes(
        staged.path(),
        &planned.records,
        &project.records_dir(),
        &now,
    )?;
    staged.commit()
}

/// How `forkbook sync` and `forkbook retarget` move: preview or write, and where else to write
/// the overlay.
#[derive(Debug, Clone, Default)]
pub struct MoveOptions {
    /// Write the moved records (false: `--check`, a preview that writes nothing).
    pub write: bool,
    /// Also materialize the moved overlay into this folder.
    pub out: Option<std::path::PathBuf>,
    /// Accept a fork that has merged upstream past the pin.
    pub allow_fork_ahead: bool,
    /// Move an overlay that still holds conflict markers (`--allow-conflicts`).
    pub allow_conflicts: bool,
}

/// `forkbook retarget REV`: moves the core files to the upstream pin `rev`, carrying every
/// local fix (the pin-bump chapter's step 2 and 5). The merge of each file is [`plan`] ->
/// [`crate::merge::merge3`].
pub fn retarget(
    project: &Project,
    cache: &Cache,
    state: &OverlayState,
    rev: &str,
    options: &MoveOptions,
) -> Result<Move> {
    move_to(project, cache, state, (None, Some(rev)), options)
}

/// `forkbook sync [REV]`: moves the overlay to the fork revision `rev` (default: the tip of the
/// fork's branch), carrying every local fix.
pub fn sync(
    project: &Project,
    cache: &Cache,
    state: &OverlayState,
    rev: Option<&str>,
    options: &MoveOptions,
) -> Result<Move> {
    let tip = format!("fork/{}", project.config.fork.branch);
    move_to(
        project,
        cache,
        state,
        (Some(rev.unwrap_or(&tip)), None),
        options,
    )
}

/// [`sync`] and [`retarget`]: the fork, the pin or both to the revisions given, the others kept.
fn move_to(
    project: &Project,
    cache: &Cache,
    state: &OverlayState,
    (fork, pin): (Option<&str>, Option<&str>),
    options: &MoveOptions,
) -> Result<Move> {
    refuse_marked(state, options.allow_conflicts)?;
    let target = Target {
        fork: fork.map(str::to_string),
        pin: pin.map(str::to_string),
        allow_fork_ahead: options.allow_fork_ahead,
    };
    let new = resolve_target(cache, state.commits, &target)?;
    let mut planned = plan(project, cache, state, new)?;
    if let Some(dir) = &options.out {
        // Refused before the records move, so a bad folder leaves everything as it was.
        super::overlay::check_destination(project, dir, false)?;
    }
    if options.write {
        write(project, &planned)?;
        planned.written = true;
    }
    if let Some(dir) = &options.out {
        super::overlay::materialize(project, &planned.overlay, dir, false)?;
    }
    Ok(planned)
}

/// `forkbook sync --check`: every record rebuilt at the recorded commits, compared byte for byte.
#[derive(Debug, Clone)]
pub struct SyncCheck {
    /// What could not be reproduced: a record, a locked file, a conflict region (at its line).
    pub mismatches: Vec<Finding>,
    /// The core files under a stand-in pin (see [`Move::stand_in_core`]).
    pub stand_in_core: Vec<String>,
    pub files: usize,
    /// The records folder's name, for the text.
    pub records: String,
    pub commits: Commits,
}

/// [`check`] as a command's result.
pub fn check_report(project: &Project, cache: &Cache, state: &OverlayState) -> Result<SyncCheck> {
    Ok(SyncCheck {
        mismatches: check(project, cache, state)?,
        stand_in_core: stand_in_core(project, state),
        files: state.overlay.len(),
        records: project.record_name(""),
        commits: state.commits,
    })
}

/// The id `sync --check`'s findings carry.
const SYNC_CHECK: &str = "sync-check";

/// `sync --check`'s JSON: a list of what could not be reproduced, each its `path`, its `line`
/// where one applies and `why`, the form scripts have read since before findings were one type.
impl Serialize for SyncCheck {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Mismatch<'a> {
            path: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            line: Option<usize>,
            why: &'a str,
        }
        s.collect_seq(self.mismatches.iter().map(|m| Mismatch {
            path: &m.file,
            line: m.line,
            why: &m.message,
        }))
    }
}

/// A record, locked file or conflict region that `sync --check` could not reproduce.
fn mismatch(path: &str, line: Option<usize>, why: impl Into<String>) -> Finding {
    Finding::new(SYNC_CHECK, Severity::Error, path, line, why)
}

/// The records [`plan`] renders at the recorded commits, patch layout, without carrying the
/// fixes onto a second copy of every file: at the recorded commits each fix's pre-image is the
/// state's own (the same base, the same fixes before it), so carrying it gives its recorded
/// post-image and the state's overlay is the planned one. At 100 times the real overlay that
/// copy was a third of `sync --check`'s memory. `tests/it/sync.rs` compares the two.
pub fn recorded_records(project: &Project, state: &OverlayState) -> Result<FileMap> {
    let fixes = state
        .steps
        .iter()
        .map(|step| {
            Ok(FixReport {
                number: step.number(),
                patch: step.patch.name.clone(),
                title: step.patch.title(),
                outcome: FixOutcome::Unchanged,
                text: rewrite_patch(&step.patch, &step.pre, &step.post)?,
                changed: step.changed_paths().into_iter().map(String::from).collect(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let (base, overlay) = (&state.base.files, &state.overlay);
    Ok(records_after(
        project,
        state,
        state.commits,
        base,
        overlay,
        &fixes,
    ))
}

/// Rebuilds every record at the recorded commits and compares byte for byte; writes nothing.
pub fn check(project: &Project, cache: &Cache, state: &OverlayState) -> Result<Vec<Finding>> {
    // Only the records are compared: the move's report (markers left, conflicts resolved, hooks
    // outside the overlay) would scan every file for markers a second time and diff two trees.
    let (planned_records, planned_lock) = match state.layout {
        Layout::Patch => (recorded_records(project, state)?, state.lock()),
        Layout::Files => {
            let carried = carry(project, cache, state, state.commits)?;
            let (base, overlay) = (&carried.new_base.files, &carried.overlay);
            let records =
                records_after(project, state, state.commits, base, overlay, &carried.fixes);
            // The lock the records were rendered with: each file's hash made once, in the state.
            (records, records::lock_knowing(overlay, &state.digests))
        }
    };
    let planned_records = naming_the_recorded_pin(project, state, planned_records);
    let mut out = Vec::new();
    for (path, want, have) in super::overlay::differences(&planned_records, &state.records.files) {
        let why = match (want, have) {
            (Some(_), None) => "missing: forkbook would write it",
            (None, Some(_)) => "not produced by forkbook at the recorded commits",
            _ => "differs from what the recorded commits and fixes give",
        };
        out.push(mismatch(&project.record_name(&path), None, why));
    }
    if let Some(lock) = &state.records.model.lock {
        let why = "materialized file does not match overlay.lock";
        out.extend(
            lock.mismatches(&planned_lock)
                .into_iter()
                .map(|(path, _, _)| mismatch(&path, None, why)),
        );
    }
    out.extend(marker_mismatches(state));
    Ok(out)
}

/// Under a stand-in pin, the planned records that name the pin (`UPSTREAM`, the residual
/// record's header and conflict labels) name the recorded pin where the plan wrote the
/// stand-in's id: that they differ there is the stand-in itself, not a finding.
fn naming_the_recorded_pin(
    project: &Project,
    state: &OverlayState,
    mut planned: FileMap,
) -> FileMap {
    let recorded = state.records.upstream.get(records::keys::PIN);
    let (Some(_), Some(recorded)) = (project.stand_in_pin(), recorded) else {
        return planned;
    };
    let stand_in = state.commits.pin.to_string();
    let short_recorded = crate::text::short_id(recorded);
    for name in [
        records::UPSTREAM_FILE,
        records::RESIDUAL_FILE,
        records::CORE_RESIDUAL_FILE,
    ] {
        if let Some(bytes) = planned.get_mut(name) {
            let text = String::from_utf8_lossy(bytes)
                .replace(&stand_in, recorded)
                .replace(crate::text::short_id(&stand_in), short_recorded);
            *bytes = std::sync::Arc::new(text.into_bytes());
        }
    }
    planned
}

/// Conflict markers left in the overlay, one mismatch a region or stray marker: records that
/// reproduce byte for byte reproduce their markers too, which proves nothing.
fn marker_mismatches(state: &OverlayState) -> Vec<Finding> {
    let mut out = Vec::new();
    for marked in state.marked_files() {
        let path = &marked.file;
        for region in &marked.regions {
            let why = match region.end {
                Some(end) => format!("conflict markers left in, lines {} to {end}", region.start),
                None => "a conflict region that is never closed".to_string(),
            };
            out.push(mismatch(path, Some(region.start), why));
        }
        for marker in &marked.stray {
            let why = format!("conflict marker `{}` left in", marker.kind.text());
            out.push(mismatch(path, Some(marker.line), why));
        }
    }
    out
}

/// Conflict regions left with markers in one file of the moved overlay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftConflict {
    pub path: String,
    /// The `<<<<<<<` line of each region (or the line of a stray marker).
    pub lines: Vec<usize>,
    /// The local fix whose carrying collided here (patch layout), if one did.
    pub fix: Option<usize>,
}

/// A pin-vs-fork conflict of the base tree that the overlay's fixes resolve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedConflict {
    pub path: String,
    /// Regions of the base tree's file.
    pub regions: usize,
    /// The fixes that change the file: patches in the patch layout, register entries naming it
    /// in the files layout. Empty: resolved in the overlay, no fix says so.
    pub fixes: Vec<usize>,
}

/// Every file of the moved overlay that still holds markers, as git recognizes them.
fn left_conflicts(overlay: &FileMap, files: &BTreeMap<String, FileOutcome>) -> Vec<LeftConflict> {
    overlay
        .iter()
        .filter_map(|(path, bytes)| {
            let (regions, stray) = forkbook_checks::markers::regions(bytes);
            let mut lines: Vec<usize> = regions.iter().map(|r| r.start).collect();
            lines.extend(stray.iter().map(|m| m.line));
            lines.sort_unstable();
            let fix = match files.get(path) {
                Some(FileOutcome::Conflict { fix, .. }) => *fix,
                _ => None,
            };
            (!lines.is_empty()).then(|| LeftConflict {
                path: path.clone(),
                lines,
                fix,
            })
        })
        .collect()
}

/// The base tree's pin-vs-fork conflicts that no marker of the moved overlay is left of.
fn resolved_conflicts(
    project: &Project,
    state: &OverlayState,
    new_base: &BaseTree,
    overlay: &FileMap,
    fixes: &[FixReport],
) -> Vec<ResolvedConflict> {
    new_base
        .conflicts()
        .into_iter()
        .filter(|(path, _)| {
            overlay
                .get(*path)
                .is_none_or(|b| forkbook_checks::markers::scan(b).is_empty())
        })
        .map(|(path, regions)| ResolvedConflict {
            path: path.to_string(),
            regions,
            fixes: match state.layout {
                Layout::Patch => fixes
                    .iter()
                    .filter(|f| f.changed.iter().any(|p| p == path))
                    .map(|f| f.number)
                    .collect(),
                Layout::Files => entries_naming(project, state, path),
            },
        })
        .collect()
}

/// Files layout: the register entries that name `path` (there are no patches to say it).
fn entries_naming(project: &Project, state: &OverlayState, path: &str) -> Vec<usize> {
    let Some(register) = &state.records.model.register else {
        return Vec::new();
    };
    let known: Vec<String> = state.overlay.keys().cloned().collect();
    let names = forkbook_checks::names::Names::new(&known, &project.config.overlay.backend_prefix);
    forkbook_checks::names::entries_naming(register, &names, path)
        .into_iter()
        .map(|n| n as usize)
        .collect()
}

/// Refuses to move an overlay that still holds conflict markers: the move would carry them
/// into the new base as if they were code. `allow` (`--allow-conflicts`) moves it anyway.
pub fn refuse_marked(state: &OverlayState, allow: bool) -> Result<()> {
    let marked = state.marked_files();
    if allow || marked.is_empty() {
        return Ok(());
    }
    Err(Error::new(format!(
        "the overlay still has conflict markers: {}",
        super::overlay::marker_places(&marked).join(", ")
    ))
    .with_note(
        "resolve them and record each resolution as a local fix first (`forkbook check` lists \
         every region), or pass `--allow-conflicts` to move the overlay with its markers",
    ))
}
