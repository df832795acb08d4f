//! The records kept in the overlay folder, as the bottom crate models them (`forkbook_records`):
//! `UPSTREAM`, `overlay.lock`, the README counts, the residual record. The engine names them
//! from here, and reads a project's folder once with [`read`].

pub use forkbook_records::lock::{sha256_hex, LockMismatch, MismatchKind};
pub use forkbook_records::readme::{Counts, COUNTS_BEGIN, COUNTS_END};
pub use forkbook_records::upstream::{keys, KeyValueLine};
pub use forkbook_records::{
    Lock, Records, Upstream, CORE_RESIDUAL_FILE, FIXES_FILE, LOCK_FILE, README_FILE, RESIDUAL_FILE,
    UPSTREAM_FILE,
};

use super::config::Layout;
use super::error::Result;
use super::project::Project;
use super::FileMap;

/// The lock of these overlay files.
pub fn lock_of(files: &FileMap) -> Lock {
    Lock::of(files.iter().map(|(path, bytes)| (path, bytes.as_slice())))
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
    let by_path = files
        .iter()
        .map(|(path, bytes)| (path.as_str(), bytes.as_slice()));
    Ok(Records::from_files(by_path, &read_options(project))?)
}

fn read_options(project: &Project) -> forkbook_records::ReadOptions {
    let overlay = &project.config.overlay;
    forkbook_records::ReadOptions {
        name: overlay.dir.clone(),
        backend_prefix: overlay.backend_prefix.clone(),
        patch_layout: overlay.layout == Layout::Patch,
        pin_file: (overlay.pin_file.as_ref()).map(|name| (name.clone(), project.root.join(name))),
    }
}
