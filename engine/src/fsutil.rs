//! Writing folders so that a failure never leaves half of one, and one run at a time.
//!
//! A new overlay is always written beside the old one and swapped in with one rename
//! (`renameat2(RENAME_EXCHANGE)` on Linux), so an interrupted run leaves either the old folder or
//! the new one. [`RunLock`] keeps two forkbook runs off the same overlay or cache.

use super::error::{Context, Error, Result};
use super::paths::check_relative;
use super::FileMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// Test hook: when `FORKBOOK_FAIL_AFTER_WRITES=N` is set, the N+1th file write fails, so tests can
/// interrupt a run at every write and show that the target is the old folder or the new one.
fn injected_failure() -> Result<()> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static WRITES: AtomicUsize = AtomicUsize::new(0);
    if let Ok(limit) = std::env::var("FORKBOOK_FAIL_AFTER_WRITES") {
        let done = WRITES.fetch_add(1, Ordering::SeqCst);
        if limit.parse::<usize>().is_ok_and(|limit| done >= limit) {
            return Err(Error::new("injected failure (FORKBOOK_FAIL_AFTER_WRITES)"));
        }
    }
    Ok(())
}

/// Writes one file, creating its folders.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    injected_failure()?;
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .with_context(|| format!("failed to create `{}`", parent.display()))?;
    }
    fs::write(path, bytes).with_context(|| format!("failed to write `{}`", path.display()))
}

/// Replaces one file in a single rename, so readers see the old bytes or the new, never half:
/// the new bytes go to a temporary file beside it, are flushed to disk (fsync), and only then
/// renamed over the old; the folder is flushed after. Any failure before the rename (a full
/// disk, a size limit) leaves the old file byte for byte. Every record rewrite goes through here.
pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    injected_failure()?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)
            .with_context(|| format!("failed to create `{}`", parent.display()))?;
    }
    forkbook_records::atomic::replace(path, bytes)
        .with_context(|| format!("failed to replace `{}`", path.display()))
}

/// Writes one file and flushes it to disk before returning.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    injected_failure()?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)
            .with_context(|| format!("failed to create `{}`", parent.display()))?;
    }
    let mut file =
        File::create(path).with_context(|| format!("failed to write `{}`", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("failed to write `{}`", path.display()))
}

/// Writes every file of `files` below `dir` (paths checked first).
pub fn write_tree(dir: &Path, files: &FileMap) -> Result<()> {
    for (path, bytes) in files {
        check_relative(path)?;
        write_file(&dir.join(path), bytes)?;
    }
    Ok(())
}

/// [`write_tree`] with every file flushed to disk: for a records folder about to be swapped in.
pub fn write_tree_synced(dir: &Path, files: &FileMap) -> Result<()> {
    for (path, bytes) in files {
        check_relative(path)?;
        write_synced(&dir.join(path), bytes)?;
    }
    Ok(())
}

/// Reads a file a setting names, refusing anything but a regular file before opening it: a FIFO
/// or a device would block or never end. `Ok(None)` when nothing is there.
pub fn read_regular_file(path: &Path, what: &str) -> Result<Option<Vec<u8>>> {
    match fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => {
            Err(Error::from(e).context(format!("failed to read {what} `{}`", path.display())))
        }
        Ok(meta) if !meta.is_file() => Err(Error::new(format!(
            "{what} `{}` is not a regular file",
            path.display()
        ))
        .with_note("name a plain file there")),
        Ok(_) => fs::read(path)
            .map(Some)
            .with_context(|| format!("failed to read {what} `{}`", path.display())),
    }
}

/// Reads every regular file below `dir` into a map of `/`-separated relative paths.
///
/// Links are refused when they lead outside `dir` and read as the file they name otherwise is not
/// supported: an overlay is plain files.
pub fn read_tree(dir: &Path) -> Result<FileMap> {
    let mut files = FileMap::new();
    read_tree_into(dir, "", &mut files)?;
    Ok(files)
}

fn read_tree_into(dir: &Path, prefix: &str, files: &mut FileMap) -> Result<()> {
    let entries =
        fs::read_dir(dir).with_context(|| format!("failed to read folder `{}`", dir.display()))?;
    let mut entries: Vec<_> = entries.collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            return Err(Error::new(format!(
                "`{}` has a name that is not UTF-8",
                entry.path().display()
            ))
            .with_note("rename it; overlay paths must be UTF-8"));
        };
        let rel = format!("{prefix}{name}");
        check_relative(&rel).map_err(|e| e.context(format!("in `{}`", dir.display())))?;
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            let target = fs::read_link(entry.path())?;
            let stays = super::paths::link_stays_inside(&rel, &target.to_string_lossy());
            let why = if stays {
                "links are not supported in an overlay"
            } else {
                "the link leads outside the overlay"
            };
            return Err(Error::new(format!(
                "refusing link `{}` -> `{}`: {why}",
                entry.path().display(),
                target.display()
            ))
            .with_note("replace the link by the file it names"));
        } else if kind.is_dir() {
            read_tree_into(&entry.path(), &format!("{rel}/"), files)?;
        } else {
            let bytes = fs::read(entry.path())
                .with_context(|| format!("failed to read `{}`", entry.path().display()))?;
            files.insert(rel, bytes.into());
        }
    }
    Ok(())
}

/// The file forkbook leaves in every folder it writes whole (`materialize`, `export-tree`), so a
/// later run knows the folder is its own to replace and never deletes a folder someone else made.
pub const WRITTEN_MARKER: &str = ".forkbook-written";

const MARKER_TEXT: &str = "This folder was written by forkbook; forkbook replaces it whole when asked to write here again.\n";

/// Refuses to replace `target` unless it is new, empty, or a folder forkbook wrote before (it holds
/// [`WRITTEN_MARKER`]); `force` allows any other folder. Whatever `force` says, a target that is
/// not a folder is refused, and so is the project root or a folder holding it, and the records
/// folder, a folder holding it or one inside it: replacing those would lose the project.
/// Checked before anything is written, so a refusal moves nothing.
pub fn check_write_target(target: &Path, root: &Path, records: &Path, force: bool) -> Result<()> {
    let shown = target.display();
    match fs::symlink_metadata(target) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(
                Error::new(format!("refusing to write into `{shown}`: it is a link"))
                    .with_note("name the folder itself, or a new folder"),
            )
        }
        Ok(meta) if !meta.is_dir() => {
            return Err(Error::new(format!(
                "refusing to write into `{shown}`: it is a file, not a folder"
            ))
            .with_note("choose a new or empty folder; the file was left as it is"))
        }
        _ => {}
    }
    let full = resolved(target)?;
    let refuse = |guarded: &Path, how: &str| {
        Err(Error::new(format!(
            "refusing to write into `{shown}`: it {how} `{}`, which forkbook never replaces",
            guarded.display()
        ))
        .with_note("choose a folder outside the records folder that does not hold the project (for example `materialized/` in the project); `--force` does not change this"))
    };
    if let Ok(root) = resolved(root) {
        if root.starts_with(&full) {
            return refuse(&root, "is or holds the project");
        }
    }
    if let Ok(records) = resolved(records) {
        if records.starts_with(&full) {
            return refuse(&records, "is or holds the records folder");
        }
        if full.starts_with(&records) {
            return refuse(&records, "lies inside the records folder");
        }
    }
    if !target.is_dir() || force || target.join(WRITTEN_MARKER).is_file() {
        return Ok(());
    }
    let empty = fs::read_dir(target)
        .with_context(|| format!("failed to read folder `{shown}`"))?
        .next()
        .is_none();
    if empty {
        return Ok(());
    }
    Err(Error::new(format!(
        "refusing to replace `{shown}`: it is not empty and forkbook did not write it (no `{WRITTEN_MARKER}` in it)"
    ))
    .with_note("choose a new or empty folder, or pass `--force` to replace this one whole (everything in it is lost)"))
}

/// Leaves [`WRITTEN_MARKER`] in a folder being written.
pub fn mark_written(dir: &Path) -> Result<()> {
    write_file(&dir.join(WRITTEN_MARKER), MARKER_TEXT.as_bytes())
}

/// `path` made absolute with its links resolved; a path that does not exist yet is resolved
/// through its nearest existing ancestor.
fn resolved(path: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(path)
        .with_context(|| format!("failed to resolve `{}`", path.display()))?;
    let mut rest = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(real) = at.canonicalize() {
            let mut out = real;
            out.extend(rest.iter().rev());
            return Ok(out);
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return Ok(absolute),
        }
    }
}

/// A folder being built beside its final place; [`StagedDir::commit`] swaps it in.
///
/// Dropped without `commit`, it removes itself, so a failure leaves the old folder untouched.
pub struct StagedDir {
    staging: PathBuf,
    target: PathBuf,
    done: bool,
}

impl StagedDir {
    pub fn new(target: &Path) -> Result<StagedDir> {
        let parent = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs::create_dir_all(parent)
            .with_context(|| format!("failed to create `{}`", parent.display()))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        remove_stale_stages(parent, &name);
        let staging = parent.join(format!(".{name}.forkbook-new-{}", std::process::id()));
        if staging.exists() {
            fs::remove_dir_all(&staging)?;
        }
        fs::create_dir(&staging)
            .with_context(|| format!("failed to create `{}`", staging.display()))?;
        Ok(StagedDir {
            staging,
            target: target.to_path_buf(),
            done: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// Puts the staged folder in place of the target in one step.
    pub fn commit(mut self) -> Result<()> {
        injected_failure()?;
        if self.target.exists() {
            exchange(&self.staging, &self.target).with_context(|| {
                format!("failed to swap the new `{}` in", self.target.display())
            })?;
            fs::remove_dir_all(&self.staging).with_context(|| {
                format!("failed to remove the old copy `{}`", self.staging.display())
            })?;
        } else {
            fs::rename(&self.staging, &self.target).with_context(|| {
                format!("failed to move the new `{}` in", self.target.display())
            })?;
        }
        self.done = true;
        forkbook_records::atomic::sync_dir(
            self.target
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
        );
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_dir_all(&self.staging);
        }
    }
}

/// Staging folders left by runs that were killed: their process is gone, so nothing will swap
/// them in or remove them. Best effort; a folder that cannot be removed stays.
fn remove_stale_stages(parent: &Path, name: &str) {
    let prefix = format!(".{name}.forkbook-new-");
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let alive = pid
            .parse::<u32>()
            .is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive && pid.bytes().all(|b| b.is_ascii_digit()) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let a = CString::new(a.as_os_str().as_bytes())?;
    let b = CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both are valid NUL-terminated paths; AT_FDCWD resolves them like open(2) does.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Without an atomic exchange: move the old folder aside, the new one in, then drop the old.
#[cfg(not(target_os = "linux"))]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    let aside = a.with_extension("forkbook-old");
    fs::rename(b, &aside)?;
    fs::rename(a, b)?;
    fs::rename(&aside, a)
}

/// An advisory lock held for the length of a run, so two runs never interleave on one folder.
///
/// Exclusive for a run that writes; shared for runs that only read, so any number of them go
/// together and a writer waits for (or is refused by) every one. A shared lock becomes exclusive
/// with [`RunLock::make_exclusive`] when a reading run finds it must write after all.
pub struct RunLock {
    file: File,
    dir: PathBuf,
    what: String,
    exclusive: bool,
}

impl RunLock {
    /// Takes the lock on `dir` (the folder itself, so no lock file is left behind) for writing,
    /// or says who holds it. `FORKBOOK_LOCK_WAIT=1` waits instead of refusing.
    pub fn acquire(dir: &Path, what: &str) -> Result<RunLock> {
        RunLock::take(dir, what, true)
    }

    /// Takes the lock on `dir` for reading: other readers may hold it too, a writer may not.
    pub fn acquire_shared(dir: &Path, what: &str) -> Result<RunLock> {
        RunLock::take(dir, what, false)
    }

    /// Whether this lock keeps every other run out.
    pub fn is_exclusive(&self) -> bool {
        self.exclusive
    }

    /// Turns a shared lock into an exclusive one (nothing to do when it is one): refused while
    /// another run holds the lock, reading or writing.
    pub fn make_exclusive(&mut self) -> Result<()> {
        if !self.exclusive {
            self.lock(true)?;
        }
        Ok(())
    }

    fn take(dir: &Path, what: &str, exclusive: bool) -> Result<RunLock> {
        let file = File::open(dir)
            .with_context(|| format!("failed to open `{}` to lock it", dir.display()))?;
        let mut lock = RunLock {
            file,
            dir: dir.to_path_buf(),
            what: what.to_string(),
            exclusive: false,
        };
        lock.lock(exclusive)?;
        Ok(lock)
    }

    fn lock(&mut self, exclusive: bool) -> Result<()> {
        let dir = self.dir.display();
        let file = &self.file;
        if std::env::var_os("FORKBOOK_LOCK_WAIT").is_some() {
            if exclusive {
                file.lock()
            } else {
                file.lock_shared()
            }
            .with_context(|| format!("failed to lock `{dir}`"))?;
            self.exclusive = exclusive;
            return Ok(());
        }
        // A child process forked by another thread can hold the lock for the moment between its
        // fork and exec (it shares the open file); give such a moment time to pass.
        let mut tries = 0;
        let result = loop {
            let attempt = if exclusive {
                file.try_lock()
            } else {
                file.try_lock_shared()
            };
            match attempt {
                Err(std::fs::TryLockError::WouldBlock) if tries < 25 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => break other,
            }
        };
        match result {
            Ok(()) => {
                self.exclusive = exclusive;
                Ok(())
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let what = &self.what;
                let doing = if exclusive {
                    "this command writes to it, so it needs it alone"
                } else {
                    "it is writing there; readers wait for writers"
                };
                Err(
                    Error::new(format!("another forkbook run is using the {what} `{dir}`"))
                        .with_note(format!(
                    "{doing}: wait for it to finish, or set FORKBOOK_LOCK_WAIT=1 to queue behind it"
                )),
                )
            }
            Err(std::fs::TryLockError::Error(e)) => {
                Err(Error::from(e).context(format!("failed to lock `{dir}`")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_dir_replaces_the_target_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("overlay");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("old.txt"), "old").unwrap();
        let staged = StagedDir::new(&target).unwrap();
        fs::write(staged.path().join("new.txt"), "new").unwrap();
        staged.commit().unwrap();
        assert!(!target.join("old.txt").exists());
        assert_eq!(fs::read_to_string(target.join("new.txt")).unwrap(), "new");
        assert_eq!(
            fs::read_dir(tmp.path()).unwrap().count(),
            1,
            "no staging folder left"
        );
    }

    #[test]
    fn dropped_stage_leaves_the_target_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("overlay");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("old.txt"), "old").unwrap();
        {
            let staged = StagedDir::new(&target).unwrap();
            fs::write(staged.path().join("new.txt"), "new").unwrap();
        }
        assert!(target.join("old.txt").exists());
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_killed_run_s_staging_folder_is_cleared_by_the_next_run() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("overlay");
        let stale = tmp.path().join(".overlay.forkbook-new-4000000000");
        fs::create_dir(&stale).unwrap();
        StagedDir::new(&target).unwrap().commit().unwrap();
        assert!(!stale.exists());
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
    }

    #[test]
    fn second_lock_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let _first = RunLock::acquire(tmp.path(), "overlay").unwrap();
        let err = RunLock::acquire(tmp.path(), "overlay").err().unwrap();
        assert!(err.message().contains("another forkbook run"), "{err}");
    }

    #[test]
    fn readers_share_the_lock_and_a_writer_waits_for_every_one() {
        let tmp = tempfile::tempdir().unwrap();
        let mut first = RunLock::acquire_shared(tmp.path(), "cache").unwrap();
        let second = RunLock::acquire_shared(tmp.path(), "cache").unwrap();
        let err = RunLock::acquire(tmp.path(), "cache").err().unwrap();
        assert!(err.message().contains("another forkbook run"), "{err}");
        let err = first.make_exclusive().err().unwrap();
        assert!(err.message().contains("another forkbook run"), "{err}");
        drop((first, second));
        let mut first = RunLock::acquire_shared(tmp.path(), "cache").unwrap();
        first.make_exclusive().unwrap();
        assert!(first.is_exclusive());
        assert!(RunLock::acquire_shared(tmp.path(), "cache").is_err());
        drop(first);
        RunLock::acquire(tmp.path(), "cache").unwrap();
    }

    #[test]
    fn escaping_link_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("../../etc/passwd", tmp.path().join("evil")).unwrap();
        let err = read_tree(tmp.path()).unwrap_err();
        assert!(err.message().contains("leads outside"), "{err}");
    }
}
