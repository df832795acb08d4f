//! The demo overlay project over the demo [`World`]: a `forkbook.toml`, an object cache, and an
//! overlay at fork F1 on pin 1 with four local fixes of the kinds a real overlay has: a core-file
//! fix, a backend fix the fork later merges, a local-only backend file, and a backend fix on
//! lines the fork changes next.
//!
//! It is built with forkbook's own commands (`init`, then `fix add` for each fix), so the demo,
//! the book and the tests exercise the same paths a user does.

use super::world::{self, World};
use crate::engine::cache::Cache;
use crate::engine::config::Layout;
use crate::engine::error::{Context, Error, Result};
use crate::engine::init::{init, InitRequest};
use crate::engine::overlay::OverlayState;
use crate::engine::project::{Overrides, Project};
use crate::engine::record::add_fix;
use crate::engine::{records, FileMap};
use std::path::{Path, PathBuf};

pub use super::world::CORE_FILES;

/// A demo world plus an overlay project on it.
pub struct DemoProject {
    pub world: World,
    pub root: PathBuf,
    pub cache: PathBuf,
}

impl DemoProject {
    /// The project, opened with the demo's own cache and offline (the world is all local).
    pub fn open(&self) -> Result<Project> {
        Project::open(&self.root, &self.overrides())
    }

    pub fn overrides(&self) -> Overrides {
        Overrides {
            cache: Some(self.cache.clone()),
            fork_url: None,
            upstream_url: None,
            offline: false,
            tool_path: None,
            stand_in_pin: None,
        }
    }
}

/// Generates the world in `dir/world` and the project in `dir/project` (patch or files layout).
pub fn generate(dir: &Path, layout: Layout) -> Result<DemoProject> {
    let world = world::generate(&dir.join("world"))?;
    let root = dir.join("project");
    let cache = dir.join("cache.git");
    std::fs::create_dir_all(&root)
        .with_context(|| format!("failed to create `{}`", root.display()))?;
    std::fs::write(root.join("forkbook.toml"), config_text(&world, layout))?;
    std::fs::write(root.join(".gitignore"), "/materialized/\n")?;
    let demo = DemoProject { world, root, cache };
    let project = demo.open()?;
    {
        let cache = Cache::create(&project)?;
        let request = InitRequest {
            fork: demo.world.fork_commits[0].clone(),
            pin: Some(demo.world.pin1.clone()),
            core_files: Vec::new(),
        };
        init(&project, &cache, &request)?;
        for (title, edit) in FIXES {
            let state = OverlayState::load(&project, &cache)?;
            let mut edited = state.overlay.clone();
            edit(&demo, &cache, &mut edited)?;
            add_fix(&project, &cache, &state, title, &edited)?;
        }
    }
    write_register(&project)?;
    explain_hooks(&project)?;
    Ok(demo)
}

fn config_text(world: &World, layout: Layout) -> String {
    let core = CORE_FILES
        .iter()
        .map(|f| format!("\"{f}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "# The demo overlay: a miniature ROCm backend over a miniature MLX, made by `forkbook demo`.\n\
         [overlay]\ndir = \"patches-rocm\"\nlayout = \"{}\"\nbackend_prefix = \"mlx/backend/rocm/\"\ncore_files = [{core}]\n\n\
         [fork]\nurl = \"{}\"\nbranch = \"rocm-support\"\n\n[upstream]\nurl = \"{}\"\nbranch = \"main\"\n\n\
         [build]\ncompiler = \"hipcc\"\n\n\
         [[verify.steps]]\nname = \"ROCm build\"\ncommand = \"forkbook drift build\"\nrequires = [\"hipcc\", \"cmake\", \"forkbook\"]\n\n\
         [[verify.steps]]\nname = \"generation smoke\"\ncommand = \"python3 test_generation.py\"\nrequires = [\"hipcc\"]\ngpu = true\n",
        layout.name(),
        world.fork.display(),
        world.upstream.display()
    )
}

type Edit = fn(&DemoProject, &Cache, &mut FileMap) -> Result<()>;

/// The four local fixes, in order, each with the edit that makes it.
const FIXES: [(&str, Edit); 4] = [
    (
        "Keep the ROCm fast path behind its own availability check",
        fix_core_fast,
    ),
    (
        "Free pooled buffers when the allocator is destroyed",
        fix_allocator_like_the_fork,
    ),
    (
        "Add a local workaround header for the gfx90a compiler",
        fix_local_only_file,
    ),
    (
        "Synchronize the stream before finalize returns",
        fix_eval_lines_the_fork_changes,
    ),
];

/// A core-file fix: a comment and a guard line added to `mlx/fast.cpp`.
fn fix_core_fast(_: &DemoProject, _: &Cache, files: &mut FileMap) -> Result<()> {
    let text = text_of(files, "mlx/fast.cpp")?;
    let at = text.find('\n').map(|i| i + 1).unwrap_or(0);
    let new = format!("{}// Local fix 1: the ROCm fast path is taken only when the backend reports itself available.\n{}", &text[..at], &text[at..]);
    files.insert("mlx/fast.cpp".into(), new.into_bytes().into());
    Ok(())
}

/// A backend fix the fork merges later: exactly fork commit F3's change to the allocator.
fn fix_allocator_like_the_fork(
    demo: &DemoProject,
    cache: &Cache,
    files: &mut FileMap,
) -> Result<()> {
    let path = "mlx/backend/rocm/allocator.cpp";
    let f3 = cache.commit(
        &demo.world.fork_commits[2],
        crate::engine::cache::Remote::Fork,
    )?;
    let content = cache
        .read(f3, path)?
        .ok_or_else(|| Error::new(format!("fork commit F3 has no `{path}`")))?;
    files.insert(path.into(), content.into());
    Ok(())
}

/// A backend file only the overlay has.
fn fix_local_only_file(_: &DemoProject, _: &Cache, files: &mut FileMap) -> Result<()> {
    let text = "// Local-only: gfx90a miscompiles the fused path at -O3; keep it out until the compiler is fixed.\n#pragma once\n\n#define MLX_ROCM_AVOID_FUSED_GFX90A 1\n";
    files.insert(
        "mlx/backend/rocm/local_workaround.hpp".into(),
        text.as_bytes().to_vec().into(),
    );
    Ok(())
}

/// A backend fix on the very lines fork commit F2 changes: syncing to F2 conflicts here.
fn fix_eval_lines_the_fork_changes(
    demo: &DemoProject,
    cache: &Cache,
    files: &mut FileMap,
) -> Result<()> {
    let path = "mlx/backend/rocm/eval.cpp";
    let text = text_of(files, path)?;
    let f2 = cache.commit(
        &demo.world.fork_commits[1],
        crate::engine::cache::Remote::Fork,
    )?;
    let theirs = String::from_utf8_lossy(&cache.read(f2, path)?.unwrap_or_default()).into_owned();
    let line = text
        .lines()
        .zip(theirs.lines())
        .position(|(a, b)| a != b)
        .ok_or_else(|| Error::new(format!("fork commit F2 does not change `{path}`")))?;
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[line] = format!(
        "{}  // local fix 4: synchronize before returning",
        lines[line]
    );
    files.insert(
        path.into(),
        format!("{}\n", lines.join("\n")).into_bytes().into(),
    );
    Ok(())
}

fn text_of(files: &FileMap, path: &str) -> Result<String> {
    let bytes = files
        .get(path)
        .ok_or_else(|| Error::new(format!("the demo overlay has no `{path}`")))?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// Fills in the register entries that `fix add` left to the author.
fn write_register(project: &Project) -> Result<()> {
    let path = project.records_dir().join(records::FIXES_FILE);
    let text = std::fs::read_to_string(&path)?;
    let states = [
        "- state: kept-local\n- reason: the fork keeps a different guard; ours matches our build's device check\n- issue: https://github.com/example/app/issues/7\n",
        "- state: proposed\n- link: https://github.com/NripeshN/mlx/pull/101\n- package: propose/0002-free-pooled-buffers-when-the-allocator-is.patch\n",
        "- state: kept-local\n- reason: a compiler workaround for one architecture; not for the fork\n- issue: https://github.com/example/app/issues/9\n",
        "- state: proposed\n- link: https://github.com/NripeshN/mlx/pull/102\n- package: propose/0004-synchronize-the-stream-before-finalize-returns.patch\n",
    ];
    let mut out = String::new();
    let mut n = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("TODO: why this fix exists.") {
            out.push_str(WHY[n]);
            continue;
        }
        if line.starts_with("- state: TODO") {
            out.push_str(states[n]);
            n += 1;
            continue;
        }
        out.push_str(line);
    }
    crate::engine::fsutil::write_file(&path, out.as_bytes())
}

/// The overlay's README says why the fork's hook in the CUDA backend is not carried.
fn explain_hooks(project: &Project) -> Result<()> {
    let path = project.records_dir().join(records::README_FILE);
    let text = std::fs::read_to_string(&path)?;
    let note = "## Fork changes the overlay does not carry

- `mlx/backend/cuda/eval.cpp`: the fork's ROCm device check in the CUDA backend; our build never compiles the CUDA backend.
";
    crate::engine::fsutil::write_file(&path, format!("{text}\n{note}").as_bytes())
}

const WHY: [&str; 4] = [
    "Our build checks ROCm availability before it takes the fast path; the fork takes it unconditionally.\n",
    "Pooled buffers leaked when the allocator was destroyed at exit; found by the leak checker in our CI.\n",
    "gfx90a miscompiles the fused path at -O3 with the compiler our build uses.\n",
    "`finalize` returned before queued work finished; our generation smoke test saw truncated output.\n",
];
