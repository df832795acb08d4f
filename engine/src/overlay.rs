//! The overlay as recorded: its records folder, and the state it materializes to.
//!
//! Both layouts come to one model. In the patch layout the records hold one patch per local
//! fix and the overlay is B with the patches applied in order; each step keeps the pre-image
//! and post-image of the files it touches, which is what carrying a fix to a new base needs.
//! In the files layout the records hold whole files and the local fixes are overlay minus B.

use super::base::{self, BaseTree, Commits};
use super::cache::{Cache, Remote};
use super::config::Layout;
use super::digests::FileDigests;
use super::error::{Context, Error, Result};
use super::patch;
use super::project::Project;
use super::records::{self, keys, Upstream};
use super::report_value::{CommandReport, Verdict};
use super::FileMap;
use forkbook_checks::facts::MarkedFile;
use std::collections::BTreeMap;

/// One patch of the series as stored: the patch layout's fixes.
pub use forkbook_records::series::PatchFile;
/// Folder of the patch series, inside the records folder.
pub use forkbook_records::PATCHES_DIR;

/// A file's content on one side of a step; `None` when the file does not exist there.
pub type Image = Option<super::Bytes>;

/// The records folder as read from disk.
#[derive(Debug, Clone)]
pub struct Records {
    pub upstream: Upstream,
    /// Every file of the records folder, by relative path (patches and tree included).
    pub files: FileMap,
    pub patches: Vec<PatchFile>,
    /// The files layout's whole files.
    pub tree: FileMap,
    /// Where those sit in the records folder: `tree/`, or nothing for the folder itself.
    pub tree_prefix: String,
    /// The records folder as the project names it (`patches-rocm`), for naming its files.
    pub dir: String,
    /// Every record as the bottom crate read it (the register, the README, the residual
    /// record…), parsed once with the rest.
    pub model: records::Records,
}

impl Records {
    /// The project's records, read from its folder once ([`records::read`]).
    pub fn read(project: &Project) -> Result<Records> {
        let (files, model) = records::read(project)?;
        Records::from_folder(project, files, model)
    }

    /// The records of `files`, the project's records folder as [`records::read`] read it into
    /// `model`: refused where the folder is a link or missing.
    pub fn from_folder(
        project: &Project,
        files: FileMap,
        model: records::Records,
    ) -> Result<Records> {
        let dir = project.records_dir();
        refuse_linked_records(&dir)?;
        let config = project.root.join(super::config::CONFIG_FILE);
        if !dir.is_dir() && !config.is_file() {
            return Err(Error::new(format!(
                "`{}` is not a forkbook project: it has no forkbook.toml and no `{}` folder",
                project.root.display(),
                project.config.overlay.dir
            ))
            .with_note(
                "pass `--root` the folder that holds forkbook.toml (`forkbook demo` makes one to \
                 try); to start an overlay in this folder, `forkbook init --fork REV`",
            ));
        }
        if !dir.is_dir() {
            return Err(Error::new(format!("no overlay records folder `{}`", dir.display()))
                .with_note("create one with `forkbook init --fork REV`, or set `[overlay] dir` in forkbook.toml"));
        }
        Records::from_model(project, files, model)
    }

    /// The records from the files of a records folder (relative paths).
    pub fn from_files(project: &Project, files: FileMap) -> Result<Records> {
        let model = records::model(project, &files)?;
        Records::from_model(project, files, model)
    }

    /// The overlay's records from the `files` of a records folder and their `model`, which
    /// parsed each record once: a move needs `UPSTREAM` and the lock without a problem.
    fn from_model(project: &Project, files: FileMap, model: records::Records) -> Result<Records> {
        for name in [records::UPSTREAM_FILE, records::LOCK_FILE] {
            files
                .get(name)
                .map(|b| records::utf8(project, name, b))
                .transpose()?;
        }
        let upstream = model.upstream.clone().ok_or_else(|| {
            Error::new(format!(
                "no `{}`",
                project.record_name(records::UPSTREAM_FILE)
            ))
            .with_note("it records the fork commit and the pin; `forkbook init` writes one")
        })?;
        // Where the files are is told before what is wrong inside a record.
        let (patches, tree, tree_prefix) = records::sort_folder(project, &files)?;
        let upstream = upstream.checked()?;
        // The model's lock is the overlay's, once it reads without a problem.
        if let Some(lock) = &model.lock {
            lock.check(&project.record_name(records::LOCK_FILE))?;
        }
        Ok(Records {
            upstream,
            files,
            patches,
            tree,
            tree_prefix,
            dir: project.records_name().to_string(),
            model,
        })
    }

    /// The recorded fork commit alone, resolved in the cache or a local mirror: all the base of
    /// a backend file needs (the fork's file).
    pub fn fork(&self, project: &Project, cache: &Cache) -> Result<git2::Oid> {
        let name = project.record_name(records::UPSTREAM_FILE);
        let fork = self.upstream.sha(keys::COMMIT, &name)?;
        cache.recorded(&fork, Remote::Fork)
    }

    /// The recorded commits, resolved in the cache or a local mirror (never over the network).
    pub fn commits(&self, project: &Project, cache: &Cache) -> Result<Commits> {
        let name = project.record_name(records::UPSTREAM_FILE);
        let fork = self.upstream.sha(keys::COMMIT, &name)?;
        let base = self.upstream.sha(keys::BASE, &name)?;
        let pin = match self.upstream.get(keys::PIN) {
            Some(_) => self.upstream.sha(keys::PIN, &name)?,
            None => base.clone(),
        };
        let fork = cache.recorded(&fork, Remote::Fork)?;
        let base = cache.recorded(&base, Remote::Upstream)?;
        // A stand-in replaces the pin for this run only; the records keep theirs.
        let pin = match super::pin::stand_in(project, cache)? {
            Some(stand_in) => stand_in,
            None => cache
                .recorded(&pin, Remote::Upstream)
                .map_err(|e| match e.kind {
                    super::error::ErrorKind::MissingObject => {
                        super::pin::missing_pin(e, project, cache)
                    }
                    _ => e,
                })?,
        };
        Ok(Commits { fork, base, pin })
    }
}

/// A records folder that is a link is refused: forkbook replaces the records folder whole, and
/// would replace the link by a real folder, leaving the folder it named behind unchanged.
pub fn refuse_linked_records(dir: &std::path::Path) -> Result<()> {
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::new(format!(
            "the records folder `{}` is a link",
            dir.display()
        ))
        .with_note("point `[overlay] dir` in forkbook.toml at the real folder, or replace the link by the folder"));
    }
    Ok(())
}

/// One applied fix of the patch layout: what its files were before and after it.
#[derive(Debug, Clone)]
pub struct FixStep {
    pub patch: PatchFile,
    pub pre: BTreeMap<String, Image>,
    pub post: BTreeMap<String, Image>,
}

impl FixStep {
    /// The number of the register entry this fix belongs to: its patch's number. Not its
    /// place in the series: an entry the fork merged has no patch, so numbers may skip.
    pub fn number(&self) -> usize {
        self.patch.number().unwrap_or(0)
    }

    /// The files this fix really changes.
    pub fn changed_paths(&self) -> Vec<&str> {
        self.post
            .iter()
            .filter(|(p, post)| self.pre.get(*p) != Some(post))
            .map(|(p, _)| p.as_str())
            .collect()
    }
}

/// The overlay at its recorded commits.
#[derive(Debug, Clone)]
pub struct OverlayState {
    pub layout: Layout,
    pub commits: Commits,
    pub records: Records,
    pub core_files: Vec<String>,
    pub base: BaseTree,
    /// The materialized overlay: B plus the local fixes.
    pub overlay: FileMap,
    /// Patch layout: each fix applied in order.
    pub steps: Vec<FixStep>,
    /// The overlay's files, each hashed once whatever asks (the base tree's comparison, the
    /// lock, the residual record's hashes).
    pub digests: FileDigests,
}

impl OverlayState {
    /// The materialized overlay files that still hold conflict markers, each named as the user
    /// opens it (the records' copy in the files layout, the overlay path in the patch layout).
    pub fn marked_files(&self) -> Vec<MarkedFile> {
        let marked = self.overlay.iter().filter_map(|(path, bytes)| {
            let (regions, stray) = forkbook_checks::markers::regions(bytes);
            if regions.is_empty() && stray.is_empty() {
                return None;
            }
            let file = match self.layout {
                Layout::Files => {
                    let records = &self.records;
                    format!("{}/{}{path}", records.dir, records.tree_prefix)
                }
                Layout::Patch => path.clone(),
            };
            Some(MarkedFile {
                file,
                regions,
                stray,
            })
        });
        marked.collect()
    }

    pub fn load(project: &Project, cache: &Cache) -> Result<OverlayState> {
        OverlayState::from_records(project, cache, Records::read(project)?)
    }

    pub fn from_records(
        project: &Project,
        cache: &Cache,
        records: Records,
    ) -> Result<OverlayState> {
        let commits = records.commits(project, cache)?;
        let layout = project.config.overlay.layout;
        let core_files = core_files(project, &records, layout);
        let known = match layout {
            Layout::Files => FileDigests::of(&records.tree),
            Layout::Patch => FileDigests::default(),
        };
        let base = base::build_knowing(
            cache,
            commits,
            &core_files,
            &project.config.overlay.backend_prefix,
            &known,
        )?;
        let (overlay, steps, digests) = match layout {
            Layout::Patch => {
                let (overlay, steps) = apply_series(project, &base.files, &records, &core_files)?;
                let digests = FileDigests::of(&overlay);
                (overlay, steps, digests)
            }
            Layout::Files => (records.tree.clone(), Vec::new(), known),
        };
        Ok(OverlayState {
            layout,
            commits,
            records,
            core_files,
            base,
            overlay,
            steps,
            digests,
        })
    }

    /// The files layout's overlay while an upstream commit (the pin, or the fork's base) is
    /// missing and the fork commit `fork` is here: the base tree holds the fork's backend files
    /// alone, which need no upstream commit, and none of the core files, whose base is the pin's
    /// file plus the fork's change (`core_files` still lists them). Each of `commits` is the fork
    /// commit: what is made on this state reads the backend files and the fork commit alone
    /// (`propose` of a fix to backend files), never the pin.
    pub fn backend_only(
        project: &Project,
        cache: &Cache,
        records: Records,
        fork: git2::Oid,
    ) -> Result<OverlayState> {
        let layout = project.config.overlay.layout;
        if layout != Layout::Files {
            return Err(Error::new(
                "a series is applied to the whole base tree, which needs the recorded pin",
            ));
        }
        let commits = Commits {
            fork,
            base: fork,
            pin: fork,
        };
        let core_files = core_files(project, &records, layout);
        let known = FileDigests::of(&records.tree);
        let prefix = &project.config.overlay.backend_prefix;
        let base = base::build_knowing(cache, commits, &[], prefix, &known)?;
        Ok(OverlayState {
            layout,
            commits,
            overlay: records.tree.clone(),
            records,
            core_files,
            base,
            steps: Vec::new(),
            digests: known,
        })
    }

    /// The lock of the overlay: what `overlay.lock` must say.
    pub fn lock(&self) -> records::Lock {
        records::lock_knowing(&self.overlay, &self.digests)
    }

    /// Paths where the overlay differs from B, with both sides.
    pub fn differences(&self) -> Vec<(String, Image, Image)> {
        differences(&self.base.files, &self.overlay)
    }

    pub fn backend_count(&self, prefix: &str) -> usize {
        self.overlay
            .keys()
            .filter(|p| p.starts_with(prefix))
            .count()
    }

    /// The overlay's files below the backend folder `prefix`: what the drift reads and drafts.
    pub fn backend_files(&self, prefix: &str) -> FileMap {
        let backend = self.overlay.iter().filter(|(p, _)| p.starts_with(prefix));
        backend.map(|(p, b)| (p.clone(), b.clone())).collect()
    }
}

/// Paths where `after` differs from `before`: (path, before, after).
pub fn differences(before: &FileMap, after: &FileMap) -> Vec<(String, Image, Image)> {
    let paths: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    paths
        .into_iter()
        .filter(|p| before.get(*p) != after.get(*p))
        .map(|p| (p.clone(), before.get(p).cloned(), after.get(p).cloned()))
        .collect()
}

/// The core files: from the configuration, else the lock's (or tree's) files outside the
/// backend, else, for a series with no lock yet (one being adopted), the files its patches touch
/// outside the backend ([`core_files_from_series`]).
pub fn core_files(project: &Project, records: &Records, layout: Layout) -> Vec<String> {
    let config = &project.config.overlay;
    if !config.core_files.is_empty() {
        return config.core_files.clone();
    }
    let prefix = &config.backend_prefix;
    let listed: Vec<String> = match (layout, &records.model.lock) {
        (Layout::Files, _) => records.tree.keys().cloned().collect(),
        (Layout::Patch, Some(lock)) => lock.files.keys().cloned().collect(),
        (Layout::Patch, None) => series_paths(records),
    };
    listed
        .into_iter()
        .filter(|p| !p.starts_with(prefix.as_str()))
        .collect()
}

/// Whether the core files are worked out from the series' patches: a series with neither
/// `[overlay] core_files` nor a lock to say them.
pub fn core_files_from_series(project: &Project, records: &Records, layout: Layout) -> bool {
    layout == Layout::Patch
        && project.config.overlay.core_files.is_empty()
        && records.model.lock.is_none()
}

/// Every path the series' patches touch, once each, sorted. A patch that cannot be read adds
/// none: applying the series names it.
fn series_paths(records: &Records) -> Vec<String> {
    let mut paths = std::collections::BTreeSet::new();
    for patch_file in &records.patches {
        let name = format!("{}/{PATCHES_DIR}/{}", records.dir, patch_file.name);
        paths.extend(patch::touched(&patch_file.text, &name).unwrap_or_default());
    }
    paths.into_iter().collect()
}

/// A series that does not apply to a base tree whose core files were worked out from it: the
/// note names the key that says them.
fn series_without_core_files(error: Error, project: &Project, core_files: &[String]) -> Error {
    // A series may touch thousands of files: the first few say which were taken.
    const SHOWN: usize = 10;
    let mut listed: Vec<String> = (core_files.iter().take(SHOWN))
        .map(|f| format!("`{f}`"))
        .collect();
    if core_files.len() > SHOWN {
        listed.push(format!("and {} more", core_files.len() - SHOWN));
    }
    let listed = match listed.is_empty() {
        true => "none".to_string(),
        false => listed.join(", "),
    };
    let before = (error.note.clone()).unwrap_or_else(|| "the series does not apply".into());
    let prefix = &project.config.overlay.backend_prefix;
    let config = super::config::CONFIG_FILE;
    let note = format!(
        "{before}; the core files (the upstream files the base tree takes from the pin plus the \
         fork's change) were worked out from the files the patches touch outside `{prefix}` \
         ({listed}), as no `[overlay] core_files` and no lock say them: list them as \
         `core_files = [...]` under `[overlay]` in {config}"
    );
    error.with_note(note)
}

/// Applies the series to B in order, keeping each step's images.
pub fn replay(base: &FileMap, records: &Records) -> Result<(FileMap, Vec<FixStep>)> {
    replay_noting(base, records, |e| e)
}

/// [`replay`] for `project`, whose base tree took `core_files`: where those were worked out from
/// the series ([`core_files_from_series`]), a patch that does not apply says so and names the
/// key that says them.
pub fn apply_series(
    project: &Project,
    base: &FileMap,
    records: &Records,
    core_files: &[String],
) -> Result<(FileMap, Vec<FixStep>)> {
    let layout = project.config.overlay.layout;
    match core_files_from_series(project, records, layout) {
        true => replay_noting(base, records, |e| {
            series_without_core_files(e, project, core_files)
        }),
        false => replay(base, records),
    }
}

/// [`replay`], each patch's failure to apply handed to `noted` first.
fn replay_noting(
    base: &FileMap,
    records: &Records,
    noted: impl Fn(Error) -> Error,
) -> Result<(FileMap, Vec<FixStep>)> {
    let mut state = base.clone();
    let mut steps = Vec::new();
    let scratch = patch::scratch()?;
    let mut last = 0;
    for patch_file in &records.patches {
        let name = format!("{}/{PATCHES_DIR}/{}", records.dir, patch_file.name);
        last = next_in_sequence(patch_file, last, &name)?;
        let paths = patch::touched(&patch_file.text, &name)?;
        let images = |files: &FileMap| -> BTreeMap<String, Image> {
            paths
                .iter()
                .map(|p| (p.clone(), files.get(p).cloned()))
                .collect()
        };
        let pre = images(&state);
        let applied = patch::apply_in(&scratch, &patch_file.text, &name, &present(&pre))
            .map_err(&noted)
            .with_context(|| format!("while materializing {}/", records.dir))?;
        let post = images(&applied);
        apply_images(&mut state, &post);
        steps.push(FixStep {
            patch: patch_file.clone(),
            pre,
            post,
        });
    }
    Ok((state, steps))
}

/// The number of the patch `name` after the patch numbered `last`. Each patch is numbered as its
/// register entry; an entry the fork merged has none (its patch removed, as `patch-not-empty`
/// advises), so a number may be skipped, never repeated or missing.
fn next_in_sequence(patch_file: &PatchFile, last: usize, name: &str) -> Result<usize> {
    let why = match patch_file.number() {
        Some(number) if number > last => return Ok(number),
        Some(n) if n == last => format!("a second patch numbered {n:04}"),
        Some(n) => format!("numbered {n:04} after {last:04}"),
        None => "its name does not start with a number".to_string(),
    };
    Err(
        Error::new(format!("`{name}` is out of sequence: {why}")).with_note(
            "each patch is named `NNNN-title.patch` after its LOCAL_FIXES.md entry, \
             one per entry, in order (an entry marked merged has none)",
        ),
    )
}

/// The files of `images` that exist.
pub fn present(images: &BTreeMap<String, Image>) -> FileMap {
    images
        .iter()
        .filter_map(|(p, c)| Some((p.clone(), c.clone()?)))
        .collect()
}

/// `files` with each of `images` written over it: set where it exists, removed where not.
pub fn apply_images(files: &mut FileMap, images: &BTreeMap<String, Image>) {
    for (path, content) in images {
        match content {
            Some(bytes) => files.insert(path.clone(), bytes.clone()),
            None => files.remove(path),
        };
    }
}

/// Refuses a folder forkbook may not replace (see [`super::fsutil::check_write_target`]): the
/// project root and the records folder are always protected.
pub fn check_destination(project: &Project, dest: &std::path::Path, force: bool) -> Result<()> {
    let records = project.records_dir();
    super::fsutil::check_write_target(dest, &project.root, &records, force)
}

/// What `forkbook materialize` wrote: `{"files": N, "out": DIR}`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Materialized {
    pub files: usize,
    pub out: std::path::PathBuf,
}

/// `forkbook materialize`: the overlay's files written into `out` (see [`materialize`]).
pub fn materialize_state(
    project: &Project,
    state: &OverlayState,
    out: &std::path::Path,
    force: bool,
) -> Result<Materialized> {
    materialize(project, &state.overlay, out, force)?;
    Ok(Materialized {
        files: state.overlay.len(),
        out: out.to_path_buf(),
    })
}

impl CommandReport for Materialized {
    fn text(&self) -> String {
        format!(
            "wrote {} to {}\n",
            super::report_value::plural(self.files, "file", "files"),
            self.out.display()
        )
    }

    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}

/// Writes the materialized overlay into `out`, replacing it whole (never half-written), after
/// [`check_destination`]; the folder gets forkbook's marker so a later run may replace it.
pub fn materialize(
    project: &Project,
    overlay: &FileMap,
    out: &std::path::Path,
    force: bool,
) -> Result<()> {
    check_destination(project, out, force)?;
    let staged = super::fsutil::StagedDir::new(out)?;
    super::fsutil::write_tree(staged.path(), overlay)?;
    super::fsutil::mark_written(staged.path())?;
    staged.commit()
}

/// Writes the upstream tree at `commit` with `overlay` laid over it into `dest`.
///
/// Upstream's own links are written as links when they stay inside the tree (MLX has one,
/// `CLAUDE.md -> AGENTS.md`); submodules are left out. The overlay's files are plain files.
pub fn export_tree(
    project: &Project,
    cache: &Cache,
    commit: git2::Oid,
    overlay: &FileMap,
    dest: &std::path::Path,
    force: bool,
) -> Result<usize> {
    check_destination(project, dest, force)?;
    let (mut files, links) = cache.export_entries(commit)?;
    let count = overlay.len();
    for (path, bytes) in overlay {
        files.insert(path.clone(), bytes.clone());
    }
    let links: BTreeMap<String, String> = links
        .into_iter()
        .filter(|(p, _)| !overlay.contains_key(p))
        .collect();
    super::paths::check_link_chains(&links).map_err(|e| {
        e.context(format!(
            "in upstream commit `{}`",
            super::cache::short(commit)
        ))
    })?;
    let staged = super::fsutil::StagedDir::new(dest)?;
    super::fsutil::write_tree(staged.path(), &files)?;
    for (path, target) in &links {
        let at = staged.path().join(path);
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::os::unix::fs::symlink(target, &at)
            .with_context(|| format!("failed to write link `{path}`"))?;
    }
    super::fsutil::mark_written(staged.path())?;
    staged.commit()?;
    Ok(count)
}

/// Each marked file with its first marker line, `mlx/device.cpp:12`, for one-line messages.
pub fn marker_places(marked: &[MarkedFile]) -> Vec<String> {
    marked
        .iter()
        .map(|m| {
            let first = m
                .regions
                .iter()
                .map(|r| r.start)
                .chain(m.stray.iter().map(|s| s.line))
                .min()
                .unwrap_or(1);
            format!("{}:{first}", m.file)
        })
        .collect()
}
