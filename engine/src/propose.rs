//! `forkbook propose`: a local fix sent back to the fork as a `git format-patch` package.
//!
//! A fix is recorded against the pin, but the fork's maintainers need it against the fork
//! commit. For each file the fix touches, its change (pre-image to post-image) is carried onto
//! the fork's version with a 3-way merge; the result is committed in the object cache with the
//! fork commit as parent (so it can be pushed as a branch), formatted with libgit2's email
//! writer, and verified by applying the patch to the fork commit's tree. Each package comes with
//! a pull request title and body, and the packages that touch the same lines say so.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use git2::{build::TreeUpdateBuilder, FileMode, Oid, Repository, Signature};
use serde::Serialize;

use super::cache::{short, Cache};
use super::doc::{code, either, text, words, Doc};
use super::error::{Context, Error, Result};
use super::markdown;
use super::merge::{count_conflicts, merge3, ConflictKind, Labels, Outcome};
use super::overlay::{Image, OverlayState};
use super::project::Project;
use super::record::slug;
use super::records;
use super::register::{self, Entry, Register, State};
use super::report_value::plural;
use super::FileMap;
use crate::bail;

mod draft;
mod history;
pub mod pulls;
mod run;
pub use run::{propose, record_pr, Proposed, Recorded};

/// Where packages go by default, relative to the project root (outside the records folder, which
/// `sync --check` must reproduce exactly).
pub const DEFAULT_OUT: &str = "propose";

/// The index of the packages, written beside them.
pub const INDEX_FILE: &str = "index.md";

/// Lines of context a patch carries: changes closer than this to another package's touch the
/// same lines as far as applying goes.
const CONTEXT: usize = 3;

/// One package: an entry's change, or the changes of entries that share a file.
#[derive(Debug, Clone, Serialize)]
pub struct Package {
    /// The entry it is named after: the first of [`Package::entries`].
    pub number: u32,
    /// Every entry whose change it holds: one, or the entries of a group (see `shared`).
    pub entries: Vec<u32>,
    /// The files its entries share, when it is a group: their changes could not be told
    /// apart (no commit isolates them), so they go together.
    pub shared: Vec<String>,
    pub title: String,
    pub state: Option<State>,
    pub link: Option<String>,
    /// File name of the patch (`0002-free-pooled-buffers.patch`).
    pub file: String,
    /// Branch the package is pushed as (`propose/0002-free-pooled-buffers`).
    pub branch: String,
    /// The package's commit in the object cache; its parent is the fork commit, or the package
    /// below it in its stack.
    pub commit: String,
    pub fork_commit: String,
    pub paths: Vec<String>,
    /// Earlier packages this one is stacked on, because their changes touch the same lines.
    pub depends_on: Vec<u32>,
    /// Where its change came from.
    pub evidence: Evidence,
    /// `git apply --check` of the patch: onto the commit it is made on, then (when stacked)
    /// onto the fork commit alone.
    pub apply_checks: Vec<ApplyCheck>,
    pub pr_title: String,
    pub pr_body: String,
    /// The `git format-patch` style text.
    #[serde(skip)]
    pub patch: String,
}

/// Where a package's change came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "from")]
pub enum Evidence {
    /// The entry's patch of the series (patch layout).
    Patch,
    /// The project's own commit that added or changed the entry, restricted to the files the
    /// entry names (files layout).
    Commit { commit: String, summary: String },
    /// The files the entries name, overlay against the base tree (files layout, where no
    /// commit isolates the change).
    Files,
}

impl Evidence {
    /// The evidence as people read it.
    pub fn describe(&self) -> String {
        match self {
            Evidence::Patch => "its patch of the series".to_string(),
            Evidence::Commit { commit, summary } => {
                let short = &commit[..12.min(commit.len())];
                format!(
                    "commit {short} of the project's history (\"{summary}\"), the files it names"
                )
            }
            Evidence::Files => "the files it names, overlay against the base tree".to_string(),
        }
    }
}

/// What `git apply --check` said of a patch onto one tree.
#[derive(Debug, Clone, Serialize)]
pub struct ApplyCheck {
    /// The commit whose tree it was checked against.
    pub onto: String,
    /// `None` when it could not be checked (no `git`).
    pub applies: Option<bool>,
    /// What git said when it does not apply, or why it was not checked.
    pub said: String,
}

/// One file's change: its content before and after the fix.
type Change = (String, Image, Image);

/// An entry left out, and why: a run without numbers skips an entry whose change the fork
/// already holds (nothing to send), and names each entry it cannot package (something to add).
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub number: u32,
    pub title: String,
    pub reason: String,
    /// What to do about it.
    pub note: String,
}

/// What [`build_proposal`] made: the packages, the entries it skipped, and those it could not
/// package.
#[derive(Debug, Clone, Serialize)]
pub struct Proposal {
    pub packages: Vec<Package>,
    pub skipped: Vec<Skipped>,
    pub not_packaged: Vec<Skipped>,
}

/// The packages of [`build_proposal`].
pub fn build(
    project: &Project,
    cache: &Cache,
    state: &OverlayState,
    register: &Register,
    numbers: &[u32],
) -> Result<Vec<Package>> {
    Ok(build_proposal(project, cache, state, None, register, numbers)?.packages)
}

/// Builds the packages of `numbers` (every entry that applies to the fork when empty). Asked
/// for by number, an entry that cannot be packaged is an error; without numbers, every entry
/// that can be is packaged, one whose change the fork holds is skipped and every other is named
/// in [`Proposal::not_packaged`] with its reason and what to add.
///
/// Entries whose change only their files (not a commit) give, and that share a file with
/// another, become one package; asked for by number, such an entry brings the others that name
/// its file (its difference holds their change too). Packages whose changes touch the same lines (directly or
/// through a third) form a stack: each is committed on top of the previous one of its stack,
/// so the patches apply in order with `git am` and each branch holds what it needs.
///
/// `without_pin` is why the state holds the backend files alone
/// ([`OverlayState::backend_only`]): a fix to backend files needs only the fork commit, and an
/// entry naming a core file is refused with that error (its note names the stand-in).
pub fn build_proposal(
    project: &Project,
    cache: &Cache,
    state: &OverlayState,
    without_pin: Option<&Error>,
    register: &Register,
    numbers: &[u32],
) -> Result<Proposal> {
    let fork = state.commits.fork;
    let asked = !numbers.is_empty();
    let drafting = draft::Drafting::new(project, cache, state, register, without_pin);
    let mut proposal = Proposal {
        packages: Vec::new(),
        skipped: Vec::new(),
        not_packaged: Vec::new(),
    };
    let mut drafts = Vec::new();
    for entry in chosen_entries(register, numbers)? {
        let left_out = |reason: String, note: String| Skipped {
            number: entry.number,
            title: entry.title.clone(),
            reason,
            note,
        };
        match drafting.draft(entry) {
            Ok(Drafted::Ready(draft)) => drafts.push(draft),
            Ok(Drafted::Contained { reason, note }) if !asked => {
                proposal.skipped.push(left_out(reason, note))
            }
            Ok(Drafted::Contained { reason, note }) => {
                return Err(Error::new(reason)
                    .with_note(note)
                    .context(format!("entry {}", entry.number)))
            }
            Err(e) if !asked => proposal
                .not_packaged
                .push(left_out(e.message(), e.note.clone().unwrap_or_default())),
            Err(e) => return Err(e.context(format!("entry {}", entry.number))),
        }
    }
    if asked {
        for entry in drafting.companions(&drafts, numbers) {
            if let Ok(Drafted::Ready(draft)) = drafting.draft(entry) {
                drafts.push(draft);
            }
        }
    }
    let (drafts, failed) = drafting.group_shared(drafts);
    for (entries, e) in failed {
        if asked {
            return Err(e);
        }
        proposal.not_packaged.extend(group_left_out(&entries, &e));
    }
    let stacks = stacks(&drafts);
    // Each draft's package, by the draft's index; `None` for one that failed.
    let mut made: Vec<Option<usize>> = Vec::new();
    for (draft, below) in drafts.iter().zip(&stacks) {
        let below: Vec<usize> = below.iter().filter_map(|&i| made[i]).collect();
        let parent = match below.last() {
            Some(&i) => Oid::from_str(&proposal.packages[i].commit)?,
            None => fork,
        };
        let depends_on = below.iter().map(|&i| proposal.packages[i].number).collect();
        match package_on(cache, fork, parent, draft, depends_on) {
            Ok(package) => {
                made.push(Some(proposal.packages.len()));
                proposal.packages.push(package);
            }
            Err(e) if !asked => {
                made.push(None);
                proposal
                    .not_packaged
                    .extend(group_left_out(&draft.entries, &e));
            }
            Err(e) => return Err(e.context(format!("entry {}", draft.entries[0].number))),
        }
    }
    proposal.not_packaged.sort_by_key(|s| s.number);
    let packages = &proposal.packages;
    let bodies: Vec<String> = (made.iter().zip(&drafts))
        .filter_map(|(made, draft)| Some(pr_body(draft, &packages[(*made)?], packages)))
        .collect();
    for (package, body) in proposal.packages.iter_mut().zip(bodies) {
        package.pr_body = body;
    }
    Ok(proposal)
}

/// Each entry of a draft that could not be packaged, with the error's words.
fn group_left_out(entries: &[&Entry], e: &Error) -> Vec<Skipped> {
    entries
        .iter()
        .map(|entry| Skipped {
            number: entry.number,
            title: entry.title.clone(),
            reason: e.message(),
            note: e.note.clone().unwrap_or_default(),
        })
        .collect()
}

/// An entry's draft, or why there is nothing to propose.
enum Drafted<'a> {
    Ready(Draft<'a>),
    /// The fork commit (or the base tree made from it) already holds the change.
    Contained {
        reason: String,
        note: String,
    },
}

/// A package to be: its entries' change, where it came from, and the lines of the fork commit
/// it touches.
struct Draft<'a> {
    entries: Vec<&'a Entry>,
    change: Vec<Change>,
    touched: Touched,
    evidence: Evidence,
    /// The files its entries share (a group).
    shared: Vec<String>,
}

fn chosen_entries<'a>(register: &'a Register, numbers: &[u32]) -> Result<Vec<&'a Entry>> {
    if numbers.is_empty() {
        return Ok(register
            .entries
            .iter()
            .filter(|e| e.applies_to_fork())
            .collect());
    }
    let mut entries = Vec::new();
    for &n in numbers {
        let entry = register::entry(register, n)?;
        if !entry.applies_to_fork() {
            let state = entry.state().map_or("", |s| s.as_str());
            return Err(Error::new(format!(
                "entry {n} is `{state}`: it is not meant for the fork"
            ))
            .with_note("change its state in LOCAL_FIXES.md first if it should be proposed"));
        }
        entries.push(entry);
    }
    Ok(entries)
}

/// The package of one draft, committed on `parent` (the fork commit, or the package below it
/// in its stack) and verified against `parent`'s tree.
fn package_on(
    cache: &Cache,
    fork: Oid,
    parent: Oid,
    draft: &Draft,
    depends_on: Vec<u32>,
) -> Result<Package> {
    let entry = draft.entries[0];
    // The package is committed into the cache (blobs, tree, commit, `refs/forkbook/propose/`).
    cache.lock_for_writing()?;
    let files = carry_onto(cache.repo(), parent, &draft.change)?;
    let name = format!("{:04}-{}", entry.number, slug(&entry.title));
    let commit = commit_package(cache.repo(), parent, &files, &draft.entries, &name)?;
    let patch = format_patch(cache.repo(), commit)?;
    verify(cache.repo(), parent, commit, &patch).with_context(|| {
        format!(
            "the package `{name}.patch` does not apply to `{}`",
            short(parent)
        )
    })?;
    let mut apply_checks = vec![apply_check(cache, parent, &patch)];
    if parent != fork {
        apply_checks.push(apply_check(cache, fork, &patch));
    }
    Ok(Package {
        number: entry.number,
        entries: draft.entries.iter().map(|e| e.number).collect(),
        shared: draft.shared.clone(),
        title: entry.title.clone(),
        state: entry.state(),
        link: entry.value("link").map(String::from),
        file: format!("{name}.patch"),
        branch: format!("propose/{name}"),
        commit: commit.to_string(),
        fork_commit: fork.to_string(),
        paths: files
            .iter()
            .filter(|(_, b, a)| b != a)
            .map(|(p, _, _)| p.clone())
            .collect(),
        depends_on,
        evidence: draft.evidence.clone(),
        apply_checks,
        pr_title: pr_title(&draft.entries),
        pr_body: String::new(),
        patch,
    })
}

/// `git apply --check` of `patch` against `onto`'s tree, in a scratch index of the cache: the
/// check a maintainer's `git am` makes first, by git itself.
fn apply_check(cache: &Cache, onto: Oid, patch: &str) -> ApplyCheck {
    let checked = |applies: Option<bool>, said: String| ApplyCheck {
        onto: onto.to_string(),
        applies,
        said,
    };
    let Ok(scratch) = tempfile::tempdir() else {
        return checked(None, "no scratch folder for git's index".into());
    };
    let (index, file) = (
        scratch.path().join("index"),
        scratch.path().join("package.patch"),
    );
    if std::fs::write(&file, patch).is_err() {
        return checked(None, "the patch could not be written for git".into());
    }
    let onto_text = onto.to_string();
    // Through the one runner: a local git, so no timeout of its own, but a book step's deadline
    // stops it and nothing it starts outlives it.
    let git = |args: &[&std::ffi::OsStr]| {
        let spec = crate::process::Spec::new("git", cache.dir())
            .arg("--git-dir")
            .arg(cache.dir())
            .args(args)
            .env("GIT_INDEX_FILE", &index);
        crate::process::run(&spec)
    };
    let read = git(&["read-tree".as_ref(), onto_text.as_ref()]);
    let output = match read {
        Ok(done) if done.code() == Some(0) => git(&[
            "apply".as_ref(),
            "--cached".as_ref(),
            "--check".as_ref(),
            file.as_os_str(),
        ]),
        other => other,
    };
    match output {
        Err(e) => checked(None, format!("`git` could not be run: {}", e.message())),
        Ok(done) if done.code() == Some(0) => checked(Some(true), String::new()),
        Ok(done) => {
            let said: Vec<&str> = (done.output.lines())
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            checked(
                Some(false),
                crate::terminal::escape_controls(&said.join("; ")).into_owned(),
            )
        }
    }
}

/// A file's bytes as a side of a merge.
fn side(file: &Option<crate::Bytes>) -> Option<&[u8]> {
    file.as_deref().map(Vec::as_slice)
}

/// Each file's change carried onto its version in `commit` (the fork commit or a package below
/// in the stack): merge(base = pre, ours = that version, theirs = post).
fn carry_onto(repo: &Repository, commit: Oid, change: &[Change]) -> Result<Vec<Change>> {
    let tree = repo.find_commit(commit)?.tree()?;
    let labels = Labels {
        ours: "fork",
        base: "before the fix",
        theirs: "after the fix",
    };
    let mut out = Vec::new();
    for (path, pre, post) in change {
        let on_fork = read_blob(repo, &tree, path)?;
        if pre.as_deref().is_some_and(|pre| count_conflicts(pre) > 0) {
            return Err(Error::new(format!("the fix resolves the base tree's conflict in `{path}`, which the fork does not have"))
                .with_note("a conflict resolution adapts the fork to the pin: mark the entry `retarget-only` with its cause"));
        }
        let merged = merge3(path, side(pre), side(&on_fork), side(post), labels)?;
        match merged.outcome {
            Outcome::Conflict { kind: ConflictKind::TheirsDeletes, .. } => bail!("`{path}` is deleted by the fix but the fork's version differs from what it deleted"),
            Outcome::Conflict { kind: ConflictKind::OursDeletes, .. } => bail!("`{path}` is changed by the fix but the fork commit has no such file"),
            Outcome::Conflict { regions, .. } => {
                return Err(Error::new(format!(
                    "the fix does not carry onto the fork's `{path}`: {}",
                    plural(regions, "conflicting region", "conflicting regions")
                ))
                .with_note("the fork changed the lines this fix touches; adapt the fix to the fork by hand"))
            }
            _ => out.push((path.clone(), on_fork, merged.content.map(crate::Bytes::from))),
        }
    }
    Ok(out)
}

fn read_blob(repo: &Repository, tree: &git2::Tree, path: &str) -> Result<Image> {
    let Some(entry) = super::cache::entry_at(tree, path)? else {
        return Ok(None);
    };
    Ok(Some(repo.find_blob(entry.id())?.content().to_vec().into()))
}

/// Commits the carried files on top of the fork commit and points `refs/forkbook/<branch>` at it.
fn commit_package(
    repo: &Repository,
    fork: Oid,
    files: &[Change],
    entries: &[&Entry],
    name: &str,
) -> Result<Oid> {
    let parent = repo.find_commit(fork)?;
    let base_tree = parent.tree()?;
    let mut update = TreeUpdateBuilder::new();
    for (path, _, after) in files {
        match after {
            Some(bytes) => {
                let mode = match base_tree.get_path(Path::new(path)) {
                    Ok(e) if e.filemode() == 0o100755 => FileMode::BlobExecutable,
                    _ => FileMode::Blob,
                };
                update.upsert(path.as_str(), super::cache::write_blob(repo, bytes)?, mode);
            }
            None => {
                update.remove(path.as_str());
            }
        }
    }
    let tree = repo.find_tree(update.create_updated(repo, &base_tree)?)?;
    let author = author(repo, &parent)?;
    let message = commit_message(entries);
    let commit = repo.commit(None, &author, &author, &message, &tree, &[&parent])?;
    repo.reference(
        &format!("refs/forkbook/propose/{name}"),
        commit,
        true,
        "forkbook propose",
    )?;
    Ok(commit)
}

/// The user's identity where git has one, else forkbook's; dated like the fork commit so the
/// same package is the same commit every time.
fn author(repo: &Repository, parent: &git2::Commit) -> Result<Signature<'static>> {
    let user = repo.signature().ok();
    Ok(Signature::new(
        user.as_ref()
            .and_then(|u| u.name().ok())
            .unwrap_or("forkbook"),
        user.as_ref()
            .and_then(|u| u.email().ok())
            .unwrap_or("forkbook@localhost"),
        &git2::Time::new(parent.time().seconds(), 0),
    )?)
}

/// The subject, then each entry's prose (a group's under each entry's title).
fn commit_message(entries: &[&Entry]) -> String {
    let mut message = pr_title(entries);
    for entry in entries {
        let prose = wrap_free_prose(&entry.prose);
        if entries.len() > 1 {
            message.push_str(&format!("\n\n{}:", plain_title(&entry.title)));
        }
        if !prose.is_empty() {
            message.push_str(if entries.len() > 1 { "\n" } else { "\n\n" });
            message.push_str(&prose);
        }
    }
    message.push('\n');
    message
}

/// The pull request's title: the entry's, or for a group the first entry's and how many more.
fn pr_title(entries: &[&Entry]) -> String {
    let first = plain_title(&entries[0].title);
    match entries.len() {
        1 => first,
        2 => format!("{first}, and one more fix"),
        n => format!("{first}, and {} more fixes", n - 1),
    }
}

/// The prose without `Files:` lines, which name our overlay's view of the change.
fn wrap_free_prose(prose: &str) -> String {
    prose
        .lines()
        .filter(|l| !l.trim_start().to_ascii_lowercase().starts_with("files:"))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// A title without Markdown code marks, for subjects and pull request titles.
fn plain_title(title: &str) -> String {
    title.replace('`', "")
}

/// The commit as `git format-patch` writes it (libgit2's email writer).
fn format_patch(repo: &Repository, commit: Oid) -> Result<String> {
    let commit = repo.find_commit(commit)?;
    let mut options = git2::EmailCreateOptions::new();
    let email = git2::Email::from_commit(&commit, &mut options)?;
    String::from_utf8(email.as_slice().to_vec())
        .map_err(|_| Error::new("the package is not UTF-8 text"))
}

/// Applies the patch to the fork commit's files and checks the result is the package's tree.
///
/// In memory: the touched files' pre-images from the fork, the patch applied to them, each
/// post-image compared with the package commit's file, and no other path changed. Writing the
/// applied tree into the cache instead would "freshen" the mirror packs that hold its objects.
fn verify(repo: &Repository, fork: Oid, commit: Oid, patch: &str) -> Result<()> {
    let fork_tree = repo.find_commit(fork)?.tree()?;
    let package_tree = repo.find_commit(commit)?.tree()?;
    let paths = crate::patch::touched(patch, "the package")?;
    let mut pre = FileMap::new();
    for path in &paths {
        if let Some(bytes) = read_blob(repo, &fork_tree, path)? {
            pre.insert(path.clone(), bytes);
        }
    }
    let applied = crate::patch::apply(patch, "the package", &pre)?;
    for path in &paths {
        if applied.get(path) != read_blob(repo, &package_tree, path)?.as_ref() {
            bail!("applying it does not give the package's `{path}`");
        }
    }
    let changed = super::cache::diff_paths(repo, &fork_tree, &package_tree)?;
    if let Some(path) = changed.iter().find(|p| !paths.contains(p)) {
        bail!("the package changes `{path}`, which its patch does not name");
    }
    Ok(())
}

/// The fork-side line ranges each file's change touches, widened by the patch context.
fn touched_lines(files: &[Change]) -> Touched {
    let mut touched = BTreeMap::new();
    for (path, before, after) in files {
        let before = String::from_utf8_lossy(side(before).unwrap_or_default());
        let after = String::from_utf8_lossy(side(after).unwrap_or_default());
        let diff = similar::TextDiff::from_lines(&*before, &*after);
        let ranges: Vec<Range<usize>> = diff
            .ops()
            .iter()
            .filter(|op| op.tag() != similar::DiffTag::Equal)
            .map(|op| op.old_range().start.saturating_sub(CONTEXT)..op.old_range().end + CONTEXT)
            .collect();
        touched.insert(path.clone(), ranges);
    }
    touched
}

/// For each draft, the earlier drafts of its stack, in order. Drafts whose touched lines overlap
/// share a stack, and so do drafts linked through a third.
fn stacks(drafts: &[Draft]) -> Vec<Vec<usize>> {
    let mut group: Vec<usize> = (0..drafts.len()).collect();
    for later in 0..drafts.len() {
        for earlier in 0..later {
            if overlaps(&drafts[earlier].touched, &drafts[later].touched) {
                let (a, b) = (root(&group, earlier), root(&group, later));
                group[b.max(a)] = a.min(b);
            }
        }
    }
    (0..drafts.len())
        .map(|i| {
            (0..i)
                .filter(|&j| root(&group, j) == root(&group, i))
                .collect()
        })
        .collect()
}

fn root(group: &[usize], mut i: usize) -> usize {
    while group[i] != i {
        i = group[i];
    }
    i
}

type Touched = BTreeMap<String, Vec<Range<usize>>>;

fn overlaps(a: &Touched, b: &Touched) -> bool {
    a.iter().any(|(path, ranges)| {
        b.get(path).is_some_and(|other| {
            ranges
                .iter()
                .any(|r| other.iter().any(|o| r.start < o.end && o.start < r.end))
        })
    })
}

/// The pull request body: the entry's prose, its reproduction, the files, and dependencies.
fn pr_body(draft: &Draft, package: &Package, others: &[Package]) -> String {
    let mut body = String::new();
    for entry in &draft.entries {
        if draft.entries.len() > 1 {
            body.push_str(&format!(
                "\n\n## {}\n\n",
                markdown::text(&plain_title(&entry.title))
            ));
        }
        // The body goes to another project's repository: the register's `@name` and `#12`
        // were written for our readers (and `#12` for upstream's or our issues, not the fork's).
        let prose = wrap_free_prose(&entry.prose);
        body.push_str(&markdown::inert_references_in(&prose));
        if let Some(repro) = entry.value("reproduction") {
            let repro = markdown::inert_references_in(repro);
            body.push_str(&format!("\n\n### Reproduction\n\n{repro}"));
        }
    }
    if !draft.shared.is_empty() {
        let shared: Vec<String> = draft
            .shared
            .iter()
            .map(|p| markdown::code_span(p))
            .collect();
        body.push_str(&format!(
            "\n\nThese fixes change the same {} together, so they come as one change.",
            if shared.len() == 1 {
                format!("file {}", shared[0])
            } else {
                format!("files {}", shared.join(", "))
            }
        ));
    }
    body.push_str("\n\n### Files\n\n");
    for path in &package.paths {
        body.push_str(&format!("- {}\n", markdown::code_span(path)));
    }
    if !package.depends_on.is_empty() {
        body.push_str(
            "\n### Stacked on\n\nThese changes touch the same lines, so this branch carries them \
             first; merge them before this one:\n\n",
        );
        let below = (package.depends_on.iter())
            .filter_map(|n| others.iter().rfind(|other| other.number == *n));
        for other in below {
            let title = markdown::text(&other.pr_title);
            let file = markdown::code_span(&other.file);
            body.push_str(&format!("- {title} ({file})\n"));
        }
    }
    body.push_str(&format!(
        "\nMade against fork commit `{}` by `forkbook propose` from local {} {} of our overlay.\n",
        &package.fork_commit[..12.min(package.fork_commit.len())],
        if package.entries.len() == 1 {
            "fix"
        } else {
            "fixes"
        },
        package
            .entries
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    body.trim_start().to_string()
}

/// The index of packages: entries, state, patch, branch, link, dependencies. A title and a link
/// are the register's text, quoted for Markdown.
pub fn render_index(packages: &[Package]) -> String {
    let row = |p: &Package| {
        let depends: Vec<String> = p.depends_on.iter().map(u32::to_string).collect();
        let link = p.link.as_deref();
        // The patch's name is forkbook's (a slug of the title), so it links as it is.
        let patch = format!("[`{0}`]({0})", p.file);
        vec![
            // A group's every entry: their changes are all in this one patch.
            vec![words(
                (p.entries.iter().map(u32::to_string))
                    .collect::<Vec<_>>()
                    .join(", "),
            )],
            vec![text(&p.title)],
            vec![words(p.state.map_or("none", |s| s.as_str()))],
            vec![either(&p.file, patch)],
            vec![code(&p.branch)],
            vec![link.map_or(words("not yet"), |l| either(l, markdown::link(l)))],
            vec![words(if depends.is_empty() {
                "-".to_string()
            } else {
                depends.join(", ")
            })],
        ]
    };
    let header = [
        "entry",
        "title",
        "state",
        "patch",
        "branch",
        "link",
        "depends on",
    ];
    let mut doc = Doc::default();
    doc.table(&header, packages.iter().map(row).collect());
    format!("# Packages for the fork\n\n{}", doc.markdown())
}

/// Writes each patch, its pull request text and the index into `dir`. A folder that is new or
/// empty is marked as forkbook's; in any other folder not forkbook's, a file of those names is
/// someone else's and refused first, and the folder is not marked (whatever else it holds is kept).
pub fn write(dir: &Path, packages: &[Package]) -> Result<Vec<PathBuf>> {
    let pr_file = |package: &Package| package.file.replace(".patch", ".pr.md");
    let names: Vec<String> = packages
        .iter()
        .flat_map(|package| [package.file.clone(), pr_file(package)])
        .chain([INDEX_FILE.to_string()])
        .collect();
    super::fsutil::refuse_overwriting(dir, &names)?;
    let ours = std::fs::read_dir(dir).map_or(true, |mut entries| entries.next().is_none());
    std::fs::create_dir_all(dir)
        .with_context(|| format!("failed to create `{}`", dir.display()))?;
    if ours {
        super::fsutil::mark_written(dir)?;
    }
    let mut written = Vec::new();
    for package in packages {
        let patch = dir.join(&package.file);
        super::fsutil::write_file(&patch, package.patch.as_bytes())?;
        let pr = dir.join(pr_file(package));
        super::fsutil::write_file(
            &pr,
            format!("# {}\n\n{}", package.pr_title, package.pr_body).as_bytes(),
        )?;
        written.extend([patch, pr]);
    }
    let index = dir.join(INDEX_FILE);
    super::fsutil::write_file(&index, render_index(packages).as_bytes())?;
    written.push(index);
    Ok(written)
}

/// Pushes the package's commit to `remote` (a URL or a path) as branch `package.branch`.
///
/// Through the system `git`, like every network transfer: it has the TLS, SSH and credential
/// helpers the user already set up (libgit2 is built without TLS; see `Cache::fetch`).
pub fn push(cache: &Cache, remote: &str, package: &Package) -> Result<()> {
    super::cache::refuse_option_like(remote)?;
    let refspec = format!("+refs/forkbook/{0}:refs/heads/{0}", package.branch);
    super::cache::system_git(
        cache.dir(),
        &["push", "--porcelain", "--", remote, &refspec],
    )
    .map_err(|e| e.context(format!("failed to push `{}` to `{remote}`", package.branch)))?;
    Ok(())
}

/// `propose --record N URL`: entry `number` becomes `proposed` with `url`, and gets the package
/// path when the package exists in `out` and the entry names none. Returns the path written.
pub fn record(project: &Project, number: u32, url: &str, out: &Path) -> Result<PathBuf> {
    // Read, edit and write under the project's lock: another writer's entry is never lost.
    let _lock = project.lock_records()?;
    let path = project.records_dir().join(records::FIXES_FILE);
    let name = project.record_name(records::FIXES_FILE);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("failed to read `{name}`"))?;
    let register = register::parse(&name, &text);
    let entry = register::entry(&register, number)?;
    let package = package_path(project, out, entry);
    let new = register::record_proposal(&text, number, url, package.as_deref())?;
    super::fsutil::replace_file(&path, new.as_bytes())?;
    Ok(path)
}

/// The entry's package in `out`, as a path relative to the project root when it lies inside.
fn package_path(project: &Project, out: &Path, entry: &Entry) -> Option<String> {
    let file = out.join(format!("{:04}-{}.patch", entry.number, slug(&entry.title)));
    if !file.is_file() {
        return None;
    }
    let shown = file.strip_prefix(&project.root).unwrap_or(&file);
    Some(shown.to_string_lossy().replace('\\', "/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft<'a>(entry: &'a Entry, path: &str, lines: Range<usize>) -> Draft<'a> {
        Draft {
            entries: vec![entry],
            change: Vec::new(),
            touched: BTreeMap::from([(path.to_string(), vec![lines])]),
            evidence: Evidence::Files,
            shared: Vec::new(),
        }
    }

    #[test]
    fn drafts_touching_the_same_lines_stack_even_through_a_third() {
        let entry = Entry::default();
        let drafts = [
            draft(&entry, "a.cpp", 10..17),
            draft(&entry, "a.cpp", 40..47),
            draft(&entry, "b.cpp", 10..17),
            draft(&entry, "a.cpp", 15..45),
        ];
        let stacks = stacks(&drafts);
        // The fourth links the first two, so the second is stacked on the first as well.
        assert_eq!(stacks, [vec![], vec![0], vec![], vec![0, 1]]);
    }
}
