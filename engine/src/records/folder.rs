//! Which file of a records folder is what: a record, a patch of the series, or one of the
//! overlay's whole files; and the errors for a folder whose files are not where the
//! configuration says.

use super::{
    CORE_RESIDUAL_FILE, FIXES_FILE, LOCK_FILE, PATCHES_DIR, README_FILE, RESIDUAL_FILE,
    UPSTREAM_FILE,
};
use crate::config::Layout;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::FileMap;
use forkbook_records::series::{series_name, PatchFile};

/// Names in the records folder that are records, never overlay files: forkbook's own and the
/// ones projects keep (the first user's `CORE_RESIDUAL.diff`).
const RECORD_FILES: &[&str] = &[
    UPSTREAM_FILE,
    FIXES_FILE,
    README_FILE,
    LOCK_FILE,
    RESIDUAL_FILE,
    CORE_RESIDUAL_FILE,
    "drift-suppressions.toml",
];

/// File names that desktops, editors and git leave in any folder: neither records nor overlay.
fn is_noise(name: &str) -> bool {
    matches!(
        name,
        ".DS_Store" | "Thumbs.db" | "desktop.ini" | ".gitignore" | ".gitattributes"
    ) || name.starts_with("._")
        || name.starts_with(".#")
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.contains(".forkbook-new-")
}

/// Whether `path` (relative to the records folder) is a record or noise rather than an overlay
/// file, when the whole files sit in the records folder itself.
///
/// A name that looks like noise is noise only outside the places the fork's files go (the
/// backend folder and the core files): a fork may hold a `.gitignore` or a `notes~` there, and
/// what `sync` writes from the fork must read back as the overlay. forkbook's own temporary
/// files (`.forkbook-new-`) are never overlay files.
pub fn is_record(project: &Project, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let config = &project.config.overlay;
    let fork_place = path.starts_with(config.backend_prefix.as_str())
        || config.core_files.iter().any(|c| c == path);
    RECORD_FILES.contains(&path)
        || config.records.iter().any(|r| {
            let r = r.trim_end_matches('/');
            path == r || path.starts_with(&format!("{r}/"))
        })
        || name.contains(".forkbook-new-")
        || (is_noise(name) && !fork_place)
}

/// A record's text, or an error naming it when it is not UTF-8.
pub fn utf8<'a>(project: &Project, name: &str, bytes: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(bytes)
        .map_err(|_| Error::new(format!("`{}` is not UTF-8", project.record_name(name))))
}

/// The records folder's `files` sorted: the patch series, the overlay's whole files, and where
/// those sit (`tree/`, or nothing for the folder itself); refused where the whole files are not
/// where the configuration says.
pub fn sort_folder(
    project: &Project,
    files: &FileMap,
) -> Result<(Vec<PatchFile>, FileMap, String)> {
    let tree_prefix = project.config.overlay.tree_prefix();
    let (patches, tree) = patches_and_tree(project, files, &tree_prefix)?;
    check_placement(project, files, &tree, &tree_prefix)?;
    Ok((patches, tree, tree_prefix))
}

/// The patch series (`patches/*.patch`) and the overlay's files (under the tree prefix, or every
/// file but the records where the files lie in the records folder itself) of a records folder.
fn patches_and_tree(
    project: &Project,
    files: &FileMap,
    tree_prefix: &str,
) -> Result<(Vec<PatchFile>, FileMap)> {
    let mut patches = Vec::new();
    let mut tree = FileMap::new();
    let in_place = project.config.overlay.layout == Layout::Files && tree_prefix.is_empty();
    for (path, bytes) in files {
        if in_place {
            if !is_record(project, path) {
                tree.insert(path.clone(), bytes.clone());
            }
        } else if path.starts_with(&format!("{PATCHES_DIR}/")) {
            if let Some(name) = series_name(path) {
                let text = utf8(project, path, bytes)?.to_string();
                let name = name.to_string();
                patches.push(PatchFile { name, text });
            }
        } else if let Some(rel) = path.strip_prefix(tree_prefix) {
            tree.insert(rel.to_string(), bytes.clone());
        }
    }
    Ok((patches, tree))
}

/// The overlay's files must be where the configuration says: one error naming the records folder
/// and the setting to change, rather than an overlay read as empty (every base file "removed").
fn check_placement(
    project: &Project,
    files: &FileMap,
    tree: &FileMap,
    tree_prefix: &str,
) -> Result<()> {
    let config = &project.config.overlay;
    let prefix = config.backend_prefix.as_str();
    let looks_like_overlay =
        |p: &str| p.starts_with(prefix) || config.core_files.iter().any(|c| c == p);
    let beside: Vec<&String> = files
        .keys()
        .filter(|p| looks_like_overlay(p) && !is_record(project, p))
        .collect();
    let folder = project.record_name("");
    match config.layout {
        Layout::Patch if !beside.is_empty() => Err(Error::new(format!(
            "`{folder}` holds whole overlay files ({}), but `[overlay] layout` is \"patch\", which keeps only patches there",
            first_names(&beside)
        ))
        .with_note("set `layout = \"files\"` and `tree = \".\"` under `[overlay]` in forkbook.toml to use the files where they are")),
        Layout::Files if !tree.keys().any(|p| p.starts_with(prefix)) => {
            Err(no_overlay_files(project, files, tree_prefix))
        }
        _ => Ok(()),
    }
}

/// Up to three of `paths`, quoted, and how many more there are.
fn first_names(paths: &[&String]) -> String {
    let mut names: Vec<String> = paths.iter().take(3).map(|p| format!("`{p}`")).collect();
    if paths.len() > 3 {
        names.push(format!("and {} more", paths.len() - 3));
    }
    names.join(", ")
}

/// The error for a files layout with no backend file under its tree: where the tree setting
/// points, and where the whole files seem to sit instead.
fn no_overlay_files(project: &Project, files: &FileMap, tree_prefix: &str) -> Error {
    let config = &project.config.overlay;
    let prefix = config.backend_prefix.as_str();
    let folder = project.record_name("");
    let setting = match config.tree.as_deref() {
        Some(tree) => format!("`[overlay] tree = \"{tree}\"`"),
        None => format!(
            "`[overlay] tree`, unset, means `{}`",
            crate::config::DEFAULT_TREE
        ),
    };
    let place = format!("`{folder}{tree_prefix}`");
    let err = Error::new(format!(
        "no overlay files under `{prefix}` in {place} ({setting})"
    ));
    let elsewhere: Vec<&String> = files
        .keys()
        .filter(|p| p.contains(&format!("/{prefix}")) || p.starts_with(prefix))
        .collect();
    match elsewhere.first() {
        Some(first) if !tree_prefix.is_empty() && first.starts_with(prefix) => err.with_note(format!(
            "the whole files sit in `{folder}` itself ({}): set `tree = \".\"` under `[overlay]` in forkbook.toml to use them there",
            first_names(&elsewhere)
        )),
        Some(first) => {
            let at = first.find(&format!("/{prefix}")).unwrap_or(0);
            err.with_note(format!(
                "the whole files sit in `{folder}{}/` ({}): set `tree = \"{}\"` under `[overlay]` in forkbook.toml",
                &first[..at],
                first_names(&elsewhere),
                &first[..at]
            ))
        }
        None => err.with_note(format!(
            "the files layout keeps the whole overlay there (the backend `{prefix}` and the core files); check `[overlay] tree` and `backend_prefix` in forkbook.toml"
        )),
    }
}
