//! Writing folders so that a failure never leaves half of one, and one run at a time.
//!
//! A new overlay is always written beside the old one and swapped in with one rename
//! (`renameat2(RENAME_EXCHANGE)` on Linux), so an interrupted run leaves either the old folder or
//! the new one. [`RunLock`] keeps two forkbook runs off the same overlay or cache.

use super::error::{Context, Error, Result};
use super::paths::check_relative;
use super::FileMap;
use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};

/// Test hooks, counting the file writes of a run (a link into a stage counts as one, the swap
/// too): with `FORKBOOK_FAIL_AFTER_WRITES=N` the N+1th fails, so tests can interrupt a run at
/// every write and show that the target is the old folder or the new one; with
/// `FORKBOOK_KILL_AFTER_WRITES=N` the process kills itself (`SIGKILL`, nothing cleaned up) at
/// the N+1th, which [`StagedDir::commit`] also counts just after its swap.
fn injected_failure() -> Result<()> {
    let done = count_write();
    if let Ok(limit) = std::env::var("FORKBOOK_FAIL_AFTER_WRITES") {
        if limit.parse::<usize>().is_ok_and(|limit| done >= limit) {
            return Err(Error::new("injected failure (FORKBOOK_FAIL_AFTER_WRITES)"));
        }
    }
    Ok(())
}

/// Counts one write for the test hooks and dies there if `FORKBOOK_KILL_AFTER_WRITES` says so;
/// returns the writes done before this one.
fn count_write() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static WRITES: AtomicUsize = AtomicUsize::new(0);
    let done = WRITES.fetch_add(1, Ordering::SeqCst);
    if let Ok(limit) = std::env::var("FORKBOOK_KILL_AFTER_WRITES") {
        if limit.parse::<usize>().is_ok_and(|limit| done >= limit) {
            // SAFETY: kill(2) on this process's own id; SIGKILL ends it here.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        }
    }
    done
}

/// Writes one file, creating its folders.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    create_parent(path)?;
    fs::write(path, bytes).with_context(|| format!("failed to write `{}`", path.display()))
}

/// Before each file write: the test hook's failure, then the file's folders created.
fn create_parent(path: &Path) -> Result<()> {
    injected_failure()?;
    let parent = parent_of(path);
    fs::create_dir_all(parent).with_context(|| format!("failed to create `{}`", parent.display()))
}

/// The folder holding `path`, `.` for a bare name.
fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Replaces one file in a single rename, so readers see the old bytes or the new, never half:
/// the new bytes go to a temporary file beside it, are flushed to disk (fsync), and only then
/// renamed over the old; the folder is flushed after. Any failure before the rename (a full
/// disk, a size limit) leaves the old file byte for byte. Every record rewrite goes through here.
pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    create_parent(path)?;
    forkbook_records::atomic::replace(path, bytes)
        .with_context(|| format!("failed to replace `{}`", path.display()))
}

/// Writes one file and flushes it to disk before returning.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    create_parent(path)?;
    let mut file =
        File::create(path).with_context(|| format!("failed to write `{}`", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("failed to write `{}`", path.display()))
}

/// Writes every file of `files` below `dir` (paths checked first).
pub fn write_tree(dir: &Path, files: &FileMap) -> Result<()> {
    write_each(dir, files, write_file)
}

/// [`write_tree`] with every file flushed to disk: for a records folder about to be swapped in.
pub fn write_tree_synced(dir: &Path, files: &FileMap) -> Result<()> {
    write_each(dir, files, write_synced)
}

/// Fills `stage`, a new folder that will replace `from`, with `files`, where `from` holds `old`
/// now: a file whose bytes `old` holds at the same path is a hard link to `from`'s (its inode,
/// its bytes already on disk: nothing is written), every other file is written. Then each
/// written file and each folder of the stage is flushed once, so the whole stage is on disk
/// before it is swapped in: a move that changes ten files of 126 writes and flushes ten, and the
/// folders, instead of 126. Where a link cannot be made (a file system without them), the file
/// is written. Returns how many files were written.
pub fn stage_changes(stage: &Path, files: &FileMap, from: &Path, old: &FileMap) -> Result<usize> {
    let mut folders = std::collections::BTreeSet::from([stage.to_path_buf()]);
    let mut written = Vec::new();
    for (path, bytes) in files {
        check_relative(path)?;
        let dest = stage.join(path);
        create_parent(&dest)?;
        let mut folder = parent_of(&dest);
        while folder != stage && folders.insert(folder.to_path_buf()) {
            folder = parent_of(folder);
        }
        if old.get(path) == Some(bytes) && fs::hard_link(from.join(path), &dest).is_ok() {
            continue;
        }
        fs::write(&dest, bytes.as_slice())
            .with_context(|| format!("failed to write `{}`", dest.display()))?;
        written.push(dest);
    }
    let folders: Vec<PathBuf> = folders.into_iter().collect();
    flush_together(&written, &folders)?;
    Ok(written.len())
}

/// Threads a flush spreads over. A move that changes the core files flushes about 30 files and
/// folders: on a thread each, they wait for the same journal commits rather than for four one
/// after another (eight threads).
const FLUSHES_AT_ONCE: usize = 64;

/// Flushes the files and folders at these paths to disk, up to [`FLUSHES_AT_ONCE`] at once:
/// flushes that wait side by side share the file system's journal commits, where one after
/// another each waits for its own. A file that cannot be flushed is an error; a folder is
/// flushed as far as its file system allows ([`forkbook_records::atomic::sync_dir`]).
fn flush_together(files: &[PathBuf], folders: &[PathBuf]) -> Result<()> {
    let all: Vec<(&PathBuf, bool)> = (files.iter().map(|f| (f, true)))
        .chain(folders.iter().map(|f| (f, false)))
        .collect();
    let flush = |&(path, is_file): &(&PathBuf, bool)| -> Result<()> {
        if !is_file {
            forkbook_records::atomic::sync_dir(path);
            return Ok(());
        }
        File::open(path)
            .and_then(|file| file.sync_all())
            .with_context(|| format!("failed to flush `{}`", path.display()))
    };
    let chunk = all.len().div_ceil(FLUSHES_AT_ONCE).max(1);
    std::thread::scope(|scope| {
        let flushing: Vec<_> = (all.chunks(chunk))
            .map(|part| scope.spawn(move || part.iter().try_for_each(flush)))
            .collect();
        (flushing.into_iter()).try_for_each(|thread| {
            thread
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    })
}

fn write_each(dir: &Path, files: &FileMap, write: fn(&Path, &[u8]) -> Result<()>) -> Result<()> {
    for (path, bytes) in files {
        check_relative(path)?;
        write(&dir.join(path), bytes)?;
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

/// Every regular file below `root` (links are not followed), relative to it with `/`, sorted; a
/// folder for which `skip(parent, name)` holds is not entered. A folder that cannot be read is
/// an error when `strict`, and passed over otherwise.
pub fn files_below(
    root: &Path,
    strict: bool,
    skip: impl Fn(&Path, &str) -> bool,
) -> Result<Vec<String>> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let listed = fs::read_dir(&dir).and_then(|entries| {
            let entry = |e: fs::DirEntry| Ok((e.path(), e.file_type()?));
            entries
                .map(|e| e.and_then(entry))
                .collect::<std::io::Result<Vec<_>>>()
        });
        let entries = match listed {
            Ok(entries) => entries,
            Err(_) if !strict => continue,
            Err(e) => {
                return Err(Error::from(e).context(format!("failed to read `{}`", dir.display())))
            }
        };
        for (path, kind) in entries {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if kind.is_dir() && !skip(&dir, &name) {
                pending.push(path);
            } else if let (true, Ok(relative)) = (kind.is_file(), path.strip_prefix(root)) {
                files.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Refuses, with its path, the first entry below `dir` that is neither a regular file, a folder
/// nor a link (a FIFO, a socket, a device), without opening anything: reading a FIFO blocks
/// forever. For the commands that read single records by name (`check`, `adopt`) before or
/// instead of reading the whole folder. A missing `dir` is no error here.
pub fn refuse_special_files(dir: &Path) -> Result<()> {
    each_entry_below(dir, |entry, kind| {
        match kind.is_file() || kind.is_symlink() {
            true => Ok(()),
            false => Err(special_file(&entry.path())),
        }
    })
}

/// Calls `visit` on every entry below `dir` that is not a folder, with its kind, folders waiting
/// in a list rather than on the call stack (a folder a pull request checks out may be nested
/// deeper than any stack goes), until `visit` fails. A folder or entry that cannot be read is
/// passed over: the scans built on this one look for something, they read nothing.
fn each_entry_below<E>(
    dir: &Path,
    mut visit: impl FnMut(&fs::DirEntry, fs::FileType) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let mut folders = vec![dir.to_path_buf()];
    while let Some(dir) = folders.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => folders.push(entry.path()),
                Ok(kind) => visit(&entry, kind)?,
                Err(_) => {}
            }
        }
    }
    Ok(())
}

fn special_file(path: &Path) -> Error {
    Error::new(format!(
        "`{}` is not a regular file (a FIFO, socket or device)",
        path.display()
    ))
    .with_note("remove it or replace it by a plain file; a records folder and an overlay hold only files and folders")
}

/// Reads every regular file below `dir` into a map of `/`-separated relative paths.
///
/// Anything else that is not a folder (a FIFO, a socket, a device) is refused with its path
/// before it is opened. Links are refused when they lead outside `dir` and read as the file they name otherwise is not
/// supported: an overlay is plain files.
pub fn read_tree(dir: &Path) -> Result<FileMap> {
    let mut files = FileMap::new();
    // Folders wait in a list rather than on the call stack: a folder a pull request checks out
    // may be nested deeper than any stack goes.
    let mut folders = vec![(dir.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = folders.pop() {
        let entries = fs::read_dir(&dir)
            .with_context(|| format!("failed to read folder `{}`", dir.display()))?;
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
                let why = link_refusal(&rel, &target.to_string_lossy());
                return Err(Error::new(format!(
                    "refusing link `{}` -> `{}`: {why}",
                    entry.path().display(),
                    target.display()
                ))
                .with_note("replace the link by the file it names"));
            } else if kind.is_dir() {
                folders.push((entry.path(), format!("{rel}/")));
            } else if !kind.is_file() {
                // A FIFO would block the read forever, a device never end: refused before opening.
                return Err(special_file(&entry.path()));
            } else if is_replace_temporary(name) {
                // Not part of the folder: a killed run's half-written replacement.
                super::notice::leave(format!(
                    "`{}` is a temporary file a killed forkbook run left (not a record or an \
                     overlay file); the next command that writes the records removes it",
                    entry.path().display()
                ));
            } else {
                let bytes = fs::read(entry.path())
                    .with_context(|| format!("failed to read `{}`", entry.path().display()))?;
                files.insert(rel, bytes.into());
            }
        }
    }
    Ok(files)
}

/// Whether `name` is the temporary file of forkbook's one file replace
/// (`forkbook_records::atomic::replace`: `.forkbook-new-` and six random letters or digits), which
/// exists only while a replace runs: under the project's lock, one found is a killed run's.
pub fn is_replace_temporary(name: &str) -> bool {
    name.strip_prefix(".forkbook-new-")
        .is_some_and(|rest| rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Removes every file below `dir` that [`is_replace_temporary`] names (never a folder, never a
/// link): a replace killed before its rename. Only under the [`ProjectLock`], which every replace
/// of a record runs under, so none of them is a live run's. Returns the files removed.
fn remove_dead_temporaries(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let _ = each_entry_below(dir, |entry, kind| {
        let temporary =
            kind.is_file() && entry.file_name().to_str().is_some_and(is_replace_temporary);
        if temporary && fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
        Ok::<(), std::convert::Infallible>(())
    });
    removed
}

/// Why a link at `path` (to `target`) has no place in an overlay, the one rule for links on
/// disk and in commits.
pub fn link_refusal(path: &str, target: &str) -> &'static str {
    if super::paths::link_stays_inside(path, target) {
        "links are not supported in an overlay"
    } else {
        "the link leads outside the overlay"
    }
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
    refuse_guarded(target, root, records)?;
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

/// Refuses to write any of `names` into `dir` where one exists already and forkbook did not write
/// the folder (it holds no [`WRITTEN_MARKER`]): the file is someone else's. A new folder, or new
/// files beside others, are fine.
pub fn refuse_overwriting(dir: &Path, names: &[String]) -> Result<()> {
    if dir.join(WRITTEN_MARKER).is_file() {
        return Ok(());
    }
    match names.iter().find(|name| fs::symlink_metadata(dir.join(name)).is_ok()) {
        None => Ok(()),
        Some(name) => Err(Error::new(format!(
            "refusing to write `{}`: it exists, and forkbook did not write `{}` (no `{WRITTEN_MARKER}` in it)",
            dir.join(name).display(),
            dir.display()
        ))
        .with_note("choose a new or empty folder, or move that file away first")),
    }
}

/// Refuses a `target` that is or holds the project `root` or the `records` folder, or lies in
/// the records folder, whatever `--force` says.
pub fn refuse_guarded(target: &Path, root: &Path, records: &Path) -> Result<()> {
    let full = resolved(target)?;
    let refuse = |guarded: &Path, how: &str| {
        Err(Error::new(format!(
            "refusing to write into `{}`: it {how} `{}`, which forkbook never replaces",
            target.display(),
            guarded.display()
        ))
        .with_note("choose a folder outside the records folder that does not hold the project (a new folder in the project will do); `--force` does not change this"))
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
    Ok(())
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
        let (parent, name) = parent_and_name(target);
        fs::create_dir_all(parent)
            .with_context(|| format!("failed to create `{}`", parent.display()))?;
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
            // A run killed here leaves the new folder in place and the old one as its stage.
            count_write();
            fs::remove_dir_all(&self.staging).with_context(|| {
                format!("failed to remove the old copy `{}`", self.staging.display())
            })?;
        } else {
            fs::rename(&self.staging, &self.target).with_context(|| {
                format!("failed to move the new `{}` in", self.target.display())
            })?;
        }
        self.done = true;
        forkbook_records::atomic::sync_dir(parent_of(&self.target));
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

/// Clears the staging folders a killed run left beside `target` (`.NAME.forkbook-new-PID`), so
/// a run that stops before it stages anything (refused, failed) still leaves no dead run's
/// stage behind; with `locked`, also the temporary files of replaces killed inside `target`. A stage whose process is gone is removed; with `locked` (the caller holds the
/// [`ProjectLock`], under which alone a records folder is staged) every one is, since no live
/// run can be writing it, even where its PID was reused by another process.
pub fn clear_dead_stages(target: &Path, locked: bool) {
    let (parent, name) = parent_and_name(target);
    if locked {
        remove_stages(parent, &name, |_| true);
        for removed in remove_dead_temporaries(target) {
            super::notice::leave(format!(
                "removed `{}`, a temporary file a killed forkbook run left",
                removed.display()
            ));
        }
    } else {
        remove_stale_stages(parent, &name);
    }
}

/// The folder holding `target` and `target`'s own name, which its stages are named after.
fn parent_and_name(target: &Path) -> (&Path, String) {
    let name = target.file_name().unwrap_or_default();
    (parent_of(target), name.to_string_lossy().into_owned())
}

/// Staging folders left by runs that were killed: their process is gone, so nothing will swap
/// them in or remove them. Best effort; a folder that cannot be removed stays.
fn remove_stale_stages(parent: &Path, name: &str) {
    remove_stages(parent, name, |pid| {
        !Path::new(&format!("/proc/{pid}")).exists()
    });
}

/// Removes the stages of `name` in `parent` whose PID `dead` says is no live run's.
fn remove_stages(parent: &Path, name: &str, dead: impl Fn(u32) -> bool) {
    let prefix = format!(".{name}.forkbook-new-");
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        // This run's own stage is never a dead run's.
        if pid
            .parse::<u32>()
            .is_ok_and(|pid| pid != std::process::id() && dead(pid))
        {
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
        let locked = if std::env::var_os("FORKBOOK_LOCK_WAIT").is_some() {
            lock_file(&self.file, exclusive, false)
        } else {
            try_lock_a_moment(&self.file, exclusive)
        };
        match locked {
            Ok(()) => {
                self.exclusive = exclusive;
                Ok(())
            }
            Err(TryLockError::WouldBlock) => {
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
            Err(TryLockError::Error(e)) => {
                Err(Error::from(e).context(format!("failed to lock `{dir}`")))
            }
        }
    }
}

/// Locks `file` exclusively or shared: waiting for it, or only trying (`try_only`).
fn lock_file(
    file: &File,
    exclusive: bool,
    try_only: bool,
) -> std::result::Result<(), TryLockError> {
    match (exclusive, try_only) {
        (true, true) => file.try_lock(),
        (false, true) => file.try_lock_shared(),
        (true, false) => file.lock().map_err(TryLockError::Error),
        (false, false) => file.lock_shared().map_err(TryLockError::Error),
    }
}

/// Tries to lock `file` for half a second. A child process forked by another thread can hold the
/// lock for the moment between its fork and exec (it shares the open file); this gives such a
/// moment time to pass.
fn try_lock_a_moment(file: &File, exclusive: bool) -> std::result::Result<(), TryLockError> {
    for _ in 0..25 {
        match lock_file(file, exclusive, true) {
            Err(TryLockError::WouldBlock) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => return other,
        }
    }
    lock_file(file, exclusive, true)
}

/// The project's lock, held by every run that writes a record, from before it reads the records
/// until its last write: a read-modify-write of the register is then one step no other writer
/// can come between (a second writer waits with `FORKBOOK_LOCK_WAIT=1`, or is refused).
///
/// It is the exclusive [`RunLock`] on the project folder, taken once per thread: a run that holds
/// it (a command taking it before it reads the records) and then calls a writer that takes it
/// again (`sync::write`, `fix add` inside `drift api --draft`) shares the one lock instead of
/// refusing itself. Another thread or process is kept out as any second run is.
pub struct ProjectLock {
    _held: std::rc::Rc<RunLock>,
}

thread_local! {
    /// The project locks this thread holds, by the project folder's resolved path.
    static PROJECT_LOCKS: std::cell::RefCell<Vec<(PathBuf, std::rc::Weak<RunLock>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl ProjectLock {
    /// Takes the lock on the project folder `root`, or shares the one this thread holds.
    pub fn acquire(root: &Path) -> Result<ProjectLock> {
        let key = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let held = PROJECT_LOCKS.with(|locks| {
            locks
                .borrow()
                .iter()
                .find(|(path, _)| *path == key)
                .and_then(|(_, lock)| lock.upgrade())
        });
        if let Some(held) = held {
            return Ok(ProjectLock { _held: held });
        }
        let lock = std::rc::Rc::new(RunLock::acquire(root, "overlay")?);
        PROJECT_LOCKS.with(|locks| {
            let mut locks = locks.borrow_mut();
            locks.retain(|(_, lock)| lock.strong_count() > 0);
            locks.push((key, std::rc::Rc::downgrade(&lock)));
        });
        Ok(ProjectLock { _held: lock })
    }
}

/// Refuses when the file at `path` no longer holds `read` (what this run read from it, `None`:
/// it was absent), so a write planned from an older read never overwrites another run's record.
/// Called under the [`ProjectLock`], so nothing changes between this comparison and the write.
pub fn refuse_changed_since_read(path: &Path, read: Option<&[u8]>, shown: &str) -> Result<()> {
    let now = match fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::from(e).context(format!("failed to read `{shown}`"))),
    };
    if now.as_deref() == read {
        return Ok(());
    }
    Err(Error::new(format!(
        "`{shown}` changed while this run was working: another forkbook run wrote it; nothing was written"
    ))
    .with_note("run the command again: it reads the records as they are now (FORKBOOK_LOCK_WAIT=1 queues runs one after another)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_below_lists_regular_files_sorted_and_skips_what_it_is_told() {
        let tmp = tempfile::tempdir().unwrap();
        for file in ["b/x.o", "a.o", "CMakeFiles/3.25/probe.o", "CMakeFiles/y.o"] {
            write_file(&tmp.path().join(file), b"").unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink("a.o", tmp.path().join("link.o")).unwrap();
        let probe = |parent: &Path, name: &str| parent.ends_with("CMakeFiles") && name == "3.25";
        assert_eq!(
            files_below(tmp.path(), true, probe).unwrap(),
            ["CMakeFiles/y.o", "a.o", "b/x.o"]
        );
        let missing = tmp.path().join("none");
        assert!(files_below(&missing, true, |_, _| false).is_err());
        assert!(files_below(&missing, false, |_, _| false)
            .unwrap()
            .is_empty());
    }

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
    fn the_project_lock_is_shared_within_a_thread_and_refused_across_threads() {
        let tmp = tempfile::tempdir().unwrap();
        let outer = ProjectLock::acquire(tmp.path()).unwrap();
        let inner = ProjectLock::acquire(tmp.path()).unwrap();
        let root = tmp.path().to_path_buf();
        let other = std::thread::spawn(move || ProjectLock::acquire(&root).map(|_| ()))
            .join()
            .unwrap();
        let err = other.expect_err("another thread is refused");
        assert!(err.message().contains("another forkbook run"), "{err}");
        drop((outer, inner));
        let root = tmp.path().to_path_buf();
        std::thread::spawn(move || ProjectLock::acquire(&root).map(|_| ()))
            .join()
            .unwrap()
            .expect("free once the last holder is gone");
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
