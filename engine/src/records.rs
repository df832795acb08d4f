//! The records kept in the overlay folder, as the bottom crate models them (`forkbook_records`):
//! `UPSTREAM`, `overlay.lock`, the README counts, the residual record. The engine names them
//! from here, and reads a project's folder once with [`read`].

pub use forkbook_records::lock::{sha256_hex, LockMismatch, MismatchKind};
pub use forkbook_records::readme::{Counts, COUNTS_BEGIN, COUNTS_END};
pub use forkbook_records::upstream::{keys, KeyValueLine};
pub use forkbook_records::{
    Lock, Records, Upstream, CORE_RESIDUAL_FILE, FIXES_FILE, LOCK_FILE, PATCHES_DIR, README_FILE,
    RESIDUAL_FILE, UPSTREAM_FILE,
};

use super::config::Layout;
use super::digests::FileDigests;
use super::error::Result;
use super::project::Project;
use super::{residual_diff, text_of, FileMap};
use forkbook_records::residual_record::RecordedCommits;

mod folder;
pub use folder::{is_record, sort_folder, utf8};

/// The lock of these overlay files, each file's SHA-256 taken from `digests` where it holds that
/// very copy (each file is hashed once a run).
pub fn lock_knowing(files: &FileMap, digests: &FileDigests) -> Lock {
    let hashes = files
        .iter()
        .map(|(path, bytes)| (path.clone(), digests.sha256_hex(path, bytes)));
    Lock::of_digests(hashes)
}

/// What a move computed, handed down to make the records folder after it ([`after_move`]).
pub struct Moved<'a> {
    /// The records folder before the move, by relative path.
    pub before: &'a FileMap,
    /// Those records as the model read them.
    pub model: &'a Records,
    /// Its `UPSTREAM`, which a move needs whole (`Upstream::checked`).
    pub upstream: &'a Upstream,
    /// Where the files layout keeps its whole files in the folder: `tree/`, or nothing.
    pub tree_prefix: &'a str,
    pub core_files: &'a [String],
    pub commits: RecordedCommits,
    /// The base tree and the overlay at the new commits.
    pub new_base: &'a FileMap,
    pub overlay: &'a FileMap,
    /// The SHA-256 of the overlay's files that the run already made (the state's).
    pub digests: &'a FileDigests,
    /// Each fix's patch written again against the new chain: its file name and text.
    pub patches: Vec<(&'a str, &'a str)>,
}

/// The whole records folder after a move: the patches, the lock, the files layout's tree, the
/// residual record, `UPSTREAM` and the README counts, each rendered from what the move computed;
/// every other record as it was.
pub fn after_move(project: &Project, moved: &Moved) -> FileMap {
    let mut files = moved.before.clone();
    for (name, text) in &moved.patches {
        let bytes = text.as_bytes().to_vec();
        files.insert(format!("{PATCHES_DIR}/{name}"), bytes.into());
    }
    let lock = lock_knowing(moved.overlay, moved.digests).render();
    files.insert(LOCK_FILE.into(), lock.into_bytes().into());
    if project.config.overlay.layout == Layout::Files {
        let tree_prefix = moved.tree_prefix;
        files.retain(|p, _| match tree_prefix {
            "" => is_record(project, p),
            _ => !p.starts_with(tree_prefix),
        });
        for (path, bytes) in moved.overlay {
            files.insert(format!("{tree_prefix}{path}"), bytes.clone());
        }
    }
    let (core_files, commits) = (moved.core_files, &moved.commits);
    if let Some(old) = &moved.model.residual_record {
        let residual = residual_diff::residual_of(core_files, moved.new_base, moved.overlay, &[]);
        let core = residual_diff::core_of(core_files, moved.overlay);
        // The record itself marks the notes it flags for review (a review line under each).
        let (text, _) = residual_diff::render_record(
            Some(old),
            old.flavor,
            commits,
            (&core, moved.digests),
            &residual,
        );
        files.insert(old.flavor.file().into(), text.into_bytes().into());
    }
    let upstream = moved.upstream.moved(
        [&commits.fork, &commits.base, &commits.pin].map(String::as_str),
        &project.canonical_urls.0,
        &project.config.fork.branch,
    );
    files.insert(UPSTREAM_FILE.into(), upstream.render().into_bytes().into());
    let prefix = &project.config.overlay.backend_prefix;
    let counts = forkbook_records::readme::actual(
        moved.overlay.keys(),
        prefix,
        register_entries(moved.model),
    );
    let readme =
        forkbook_records::readme::write_readme(&text_of(&files, README_FILE), prefix, &counts);
    files.insert(README_FILE.into(), readme.into_bytes().into());
    files
}

/// The register's entries (none without a register), as the README counts them.
pub fn register_entries(model: &Records) -> usize {
    model.register.as_ref().map_or(0, |r| r.entries.len())
}

/// Every file of the project's records folder by relative path, read once: what both the records
/// model ([`read`]) and the overlay's records ([`crate::overlay::Records::from_folder`]) are made
/// of. No folder is no files; a FIFO, a link or a name that is not UTF-8 is refused.
pub fn read_files(project: &Project) -> Result<FileMap> {
    let dir = project.records_dir();
    if !dir.is_dir() {
        return Ok(FileMap::new());
    }
    super::fsutil::read_tree(&dir)
}

/// The project's records folder read once ([`read_files`]), and the records [`model`] of its files.
pub fn read(project: &Project) -> Result<(FileMap, Records)> {
    let files = read_files(project)?;
    let records = model(project, &files)?;
    Ok((files, records))
}

/// The records model of `files` (the records folder as [`read_files`] read it), with the build's
/// pin where `[overlay] pin_file` names one.
pub fn model(project: &Project, files: &FileMap) -> Result<Records> {
    model_with(files, read_options(project))
}

/// [`read`] with the register left unparsed (the model's `register` is `None`): for a command
/// that reads the register's entries one at a time from its text in the files
/// (`forkbook_records::register::each_entry`), as `status` does.
pub fn read_register_unparsed(project: &Project) -> Result<(FileMap, Records)> {
    let files = read_files(project)?;
    let options = forkbook_records::ReadOptions {
        register_unparsed: true,
        ..read_options(project)
    };
    let records = model_with(&files, options)?;
    Ok((files, records))
}

fn model_with(files: &FileMap, options: forkbook_records::ReadOptions) -> Result<Records> {
    let by_path = files
        .iter()
        .map(|(path, bytes)| (path.as_str(), bytes.as_slice()));
    Ok(Records::from_files(by_path, &options)?)
}

fn read_options(project: &Project) -> forkbook_records::ReadOptions {
    let overlay = &project.config.overlay;
    forkbook_records::ReadOptions {
        name: overlay.dir.clone(),
        backend_prefix: overlay.backend_prefix.clone(),
        patch_layout: overlay.layout == Layout::Patch,
        pin_file: (overlay.pin_file.as_ref()).map(|name| (name.clone(), project.root.join(name))),
        register_unparsed: false,
    }
}
