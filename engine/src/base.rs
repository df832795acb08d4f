//! The base tree B(fork, base, pin): what the overlay would be with no local fixes.
//!
//! Backend files are the fork's, taken whole. Each core file is the 3-way merge of the fork's
//! version into the pin's, with the fork base as ancestor (`git merge-file pin base fork`);
//! conflict markers stay in, labelled with the commits, and the conflicts are listed.

use super::cache::{short, Cache};
use super::error::{Context, Result};
use super::merge::{merge3, Labels, Outcome};
use super::FileMap;
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

/// Builds B from the cache: the fork's files under `backend_prefix` plus each of `core_files`.
pub fn build(
    cache: &Cache,
    commits: Commits,
    core_files: &[String],
    backend_prefix: &str,
) -> Result<BaseTree> {
    let backend = cache
        .files_under(commits.fork, backend_prefix)
        .with_context(|| {
            format!(
                "failed to read the backend `{backend_prefix}` of fork commit `{}`",
                short(commits.fork)
            )
        })?;
    with_core(cache, commits, core_files, backend)
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
            backend.insert(path.clone(), bytes);
        }
    }
    with_core(cache, commits, core_files, backend)
}

fn with_core(
    cache: &Cache,
    commits: Commits,
    core_files: &[String],
    mut files: FileMap,
) -> Result<BaseTree> {
    let labels = (
        format!("pin {}", short(commits.pin)),
        format!("base {}", short(commits.base)),
        format!("fork {}", short(commits.fork)),
    );
    let labels = Labels {
        ours: &labels.0,
        base: &labels.1,
        theirs: &labels.2,
    };
    let mut core = Vec::new();
    for path in core_files {
        let base = cache.read(commits.base, path)?;
        let pin = cache.read(commits.pin, path)?;
        let fork = cache.read(commits.fork, path)?;
        let (content, outcome) = merge_core(
            path,
            base.as_deref(),
            pin.as_deref(),
            fork.as_deref(),
            labels,
        )?;
        if let Some(content) = content {
            files.insert(path.clone(), content);
        }
        core.push((path.clone(), outcome));
    }
    Ok(BaseTree { files, core })
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
