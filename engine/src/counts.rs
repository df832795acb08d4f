//! The overlay's counts, as the bottom crate computes, reads and writes them
//! (`forkbook_records::readme`); here only what takes the engine's [`FileMap`].

use super::records::Counts;
use super::FileMap;

/// The counts `sync` writes and the checks compare with: backend files (under `prefix`), core
/// files (the overlay's other files), and local fixes (the register's entries).
pub fn actual(overlay: &FileMap, prefix: &str, local_fixes: usize) -> Counts {
    forkbook_records::readme::actual(overlay.keys(), prefix, local_fixes)
}
