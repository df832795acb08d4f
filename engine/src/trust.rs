//! What a run believes of the file system: which folders a pull request's checkout controls,
//! and when a cache's secret is this user's alone.
//!
//! A folder lies in the checkout when it is, or is below, the project folder, the git work tree
//! holding it or `GITHUB_WORKSPACE`. That is decided by the file system's identity of each
//! folder (device and inode), never by comparing paths: a bind mount of the checkout (or a link
//! to it) names the same folders by another path. [`untrusted_cache_folder`] is the one rule
//! every cache folder is held to: the results caches' home, the object cache's objects, the
//! build's ccache folder.
//!
//! The secret sealing the results caches is believed only when nobody else could have read or
//! written it ([`secret_refusal`]): a regular file (not a link) owned by this user, readable and
//! writable by this user alone, in a folder no other user can replace it in.

use forkbook_records::cache_entry::{Secret, SECRET_FILE};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why `folder`, a cache's folder (which need not exist yet), is not to be trusted by a run on
/// the project at `project_root` with its records in `records`, if it is not: it lies in the
/// records folder or in a folder the checkout controls ([`checkout_folders`]).
pub fn untrusted_cache_folder(
    project_root: &Path,
    records: &Path,
    folder: &Path,
) -> Option<String> {
    let within = nearest_existing(folder)?;
    let named = |guarded: &Path| (identity(guarded), guarded.to_path_buf());
    let guarded: Vec<_> = std::iter::once(records.to_path_buf())
        .chain(checkout_folders(project_root))
        .map(|dir| named(&dir))
        .filter_map(|(id, dir)| Some((id?, dir)))
        .collect();
    let ancestors = within.ancestors().filter_map(identity);
    for id in ancestors {
        if let Some((_, dir)) = guarded.iter().find(|(guarded, _)| *guarded == id) {
            return Some(format!(
                "`{}` lies inside `{}`, which the checkout controls",
                folder.display(),
                dir.display()
            ));
        }
    }
    None
}

/// The folders a pull request's checkout controls: the project folder, the git work tree
/// holding it (the nearest folder above with a `.git`), and `GITHUB_WORKSPACE` when set.
pub fn checkout_folders(project_root: &Path) -> Vec<PathBuf> {
    let mut folders = Vec::new();
    if let Ok(root) = std::fs::canonicalize(project_root) {
        if let Some(work_tree) = root.ancestors().find(|dir| dir.join(".git").exists()) {
            folders.push(work_tree.to_path_buf());
        }
        folders.push(root);
    }
    if let Some(workspace) = std::env::var_os("GITHUB_WORKSPACE") {
        if let Ok(workspace) = std::fs::canonicalize(workspace) {
            folders.push(workspace);
        }
    }
    folders
}

/// A folder as the file system knows it: its device and inode.
fn identity(dir: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(dir).ok().map(|m| (m.dev(), m.ino()))
}

/// `path` with its links resolved, or its nearest ancestor that exists.
fn nearest_existing(path: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    absolute
        .ancestors()
        .find_map(|at| std::fs::canonicalize(at).ok())
}

/// The secret in `home` (made there when there is none), if it is to be believed; otherwise
/// `Err` with the one-line reason, and no secret: the results caches then keep and believe
/// nothing. `home` is checked before the secret is read or made, the secret file before it is
/// read and again after (a run that makes it may find another's, made at the same moment).
pub fn secret_in(home: &Path) -> Result<Secret, String> {
    let path = home.join(SECRET_FILE);
    let facts = |path: &Path| std::fs::symlink_metadata(path).ok().map(|m| Facts::of(&m));
    let folder = facts(home).ok_or_else(|| format!("`{}` cannot be read", home.display()))?;
    let me = current_user();
    let check = |file: Option<Facts>| match secret_refusal(file, folder, me) {
        Some(why) => Err(format!("`{}` {why}", path.display())),
        None => Ok(()),
    };
    check(facts(&path))?;
    let secret = Secret::beside(home).map_err(|e| format!("`{}`: {e}", path.display()))?;
    match facts(&path) {
        None => Err(format!("`{}` went away while it was read", path.display())),
        file => check(file).map(|()| secret),
    }
}

fn current_user() -> u32 {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// What [`secret_refusal`] looks at of a file or folder: its owner and its mode (type bits
/// included), as `lstat` gives them.
#[derive(Debug, Clone, Copy)]
pub struct Facts {
    pub uid: u32,
    pub mode: u32,
}

impl Facts {
    pub fn of(meta: &std::fs::Metadata) -> Facts {
        Facts {
            uid: meta.uid(),
            mode: meta.mode(),
        }
    }

    fn kind(self) -> u32 {
        self.mode & libc::S_IFMT
    }
}

/// Why a secret file with `file`'s facts (`None`: not there yet, to be made) in a folder with
/// `folder`'s facts cannot be this user's (`me`) alone, if it cannot: the folder is another
/// user's, or others may write in it and it is not sticky (they could put their own file in
/// its place); the file is a link or not a regular file, another user's, or others may read or
/// write it.
pub fn secret_refusal(file: Option<Facts>, folder: Facts, me: u32) -> Option<String> {
    if folder.uid != me && folder.uid != 0 {
        return Some(format!(
            "lies in a folder of another user (uid {})",
            folder.uid
        ));
    }
    if folder.mode & 0o022 != 0 && folder.mode & libc::S_ISVTX == 0 {
        return Some(format!(
            "lies in a folder other users may write in (mode {:04o}, not sticky)",
            folder.mode & 0o7777
        ));
    }
    let file = file?;
    if file.kind() == libc::S_IFLNK {
        return Some("is a link".into());
    }
    if file.kind() != libc::S_IFREG {
        return Some("is not a regular file".into());
    }
    if file.uid != me {
        return Some(format!("belongs to another user (uid {})", file.uid));
    }
    if file.mode & 0o077 != 0 {
        return Some(format!(
            "may be read or written by other users (mode {:04o})",
            file.mode & 0o7777
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: u32 = 1000;
    const DIR: u32 = libc::S_IFDIR;
    const FILE: u32 = libc::S_IFREG;

    fn facts(uid: u32, mode: u32) -> Facts {
        Facts { uid, mode }
    }

    #[test]
    fn a_secret_of_this_user_alone_in_a_folder_of_its_own_is_believed() {
        let folder = facts(ME, DIR | 0o755);
        assert_eq!(
            secret_refusal(Some(facts(ME, FILE | 0o600)), folder, ME),
            None
        );
        assert_eq!(secret_refusal(None, folder, ME), None);
        // A sticky shared folder (like /tmp) keeps others from replacing this user's file.
        let sticky = facts(0, DIR | 0o1777);
        assert_eq!(
            secret_refusal(Some(facts(ME, FILE | 0o600)), sticky, ME),
            None
        );
    }

    #[test]
    fn a_secret_others_could_read_write_or_plant_is_refused() {
        let folder = facts(ME, DIR | 0o755);
        let refused = |file: Option<Facts>, folder: Facts| {
            secret_refusal(file, folder, ME).unwrap_or_else(|| panic!("{file:?} in {folder:?}"))
        };
        assert!(refused(Some(facts(ME, FILE | 0o666)), folder).contains("mode 0666"));
        assert!(refused(Some(facts(ME, FILE | 0o640)), folder).contains("other users"));
        assert!(refused(Some(facts(ME, FILE | 0o602)), folder).contains("other users"));
        assert!(refused(Some(facts(ME + 1, FILE | 0o600)), folder).contains("another user"));
        assert!(refused(Some(facts(ME, libc::S_IFLNK | 0o777)), folder).contains("link"));
        assert!(refused(Some(facts(ME, libc::S_IFIFO | 0o600)), folder).contains("regular"));
        // A planted key in a shared folder: refused for its owner, and the folder refused for
        // a key this user would make there.
        let shared = facts(0, DIR | 0o777);
        assert!(refused(Some(facts(ME + 1, FILE | 0o600)), shared).contains("not sticky"));
        assert!(refused(None, shared).contains("not sticky"));
        assert!(refused(None, facts(ME + 1, DIR | 0o755)).contains("another user"));
        assert!(refused(None, facts(ME, DIR | 0o775)).contains("write in"));
    }

    #[test]
    fn a_folder_reached_through_a_link_is_inside_the_checkout() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        std::fs::create_dir_all(project.join("records")).unwrap();
        let other = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&other).unwrap();
        std::os::unix::fs::symlink(&project, other.join("via")).unwrap();
        let records = project.join("records");
        let through = other.join("via").join(".cache").join("objects.git");
        let why = untrusted_cache_folder(&project, &records, &through).expect("inside");
        assert!(why.contains("which the checkout controls"), "{why}");
        let outside = other.join("cache").join("objects.git");
        assert_eq!(untrusted_cache_folder(&project, &records, &outside), None);
    }
}
