//! The demo world: a miniature MLX upstream and a miniature ROCm fork, as two bare git
//! repositories with real history.
//!
//! The C++ and CMake text is our own, hand-written for the demo, under `demo/files/`:
//! `upstream/` is the upstream tree at pin1, `fork/` the ROCm backend the fork adds, `f2/` the
//! file a later fork commit adds. Every later commit is a data file under `demo/history/` (its
//! message, the files it lays down or removes, and its text edits), made by one loop
//! (`make_commit`), so the history reads like a log and holds no C++ inside Rust strings.
//!
//! Upstream history (branch `main` of `upstream.git`): pin1, then one commit per API change
//! between pin1 and pin2: seven that break the ROCm backend (one of each break kind, listed in
//! [`BREAKS`]), three source-compatible ones that must not be reported, and two that touch the
//! files the fork hooks (one conflicts with the hook, one merges cleanly). pin2 is the last.
//!
//! Fork history (branch `rocm-support` of `fork.git`), starting at pin1: F1 adds the backend
//! and its core hooks, F2 and F3 change backend files, F4 merges upstream pin2.
//!
//! Signatures and times are fixed, so every run gives the same commit SHAs. Everything
//! compiles with g++ through CMake (`-DMLX_BUILD_ROCM=ON`); the HIP qualifiers are defined
//! empty unless `__HIP__` is set.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, RepositoryInitOptions, Signature, Time};

use crate::engine::error::{Context, Error, Result};
use crate::engine::FileMap;

/// The generated repositories and the commits the demo, the book and the tests talk about.
#[derive(Debug, Clone)]
pub struct World {
    /// Bare repository of the upstream, branch `main` at pin2.
    pub upstream: PathBuf,
    /// Bare repository of the fork, branch `rocm-support` at F4.
    pub fork: PathBuf,
    /// Upstream pin1, the fork's base.
    pub pin1: String,
    /// Upstream pin2, the candidate pin.
    pub pin2: String,
    /// F1..F4, full SHAs.
    pub fork_commits: Vec<String>,
    /// (kind, symbol, upstream commit that introduced it), in history order.
    pub breaks: Vec<(String, String, String)>,
    /// The upstream branch `next`, from pin1: N1..N6 (see [`NEXT_COMMITS`]), full SHAs.
    pub next: Vec<String>,
}

/// One API break between pin1 and pin2 and how it shows up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Break {
    /// What changed (the kind names `drift` uses).
    pub kind: &'static str,
    /// The upstream symbol, fully qualified, without parameters.
    pub symbol: &'static str,
    /// How a real build of the ROCm backend at pin2 fails.
    pub shows_as: BuildFailure,
    /// Where in the backend the failure is (a compile error) or what needs the symbol (a link
    /// error).
    pub backend_file: &'static str,
}

/// The way a break fails a real build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildFailure {
    /// A compile error whose text names the symbol.
    CompileError,
    /// An undefined symbol no object defines (seen by `nm`).
    Undefined,
}

/// The seven breaks, in the order of the upstream commits that introduce them.
pub const BREAKS: [Break; 7] = [
    Break {
        kind: "changed-signature",
        symbol: "mlx::core::collapse_contiguous_dims",
        shows_as: BuildFailure::CompileError,
        backend_file: "mlx/backend/rocm/copy.cpp",
    },
    Break {
        kind: "constructor-changed",
        symbol: "mlx::core::allocator::Buffer::Buffer",
        shows_as: BuildFailure::CompileError,
        backend_file: "mlx/backend/rocm/allocator.cpp",
    },
    Break {
        kind: "changed-signature",
        symbol: "mlx::core::array::set_data",
        shows_as: BuildFailure::CompileError,
        backend_file: "mlx/backend/rocm/kernels.cpp",
    },
    Break {
        kind: "missing-eval-gpu",
        symbol: "mlx::core::GatherQMM::eval_gpu",
        shows_as: BuildFailure::Undefined,
        backend_file: "mlx/backend/rocm/primitives.cpp",
    },
    Break {
        kind: "missing-backend-definition",
        symbol: "mlx::core::Event::is_signaled",
        shows_as: BuildFailure::Undefined,
        backend_file: "mlx/backend/rocm/event.cpp",
    },
    Break {
        kind: "hidden-by-new-declaration",
        symbol: "mlx::core::ceil_div",
        shows_as: BuildFailure::CompileError,
        backend_file: "mlx/backend/rocm/kernels.cpp",
    },
    Break {
        kind: "changed-signature",
        symbol: "mlx::core::gpu::new_stream",
        shows_as: BuildFailure::Undefined,
        backend_file: "mlx/backend/rocm/eval.cpp",
    },
];

/// A text replacement in one file: the unit every commit below is made of.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    pub path: String,
    pub old: String,
    pub new: String,
}

/// One commit of the demo history as data (`history/**/*.toml`): what it does to the previous
/// tree, in this order, and its message.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CommitData {
    message: String,
    /// Lays the embedded files of `files/<put>/` over the tree.
    #[serde(default)]
    put: Option<String>,
    /// Makes the fork's hooks (`history/fork-hooks.toml`).
    #[serde(default)]
    hooks: bool,
    #[serde(default)]
    remove: Vec<String>,
    #[serde(default)]
    edit: Vec<Edit>,
}

/// The history files, each with its name for errors.
macro_rules! history {
    ($($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!("history/", $file)))),*]
    };
}

/// The upstream commits after pin1, in order; the last one is pin2. The first seven are the
/// breaks of [`BREAKS`], in the same order.
const UPSTREAM_COMMITS: &[(&str, &str)] = history!(
    "upstream/01-collapse-returns-size.toml",
    "upstream/02-buffer-knows-its-size.toml",
    "upstream/03-set-data-takes-deleter.toml",
    "upstream/04-add-gather-qmm.toml",
    "upstream/05-add-event-is-signaled.toml",
    "upstream/06-add-ceil-div.toml",
    "upstream/07-new-stream-takes-priority.toml",
    "upstream/08-contiguous-strides-by-value.toml",
    "upstream/09-add-bfloat16.toml",
    "upstream/10-elem-to-loc-offset.toml",
    "upstream/11-device-index-from-env.toml",
    "upstream/12-cmake-version-definition.toml",
);

/// Upstream's branch `next`, from pin1: what `forkbook roll` forecasts over. N1 and N2 touch
/// nothing the overlay uses, N3 conflicts with the fork's `mlx/device.cpp` hook and N4 reverts
/// it, N5 is a break with a mechanical draft (a new primitive), N6 one without (a new
/// declaration hiding a function the backend calls unqualified).
pub const NEXT_COMMITS: &[(&str, &str)] = history!(
    "next/01-readme-build-type.toml",
    "next/02-tests-ctest.toml",
    "next/03-device-index-from-env.toml",
    "next/04-revert-device-index.toml",
    "next/05-add-gather-qmm.toml",
    "next/06-add-ceil-div.toml",
);

/// The fork's commits F1..F3 (F4 is a merge; see [`fork_merge_tree`]).
const FORK_COMMITS: &[(&str, &str)] = history!(
    "fork/01-add-rocm-backend.toml",
    "fork/02-faster-softmax.toml",
    "fork/03-fix-allocator-leak.toml",
);

const FORK_HOOKS: (&str, &str) = ("fork-hooks.toml", include_str!("history/fork-hooks.toml"));

/// The fork's hooks in upstream files, as edits of their pin1 versions. The last one is in
/// a file the overlay does not carry.
pub fn fork_hooks() -> Result<Vec<Edit>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Hooks {
        edit: Vec<Edit>,
    }
    let (name, text) = FORK_HOOKS;
    Ok(parse_history::<Hooks>(name, text)?.edit)
}

/// The history data file `name` (its text), read as `T`.
fn parse_history<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> Result<T> {
    toml::from_str(text).map_err(|e| Error::new(format!("demo world: history/{name}: {e}")))
}

/// Makes one commit of the history on `tree`; returns its message. The one loop every
/// upstream and fork commit of the demo goes through.
fn make_commit(tree: &mut Tree, (name, text): (&str, &str)) -> Result<String> {
    let commit: CommitData = parse_history(name, text)?;
    match commit.put.as_deref() {
        None => {}
        Some("fork") => tree.put_all(ROCM_BACKEND_FILES),
        Some("f2") => tree.put_all(F2_FILES),
        Some(other) => {
            return Err(Error::new(format!(
                "demo world: history/{name}: no embedded files `{other}`"
            )))
        }
    }
    if commit.hooks {
        for hook in fork_hooks()? {
            tree.apply(&hook)?;
        }
    }
    for path in &commit.remove {
        tree.remove(path)?;
    }
    for edit in &commit.edit {
        tree.apply(edit)?;
    }
    Ok(commit.message)
}

/// The author of upstream commits.
const UPSTREAM_AUTHOR: (&str, &str) = ("Ada Upstream", "ada@upstream.example");
/// The author of fork commits.
const FORK_AUTHOR: (&str, &str) = ("Rin Fork", "rin@fork.example");
/// pin1's time: 2026-01-05 09:00 UTC. Later commits are a day apart.
const EPOCH: i64 = 1_767_603_600;
const DAY: i64 = 86_400;

/// The files of a generated repository, one embedded text file each.
macro_rules! embedded {
    ($root:literal: $($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("files/", $root, "/", $path)))),*]
    };
}

const UPSTREAM_PIN1_FILES: &[(&str, &str)] = embedded!("upstream":
    "CMakeLists.txt",
    "LICENSE",
    "README.md",
    "mlx/CMakeLists.txt",
    "mlx/allocator.cpp",
    "mlx/allocator.h",
    "mlx/array.cpp",
    "mlx/array.h",
    "mlx/backend/common/utils.cpp",
    "mlx/backend/common/utils.h",
    "mlx/backend/cpu/CMakeLists.txt",
    "mlx/backend/cpu/primitives.cpp",
    "mlx/backend/cuda/CMakeLists.txt",
    "mlx/backend/cuda/allocator.cpp",
    "mlx/backend/cuda/eval.cpp",
    "mlx/backend/cuda/event.cpp",
    "mlx/backend/cuda/primitives.cpp",
    "mlx/backend/gpu/eval.h",
    "mlx/backend/gpu/primitives.cpp",
    "mlx/backend/no_gpu/CMakeLists.txt",
    "mlx/backend/no_gpu/allocator.cpp",
    "mlx/backend/no_gpu/eval.cpp",
    "mlx/backend/no_gpu/event.cpp",
    "mlx/backend/no_gpu/primitives.cpp",
    "mlx/device.cpp",
    "mlx/device.h",
    "mlx/dtype.h",
    "mlx/event.h",
    "mlx/fast.cpp",
    "mlx/fast.h",
    "mlx/fast_primitives.h",
    "mlx/mlx.h",
    "mlx/ops.cpp",
    "mlx/ops.h",
    "mlx/primitives.cpp",
    "mlx/primitives.h",
    "mlx/stream.cpp",
    "mlx/stream.h",
    "mlx/utils.cpp",
    "mlx/utils.h",
    "tests/CMakeLists.txt",
    "tests/tests.cpp",
);

const ROCM_BACKEND_FILES: &[(&str, &str)] = embedded!("fork":
    "mlx/backend/rocm/CMakeLists.txt",
    "mlx/backend/rocm/allocator.cpp",
    "mlx/backend/rocm/copy.cpp",
    "mlx/backend/rocm/device/utils.hpp",
    "mlx/backend/rocm/eval.cpp",
    "mlx/backend/rocm/event.cpp",
    "mlx/backend/rocm/kernels.cpp",
    "mlx/backend/rocm/matmul.cpp",
    "mlx/backend/rocm/no_gpu.h",
    "mlx/backend/rocm/old_copy.cpp",
    "mlx/backend/rocm/primitives.cpp",
    "mlx/backend/rocm/rocm.h",
);

const F2_FILES: &[(&str, &str)] = embedded!("f2": "mlx/backend/rocm/softmax.cpp");

/// A tree being edited from one commit to the next (the demo overlay builds its local fixes
/// with the same edits).
#[derive(Debug, Clone, Default)]
pub struct Tree {
    pub files: FileMap,
}

impl Tree {
    fn from_embedded(files: &[(&str, &str)]) -> Tree {
        let mut tree = Tree::default();
        tree.put_all(files);
        tree
    }

    pub fn put_all(&mut self, files: &[(&str, &str)]) {
        for (path, text) in files {
            self.files
                .insert(path.to_string(), text.as_bytes().to_vec().into());
        }
    }

    pub fn remove(&mut self, path: &str) -> Result<()> {
        let removed = self.files.remove(path).map(drop);
        removed.ok_or_else(|| Error::new(format!("demo world: no file `{path}` to delete")))
    }

    /// Replaces the one occurrence of `old` in `path` with `new`.
    pub fn edit(&mut self, path: &str, old: &str, new: &str) -> Result<()> {
        let content = self.text(path)?;
        let found = content.matches(old).count();
        if found != 1 {
            return Err(Error::new(format!(
                "demo world: `{path}` holds the text to replace {found} times, not once: `{old}`"
            )));
        }
        let edited = content.replacen(old, new, 1);
        self.files
            .insert(path.to_string(), edited.into_bytes().into());
        Ok(())
    }

    pub fn apply(&mut self, edit: &Edit) -> Result<()> {
        self.edit(&edit.path, &edit.old, &edit.new)
    }

    pub fn text(&self, path: &str) -> Result<String> {
        let bytes = self
            .files
            .get(path)
            .ok_or_else(|| Error::new(format!("demo world: no file `{path}`")))?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| Error::new(format!("demo world: `{path}` is not UTF-8")))
    }
}

/// Creates `upstream.git` and `fork.git` in `dir` (which must not hold them yet).
pub fn generate(dir: &Path) -> Result<World> {
    let upstream_path = dir.join("upstream.git");
    let fork_path = dir.join("fork.git");
    let upstream = init_bare(&upstream_path, "main")?;
    let fork = init_bare(&fork_path, "rocm-support")?;

    let history = upstream_history()?;
    let mut upstream_oids = Vec::new();
    for repo in [&upstream, &fork] {
        upstream_oids = write_upstream(repo, &history)?;
    }
    let pin1 = upstream_oids[0];
    let pin2 = *upstream_oids
        .last()
        .expect("upstream history is never empty");
    set_branch(&upstream, "main", pin2)?;

    let fork_commits = write_fork(
        &fork,
        &history[0].1,
        &history.last().expect("history").1,
        pin1,
        pin2,
    )?;
    set_branch(
        &fork,
        "rocm-support",
        *fork_commits.last().expect("fork history"),
    )?;

    let next = write_next(&upstream, &history[0].1, pin1)?;
    set_branch(&upstream, "next", *next.last().expect("next history"))?;

    let breaks = BREAKS
        .iter()
        .zip(&upstream_oids[1..])
        .map(|(b, oid)| (b.kind.to_string(), b.symbol.to_string(), oid.to_string()))
        .collect();
    Ok(World {
        upstream: upstream_path,
        fork: fork_path,
        pin1: pin1.to_string(),
        pin2: pin2.to_string(),
        fork_commits: fork_commits.iter().map(Oid::to_string).collect(),
        breaks,
        next: next.iter().map(Oid::to_string).collect(),
    })
}

/// Every upstream tree with its message: pin1 first, pin2 last.
pub fn upstream_history() -> Result<Vec<(String, Tree)>> {
    let mut tree = Tree::from_embedded(UPSTREAM_PIN1_FILES);
    let mut history = vec![(PIN1_MESSAGE.to_string(), tree.clone())];
    for &commit in UPSTREAM_COMMITS {
        let message = make_commit(&mut tree, commit)?;
        history.push((message, tree.clone()));
    }
    Ok(history)
}

/// The fork's trees F1..F3 (F4 is a merge; see [`fork_merge_tree`]).
pub fn fork_trees(pin1: &Tree) -> Result<Vec<(String, Tree)>> {
    let mut tree = pin1.clone();
    let mut trees = Vec::new();
    for &commit in FORK_COMMITS {
        let message = make_commit(&mut tree, commit)?;
        trees.push((message, tree.clone()));
    }
    Ok(trees)
}

const PIN1_MESSAGE: &str = "Initial import of minimlx

Lazy arrays, a dozen primitives, a CPU backend, a CUDA backend and a smoke
test, built with CMake.
";

fn init_bare(path: &Path, branch: &str) -> Result<Repository> {
    let mut options = RepositoryInitOptions::new();
    options.bare(true).initial_head(branch).mkdir(true);
    Repository::init_opts(path, &options)
        .with_context(|| format!("failed to create the demo repository `{}`", path.display()))
}

fn set_branch(repo: &Repository, branch: &str, oid: Oid) -> Result<()> {
    repo.reference(&format!("refs/heads/{branch}"), oid, true, "demo world")?;
    Ok(())
}

fn write_upstream(repo: &Repository, history: &[(String, Tree)]) -> Result<Vec<Oid>> {
    let mut oids: Vec<Oid> = Vec::new();
    for (day, (message, tree)) in history.iter().enumerate() {
        let parents: Vec<Oid> = oids.last().copied().into_iter().collect();
        let time = EPOCH + day as i64 * DAY;
        oids.push(commit(
            repo,
            tree,
            &parents,
            message,
            UPSTREAM_AUTHOR,
            time,
        )?);
    }
    Ok(oids)
}

/// Writes N1..N6 on pin1 into the upstream repository, in the evenings of pin1's days (so no
/// commit of `next` has the time, and the SHA, of one on `main`).
fn write_next(repo: &Repository, pin1: &Tree, pin1_oid: Oid) -> Result<Vec<Oid>> {
    let mut tree = pin1.clone();
    let mut oids = Vec::new();
    let mut parent = pin1_oid;
    for (n, &data) in NEXT_COMMITS.iter().enumerate() {
        let message = make_commit(&mut tree, data)?;
        let time = EPOCH + n as i64 * DAY + DAY / 2;
        parent = commit(repo, &tree, &[parent], &message, UPSTREAM_AUTHOR, time)?;
        oids.push(parent);
    }
    Ok(oids)
}

/// Writes F1..F4 into the fork repository (which already holds the upstream commits).
fn write_fork(
    repo: &Repository,
    pin1: &Tree,
    pin2: &Tree,
    pin1_oid: Oid,
    pin2_oid: Oid,
) -> Result<Vec<Oid>> {
    let trees = fork_trees(pin1)?;
    let mut oids = Vec::new();
    let mut parent = pin1_oid;
    for (n, (message, tree)) in trees.iter().enumerate() {
        // F1..F3 land in the afternoons of pin1's first days.
        let time = EPOCH + n as i64 * DAY + DAY / 4;
        parent = commit(repo, tree, &[parent], message, FORK_AUTHOR, time)?;
        oids.push(parent);
    }
    let merged = fork_merge_tree(&trees.last().expect("fork history").1, pin2)?;
    let time = EPOCH + UPSTREAM_COMMITS.len() as i64 * DAY + DAY / 4;
    let message = "Merge upstream main into rocm-support\n\nTakes upstream up to the version-definition change.\n";
    oids.push(commit(
        repo,
        &merged,
        &[parent, pin2_oid],
        message,
        FORK_AUTHOR,
        time,
    )?);
    Ok(oids)
}

fn commit(
    repo: &Repository,
    tree: &Tree,
    parents: &[Oid],
    message: &str,
    (name, email): (&str, &str),
    time: i64,
) -> Result<Oid> {
    let signature = Signature::new(name, email, &Time::new(time, 0))?;
    let tree = repo.find_tree(write_tree(repo, &tree.files)?)?;
    let parents = parents
        .iter()
        .map(|oid| repo.find_commit(*oid))
        .collect::<Result<Vec<_>, _>>()?;
    let parent_refs: Vec<&git2::Commit> = parents.iter().collect();
    Ok(repo.commit(None, &signature, &signature, message, &tree, &parent_refs)?)
}

/// Writes the files as nested git trees and returns the root tree's id.
pub fn write_tree(repo: &Repository, files: &FileMap) -> Result<Oid> {
    let empty = repo.find_tree(repo.treebuilder(None)?.write()?)?;
    let mut update = git2::build::TreeUpdateBuilder::new();
    for (path, content) in files {
        update.upsert(path.as_str(), repo.blob(content)?, git2::FileMode::Blob);
    }
    Ok(update.create_updated(repo, &empty)?)
}

// ---------------------------------------------------------------------------------------------
// Fork commits.
// ---------------------------------------------------------------------------------------------

/// The upstream files the fork hooks and the demo overlay carries (all hooks but the last).
pub const CORE_FILES: [&str; 4] = [
    "CMakeLists.txt",
    "mlx/CMakeLists.txt",
    "mlx/device.cpp",
    "mlx/fast.cpp",
];

/// F4's tree: upstream pin2 with the fork's backend at F3 and its hooks. The device.cpp hook
/// conflicts with upstream's change of the same lines and is resolved by keeping both.
pub fn fork_merge_tree(f3: &Tree, pin2: &Tree) -> Result<Tree> {
    let mut merged = pin2.clone();
    for (path, content) in &f3.files {
        if path.starts_with("mlx/backend/rocm/") {
            merged.files.insert(path.clone(), content.clone());
        }
    }
    for hook in fork_hooks()?
        .iter()
        .filter(|hook| hook.path != "mlx/device.cpp")
    {
        merged.apply(hook)?;
    }
    merged.edit(
        "mlx/device.cpp",
        "      gpu::is_available() ? Device::gpu : Device::cpu, default_index()};\n",
        "      gpu::is_available() && std::getenv(\"MLX_ROCM_PREFER_CPU\") == nullptr
          ? Device::gpu
          : Device::cpu,
      default_index()};\n",
    )?;
    merged.edit(
        "mlx/device.cpp",
        "  static Device default_device{\n",
        "  // ROCm: MLX_ROCM_PREFER_CPU keeps the CPU the default device where the GPU
  // also drives the display.
  static Device default_device{\n",
    )?;
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn branch_tip(repo: &Path, branch: &str) -> Oid {
        let repo = Repository::open_bare(repo).unwrap();
        repo.refname_to_id(&format!("refs/heads/{branch}")).unwrap()
    }

    #[test]
    fn generating_twice_gives_the_same_commits() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let first = generate(a.path()).unwrap();
        let second = generate(b.path()).unwrap();
        assert_eq!(first.pin1, second.pin1);
        assert_eq!(first.pin2, second.pin2);
        assert_eq!(first.fork_commits, second.fork_commits);
        assert_eq!(first.breaks, second.breaks);
        assert_eq!(first.fork_commits.len(), 4);
        assert_eq!(first.breaks.len(), BREAKS.len());
    }

    #[test]
    fn fork_base_is_pin1_and_branches_point_at_pin2_and_f4() {
        let dir = tempfile::tempdir().unwrap();
        let world = generate(dir.path()).unwrap();
        assert_eq!(branch_tip(&world.upstream, "main").to_string(), world.pin2);
        assert_eq!(
            branch_tip(&world.fork, "rocm-support").to_string(),
            world.fork_commits[3]
        );

        let fork = Repository::open_bare(&world.fork).unwrap();
        let f3 = Oid::from_str(&world.fork_commits[2]).unwrap();
        let pin2 = Oid::from_str(&world.pin2).unwrap();
        assert_eq!(fork.merge_base(f3, pin2).unwrap().to_string(), world.pin1);
        // F4 merged pin2: from then on the merge base is pin2.
        let f4 = Oid::from_str(&world.fork_commits[3]).unwrap();
        assert_eq!(fork.merge_base(f4, pin2).unwrap().to_string(), world.pin2);
    }

    #[test]
    fn each_break_is_introduced_by_its_own_upstream_commit() {
        let dir = tempfile::tempdir().unwrap();
        let world = generate(dir.path()).unwrap();
        let repo = Repository::open_bare(&world.upstream).unwrap();
        let mut walk = repo.revwalk().unwrap();
        walk.push(Oid::from_str(&world.pin2).unwrap()).unwrap();
        walk.hide(Oid::from_str(&world.pin1).unwrap()).unwrap();
        let between: Vec<String> = walk.map(|oid| oid.unwrap().to_string()).collect();
        assert_eq!(between.len(), UPSTREAM_COMMITS.len());
        let commits: std::collections::BTreeSet<&String> =
            world.breaks.iter().map(|b| &b.2).collect();
        assert_eq!(commits.len(), BREAKS.len());
        assert!(commits.iter().all(|c| between.contains(c)));
    }

    #[test]
    fn f1_to_f3_change_only_what_the_sync_cases_need() {
        let history = upstream_history().unwrap();
        let forks = fork_trees(&history[0].1).unwrap();
        let changed = |a: &Tree, b: &Tree| -> Vec<String> {
            let paths: std::collections::BTreeSet<&String> =
                a.files.keys().chain(b.files.keys()).collect();
            paths
                .into_iter()
                .filter(|p| a.files.get(*p) != b.files.get(*p))
                .cloned()
                .collect()
        };
        assert_eq!(
            changed(&forks[0].1, &forks[1].1),
            ["mlx/backend/rocm/eval.cpp", "mlx/backend/rocm/softmax.cpp"]
        );
        assert_eq!(
            changed(&forks[1].1, &forks[2].1),
            [
                "mlx/backend/rocm/allocator.cpp",
                "mlx/backend/rocm/old_copy.cpp"
            ]
        );
        let hooked: Vec<String> = changed(&history[0].1, &forks[0].1)
            .into_iter()
            .filter(|p| !p.starts_with("mlx/backend/rocm/"))
            .collect();
        assert_eq!(
            hooked,
            [
                "CMakeLists.txt",
                "mlx/CMakeLists.txt",
                "mlx/backend/cuda/eval.cpp",
                "mlx/device.cpp",
                "mlx/fast.cpp"
            ]
        );
    }

    fn merge_input<'a>(path: &str, tree: &'a Tree) -> git2::MergeFileInput<'a> {
        let mut file = git2::MergeFileInput::new();
        file.path(path).content(&tree.files[path]);
        file
    }

    #[test]
    fn only_device_cpp_conflicts_when_the_hooks_meet_pin2() {
        let history = upstream_history().unwrap();
        let (pin1, pin2) = (&history[0].1, &history.last().unwrap().1);
        let f1 = &fork_trees(pin1).unwrap()[0].1;
        let _repo = Repository::init(tempfile::tempdir().unwrap().path()).unwrap(); // initializes libgit2
        for hook in fork_hooks().unwrap() {
            let input = |tree| merge_input(&hook.path, tree);
            let merged = git2::merge_file(&input(pin1), &input(pin2), &input(f1), None).unwrap();
            assert_eq!(
                !merged.is_automergeable(),
                hook.path == "mlx/device.cpp",
                "{}",
                hook.path
            );
        }
    }
}
