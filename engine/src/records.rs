//! The records kept in the overlay folder, as the bottom crate models them (`forkbook_records`):
//! `UPSTREAM`, `overlay.lock`, the README counts, the residual record. The engine names them
//! from here, and makes a project's model with [`model`].

pub use forkbook_records::lock::{sha256_hex, LockMismatch, MismatchKind};
pub use forkbook_records::readme::{Counts, COUNTS_BEGIN, COUNTS_END};
pub use forkbook_records::upstream::{keys, KeyValueLine};
pub use forkbook_records::{
    Lock, Records, Upstream, CORE_RESIDUAL_FILE, FIXES_FILE, LOCK_FILE, README_FILE, RESIDUAL_FILE,
    UPSTREAM_FILE,
};

use super::config::Layout;
use super::error::{Context, Result};
use super::project::Project;
use super::FileMap;

/// The lock of these overlay files.
pub fn lock_of(files: &FileMap) -> Lock {
    Lock::of(files.iter().map(|(path, bytes)| (path, bytes.as_slice())))
}

/// The records model of `files`, the records folder as read once ([`crate::overlay::read_files`]),
/// with the build's pin where `[overlay] pin_file` names one.
pub fn model(project: &Project, files: &FileMap) -> Result<Records> {
    let overlay = &project.config.overlay;
    let pin_file = match &overlay.pin_file {
        Some(name) => {
            super::paths::check_relative(name).context("`overlay.pin_file`")?;
            Some((name.clone(), project.root.join(name)))
        }
        None => None,
    };
    let options = forkbook_records::ReadOptions {
        name: overlay.dir.clone(),
        backend_prefix: overlay.backend_prefix.clone(),
        patch_layout: overlay.layout == Layout::Patch,
        pin_file,
    };
    let files = files
        .iter()
        .map(|(path, bytes)| (path.as_str(), bytes.as_slice()));
    Ok(Records::from_files(files, &options)?)
}
