//! The demo world: a miniature MLX upstream and a miniature ROCm fork, as two bare git
//! repositories with real history.
//!
//! The C++ and CMake text is our own, hand-written for the demo, under `demo/files/`:
//! `upstream/` is the upstream tree at pin1, `fork/` the ROCm backend the fork adds, `f2/` the
//! file a later fork commit adds. Every later commit is one function below that edits the
//! previous tree and returns its message, so the history reads like a log.
//!
//! Upstream history (branch `main` of `upstream.git`): pin1, then one commit per API change
//! between pin1 and pin2: six that break the ROCm backend (one of each break kind, listed in
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

/// The six breaks, in the order of the upstream commits that introduce them.
pub const BREAKS: [Break; 6] = [
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
];

/// A text replacement in one file: the unit every commit below is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edit {
    pub path: &'static str,
    pub old: &'static str,
    pub new: &'static str,
}

/// F3's change to the ROCm allocator. The demo overlay's local fix 2 makes exactly this
/// change, so a sync to F3 reports that fix as droppable.
pub const ALLOCATOR_LEAK_FIX: Edit = Edit {
    path: "mlx/backend/rocm/allocator.cpp",
    old: "  void free(Buffer buffer) override {\n    // Blocks go back to the pool when the cache is trimmed.\n    (void)buffer;\n  }\n",
    new: "  void free(Buffer buffer) override {\n    hipFree(buffer.ptr());\n  }\n",
};

/// The lines of `mlx/backend/rocm/eval.cpp` that F2 rewrites (`gpu::eval`'s body). A local
/// fix that edits these lines conflicts with F2 on sync.
pub const EVAL_DISPATCH_LINES: &str =
    "  auto& primitive = arr.primitive();\n  std::vector<array> outputs{arr};\n  primitive.eval_gpu(arr.inputs(), outputs);\n";

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
                .insert(path.to_string(), text.as_bytes().to_vec());
        }
    }

    pub fn remove(&mut self, path: &str) -> Result<()> {
        match self.files.remove(path) {
            Some(_) => Ok(()),
            None => Err(Error::new(format!(
                "demo world: no file `{path}` to delete"
            ))),
        }
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
        self.files.insert(path.to_string(), edited.into_bytes());
        Ok(())
    }

    pub fn apply(&mut self, edit: &Edit) -> Result<()> {
        self.edit(edit.path, edit.old, edit.new)
    }

    pub fn text(&self, path: &str) -> Result<String> {
        let bytes = self
            .files
            .get(path)
            .ok_or_else(|| Error::new(format!("demo world: no file `{path}`")))?;
        String::from_utf8(bytes.clone())
            .map_err(|_| Error::new(format!("demo world: `{path}` is not UTF-8")))
    }
}

/// An upstream commit after pin1: it edits the tree and returns its message.
type Change = fn(&mut Tree) -> Result<&'static str>;

/// The upstream commits after pin1, in order; the last one is pin2. The first six are the
/// breaks of [`BREAKS`], in the same order.
const UPSTREAM_CHANGES: [Change; 11] = [
    collapse_returns_size,
    buffer_knows_its_size,
    set_data_takes_deleter,
    add_gather_qmm,
    add_event_is_signaled,
    add_ceil_div,
    contiguous_strides_by_value,
    add_bfloat16,
    elem_to_loc_offset,
    device_index_from_env,
    cmake_version_definition,
];

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
    })
}

/// Every upstream tree with its message: pin1 first, pin2 last.
pub fn upstream_history() -> Result<Vec<(&'static str, Tree)>> {
    let mut tree = Tree::from_embedded(UPSTREAM_PIN1_FILES);
    let mut history = vec![(PIN1_MESSAGE, tree.clone())];
    for change in UPSTREAM_CHANGES {
        let message = change(&mut tree)?;
        history.push((message, tree.clone()));
    }
    Ok(history)
}

/// The fork's trees F1..F3 (F4 is a merge; see [`fork_merge_tree`]).
pub fn fork_trees(pin1: &Tree) -> Result<Vec<(&'static str, Tree)>> {
    let mut tree = pin1.clone();
    let mut trees = Vec::new();
    for change in [
        add_rocm_backend as Change,
        faster_softmax,
        fix_allocator_leak,
    ] {
        let message = change(&mut tree)?;
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

fn write_upstream(repo: &Repository, history: &[(&str, Tree)]) -> Result<Vec<Oid>> {
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
    let time = EPOCH + UPSTREAM_CHANGES.len() as i64 * DAY + DAY / 4;
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
    let entries: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_slice()))
        .collect();
    write_dir(repo, &entries)
}

fn write_dir(repo: &Repository, entries: &[(&str, &[u8])]) -> Result<Oid> {
    let mut builder = repo.treebuilder(None)?;
    let mut subdirs: std::collections::BTreeMap<&str, Vec<(&str, &[u8])>> = Default::default();
    for (path, content) in entries {
        match path.split_once('/') {
            Some((dir, rest)) => subdirs.entry(dir).or_default().push((rest, content)),
            None => {
                builder.insert(path, repo.blob(content)?, 0o100644)?;
            }
        }
    }
    for (dir, children) in subdirs {
        builder.insert(dir, write_dir(repo, &children)?, 0o040000)?;
    }
    Ok(builder.write()?)
}

// ---------------------------------------------------------------------------------------------
// Upstream commits after pin1. Each edits the tree and returns its message.
// ---------------------------------------------------------------------------------------------

const COMMON_UTILS_H: &str = "mlx/backend/common/utils.h";
const COMMON_UTILS_CPP: &str = "mlx/backend/common/utils.cpp";

/// Break 1: a changed return tuple.
fn collapse_returns_size(t: &mut Tree) -> Result<&'static str> {
    t.edit(COMMON_UTILS_H, "#include <utility>\n", "#include <tuple>\n")?;
    t.edit(
        COMMON_UTILS_H,
        "// possible.\nstd::pair<Shape, Strides> collapse_contiguous_dims(",
        "// possible. Also returns the number of elements.\nstd::tuple<Shape, Strides, int64_t> collapse_contiguous_dims(",
    )?;
    t.edit(
        COMMON_UTILS_CPP,
        "std::pair<Shape, Strides> collapse_contiguous_dims(",
        "std::tuple<Shape, Strides, int64_t> collapse_contiguous_dims(",
    )?;
    t.edit(
        COMMON_UTILS_CPP,
        "  return {out_shape, out_strides};\n",
        "  int64_t size = 1;\n  for (auto dim : out_shape) {\n    size *= dim;\n  }\n  return {out_shape, out_strides, size};\n",
    )?;
    Ok(
        "common: return the element count from collapse_contiguous_dims

Callers that launch kernels need the number of elements of the collapsed
shape; returning it saves them a second pass over the dimensions.
",
    )
}

/// Break 2: a constructor gains an argument.
fn buffer_knows_its_size(t: &mut Tree) -> Result<&'static str> {
    t.edit(
        "mlx/allocator.h",
        "  explicit Buffer(void* ptr) : ptr_(ptr) {}\n",
        "  Buffer(void* ptr, size_t size) : ptr_(ptr), size_(size) {}\n",
    )?;
    t.edit(
        "mlx/allocator.h",
        "  const void* ptr() const {\n    return ptr_;\n  }\n",
        "  const void* ptr() const {\n    return ptr_;\n  }\n\n  size_t size() const {\n    return size_;\n  }\n",
    )?;
    t.edit(
        "mlx/allocator.h",
        "  void* ptr_;\n",
        "  void* ptr_;\n  size_t size_;\n",
    )?;
    t.edit(
        "mlx/array.cpp",
        "allocator::Buffer data{nullptr};",
        "allocator::Buffer data{nullptr, 0};",
    )?;
    t.edit(
        "mlx/backend/no_gpu/allocator.cpp",
        "return Buffer(std::malloc(size));",
        "return Buffer(std::malloc(size), size);",
    )?;
    t.edit(
        "mlx/backend/cuda/allocator.cpp",
        "return Buffer(ptr);",
        "return Buffer(ptr, ptr != nullptr ? size : 0);",
    )?;
    Ok("allocator: buffers know their size

Buffer now records the size it was allocated with, so the memory statistics
no longer ask the allocator. Allocators pass the size to the constructor.
")
}

/// Break 3: a member function gains a parameter.
fn set_data_takes_deleter(t: &mut Tree) -> Result<&'static str> {
    t.edit(
        "mlx/array.h",
        "#include <cstdint>\n",
        "#include <cstdint>\n#include <functional>\n",
    )?;
    t.edit(
        "mlx/array.h",
        "class Primitive;\n",
        "class Primitive;\n\n// Frees the memory of an array; set_data takes one.\nusing Deleter = std::function<void(allocator::Buffer)>;\n",
    )?;
    t.edit(
        "mlx/array.h",
        "  // Gives the array its memory; the array frees it with the last reference.\n  void set_data(allocator::Buffer buffer);\n",
        "  // Gives the array its memory; d frees it with the last reference.\n  void set_data(allocator::Buffer buffer, Deleter d);\n",
    )?;
    t.edit(
        "mlx/array.cpp",
        "  bool available{false};\n",
        "  Deleter deleter;\n  bool available{false};\n",
    )?;
    t.edit(
        "mlx/array.cpp",
        "    if (data.ptr() != nullptr) {\n      allocator::free(data);\n    }\n",
        "    if (deleter) {\n      deleter(data);\n    }\n",
    )?;
    t.edit(
        "mlx/array.cpp",
        "set_data(allocator::malloc(sizeof(float) * data.size()));",
        "set_data(allocator::malloc(sizeof(float) * data.size()), allocator::free);",
    )?;
    t.edit(
        "mlx/array.cpp",
        "void array::set_data(allocator::Buffer buffer) {\n  desc_->data = buffer;\n",
        "void array::set_data(allocator::Buffer buffer, Deleter d) {\n  desc_->data = buffer;\n  desc_->deleter = std::move(d);\n",
    )?;
    t.edit(
        "mlx/backend/cpu/primitives.cpp",
        "out.set_data(allocator::malloc(out.nbytes()));",
        "out.set_data(allocator::malloc(out.nbytes()), allocator::free);",
    )?;
    Ok("array: set_data takes the deleter of the buffer

Arrays that wrap memory they do not own (views of external buffers) need
to say how it is released; every caller now passes the deleter.
")
}

/// Break 4: a new primitive that every GPU backend must implement or stub.
fn add_gather_qmm(t: &mut Tree) -> Result<&'static str> {
    t.edit(
        "mlx/primitives.h",
        "    return \"DivMod\";\n  }\n};\n",
        "    return \"DivMod\";\n  }\n};\n
// Matrix multiplication with weights gathered per row, for mixture of experts
// layers. The weights arrive dequantized.
class GatherQMM : public UnaryPrimitive {
 public:
  GatherQMM(Stream stream, int group_size, int bits)
      : UnaryPrimitive(stream), group_size_(group_size), bits_(bits) {}

  void eval_cpu(const std::vector<array>& inputs, array& out) override;
  void eval_gpu(const std::vector<array>& inputs, array& out) override;

  const char* name() const override {
    return \"GatherQMM\";
  }

 private:
  int group_size_;
  int bits_;
};
",
    )?;
    t.edit(
        "mlx/backend/cpu/primitives.cpp",
        "void Log::eval_cpu(",
        "void GatherQMM::eval_cpu(const std::vector<array>& inputs, array& out) {
  Matmul(stream()).eval_cpu({inputs[0], inputs[1]}, out);
}

void Log::eval_cpu(",
    )?;
    for path in [
        "mlx/backend/no_gpu/primitives.cpp",
        "mlx/backend/cuda/primitives.cpp",
    ] {
        t.edit(path, "NO_GPU(Exp)\n", "NO_GPU(Exp)\nNO_GPU(GatherQMM)\n")?;
    }
    t.edit(
        "mlx/ops.h",
        "array exp(const array& a, StreamOrDevice s = {});\n",
        "array exp(const array& a, StreamOrDevice s = {});\narray gather_qmm(\n    const array& x,\n    const array& w,\n    int group_size,\n    int bits,\n    StreamOrDevice s = {});\n",
    )?;
    t.edit(
        "mlx/ops.cpp",
        "array log(const array& a, StreamOrDevice s) {",
        "array gather_qmm(
    const array& x,
    const array& w,
    int group_size,
    int bits,
    StreamOrDevice s) {
  auto stream = to_stream(s);
  Shape out_shape{x.shape()[0], w.shape()[1]};
  return array(
      out_shape,
      x.dtype(),
      std::make_shared<GatherQMM>(stream, group_size, bits),
      {x, w});
}

array log(const array& a, StreamOrDevice s) {",
    )?;
    Ok("primitives: add GatherQMM

Quantized matrix multiplication with gathered weights, used by mixture of
experts layers. The CPU runs it as a matmul of the dequantized weights; the
GPU backends stub it until they have a kernel.
")
}

/// Break 5: a new member every backend must define.
fn add_event_is_signaled(t: &mut Tree) -> Result<&'static str> {
    t.edit(
        "mlx/event.h",
        "  void signal();\n",
        "  void signal();\n\n  // Whether the event has been signaled, without blocking.\n  bool is_signaled() const;\n",
    )?;
    t.edit(
        "mlx/event.h",
        "  std::shared_ptr<void> event_;\n};\n",
        "  std::shared_ptr<void> event_;\n};\n\n// Waits for e unless it is already signaled.\nvoid wait_for(Event& e);\n",
    )?;
    t.edit(
        "mlx/stream.cpp",
        "#include \"mlx/stream.h\"\n",
        "#include \"mlx/stream.h\"\n#include \"mlx/event.h\"\n",
    )?;
    t.edit(
        "mlx/stream.cpp",
        "void synchronize(Stream s) {",
        "void wait_for(Event& e) {\n  if (!e.is_signaled()) {\n    e.wait();\n  }\n}\n\nvoid synchronize(Stream s) {",
    )?;
    t.edit(
        "mlx/backend/no_gpu/event.cpp",
        "  s.cv.notify_all();\n}\n",
        "  s.cv.notify_all();\n}\n
bool Event::is_signaled() const {
  auto& s = state(event_);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.signaled;
}
",
    )?;
    t.edit(
        "mlx/backend/cuda/event.cpp",
        "  cudaEventRecord(handle(event_));\n}\n",
        "  cudaEventRecord(handle(event_));\n}\n
bool Event::is_signaled() const {
  return cudaEventQuery(handle(event_)) == cudaSuccess;
}
",
    )?;
    Ok("event: add Event::is_signaled

Lets the scheduler skip waiting on events that have already fired. Each
backend defines it next to wait and signal.
")
}

/// Break 6: a host-only template that hides the backend's global ceil_div.
fn add_ceil_div(t: &mut Tree) -> Result<&'static str> {
    t.edit(
        "mlx/utils.h",
        "Stream to_stream(StreamOrDevice s);\n",
        "Stream to_stream(StreamOrDevice s);

// Integer division rounding up, for grid and tile sizes.
template <typename T>
T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}
",
    )?;
    Ok("utils: add ceil_div

Several kernels computed grid sizes by hand; one helper for all of them.
")
}

/// Source compatible: a parameter now taken by value.
fn contiguous_strides_by_value(t: &mut Tree) -> Result<&'static str> {
    for path in [COMMON_UTILS_H, COMMON_UTILS_CPP] {
        t.edit(
            path,
            "Strides make_contiguous_strides(const Shape& shape)",
            "Strides make_contiguous_strides(Shape shape)",
        )?;
    }
    Ok("common: take the shape by value in make_contiguous_strides

Callers pass temporaries; taking the shape by value lets them move it.
")
}

/// Source compatible: a new enum value (the backend's switch has a default).
fn add_bfloat16(t: &mut Tree) -> Result<&'static str> {
    t.edit(
        "mlx/dtype.h",
        "enum class Dtype { bool_, int32, float32 };",
        "enum class Dtype { bool_, int32, float32, bfloat16 };",
    )?;
    t.edit(
        "mlx/dtype.h",
        "    case Dtype::float32:\n      return 4;\n",
        "    case Dtype::float32:\n      return 4;\n    case Dtype::bfloat16:\n      return 2;\n",
    )?;
    Ok("dtype: add bfloat16

The type exists so that checkpoints in bfloat16 load; no op computes in it
yet.
")
}

/// Source compatible: a new defaulted trailing parameter.
fn elem_to_loc_offset(t: &mut Tree) -> Result<&'static str> {
    t.edit(
        COMMON_UTILS_H,
        "int64_t elem_to_loc(int64_t elem, const Shape& shape, const Strides& strides);\n",
        "int64_t elem_to_loc(\n    int64_t elem,\n    const Shape& shape,\n    const Strides& strides,\n    int64_t offset = 0);\n",
    )?;
    t.edit(
        COMMON_UTILS_CPP,
        "int64_t elem_to_loc(int64_t elem, const Shape& shape, const Strides& strides) {\n  int64_t loc = 0;\n",
        "int64_t elem_to_loc(\n    int64_t elem,\n    const Shape& shape,\n    const Strides& strides,\n    int64_t offset) {\n  int64_t loc = offset;\n",
    )?;
    Ok("common: elem_to_loc takes the offset of the first element

Views that start inside a buffer add their offset here instead of at every
call site.
")
}

/// On the lines the fork hooks in `mlx/device.cpp`: retargeting the hook conflicts.
fn device_index_from_env(t: &mut Tree) -> Result<&'static str> {
    t.edit(
        "mlx/device.cpp",
        "Device& mutable_default_device() {\n",
        "// MLX_DEVICE_INDEX picks the GPU on machines with several.
int default_index() {
  const char* index = std::getenv(\"MLX_DEVICE_INDEX\");
  return index != nullptr ? std::atoi(index) : 0;
}

Device& mutable_default_device() {\n",
    )?;
    t.edit(
        "mlx/device.cpp",
        "      gpu::is_available() ? Device::gpu : Device::cpu};\n",
        "      gpu::is_available() ? Device::gpu : Device::cpu, default_index()};\n",
    )?;
    Ok("device: choose the default GPU with MLX_DEVICE_INDEX

On machines with several GPUs the first one was always the default.
")
}

/// A few lines from the fork's hook in `mlx/CMakeLists.txt`: merges cleanly.
fn cmake_version_definition(t: &mut Tree) -> Result<&'static str> {
    t.edit(
        "mlx/CMakeLists.txt",
        "          ${CMAKE_CURRENT_SOURCE_DIR}/backend/common/utils.cpp)\n",
        "          ${CMAKE_CURRENT_SOURCE_DIR}/backend/common/utils.cpp)\n\ntarget_compile_definitions(mlx PRIVATE MLX_VERSION=\"0.2.0\")\n",
    )?;
    Ok("cmake: define MLX_VERSION

So that the library can report its version at run time.
")
}

// ---------------------------------------------------------------------------------------------
// Fork commits.
// ---------------------------------------------------------------------------------------------

/// The fork's hooks in upstream files, as edits of their pin1 versions. The last one is in
/// a file the overlay does not carry.
pub const FORK_HOOKS: [Edit; 5] = [
    Edit {
        path: "CMakeLists.txt",
        old: "option(MLX_BUILD_CUDA \"Build the CUDA backend\" OFF)\n",
        new: "option(MLX_BUILD_CUDA \"Build the CUDA backend\" OFF)\noption(MLX_BUILD_ROCM \"Build the ROCm backend\" OFF)\n",
    },
    Edit {
        path: "mlx/CMakeLists.txt",
        old: "  add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/backend/cuda)\nelse()\n",
        new: "  add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/backend/cuda)\nelseif(MLX_BUILD_ROCM)\n  add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/backend/rocm)\nelse()\n",
    },
    Edit {
        path: "mlx/device.cpp",
        old: "  static Device default_device{\n      gpu::is_available() ? Device::gpu : Device::cpu};\n",
        new: "  // ROCm: MLX_ROCM_PREFER_CPU keeps the CPU the default device where the GPU
  // also drives the display.
  static Device default_device{
      gpu::is_available() && std::getenv(\"MLX_ROCM_PREFER_CPU\") == nullptr
          ? Device::gpu
          : Device::cpu};\n",
    },
    Edit {
        path: "mlx/fast.cpp",
        old: "bool use_fused_kernel(const Stream& s) {\n",
        new: "bool use_fused_kernel(const Stream& s) {
#ifdef MLX_USE_ROCM
  // ROCm: the fused RMSNorm kernel is not ported yet; run it on the CPU.
  if (s.device == Device::gpu) {
    return false;
  }
#endif\n",
    },
    Edit {
        path: "mlx/backend/cuda/eval.cpp",
        old: "bool is_available() {\n",
        new: "bool is_available() {
#ifdef MLX_USE_ROCM
  // A ROCm build never drives a CUDA device, even with both toolkits installed.
  return false;
#endif\n",
    },
];

/// The upstream files the fork hooks and the demo overlay carries (all hooks but the last).
pub const CORE_FILES: [&str; 4] = [
    "CMakeLists.txt",
    "mlx/CMakeLists.txt",
    "mlx/device.cpp",
    "mlx/fast.cpp",
];

/// F1: the backend and its hooks.
fn add_rocm_backend(t: &mut Tree) -> Result<&'static str> {
    t.put_all(ROCM_BACKEND_FILES);
    for hook in &FORK_HOOKS {
        t.apply(hook)?;
    }
    Ok("Add ROCm backend

A HIP backend under mlx/backend/rocm: allocator, events, element-wise
kernels, copies and matmul, with NO_GPU stubs for the rest. Built with
-DMLX_BUILD_ROCM=ON.
")
}

/// F2: a new file and an edit of the dispatch lines of eval.cpp.
fn faster_softmax(t: &mut Tree) -> Result<&'static str> {
    t.put_all(F2_FILES);
    let eval = "mlx/backend/rocm/eval.cpp";
    t.edit(
        eval,
        "int device_count() {\n",
        "// Defined in softmax.cpp.\nbool softmax_fast_applies(const array& arr);\nvoid softmax_fast(const array& in, array& out);\n\nint device_count() {\n",
    )?;
    t.edit(
        eval,
        EVAL_DISPATCH_LINES,
        "  auto& primitive = arr.primitive();
  if (rocm::softmax_fast_applies(arr)) {
    rocm::softmax_fast(arr.inputs()[0], arr);
    return;
  }
  std::vector<array> outputs{arr};
  primitive.eval_gpu(arr.inputs(), outputs);\n",
    )?;
    Ok("rocm: faster softmax

An online softmax over the last axis, reading each row twice instead of
three times; eval dispatches to it before the generic path.
")
}

/// F3: the allocator leak fix, and the legacy copy kernel goes.
fn fix_allocator_leak(t: &mut Tree) -> Result<&'static str> {
    t.apply(&ALLOCATOR_LEAK_FIX)?;
    t.remove("mlx/backend/rocm/old_copy.cpp")?;
    Ok("rocm: fix allocator leak

RocmAllocator::free never released the block. Also removes the legacy copy
kernel that copy.cpp replaced.
")
}

/// F4's tree: upstream pin2 with the fork's backend at F3 and its hooks. The device.cpp hook
/// conflicts with upstream's change of the same lines and is resolved by keeping both.
pub fn fork_merge_tree(f3: &Tree, pin2: &Tree) -> Result<Tree> {
    let mut merged = pin2.clone();
    for (path, content) in &f3.files {
        if path.starts_with("mlx/backend/rocm/") {
            merged.files.insert(path.clone(), content.clone());
        }
    }
    for hook in FORK_HOOKS
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
        assert_eq!(first.breaks.len(), 6);
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
        assert_eq!(between.len(), UPSTREAM_CHANGES.len());
        let commits: std::collections::BTreeSet<&String> =
            world.breaks.iter().map(|b| &b.2).collect();
        assert_eq!(commits.len(), 6);
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
        for hook in &FORK_HOOKS {
            let input = |tree| merge_input(hook.path, tree);
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
