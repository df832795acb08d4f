//! The overlay at a candidate pin, and the two drift checks run against it.
//!
//! Both drifts look at what a retarget to the candidate would make (core files rebuilt, local
//! fixes carried, [`Run::overlay_at`]), without writing anything: [`drift_api_report`] compares
//! the upstream API the backend was written against with the candidate's, statically (the run's
//! [`Run::drift_api`]); [`drift_build`] exports that tree and builds it with the configured
//! compiler.

use super::base::Commits;
use super::cache::{short, Cache};
use super::config::Config;
use super::doc::{Described, Doc};
use super::drift::api::{self, ApiReport, Kind};
use super::drift::build::{
    self, stubs::StubsReport, BuildConfig, BuildOptions, BuildReport, Confirmation, Differential,
};
use super::drift::setup::{api_config, files_where};
use super::error::{Context, Result};
use super::fsutil::RunLock;
use super::overlay::{export_tree, OverlayState};
use super::project::Project;
use super::report_value::{CommandReport, Verdict};
use super::run::Run;
use super::FileMap;
use git2::Oid;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Resolves `--from` (default: the fork base, the API the backend was written against) and
/// `--to` (default: the pin).
pub fn api_range(
    cache: &Cache,
    state: &OverlayState,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<(Oid, Oid)> {
    let from = upstream_or(cache, from, state.commits.base)?;
    Ok((from, upstream_or(cache, to, state.commits.pin)?))
}

/// The upstream commit `rev` names, or `default` without one. A commit the user names must be
/// upstream's by the pin's one rule ([`crate::pin::upstream_commit`]): a fork's commit the cache
/// also holds would be analysed, built and reported as upstream's.
fn upstream_or(cache: &Cache, rev: Option<&str>, default: Oid) -> Result<Oid> {
    rev.map_or(Ok(default), |rev| crate::pin::upstream_commit(cache, rev))
}

/// What `drift build` needs besides the configuration.
#[derive(Debug, Clone, Default)]
pub struct BuildRequest<'a> {
    pub compiler: Option<&'a str>,
    pub jobs: Option<usize>,
    pub arch: Option<&'a str>,
    /// `--strict`: in a differential build, what the recorded pin has too fails as well.
    pub strict: bool,
    /// `--baseline`: the pin the candidate is compared with (default: the recorded pin).
    pub baseline: Option<&'a str>,
    /// `--stubs DIR`: write stub headers for what the machine lacks into DIR and build with
    /// it, in place of `[build] stubs`.
    pub stubs: Option<&'a Path>,
    /// `--without-fixes`: build the candidate as a retarget makes it before the local fixes are
    /// carried, against the fork at its upstream base (or `--baseline`, also without fixes),
    /// and tie each item new at the candidate to the fix that answers it.
    pub without_fixes: bool,
}

/// Exports the trees a retarget to each of `pins` would make into `work/<commit>/tree` and
/// builds each in `work/<commit>/build`, one after the other with the same toolchain. The trees
/// are laid out alike under `work`, which is ccache's base folder: the second tree compiles only
/// the translation units that differ. A tree with files in conflict is built once more in
/// `work/<commit>-pin-side` with each conflict at the pin's side, and its symbols are read from
/// there ([`build::SideBuild`]). With `request.stubs`, the stub headers for what the machine
/// lacks are written first (see [`build::stubs`]) and the builds use them.
pub fn drift_build(
    run: &Run,
    state: &OverlayState,
    pins: &[Oid],
    work: &Path,
    request: &BuildRequest,
) -> Result<(Vec<BuildReport>, Option<StubsReport>)> {
    let (project, cache) = (run.project, run.cache);
    let mut cfg = build_config(project, request)?;
    let ccache_dir = match cfg.ccache_dir.is_empty() {
        true => work.join("ccache"),
        false => project.root.join(&cfg.ccache_dir),
    };
    // ccache's objects are results like any cache's: one the checkout could have written would
    // put its objects into the build, so the build runs without it.
    let records = project.records_dir();
    if let Some(why) = crate::trust::untrusted_cache_folder(&project.root, &records, &ccache_dir) {
        if cfg.ccache {
            crate::notice::leave(format!(
                "the build runs without ccache: its folder {why}; set `[build] ccache_dir` \
                 to a folder outside the project"
            ));
        }
        cfg.ccache = false;
    }
    // The build writes only the work folder: that is what this run holds alone, for the export
    // and the build. Two builds in one work folder exclude each other.
    std::fs::create_dir_all(work)
        .with_context(|| format!("failed to create the build folder `{}`", work.display()))?;
    let _work_lock = RunLock::acquire(work, "drift build folder")?;
    let (trees, backend) = export_trees(run, state, pins, work, request.without_fixes)?;
    // Everything the build needs from the cache is in the exported trees now: the builds
    // (minutes) run without the cache lock, so other projects' commands, writers too, use the
    // cache meanwhile.
    cache.release_lock();
    let options = BuildOptions {
        compiler: request.compiler.map(str::to_string),
        jobs: request.jobs,
        arch: request.arch.map(str::to_string),
        tool_path: project.overrides.tool_path.clone(),
        ccache_base: Some(work.canonicalize().unwrap_or_else(|_| work.to_path_buf())),
        ccache_dir: Some(ccache_dir),
        results: Some(cache.drift_build_store()),
        compile_failures: Some(cache.compile_failure_store()),
    };
    let sides = trees.iter().flat_map(|t| &t.pin_side);
    let exported: Vec<PathBuf> = (trees.iter().map(|t| &t.tree))
        .chain(sides.map(|(tree, _)| tree))
        .cloned()
        .collect();
    let stubs = (request.stubs)
        .map(|_| write_stubs(project, &cfg, &options, &backend, &exported))
        .transpose()?;
    let reports = trees
        .into_iter()
        .map(|t| {
            let report = BuildReport {
                conflicted: t.conflicted,
                ..build::drift_build(&t.tree, &t.build_dir, &cfg, &options)?
            };
            match t.pin_side {
                Some((tree, build_dir)) => {
                    let side = build::drift_build(&tree, &build_dir, &cfg, &options)?;
                    Ok(report.with_symbols_of(side))
                }
                None => Ok(report),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((reports, stubs))
}

/// `[build]` with its folders made absolute, and `--stubs` in place of `[build] stubs`.
fn build_config(project: &Project, request: &BuildRequest) -> Result<BuildConfig> {
    let mut cfg: BuildConfig = Config::section(&project.config.build, "build")?;
    let in_project = |path: &str| project.root.join(path).display().to_string();
    cfg.include_dirs = cfg.include_dirs.iter().map(|d| in_project(d)).collect();
    if !cfg.stubs.is_empty() {
        cfg.stubs = in_project(&cfg.stubs);
    }
    if let Some(dir) = request.stubs {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("failed to create the stub folder `{}`", dir.display()))?;
        cfg.stubs = dir
            .canonicalize()
            .with_context(|| format!("failed to resolve `{}`", dir.display()))?
            .display()
            .to_string();
    }
    Ok(cfg)
}

/// An exported tree, where it is built, and its files in conflict.
struct Tree {
    tree: PathBuf,
    build_dir: PathBuf,
    conflicted: Vec<String>,
    /// With files in conflict: the same tree with each conflict taken at the pin's side, and
    /// where it is built; its objects give the symbols (see [`build::SideBuild`]).
    pin_side: Option<(PathBuf, PathBuf)>,
}

/// Exports the tree a retarget to each of `pins` would make into `work/<commit>/tree`; the trees,
/// and the backend's files of them all.
fn export_trees(
    run: &Run,
    state: &OverlayState,
    pins: &[Oid],
    work: &Path,
    without_fixes: bool,
) -> Result<(Vec<Tree>, FileMap)> {
    let (project, cache) = (run.project, run.cache);
    let (mut trees, mut backend) = (Vec::new(), FileMap::new());
    let prefix = project.config.overlay.backend_prefix.as_str();
    for &pin in pins {
        // Each kind of tree has a folder of its own: a tree with the fixes and one without at
        // the same pin never share a build folder.
        let (overlay, folder) = match without_fixes {
            true => (
                bare_overlay_at(cache, state, pin, prefix)?,
                format!("{}-without-fixes", short(pin)),
            ),
            false => (run.overlay_at(state, pin)?, short(pin)),
        };
        let tree = work.join(&folder).join("tree");
        // The work folder is forkbook's own, beside the cache: replacing it needs no marker.
        export_tree(project, cache, pin, &overlay, &tree, true)?;
        let in_conflict = |_: &str, bytes: &[u8]| !forkbook_checks::markers::scan(bytes).is_empty();
        let conflicted = files_where(&overlay, in_conflict);
        let pin_side = match conflicted.is_empty() {
            true => None,
            false => {
                let folder = work.join(format!("{folder}-pin-side"));
                let mut sided = overlay.clone();
                for (path, bytes) in &conflicted {
                    let side = forkbook_checks::markers::first_side(bytes);
                    sided.insert(path.clone(), std::sync::Arc::new(side));
                }
                export_tree(project, cache, pin, &sided, &folder.join("tree"), true)?;
                Some((folder.join("tree"), folder.join("build")))
            }
        };
        trees.push(Tree {
            tree,
            build_dir: work.join(&folder).join("build"),
            conflicted: conflicted.into_keys().collect(),
            pin_side,
        });
        backend.extend(files_where(&overlay, |p, _| p.starts_with(prefix)));
    }
    Ok((trees, backend))
}

/// The overlay a retarget to `pin` makes before any local fix is carried: the fork's backend
/// and each core file merged onto `pin` (B at `pin`).
fn bare_overlay_at(cache: &Cache, state: &OverlayState, pin: Oid, prefix: &str) -> Result<FileMap> {
    let commits = Commits {
        pin,
        ..state.commits
    };
    Ok(super::base::build(cache, commits, &state.core_files, prefix)?.files)
}

/// The local fixes as the differential ties drift to them: each fix of the series with the
/// files it changes and the lines it adds; in the files layout, each register entry with the
/// files it names.
fn fix_texts(state: &OverlayState) -> Vec<build::FixText> {
    let register = state.records.model.register.as_ref();
    let title = |n: usize| {
        let entry = register.and_then(|r| r.entry(n as u32));
        entry.map(|e| e.title.clone()).unwrap_or_default()
    };
    if state.steps.is_empty() {
        let entries = register.map(|r| r.entries.as_slice()).unwrap_or_default();
        return (entries.iter())
            .map(|e| build::FixText {
                number: e.number as usize,
                title: e.title.clone(),
                paths: e.files.iter().map(|f| f.name.clone()).collect(),
                added: e.prose.to_string(),
            })
            .collect();
    }
    let text = |image: Option<&super::overlay::Image>| {
        let bytes = image.cloned().flatten().unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (state.steps.iter())
        .map(|step| {
            let paths: Vec<String> = step.changed_paths().into_iter().map(String::from).collect();
            let added = (paths.iter())
                .map(|p| {
                    let pre = text(step.pre.get(p));
                    let before: std::collections::BTreeSet<&str> = pre.lines().collect();
                    let post = text(step.post.get(p));
                    let lines = post.lines().filter(|l| !before.contains(l));
                    lines.map(|l| format!("{l}\n")).collect::<String>()
                })
                .collect();
            build::FixText {
                number: step.number(),
                title: title(step.number()),
                paths,
                added,
            }
        })
        .collect()
}

/// `--stubs`: the backend's includes that neither the trees, the `[build]` include folders nor
/// the compiler's search list have, each given a stub in `cfg.stubs`.
fn write_stubs(
    project: &Project,
    cfg: &BuildConfig,
    options: &BuildOptions,
    backend: &FileMap,
    trees: &[PathBuf],
) -> Result<StubsReport> {
    let compiler_search_path = build::compiler_search_path(cfg, options)?;
    let mut search = compiler_search_path.clone();
    search.extend(cfg.include_dirs.iter().map(PathBuf::from));
    let uses = api::backend_uses(backend, &api_config(project)?);
    let cmake_files: Vec<(String, String)> = backend
        .iter()
        .filter(|(p, _)| p.ends_with("CMakeLists.txt") || p.ends_with(".cmake"))
        .map(|(p, b)| (p.clone(), String::from_utf8_lossy(b).into_owned()))
        .collect();
    build::stubs::write_stubs(
        Path::new(&cfg.stubs),
        &build::stubs::StubInputs {
            uses: &uses,
            trees,
            search: &search,
            compiler_search_path,
            cmake_files: &cmake_files,
        },
    )
}

/// The static findings of `api` that are not suppressed, as `confirm` takes them.
fn predicted(api: &ApiReport) -> Vec<(Kind, String)> {
    api.live().map(|f| (f.kind, f.symbol.clone())).collect()
}

/// `forkbook drift api`: static drift from `from` (default: the fork base) to `to` (default: the
/// pin).
pub fn drift_api_report(
    run: &Run,
    state: &OverlayState,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<ApiReport> {
    let (from, to) = api_range(run.cache, state, from, to)?;
    let mut report = run.drift_api(state, from, to)?;
    // Under a stand-in the recorded pin's side is the stand-in's headers.
    let pin = state.commits.pin;
    report.stand_in = run.project.stand_in_pin().is_some() && (from == pin || to == pin);
    Ok(report)
}

/// What `forkbook drift build` found: the build (the candidate's), with `--to` the
/// differential against the recorded pin, and with `--with-api` which static findings it
/// confirmed.
#[derive(Debug)]
pub struct BuildRun {
    pub build: BuildReport,
    pub differential: Option<Differential>,
    pub confirmation: Option<Confirmation>,
    /// With `--stubs`: the stub headers written before the build.
    pub stubs: Option<StubsReport>,
}

/// `{"build": …, "confirmation": …, "differential": …, "stubs": …}` with every object's keys in
/// alphabetical order (the JSON goes through a `serde_json::Value`).
impl Serialize for BuildRun {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serde_json::json!({
            "build": self.build,
            "confirmation": self.confirmation,
            "differential": self.differential,
            "stubs": self.stubs,
        })
        .serialize(serializer)
    }
}

/// `forkbook drift build`: the tree at the recorded pin built in `work` (default: a folder
/// beside the object cache), judged on its own; with `to`, a differential build: the recorded
/// pin's tree and the candidate's, and only what is new at the candidate is drift. With
/// `with_api`, the static drift from the fork base too, and which of its findings the build
/// showed (new at the candidate, in a differential build).
pub fn drift_build_report(
    run: &Run,
    state: &OverlayState,
    to: Option<&str>,
    work: Option<&Path>,
    request: &BuildRequest,
    with_api: bool,
) -> Result<BuildRun> {
    let cache = run.cache;
    let differential = to.is_some() || request.baseline.is_some() || request.without_fixes;
    let (from, to) = api_range(cache, state, None, to)?;
    let api = (with_api)
        .then(|| run.drift_api(state, from, to))
        .transpose()?;
    let default_work = cache.dir().with_file_name("forkbook-drift-build");
    let work = work.unwrap_or(&default_work);
    let default_baseline = match request.without_fixes {
        true => state.commits.base,
        false => state.commits.pin,
    };
    let recorded = upstream_or(cache, request.baseline, default_baseline)?;
    let pins: Vec<Oid> = if differential && to != recorded {
        vec![recorded, to]
    } else {
        vec![to]
    };
    let (mut reports, stubs) = drift_build(run, state, &pins, work, request)?;
    let build = reports.pop().expect("one report per tree");
    let differential = differential.then(|| {
        let mut differential = Differential::compare(
            recorded.to_string(),
            to.to_string(),
            reports.pop(),
            build.clone(),
            request.strict,
        );
        differential.without_fixes = request.without_fixes;
        differential.answer(&fix_texts(state));
        differential
    });
    let confirmation = api.map(|api| match &differential {
        Some(differential) => build::confirm(&differential.new_only(), &predicted(&api)),
        None => build::confirm(&build, &predicted(&api)),
    });
    Ok(BuildRun {
        build,
        differential,
        confirmation,
        stubs,
    })
}

impl Described for BuildRun {
    /// The stubs written, the build (or the differential), then which static findings it
    /// confirmed.
    fn doc(&self, _links: &crate::markdown::PageLinks) -> Doc {
        let mut doc = self
            .stubs
            .as_ref()
            .map(StubsReport::doc)
            .unwrap_or_default();
        doc.append(match &self.differential {
            Some(differential) => differential.doc(),
            None => self.build.doc(),
        });
        if let Some(confirmation) = &self.confirmation {
            doc.append(confirmation.doc());
        }
        doc
    }

    /// A plain build fails on every problem; a differential one on what is new at the
    /// candidate (with `--strict`, on all).
    fn found_problems(&self) -> bool {
        let problems = match &self.differential {
            Some(differential) => differential.problems(),
            None => self.build.problems(),
        };
        !problems.is_empty()
    }
}

/// What `forkbook export-tree` wrote: `{"commit": …, "dest": …, "overlay_files": N}`.
#[derive(Debug, Clone, Serialize)]
pub struct Exported {
    pub commit: String,
    pub dest: PathBuf,
    pub overlay_files: usize,
}

/// `forkbook export-tree`: the upstream tree at `at` (default: the pin) with the overlay a
/// retarget there would make (conflicts and all) laid over it, written into `dest`.
pub fn export_at(
    run: &Run,
    state: &OverlayState,
    at: Option<&str>,
    dest: &Path,
    force: bool,
) -> Result<Exported> {
    let commit = upstream_or(run.cache, at, state.commits.pin)?;
    let overlay = run.overlay_at(state, commit)?;
    let laid = export_tree(run.project, run.cache, commit, &overlay, dest, force)?;
    Ok(Exported {
        commit: commit.to_string(),
        dest: dest.to_path_buf(),
        overlay_files: laid,
    })
}

impl CommandReport for Exported {
    fn text(&self) -> String {
        format!(
            "wrote upstream {} with {} overlay files to {}\n",
            crate::text::short_id(&self.commit),
            self.overlay_files,
            self.dest.display()
        )
    }

    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}
