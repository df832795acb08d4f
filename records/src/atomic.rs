//! The one rule for replacing a file: readers see the old bytes or the new, never half.
//!
//! The new bytes go to a temporary file in the same folder (so the rename never crosses a file
//! system), are flushed to disk, keep the old file's permissions, and are renamed over the old
//! file; the folder is flushed after, so the rename survives a crash. Any failure before the
//! rename (a full disk, a size limit) leaves the old file byte for byte and no temporary file.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Replaces (or creates) `path` with `bytes` in one rename. The folder must exist.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = parent(path);
    let mut temp = tempfile::Builder::new()
        .prefix(".forkbook-new-")
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    if let Ok(meta) = fs::metadata(path) {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir);
    Ok(())
}

/// The folder holding `path` (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Flushes a folder, so a rename in it survives a crash. Best effort: some file systems refuse
/// to sync a folder, and the rename has happened either way.
pub fn sync_dir(dir: &Path) {
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::replace;
    use std::fs;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCAL_FIXES.md");
        fs::write(&path, "old\n").unwrap();
        replace(&path, b"new\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new\n");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("LOCAL_FIXES.md")]);
    }

    #[test]
    fn a_missing_folder_is_an_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("UPSTREAM");
        assert!(replace(&path, b"x").is_err());
        assert!(!dir.path().join("missing").exists());
    }
}
