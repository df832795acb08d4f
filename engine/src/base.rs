//! The base tree B(fork, base, pin): what the overlay would be with no local fixes.
//!
//! Backend files are the fork's, taken whole. Each core file is the 3-way merge of the fork's
//! version into the pin's, with the fork base as ancestor (`git merge-file pin base fork`);
//! conflict markers stay in, labelled with the commits, and the conflicts are listed.

use super::cache::{short, Cache};
use super::digests::{FileDigests, KnownBlobs};
use super::error::{Context, Result};
use super::merge::{merge3, Labels, Outcome};
use super::FileMap;
use forkbook_records::residual_record::RecordedCommits;
use git2::Oid;
use serde::Serialize;

/// The three commits a base tree is built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commits {
    /// The vendored fork commit.
    pub fork: Oid,
    /// Its merge base with upstream.
    pub base: Oid,
    /// The upstream commit the build uses.
    pub pin: Oid,
}

impl Commits {
    pub fn describe(&self) -> String {
        format!(
            "fork {} (base {}) on pin {}",
            short(self.fork),
            short(self.base),
            short(self.pin)
        )
    }

    /// The commits as the residual record names them.
    pub fn recorded(&self) -> RecordedCommits {
        RecordedCommits {
            pin: self.pin.to_string(),
            fork: self.fork.to_string(),
            base: self.base.to_string(),
        }
    }
}

/// What happened to one core file when B was built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoreOutcome {
    /// The fork does not change it: the pin's file.
    Pin,
    /// Merged cleanly.
    Merged,
    /// Merged with this many conflict regions left in.
    Conflict(usize),
    /// New in the fork, absent upstream: the fork's file.
    ForkOnly,
    /// Absent from the result (deleted on one side, unchanged on the other, or never existed).
    Absent,
}

impl CoreOutcome {
    /// The outcome's short name, as the report's table shows it.
    pub fn name(&self) -> String {
        match self {
            CoreOutcome::Pin => "pin".into(),
            CoreOutcome::Merged => "merged".into(),
            CoreOutcome::Conflict(n) => format!("conflict ({n})"),
            CoreOutcome::ForkOnly => "fork only".into(),
            CoreOutcome::Absent => "absent".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct BaseTree {
    pub files: FileMap,
    /// Each core file and how it was made.
    pub core: Vec<(String, CoreOutcome)>,
}

impl BaseTree {
    pub fn conflicts(&self) -> Vec<(&str, usize)> {
        self.core
            .iter()
            .filter_map(|(p, o)| match o {
                CoreOutcome::Conflict(n) => Some((p.as_str(), *n)),
                _ => None,
            })
            .collect()
    }
}

/// Builds B from the cache: each of `core_files` plus the fork's files under `backend_prefix`.
pub fn build(
    cache: &Cache,
    commits: Commits,
    core_files: &[String],
    backend_prefix: &str,
) -> Result<BaseTree> {
    build_knowing(
        cache,
        commits,
        core_files,
        backend_prefix,
        &FileDigests::default(),
    )
}

/// [`build`], a file taken whole from `known` (the files layout's overlay, read from disk)
/// where that copy holds the blob: told by the SHA-256 kept for the blob, the blob is never
/// inflated (see `digests`).
pub fn build_knowing(
    cache: &Cache,
    commits: Commits,
    core_files: &[String],
    backend_prefix: &str,
    known: &FileDigests,
) -> Result<BaseTree> {
    let ids = [commits.fork, commits.base, commits.pin].map(|id| id.to_string());
    let mut tree: Vec<&str> = ids.iter().map(String::as_str).collect();
    tree.push(backend_prefix);
    tree.extend(core_files.iter().map(String::as_str));
    let mut known = KnownBlobs::open(|| cache.blob_digest_store(), &tree, known);
    let core = with_core(cache, commits, core_files, FileMap::new(), &mut known)?;
    let mut files = cache
        .files_under_known(commits.fork, backend_prefix, &mut known)
        .with_context(|| {
            format!(
                "failed to read the backend `{backend_prefix}` of fork commit `{}`",
                short(commits.fork)
            )
        })?;
    known.keep();
    files.extend(core.files);
    Ok(BaseTree {
        files,
        core: core.core,
    })
}

/// Part of B, for work that needs only the core files: those, plus the named backend files
/// (the ones local fixes touch, so the fixes still apply).
pub fn build_core(
    cache: &Cache,
    commits: Commits,
    core_files: &[String],
    backend_paths: &[String],
) -> Result<BaseTree> {
    let mut backend = FileMap::new();
    for path in backend_paths {
        if let Some(bytes) = cache.read(commits.fork, path)? {
            backend.insert(path.clone(), bytes.into());
        }
    }
    with_core(cache, commits, core_files, backend, &mut KnownBlobs::none())
}

fn with_core(
    cache: &Cache,
    commits: Commits,
    core_files: &[String],
    mut files: FileMap,
    known: &mut KnownBlobs,
) -> Result<BaseTree> {
    let labels = conflict_labels(commits);
    let [ours, base, theirs] = labels.each_ref().map(String::as_str);
    let labels = Labels { ours, base, theirs };
    let (mut made, to_merge) = decide_by_ids(cache, commits, core_files, known)?;
    if !to_merge.is_empty() {
        let merges: Vec<(&str, [Option<git2::Oid>; 3])> = to_merge
            .iter()
            .map(|&(i, ids)| (core_files[i].as_str(), ids))
            .collect();
        for ((i, _), merged) in to_merge.iter().zip(merged_cores(cache, &merges, labels)?) {
            made[*i] = Some((merged.0.map(crate::Bytes::from), merged.1));
        }
    }
    let mut core = Vec::new();
    for (path, made) in core_files.iter().zip(made) {
        let (content, outcome) = made.expect("every core file is made");
        if let Some(content) = content {
            files.insert(path.clone(), content);
        }
        core.push((path.clone(), outcome));
    }
    Ok(BaseTree { files, core })
}

/// A core file's content (none where it is absent) and outcome in the base tree.
type MadeCore = (Option<crate::Bytes>, CoreOutcome);

/// What the blob ids decide of each core file without reading it: a side that did not change
/// gives the other side's file (what `merge3` finds by comparing bytes). A file they do not
/// decide is `None`, and is in the second list with its position and ids, to merge. A file
/// taken whole is shared from `known` where that copy holds the blob.
#[allow(clippy::type_complexity)]
fn decide_by_ids(
    cache: &Cache,
    commits: Commits,
    core_files: &[String],
    known: &mut KnownBlobs,
) -> Result<(Vec<Option<MadeCore>>, Vec<(usize, [Option<git2::Oid>; 3])>)> {
    let tree =
        |commit: git2::Oid| -> Result<git2::Tree> { Ok(cache.repo().find_commit(commit)?.tree()?) };
    let trees = [tree(commits.base)?, tree(commits.pin)?, tree(commits.fork)?];
    let mut made: Vec<Option<MadeCore>> = Vec::new();
    let mut to_merge: Vec<(usize, [Option<git2::Oid>; 3])> = Vec::new();
    for path in core_files {
        let ids = [
            cache.blob_at(&trees[BASE], commits.base, path)?,
            cache.blob_at(&trees[PIN], commits.pin, path)?,
            cache.blob_at(&trees[FORK], commits.fork, path)?,
        ];
        made.push(match one_sided(ids) {
            Some((side, outcome)) => Some(match ids[side] {
                Some(id) => (Some(known.blob(id, path, |id| cache.blob(id))?), outcome),
                None => (None, CoreOutcome::Absent),
            }),
            None => {
                to_merge.push((made.len(), ids));
                None
            }
        });
    }
    Ok((made, to_merge))
}

/// The labels of a core file's conflict markers in the base tree: `pin 846d1762`,
/// `base 39886de4`, `fork 75915908` (ours, base, theirs).
pub fn conflict_labels(commits: Commits) -> [String; 3] {
    [
        format!("pin {}", short(commits.pin)),
        format!("base {}", short(commits.base)),
        format!("fork {}", short(commits.fork)),
    ]
}

/// Sides of a core file: base, pin, fork.
const BASE: usize = 0;
const PIN: usize = 1;
const FORK: usize = 2;

/// A core file no merge is needed for, by its blob ids at base, pin and fork (`None`: absent):
/// the side whose file B takes, and the outcome when that file exists. `None`: both sides
/// changed it. Agrees with [`merge_core`] on every combination (tested).
fn one_sided(ids: [Option<git2::Oid>; 3]) -> Option<(usize, CoreOutcome)> {
    let [base, pin, fork] = ids;
    if pin == fork {
        // Unchanged (pin) or the same change on both sides (merged).
        let outcome = if pin == base {
            CoreOutcome::Pin
        } else {
            CoreOutcome::Merged
        };
        return Some((PIN, outcome));
    }
    if fork == base {
        return Some((PIN, CoreOutcome::Pin));
    }
    if pin == base {
        let outcome = if base.is_none() {
            CoreOutcome::ForkOnly
        } else {
            CoreOutcome::Merged
        };
        return Some((FORK, outcome));
    }
    None
}

/// The core files both sides changed: their merges as kept beside the object cache for these
/// blobs and labels, or new merges (then kept for the next run).
fn merged_cores(
    cache: &Cache,
    merges: &[(&str, [Option<git2::Oid>; 3])],
    labels: Labels,
) -> Result<Vec<(Option<Vec<u8>>, CoreOutcome)>> {
    let store = cache.merge_store();
    let key = merge_store::key(merges, labels);
    let outcome = |regions| match regions {
        0 => CoreOutcome::Merged,
        n => CoreOutcome::Conflict(n),
    };
    if let Some(kept) = merge_store::load(&store, &key, merges) {
        return Ok(kept
            .into_iter()
            .map(|(regions, content)| (Some(content), outcome(regions)))
            .collect());
    }
    let mut made = Vec::new();
    for (path, ids) in merges {
        let read = |side: usize| ids[side].map(|id| cache.blob(id)).transpose();
        let (base, pin, fork) = (read(BASE)?, read(PIN)?, read(FORK)?);
        let (content, outcome) = merge_core(
            path,
            base.as_deref(),
            pin.as_deref(),
            fork.as_deref(),
            labels,
        )?;
        made.push((content, outcome));
    }
    let keep: Option<Vec<(&str, usize, &[u8])>> = merges
        .iter()
        .zip(&made)
        .map(|((path, _), (content, outcome))| {
            let regions = match outcome {
                CoreOutcome::Merged => 0,
                CoreOutcome::Conflict(n) => *n,
                _ => return None,
            };
            Some((*path, regions, content.as_deref()?))
        })
        .collect();
    if let Some(keep) = keep {
        merge_store::save(&store, &key, &keep);
    }
    Ok(made)
}

/// Core-file merges on disk, beside the object cache: a merge is a pure function of the three
/// blobs, the labels and the merge code (libgit2's version, forkbook's), so an entry keyed by a
/// hash over all of them is never stale. One entry holds every merge of a base tree, so
/// `status`, `residual`, `sync --check` and `check` at the same commits read one file instead of
/// thirty blobs and ten merges of files up to 200 kB (the real overlay). An entry is one sealed
/// cache entry (`forkbook_records::cache_entry`): a damaged, forged or missing one is a miss
/// (the merges are made again), and failing to keep one costs the next run its reuse, never
/// this run its result.
mod merge_store {
    use super::Labels;
    use forkbook_records::cache_entry::{Key, KeyBuilder, Store};
    use git2::Oid;

    /// The key of the merges of these files (each with its blob ids at base, pin and fork).
    pub fn key(merges: &[(&str, [Option<Oid>; 3])], labels: Labels) -> Key {
        let (major, minor, patch) = git2::Version::get().libgit2_version();
        let mut key = KeyBuilder::new("core merges");
        key.part(env!("CARGO_PKG_VERSION"))
            .part(format!("libgit2 {major}.{minor}.{patch}"))
            .part(labels.base)
            .part(labels.ours)
            .part(labels.theirs);
        for (path, ids) in merges {
            key.part(path);
            for id in ids {
                match id {
                    Some(id) => key.part(id.as_bytes()),
                    None => key.part([]),
                };
            }
        }
        key.finish()
    }

    /// The kept merges for `key` (conflict regions and content of each of `merges`, in order),
    /// if a whole entry is there.
    pub fn load(
        store: &Store,
        key: &Key,
        merges: &[(&str, [Option<Oid>; 3])],
    ) -> Option<Vec<(usize, Vec<u8>)>> {
        let payload = store.load(key)?;
        let mut rest = &payload[..];
        let mut kept = Vec::new();
        for (path, _) in merges {
            let end = rest.iter().position(|&b| b == b'\n')?;
            let header = std::str::from_utf8(&rest[..end]).ok()?;
            let mut fields = header.splitn(3, ' ');
            let regions: usize = fields.next()?.parse().ok()?;
            let len: usize = fields.next()?.parse().ok()?;
            if fields.next()? != *path || rest.len() - (end + 1) < len {
                return None;
            }
            kept.push((regions, rest[end + 1..end + 1 + len].to_vec()));
            rest = &rest[end + 1 + len..];
        }
        rest.is_empty().then_some(kept)
    }

    /// Keeps the merges (path, conflict regions, content) under `key`; errors are ignored (the
    /// next run merges again).
    pub fn save(store: &Store, key: &Key, merges: &[(&str, usize, &[u8])]) {
        let mut payload = Vec::new();
        for (path, regions, content) in merges {
            payload.extend_from_slice(format!("{regions} {} {path}\n", content.len()).as_bytes());
            payload.extend_from_slice(content);
        }
        let _ = store.save(key, &payload);
    }
}

/// Labels that name the sides only (`pin`, `base`, `fork`), where no marker is written: for
/// counting conflict regions and tracing them.
pub const SIDE_LABELS: Labels<'static> = Labels {
    ours: "pin",
    base: "base",
    theirs: "fork",
};

/// The conflict regions the 3-way merge of one core file leaves (0 when it merges cleanly):
/// what `retarget --stepwise` and `roll` follow commit by commit.
pub fn conflict_regions(
    path: &str,
    base: Option<&[u8]>,
    pin: Option<&[u8]>,
    fork: Option<&[u8]>,
    labels: Labels,
) -> Result<usize> {
    let (_, outcome) = merge_core(path, base, pin, fork, labels)?;
    Ok(match outcome {
        CoreOutcome::Conflict(n) => n,
        _ => 0,
    })
}

/// One core file: the fork's change (base -> fork) carried onto the pin.
pub fn merge_core(
    path: &str,
    base: Option<&[u8]>,
    pin: Option<&[u8]>,
    fork: Option<&[u8]>,
    labels: Labels,
) -> Result<(Option<Vec<u8>>, CoreOutcome)> {
    let merged = merge3(path, base, pin, fork, labels)?;
    let outcome = match (&merged.content, merged.outcome) {
        (None, _) => CoreOutcome::Absent,
        (_, Outcome::Conflict { regions, .. }) => CoreOutcome::Conflict(regions),
        (_, Outcome::Unchanged | Outcome::Ours) => CoreOutcome::Pin,
        (_, Outcome::Theirs) if base.is_none() => CoreOutcome::ForkOnly,
        (_, Outcome::Theirs | Outcome::Same | Outcome::Merged) => CoreOutcome::Merged,
    };
    Ok((merged.content, outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABELS: Labels = Labels {
        ours: "pin 2222222",
        base: "base 1111111",
        theirs: "fork 3333333",
    };

    /// Deciding by blob ids gives what merging the bytes gives, for every way the three sides
    /// can be equal, different or absent.
    #[test]
    fn one_sided_agrees_with_merge_core_on_every_combination() {
        let contents: [Option<&[u8]>; 4] = [None, Some(b"a\n"), Some(b"b\n"), Some(b"c\n")];
        let id = |c: Option<&[u8]>| {
            c.map(|bytes| git2::Oid::hash_object(git2::ObjectType::Blob, bytes).unwrap())
        };
        let mut decided = 0;
        for base in contents {
            for pin in contents {
                for fork in contents {
                    let (merged, outcome) = merge_core("f.cpp", base, pin, fork, LABELS).unwrap();
                    let Some((side, by_ids)) = one_sided([id(base), id(pin), id(fork)]) else {
                        assert!(
                            matches!(outcome, CoreOutcome::Merged | CoreOutcome::Conflict(_)),
                            "{base:?} {pin:?} {fork:?}: {outcome:?}"
                        );
                        continue;
                    };
                    decided += 1;
                    let taken = [base, pin, fork][side];
                    assert_eq!(
                        taken.map(<[u8]>::to_vec),
                        merged,
                        "{base:?} {pin:?} {fork:?}"
                    );
                    let by_ids = if taken.is_some() {
                        by_ids
                    } else {
                        CoreOutcome::Absent
                    };
                    assert_eq!(by_ids, outcome, "{base:?} {pin:?} {fork:?}");
                }
            }
        }
        assert!(decided > 30, "most combinations need no merge: {decided}");
    }

    #[test]
    fn kept_merges_are_read_back_and_a_damaged_entry_is_a_miss() {
        use forkbook_records::cache_entry::{Secret, Store};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path(), "core merges", Some(Secret::from_bytes([1; 32])));
        let id = |b: &[u8]| Some(git2::Oid::hash_object(git2::ObjectType::Blob, b).unwrap());
        let merges = [
            ("a.cpp", [id(b"1"), id(b"2"), id(b"3")]),
            ("dir/b with space.h", [None, id(b"4"), id(b"5")]),
        ];
        let key = merge_store::key(&merges, LABELS);
        assert_eq!(merge_store::load(&store, &key, &merges), None);
        let kept: [(&str, usize, &[u8]); 2] = [
            ("a.cpp", 0, b"merged\n"),
            ("dir/b with space.h", 2, b"<<<<<<< pin\nx\n"),
        ];
        merge_store::save(&store, &key, &kept);
        assert_eq!(
            merge_store::load(&store, &key, &merges),
            Some(vec![
                (0, b"merged\n".to_vec()),
                (2, b"<<<<<<< pin\nx\n".to_vec())
            ])
        );
        let file = store.path(&key);
        let whole = std::fs::read(&file).unwrap();
        std::fs::write(&file, &whole[..whole.len() - 1]).unwrap();
        assert_eq!(merge_store::load(&store, &key, &merges), None, "cut short");
        let mut same_length = whole.clone();
        let last = same_length.len() - 2;
        same_length[last] ^= 0x20;
        std::fs::write(&file, &same_length).unwrap();
        assert_eq!(
            merge_store::load(&store, &key, &merges),
            None,
            "a damaged byte"
        );
        let other = Labels {
            ours: "pin 9999999",
            ..LABELS
        };
        assert_ne!(
            key,
            merge_store::key(&merges, other),
            "the labels are in the key"
        );
        assert_ne!(
            key,
            merge_store::key(&merges[..1], LABELS),
            "so is every file"
        );
    }
}
