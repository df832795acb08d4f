//! `drift build`: the real build of an exported tree, to see what a pin bump breaks.
//!
//! Configures the tree with CMake and the ROCm options of the configuration, builds it with
//! the HIP compiler (or any compiler) keeping going past errors, and reports the compile errors
//! (gcc and clang formats, deduplicated, paths relative to the tree) and the symbols of the
//! upstream namespace that some object needs and no object defines (from one `nm` call over
//! every object). Undefined symbols whose definition sits in a file that failed to compile are
//! listed apart: they follow from an error already reported.
//!
//! [`mod@confirm`] then compares the result with the static findings of `drift api`.

pub mod confirm;
pub mod device;
pub mod differential;
pub mod failures;
pub mod log;
pub mod nm;
pub mod results;
pub mod run;
pub mod stubs;
pub mod toolchain;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::doc::{code, codes, text, words, Doc, Row};
use crate::error::{Context, Error, Result};
use crate::report_value::plural;
use crate::tools::find_program_in;

pub use confirm::{confirm, Confirmation, Confirmed};
pub use differential::{Answer, Differential, FixText, MissingHeader, ToolchainError};
pub use log::Diagnostic;
pub use run::Step;

/// The `[build]` section of `forkbook.toml`: how the exported tree is configured and built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuildConfig {
    /// The HIP compiler; `--compiler` overrides it.
    pub compiler: String,
    pub cmake: String,
    pub nm: String,
    /// A CMake generator; `Unix Makefiles` and `Ninja` know how to keep going.
    pub generator: String,
    /// Configure arguments; `{compiler}` and `{arch}` are replaced.
    pub cmake_args: Vec<String>,
    /// The GPU architectures, `;`-separated; `--arch` overrides it.
    pub arch: String,
    /// Parallel jobs; None means one per core. `--jobs` overrides it.
    pub jobs: Option<usize>,
    /// Undefined symbols are reported in this namespace only.
    pub namespace: String,
    /// Compile through ccache (CMake's compiler launcher) when it is installed, so the second
    /// tree of a differential build and every rerun compile only what changed.
    pub ccache: bool,
    /// Where ccache keeps its objects; empty: `ccache/` in the drift build's work folder.
    /// Relative to the project.
    pub ccache_dir: String,
    /// Extra include folders for every compile (relative to the project), after the tree's own.
    pub include_dirs: Vec<String>,
    /// A folder of stub headers for ROCm libraries this machine lacks (relative to the project);
    /// searched last.
    pub stubs: String,
    /// Arguments the compiler refuses, dropped from every compile: an entry drops an argument
    /// equal to it, or, ending in `*`, every argument starting with the rest
    /// (`"-parallel-jobs=*"`: Debian's hipcc 5.2 has no such flag). The compiler CMake is
    /// given is then a small script in the build folder that drops them and runs the compiler
    /// (through ccache, when used), so commands that call the compiler directly drop them too.
    pub drop_flags: Vec<String>,
    /// Arguments added to every compile, after the tree's own (`"--cuda-host-only"`: the host
    /// side of each HIP file alone, which still reads the kernels' bodies but generates no
    /// device code, several times faster). Given through the same script as `drop_flags`.
    pub add_flags: Vec<String>,
    /// The device side's semantic check beside each HIP unit's compile, for this one
    /// architecture (`"gfx90a"`; see [`device`]): templates instantiated for the device, no
    /// code generated, about what the host compile costs. Empty: no check.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub device_check: String,
}

impl Default for BuildConfig {
    fn default() -> BuildConfig {
        let args = [
            "-DMLX_BUILD_ROCM=ON",
            "-DCMAKE_CXX_COMPILER={compiler}",
            "-DCMAKE_HIP_COMPILER={compiler}",
            "-DCMAKE_HIP_ARCHITECTURES={arch}",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DMLX_BUILD_TESTS=OFF",
            "-DMLX_BUILD_EXAMPLES=OFF",
        ];
        BuildConfig {
            compiler: "hipcc".into(),
            cmake: "cmake".into(),
            nm: "nm".into(),
            generator: "Unix Makefiles".into(),
            cmake_args: args.iter().map(|a| a.to_string()).collect(),
            arch: "gfx90a;gfx942;gfx1100".into(),
            jobs: None,
            namespace: "mlx::core".into(),
            ccache: true,
            ccache_dir: String::new(),
            include_dirs: Vec::new(),
            stubs: String::new(),
            drop_flags: Vec::new(),
            add_flags: Vec::new(),
            device_check: String::new(),
        }
    }
}

/// A symbol some object needs and no object defines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UndefinedSymbol {
    /// Demangled, as `nm -C` prints it.
    pub symbol: String,
    /// The sources (relative to the tree) of the objects that need it.
    pub needed_by: Vec<String>,
    /// A source that failed to compile and seems to define it.
    pub probably_in: Option<String>,
}

/// What the build found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BuildReport {
    pub tree: PathBuf,
    pub build_dir: PathBuf,
    pub compiler: String,
    pub generator: String,
    pub jobs: usize,
    pub namespace: String,
    pub configure: Step,
    /// None when configuring failed.
    pub build: Option<Step>,
    pub configure_errors: Vec<Diagnostic>,
    /// Compile errors, deduplicated, sorted by file and line.
    pub errors: Vec<Diagnostic>,
    /// Undefined symbols of the namespace not explained by a failed compile.
    pub undefined: Vec<UndefinedSymbol>,
    /// Undefined symbols whose definition is probably in a file that failed to compile.
    pub undefined_after_errors: Vec<UndefinedSymbol>,
    /// Object files read with `nm`.
    pub objects: usize,
    /// The sources (relative to the tree) whose compile failed.
    pub failed: Vec<String>,
    /// Symbols of the namespace the objects define -> the sources of those objects; what a
    /// differential build reads to tell which source a symbol the candidate lacks came from.
    /// Not in the JSON (thousands of names).
    #[serde(skip)]
    pub defined_by: BTreeMap<String, Vec<String>>,
    /// The tree's files that hold conflict markers (a retarget to this pin leaves them in
    /// conflict), filled in by the caller that made the tree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicted: Vec<String>,
    /// Where the undefined symbols were read when the tree has files in conflict: a build of the
    /// tree with each conflict taken at one side. None: from this build's own objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbols_from: Option<SideBuild>,
    /// The flag of `[build] add_flags` that compiles the host side of each HIP file alone, so
    /// no device code was compiled; None: device code was compiled where the compiler does it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_only: Option<String>,
    /// What device code the HIP compiler generated, when it was not left out. None: host only,
    /// or a compiler that is not `hipcc` (a C++ build has no device side).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceBuild>,
    /// What the device check pass (`[build] device_check`) ran on and found; None: no check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_check: Option<device::DeviceCheck>,
}

/// The device code a build generated: for which architectures, at which optimization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceBuild {
    /// The offload architectures, `;`-separated, as `--arch` or `[build] arch` gave them.
    pub arch: String,
    /// The last `-O` flag of `[build] add_flags`; None: the tree's own flags decide.
    pub optimization: Option<String>,
}

impl DeviceBuild {
    /// The device side of a build of `cfg` with the compiler named `compiler`: None when
    /// `add_flags` leaves device code out or the compiler is not `hipcc`.
    fn of(cfg: &BuildConfig, options: &BuildOptions, compiler: &str) -> Option<DeviceBuild> {
        let hipcc = Path::new(compiler).file_name() == Some(std::ffi::OsStr::new("hipcc"));
        let host_only = (cfg.add_flags.iter()).any(|f| HOST_ONLY_FLAGS.contains(&f.as_str()));
        (hipcc && !host_only).then(|| DeviceBuild {
            arch: options.arch.clone().unwrap_or_else(|| cfg.arch.clone()),
            optimization: (cfg.add_flags.iter().rev())
                .find(|f| f.starts_with("-O"))
                .cloned(),
        })
    }
}

/// A second build of a tree with files in conflict, each conflict taken at its first side (the
/// pin's, in a retarget): the markers keep every translation unit that includes such a file from
/// compiling, and with it what only those objects need (a primitive's `eval_gpu`, through the
/// vtable its key function's object holds). Its objects give the symbols; its errors are not
/// reported (the side is forkbook's choice, not a resolution).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideBuild {
    pub tree: PathBuf,
    pub objects: usize,
    /// The sources that failed in the tree with markers and compiled at one side.
    pub compiled: Vec<String>,
}

/// The compiler flags that leave device code out of a HIP compile.
const HOST_ONLY_FLAGS: [&str; 2] = ["--cuda-host-only", "--offload-host-only"];

/// How one build runs besides its configuration: the command line's overrides and the machine.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// `--compiler`, over `[build] compiler`.
    pub compiler: Option<String>,
    /// `--jobs`, over `[build] jobs`.
    pub jobs: Option<usize>,
    /// `--arch`, over `[build] arch`.
    pub arch: Option<String>,
    /// Where the tools are looked for (`--tool-path`); None: `PATH`.
    pub tool_path: Option<std::ffi::OsString>,
    /// ccache's base folder: paths under it are hashed relative, so two trees laid out alike
    /// under it share their objects. None: no sharing between trees.
    pub ccache_base: Option<PathBuf>,
    /// ccache's object folder, when ccache is used.
    pub ccache_dir: Option<PathBuf>,
    /// Where each tree's build outcome is kept by every input it read (see [`results`]);
    /// None: every build runs.
    pub results: Option<forkbook_records::cache_entry::Store>,
    /// Where each translation unit's failed compile is kept (see [`failures`]), so a build
    /// that meets it again replays it instead of compiling it; None: every unit compiles.
    pub compile_failures: Option<forkbook_records::cache_entry::Store>,
}

/// The tools one run needs, found up front so a missing one fails before anything runs.
struct Tools {
    /// The compiler as named (`--compiler` or `[build] compiler`), for the report.
    name: String,
    compiler: PathBuf,
    cmake: PathBuf,
    nm: PathBuf,
    /// ccache, when configured and installed.
    launcher: Option<PathBuf>,
    /// Where they were looked for (`--tool-path`, or `PATH`): the build's `PATH`.
    search: std::ffi::OsString,
}

impl Tools {
    fn find(cfg: &BuildConfig, options: &BuildOptions) -> Result<Tools> {
        let (name, compiler, search) = find_compiler(cfg, options)?;
        let require =
            |program: &str, what: &str, note: &str| run::require_in(program, what, note, &search);
        let cmake_note = "install CMake (for example `apt-get install cmake`)";
        let cmake = require(&cfg.cmake, "CMake", cmake_note)?;
        let nm_note = "install binutils (for example `apt-get install binutils`)";
        let nm = require(&cfg.nm, "nm", nm_note)?;
        if cfg.generator == "Ninja" {
            let note = "install Ninja, or set `generator = \"Unix Makefiles\"` in [build]";
            require("ninja", "build tool", note)?;
        }
        let ccache = || find_program_in("ccache", &search);
        let launcher = cfg.ccache.then(ccache).flatten();
        Ok(Tools {
            name,
            compiler,
            cmake,
            nm,
            launcher,
            search,
        })
    }

    /// The compiler and the launcher CMake is given: with flags to drop or add, or failed
    /// compiles kept, the wrapper, which runs ccache itself (so the commands that call the
    /// compiler directly are cached too), and no launcher.
    fn for_cmake(
        &self,
        cfg: &BuildConfig,
        options: &BuildOptions,
        tree: &Path,
        build_dir: &Path,
    ) -> Result<(PathBuf, Option<PathBuf>)> {
        let keeps_failures = options.compile_failures.is_some();
        let plain = cfg.drop_flags.is_empty() && cfg.add_flags.is_empty();
        if plain && cfg.device_check.is_empty() && !keeps_failures {
            return Ok((self.compiler.clone(), self.launcher.clone()));
        }
        let wrapper = Wrapper {
            compiler: &self.compiler,
            launcher: self.launcher.as_deref(),
            failures_in: keeps_failures.then_some(tree),
        };
        Ok((wrapper.write(build_dir, cfg)?, None))
    }

    /// The build's environment: `PATH`, and ccache's folders when ccache is used.
    fn env(&self, options: &BuildOptions, build_dir: &Path) -> Vec<(String, std::ffi::OsString)> {
        let mut env = vec![("PATH".to_string(), self.search.clone())];
        // hipcc's clang leaves two empty folders in the system's temporary folder per file it
        // compiles where it finds no GPU: in the build folder they are the build's own.
        env.push(("TMPDIR".into(), build_dir.join(TEMP_DIR).into_os_string()));
        if self.launcher.is_some() {
            if let Some(base) = &options.ccache_base {
                env.push(("CCACHE_BASEDIR".into(), base.clone().into_os_string()));
                // The build folders differ by name; what they hold is alike.
                env.push(("CCACHE_NOHASHDIR".into(), "true".into()));
            }
            let dir = options
                .ccache_dir
                .clone()
                .unwrap_or_else(|| build_dir.join("ccache"));
            env.push(("CCACHE_DIR".into(), dir.into_os_string()));
        }
        env
    }
}

/// The compiler `--compiler` or `[build] compiler` names, as named and as found, and where it
/// was looked for.
fn find_compiler(
    cfg: &BuildConfig,
    options: &BuildOptions,
) -> Result<(String, PathBuf, std::ffi::OsString)> {
    let name = options
        .compiler
        .clone()
        .unwrap_or_else(|| cfg.compiler.clone());
    let search = crate::tools::search_path(options.tool_path.as_deref());
    let note = "drift build needs the HIP compiler: install ROCm so that `hipcc` is on PATH, \
                or pass `--compiler c++` to build the host side with another compiler";
    let compiler = run::require_in(&name, "compiler", note, &search)?;
    Ok((name, compiler, search))
}

/// Configures and builds `tree` in `build_dir` and reports the errors and undefined symbols.
/// `options` override the configuration (the compiler, jobs, arch) and give the tool path,
/// ccache's folders and the results store: a build whose every input is the same as a kept one's
/// runs nothing and reads the kept outcome. A build that runs starts from an empty build folder
/// (ccache's objects kept), so nothing an earlier build left there changes what it finds. A
/// missing compiler, CMake or nm is an error; a tree that fails to configure or build is a
/// report with problems.
pub fn drift_build(
    tree: &Path,
    build_dir: &Path,
    cfg: &BuildConfig,
    options: &BuildOptions,
) -> Result<BuildReport> {
    let tools = Tools::find(cfg, options)?;
    if !cfg.device_check.is_empty() {
        device::checked_arch(&cfg.device_check)?;
    }
    let (tree, build_dir) = prepare(tree, build_dir)?;
    let jobs = options
        .jobs
        .or(cfg.jobs)
        .unwrap_or_else(default_jobs)
        .max(1);
    let kept = match &options.results {
        Some(store) => Some((
            store,
            outcome_key(cfg, options, &tools, &tree, &build_dir, jobs)?,
        )),
        None => None,
    };
    let outcome = match kept
        .as_ref()
        .and_then(|(store, key)| results::load(store, key))
    {
        Some(outcome) => outcome,
        None => {
            let outcome = run_build(cfg, options, &tools, &tree, &build_dir, jobs)?;
            if let Some((store, key)) = &kept {
                results::save(store, key, &outcome);
            }
            outcome
        }
    };
    let host_only = (cfg.add_flags.iter()).find(|f| HOST_ONLY_FLAGS.contains(&f.as_str()));
    let base = BuildReport {
        host_only: host_only.cloned(),
        device: DeviceBuild::of(cfg, options, &tools.name),
        device_check: (!cfg.device_check.is_empty()).then(|| device::DeviceCheck {
            arch: cfg.device_check.clone(),
            ..device::DeviceCheck::default()
        }),
        compiler: tools.name.clone(),
        generator: cfg.generator.clone(),
        jobs,
        namespace: cfg.namespace.clone(),
        tree,
        build_dir,
        ..BuildReport::default()
    };
    Ok(read_outcome(base, outcome))
}

/// The key of this build's outcome: the tree, the settings, the tools and what they read.
fn outcome_key(
    cfg: &BuildConfig,
    options: &BuildOptions,
    tools: &Tools,
    tree: &Path,
    build_dir: &Path,
    jobs: usize,
) -> Result<forkbook_records::cache_entry::Key> {
    let search_path = compiler_search_path(cfg, options).unwrap_or_default();
    let overrides = format!(
        "compiler {:?}, arch {:?}, jobs {jobs}, ccache base {:?}",
        tools.name, options.arch, options.ccache_base
    );
    let mut programs = vec![&tools.compiler, &tools.cmake, &tools.nm];
    programs.extend(tools.launcher.as_ref());
    results::key(&results::KeyInputs {
        tree,
        build_dir,
        cfg,
        overrides,
        tools: programs.into_iter().map(PathBuf::as_path).collect(),
        search_path: &search_path,
    })
}

/// Configures and builds `tree` in an emptied `build_dir`, then reads every object's symbols.
fn run_build(
    cfg: &BuildConfig,
    options: &BuildOptions,
    tools: &Tools,
    tree: &Path,
    build_dir: &Path,
    jobs: usize,
) -> Result<results::Outcome> {
    empty_build_folder(build_dir, options)?;
    if let Some(store) = &options.compile_failures {
        failures::stage(store, build_dir);
    }
    let (compiler, launcher) = tools.for_cmake(cfg, options, tree, build_dir)?;
    let mut configure = configure_args(cfg, tree, build_dir, &compiler, options.arch.as_deref());
    configure.extend(toolchain_args(cfg, launcher.as_deref()));
    let mut env = tools.env(options, build_dir);
    if !cfg.device_check.is_empty() {
        env.push(device::env());
    }
    if compiler != tools.compiler && tools.launcher.is_some() {
        // A tree's own CMake may put ccache before the script (MLX does), and the script is
        // written anew in every emptied build folder: judged by its file's time, as ccache
        // does by default, it would be a new compiler each build. Its text names the
        // compiler's identity, so judging it by its text is exact.
        env.push(("CCACHE_COMPILERCHECK".into(), "content".into()));
    }
    let cmake = |args: &[String], log: &str| {
        run::run_logged_env(&tools.cmake, args, build_dir, &build_dir.join(log), &env)
    };
    let (configure, configure_log) = cmake(&configure, "forkbook-configure.log")?;
    let mut outcome = results::Outcome {
        configure,
        configure_log,
        ..results::Outcome::default()
    };
    if !outcome.configure.ok() {
        return Ok(outcome);
    }
    let (build, build_log) = build_keeping_going(&cfg.generator, build_dir, jobs, cmake)?;
    outcome.build = Some(build);
    outcome.build_log = build_log;
    if let Some(store) = &options.compile_failures {
        failures::keep(store, build_dir);
    }
    outcome.device_checks = device::read_records(build_dir);
    let table = read_symbols(build_dir, &tools.nm, &cfg.namespace, &mut outcome.objects)?;
    outcome.missing = table.missing_in(&cfg.namespace);
    let sources = |objects: BTreeSet<String>| objects.into_iter().collect();
    outcome.defined_by = (table.defined_by.into_iter())
        .map(|(symbol, objects)| (symbol, sources(objects)))
        .collect();
    Ok(outcome)
}

/// Removes what an earlier build left in `build_dir` (but ccache's objects, when they are kept
/// there), so a build folder reused by another command, pin or compiler changes no verdict.
fn empty_build_folder(build_dir: &Path, options: &BuildOptions) -> Result<()> {
    let entries = std::fs::read_dir(build_dir)
        .with_context(|| format!("failed to read `{}`", build_dir.display()))?;
    let ccache = (options.ccache_dir.clone()).unwrap_or_else(|| build_dir.join("ccache"));
    for entry in entries.flatten() {
        let path = entry.path();
        if path == ccache || path.file_name().is_some_and(|n| n == TEMP_DIR) {
            continue;
        }
        let removed = match entry.file_type().is_ok_and(|t| t.is_dir()) {
            true => std::fs::remove_dir_all(&path),
            false => std::fs::remove_file(&path),
        };
        removed
            .with_context(|| format!("failed to empty the build folder: `{}`", path.display()))?;
    }
    Ok(())
}

/// The report read from a build's outcome: its errors, the sources that failed, and its
/// undefined symbols, those a failed source seems to define apart.
fn read_outcome(mut report: BuildReport, outcome: results::Outcome) -> BuildReport {
    let (tree, build_dir) = (report.tree.clone(), report.build_dir.clone());
    let configure_errors = log::parse_cmake_log(&outcome.configure_log);
    report.configure_errors = relative_diagnostics(configure_errors, &tree, &tree);
    report.configure = outcome.configure;
    report.objects = outcome.objects;
    let Some(build) = outcome.build else {
        return report;
    };
    let errors = log::parse_compiler_log(&outcome.build_log);
    report.errors = dedup(relative_diagnostics(errors, &tree, &build_dir));
    report.build = Some(build);
    let failed = failed_sources(&outcome.build_log, &report.errors, &tree, &build_dir);
    let source = |o: &String| log::source_of_object(o).unwrap_or_else(|| o.clone());
    report.defined_by = (outcome.defined_by.into_iter())
        .map(|(symbol, objects)| (symbol, objects.iter().map(source).collect()))
        .collect();
    file_undefined(&mut report, outcome.missing, &failed);
    report.failed = failed.into_iter().collect();
    if let Some(check) = &mut report.device_check {
        let relative = |file: &str, dir: &Path| relative_to_tree(file, &tree, dir);
        let units = &outcome.device_checks;
        *check = device::report(&check.arch, units, &report.errors, &tree, relative);
        // The check's errors are the build's, found where the host compile does not look.
        report.errors.extend(check.device_only.iter().cloned());
        report.errors = dedup(std::mem::take(&mut report.errors));
    }
    report
}

/// The build's temporary folder, inside the build folder (`TMPDIR` of every tool it runs).
const TEMP_DIR: &str = "forkbook-tmp";

/// `tree` and `build_dir` made absolute, once `tree` is a CMake project and `build_dir` exists.
fn prepare(tree: &Path, build_dir: &Path) -> Result<(PathBuf, PathBuf)> {
    if !tree.join("CMakeLists.txt").is_file() {
        return Err(
            Error::new(format!("no `CMakeLists.txt` in `{}`", tree.display()))
                .with_note("drift build takes a tree exported with `forkbook export-tree`"),
        );
    }
    std::fs::create_dir_all(build_dir.join(TEMP_DIR)).with_context(|| {
        format!(
            "failed to create the build folder `{}`",
            build_dir.display()
        )
    })?;
    Ok((absolute(tree)?, absolute(build_dir)?))
}

/// `cmake --build` keeping going past errors, and what it printed. `make -k` builds nothing
/// that depends on a target that failed: a library whose one file does not compile keeps every
/// object of the targets after it from being compiled. A second pass ignoring errors (`-i`)
/// compiles those; what failed fails again, replayed from the failures the wrapper kept
/// ([`failures`]) when it keeps them, and the errors are counted once. Ninja has no such flag.
fn build_keeping_going(
    generator: &str,
    build_dir: &Path,
    jobs: usize,
    cmake: impl Fn(&[String], &str) -> Result<(Step, String)>,
) -> Result<(Step, String)> {
    let args = build_args(generator, build_dir, jobs);
    let (mut build, mut build_log) = cmake(&args, "forkbook-build.log")?;
    if !build.ok() && generator.contains("Makefiles") {
        let again = [args, vec!["-i".to_string()]].concat();
        let (blocked, blocked_log) = cmake(&again, "forkbook-build-blocked.log")?;
        build.seconds += blocked.seconds;
        build_log.push('\n');
        build_log.push_str(&blocked_log);
    }
    Ok((build, build_log))
}

/// The folders the compiler searches for `#include <...>` on its own, as
/// `<compiler> -E -x c++ -v /dev/null` prints them.
pub fn compiler_search_path(cfg: &BuildConfig, options: &BuildOptions) -> Result<Vec<PathBuf>> {
    let (_, compiler, search) = find_compiler(cfg, options)?;
    let probe = crate::process::Spec::new(&compiler, Path::new("."))
        .args(["-E", "-x", "c++", "-v", "/dev/null"])
        .env("PATH", &search);
    let (stdout, stderr) = run::output_of(probe)?;
    // The list is on stderr; some drivers print it on stdout.
    let text = stderr + &stdout;
    let dirs = stubs::parse_search_list(&text);
    if dirs.is_empty() {
        return Err(Error::new(format!(
            "`{} -E -x c++ -v /dev/null` printed no include search list",
            compiler.display()
        ))
        .with_note(
            "drift build --stubs asks the compiler where it finds headers; \
             a compiler that does not say cannot tell which headers are missing",
        ));
    }
    Ok(dirs)
}

/// The compiler script CMake is given in place of the compiler.
struct Wrapper<'a> {
    compiler: &'a Path,
    /// ccache, run by the script.
    launcher: Option<&'a Path>,
    /// The tree, where the script keeps and replays failed compiles ([`failures`]).
    failures_in: Option<&'a Path>,
}

impl Wrapper<'_> {
    /// Writes `build_dir/forkbook-compiler/<compiler's name>`: a POSIX shell script that drops
    /// the arguments `[build] drop_flags` names, adds `add_flags` after the rest, and runs the
    /// compiler (through the launcher when given), answering a failure it kept from the build
    /// folder's `kept/` instead.
    fn write(&self, build_dir: &Path, cfg: &BuildConfig) -> Result<PathBuf> {
        let quote = failures::shell_quote;
        let dropped: String = (cfg.drop_flags.iter())
            .map(|flag| match flag.strip_suffix('*') {
                Some(prefix) => format!("    {}*) ;;\n", quote(prefix)),
                None => format!("    {}) ;;\n", quote(flag)),
            })
            .collect();
        let programs = self.launcher.into_iter().chain([self.compiler]);
        let run: Vec<String> = programs.map(|p| quote(&p.display().to_string())).collect();
        let run = run.join(" ");
        let added: String = (cfg.add_flags.iter())
            .map(|f| format!(" {}", quote(f)))
            .collect();
        let compiler = quote(&self.compiler.display().to_string());
        let identity = results::tool_digest(self.compiler);
        let replay = (self.failures_in)
            .and_then(|tree| failures::script(tree, build_dir, &run, &compiler, &identity));
        let tail = replay.unwrap_or_else(|| format!("exec {run} \"$@\"\n"));
        let check =
            (!cfg.device_check.is_empty()).then(|| device::script(&cfg.device_check, build_dir));
        let tail = check.unwrap_or_default() + &tail;
        let script = format!(
            "#!/bin/sh\n# Written by forkbook drift build: runs the compiler without the arguments\n\
             # [build] drop_flags names, with those [build] add_flags names.\n\
             # The compiler's identity: {identity}\nn=$#\nwhile [ \"$n\" -gt 0 ]; do\n  a=$1\n  shift\n  \
             n=$((n - 1))\n  case \"$a\" in\n{dropped}    *) set -- \"$@\" \"$a\" ;;\n  esac\ndone\nset -- \"$@\"{added}\n{tail}"
        );
        let name = (self.compiler.file_name())
            .map_or_else(|| "cc".to_string(), |n| n.to_string_lossy().into_owned());
        let path = build_dir.join("forkbook-compiler").join(name);
        crate::fsutil::replace_file(&path, script.as_bytes())?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("failed to make `{}` executable", path.display()))?;
        }
        Ok(path)
    }
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

fn absolute(path: &Path) -> Result<PathBuf> {
    path.canonicalize()
        .with_context(|| format!("failed to resolve `{}`", path.display()))
}

fn configure_args(
    cfg: &BuildConfig,
    tree: &Path,
    build_dir: &Path,
    compiler: &Path,
    arch: Option<&str>,
) -> Vec<String> {
    let (compiler, arch) = (compiler.display().to_string(), arch.unwrap_or(&cfg.arch));
    let (tree, build_dir) = (tree.display().to_string(), build_dir.display().to_string());
    let args = ["-S", &tree, "-B", &build_dir, "-G", &cfg.generator].map(String::from);
    let expanded =
        (cfg.cmake_args.iter()).map(|a| a.replace("{compiler}", &compiler).replace("{arch}", arch));
    args.into_iter().chain(expanded).collect()
}

/// The toolchain profile's configure arguments: ccache as the compiler launcher, and the extra
/// include folders (the stub folder last) for C++ and HIP alike.
fn toolchain_args(cfg: &BuildConfig, launcher: Option<&Path>) -> Vec<String> {
    let for_each_lang = |var: &str, value: String| {
        ["CXX", "HIP"].map(|lang| format!("-DCMAKE_{lang}_{var}={value}"))
    };
    let launcher = launcher.map(|l| for_each_lang("COMPILER_LAUNCHER", l.display().to_string()));
    let mut args: Vec<String> = launcher.into_iter().flatten().collect();
    let mut includes: Vec<&str> = cfg.include_dirs.iter().map(String::as_str).collect();
    if !cfg.stubs.is_empty() {
        includes.push(&cfg.stubs);
        // The stub packages and libraries `--stubs` wrote, as an initial cache.
        let cache = Path::new(&cfg.stubs).join(stubs::CMAKE_CACHE);
        if cache.is_file() && stubs::is_ours(&cache) {
            args.extend(["-C".to_string(), cache.display().to_string()]);
        }
    }
    if !includes.is_empty() {
        args.extend(for_each_lang(
            "STANDARD_INCLUDE_DIRECTORIES",
            includes.join(";"),
        ));
    }
    args
}

/// `cmake --build` with the generator's keep-going flag, so every error shows in one run.
fn build_args(generator: &str, build_dir: &Path, jobs: usize) -> Vec<String> {
    let keep_going: &[&str] = match generator {
        "Ninja" => &["--", "-k", "0"],
        _ if generator.contains("Makefiles") => &["--", "-k"],
        _ => &[],
    };
    let (dir, jobs) = (build_dir.display().to_string(), jobs.to_string());
    let args = ["--build", &dir, "--parallel", &jobs].into_iter();
    args.chain(keep_going.iter().copied())
        .map(String::from)
        .collect()
}

/// Makes every diagnostic's file relative to the tree; relative paths are read from `cwd`.
fn relative_diagnostics(
    mut diagnostics: Vec<Diagnostic>,
    tree: &Path,
    cwd: &Path,
) -> Vec<Diagnostic> {
    for diagnostic in diagnostics.iter_mut().filter(|d| !d.file.is_empty()) {
        diagnostic.file = relative_to_tree(&diagnostic.file, tree, cwd);
    }
    diagnostics
}

/// `file` relative to `tree` when it lies inside it; otherwise as printed.
fn relative_to_tree(file: &str, tree: &Path, cwd: &Path) -> String {
    let path = cwd.join(file);
    let normalized = lexical_normalize(&path);
    match normalized.strip_prefix(tree) {
        Ok(inside) if !inside.as_os_str().is_empty() => inside.to_string_lossy().replace('\\', "/"),
        // A command that ran in a subfolder of the build (`cd build/mlx/backend/rocm && hipcc
        // ../../../../tree/…`) printed its path from there: the longest `..`-free tail of it
        // that names a file of the tree is that file.
        _ if file.starts_with("../") => {
            let parts: Vec<&str> = file.split('/').collect();
            (1..parts.len())
                .map(|start| parts[start..].join("/"))
                .filter(|tail| !tail.split('/').any(|p| p == ".."))
                .find(|tail| tree.join(tail).is_file())
                .unwrap_or_else(|| file.to_string())
        }
        _ => file.to_string(),
    }
}

fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// One entry per (file, line, column, message), sorted.
fn dedup(mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let key = |d: &Diagnostic| (d.file.clone(), d.line, d.column, d.message.clone());
    // A stable sort: of the same error, the first printed stays.
    diagnostics.sort_by_key(key);
    diagnostics.dedup_by_key(|d| key(d));
    diagnostics
}

/// The sources (relative to the tree) whose compile failed: those make or ninja name, the
/// source files errors are in, and those an include chain or a crash of the compiler names
/// (what a `make -i` pass leaves unnamed).
fn failed_sources(
    build_log: &str,
    errors: &[Diagnostic],
    tree: &Path,
    build_dir: &Path,
) -> BTreeSet<String> {
    let objects = log::failed_objects(build_log);
    let sources = objects
        .iter()
        .filter_map(|object| log::source_of_object(object));
    let in_errors = (errors.iter())
        .filter(|e| log::is_source(&e.file))
        .map(|e| e.file.clone());
    let units = (log::failed_units(build_log).into_iter())
        .map(|unit| relative_to_tree(&unit, tree, build_dir))
        .filter(|unit| !unit.starts_with('/'));
    sources.chain(in_errors).chain(units).collect()
}

/// Runs `nm -C` over every object below `build_dir` (counted into `objects`): what they define
/// and need, with which objects define each symbol of `namespace`.
fn read_symbols(
    build_dir: &Path,
    nm_program: &Path,
    namespace: &str,
    objects: &mut usize,
) -> Result<nm::SymbolTable> {
    let files = object_files(build_dir)?;
    *objects = files.len();
    let mut table = nm::SymbolTable::default();
    for chunk in files.chunks(2000) {
        let args = [vec!["-C".to_string()], chunk.to_vec()].concat();
        let output = run::run_capture(nm_program, &args, build_dir)?;
        let only = (chunk.len() == 1).then(|| chunk[0].as_str());
        table.extend(nm::parse_nm_in(&output, only, Some(namespace)));
    }
    Ok(table)
}

/// Files each symbol no object defines: undefined, or, where a source that failed to compile
/// seems to define it, undefined after that error.
fn file_undefined(
    report: &mut BuildReport,
    missing: Vec<(String, Vec<String>)>,
    failed: &BTreeSet<String>,
) {
    let read = |source| {
        Some((
            source,
            std::fs::read_to_string(report.tree.join(source)).ok()?,
        ))
    };
    let failed_texts: Vec<(&String, String)> = failed.iter().filter_map(read).collect();
    for (symbol, objects) in missing {
        let needed_by = objects
            .iter()
            .map(|o| log::source_of_object(o).unwrap_or_else(|| o.clone()))
            .collect();
        let name = nm::qualified_name(&symbol);
        let probably_in = failed_texts
            .iter()
            .find(|(_, text)| likely_defines(text, name, &report.namespace))
            .map(|(source, _)| source.to_string());
        let list = match probably_in {
            Some(_) => &mut report.undefined_after_errors,
            None => &mut report.undefined,
        };
        list.push(UndefinedSymbol {
            symbol,
            needed_by,
            probably_in,
        });
    }
}

/// Object files under the build folder (relative to it), except CMake's own probes.
fn object_files(build_dir: &Path) -> Result<Vec<String>> {
    let files = crate::fsutil::files_below(build_dir, true, is_cmake_probe_dir)?;
    Ok(files.into_iter().filter(|f| log::is_object(f)).collect())
}

/// `CMakeFiles/3.25.1/` (compiler identification) and `CMakeFiles/CMakeScratch/` hold
/// CMake's probes, not the project's objects.
fn is_cmake_probe_dir(parent: &Path, name: &str) -> bool {
    let in_cmake_files = parent.file_name().is_some_and(|n| n == "CMakeFiles");
    in_cmake_files
        && (name.starts_with(|c: char| c.is_ascii_digit())
            || name == "CMakeScratch"
            || name == "CMakeTmp")
}

/// Whether a source seems to define the symbol with this qualified name: it names
/// `Owner::member`, or it opens `namespace … Owner` and has `member(`; a free function of the
/// namespace needs `name(`.
fn likely_defines(text: &str, qualified: &str, namespace: &str) -> bool {
    let inner = nm::inside(qualified, namespace).unwrap_or(qualified);
    let inner = inner.split('<').next().unwrap_or(inner);
    let parts: Vec<&str> = inner.split("::").filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [] => false,
        [name] => has_definition_of(text, name),
        [.., owner, member] => {
            confirm::contains_word(text, &format!("{owner}::{member}"))
                || (opens_namespace(text, owner) && has_definition_of(text, member))
        }
    }
}

fn has_definition_of(text: &str, name: &str) -> bool {
    // A long return type puts the name at the start of its own line.
    [" ", "&", "*", "\n"]
        .iter()
        .any(|before| text.contains(&format!("{before}{name}(")))
}

fn opens_namespace(text: &str, name: &str) -> bool {
    text.contains(&format!("namespace {name} {{")) || text.contains(&format!("::{name} {{"))
}

impl BuildReport {
    /// This build with its undefined symbols read from `side`, the same tree built with its
    /// conflicts taken at one side ([`SideBuild`]); its errors and failed sources stay its own.
    pub fn with_symbols_of(self, side: BuildReport) -> BuildReport {
        let compiled = (self.failed.iter())
            .filter(|source| !side.failed.contains(source))
            .cloned()
            .collect();
        BuildReport {
            undefined: side.undefined,
            undefined_after_errors: side.undefined_after_errors,
            defined_by: side.defined_by,
            symbols_from: Some(SideBuild {
                tree: side.tree,
                objects: side.objects,
                compiled,
            }),
            ..self
        }
    }

    /// The configure errors, then the compile errors.
    pub fn all_errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.configure_errors.iter().chain(&self.errors)
    }

    /// One line: how configure and the build went and what they found.
    pub fn summary_line(&self) -> String {
        let build = match &self.build {
            Some(build) => format!(
                "build {}, {}, {}, {}",
                took(build),
                plural(self.objects, "object", "objects"),
                plural(
                    self.errors.len() + self.configure_errors.len(),
                    "compile error",
                    "compile errors"
                ),
                plural(
                    self.undefined.len(),
                    "undefined symbol",
                    "undefined symbols"
                )
            ),
            None => "the build did not run".to_string(),
        };
        format!("configure {}; {build}", took(&self.configure))
    }

    /// Everything that makes `drift build` exit 1, one line each.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !self.configure.ok() {
            problems.push(format!(
                "configuring failed ({}); see `{}`",
                status_text(&self.configure),
                self.configure.log.display()
            ));
            problems.extend(self.configure_errors.iter().map(describe));
        }
        problems.extend(self.errors.iter().map(describe));
        problems.extend(self.undefined.iter().map(UndefinedSymbol::problem));
        let unexplained =
            |b: &&Step| !b.ok() && self.errors.is_empty() && self.undefined.is_empty();
        if let Some(build) = self.build.as_ref().filter(unexplained) {
            problems.push(format!(
                "the build failed ({}) with no error forkbook recognised; see `{}`",
                status_text(build),
                build.log.display()
            ));
        }
        problems
    }

    /// The report: the steps, the compile errors and the undefined symbols as tables.
    pub fn doc(&self) -> Doc {
        let mut doc = Doc::default();
        doc.say(format!(
            "drift build with `{}` ({}, {} jobs)",
            self.compiler, self.generator, self.jobs
        ))
        .path_line("tree", &self.tree);
        let build = self
            .build
            .as_ref()
            .map_or("build: not run".to_string(), |b| {
                format!(
                    "build: {}, {}",
                    took(b),
                    plural(self.objects, "object", "objects")
                )
            });
        let configure = format!("configure: {}", took(&self.configure));
        doc.list(vec![vec![words(configure)], vec![words(build)]]);
        self.device_line(&mut doc);
        self.symbols_line(&mut doc);
        self.findings(&mut doc);
        doc.path_line("log", &self.build.as_ref().unwrap_or(&self.configure).log);
        doc
    }

    /// What of the device code was compiled: none, when `[build] add_flags` leaves it out, or
    /// for which architectures at which optimization (its code generator's errors depend on it).
    pub(crate) fn device_line(&self, doc: &mut Doc) {
        if let Some(check) = &self.device_check {
            doc.say(self.device_check_line(check));
        } else if let Some(flag) = &self.host_only {
            doc.say(format!(
                "device code: not compiled (`{flag}` in `[build] add_flags`: the host side of each HIP file alone; errors only the device compile or its code generator shows are not seen)"
            ));
        } else if let Some(device) = &self.device {
            let optimization = match &device.optimization {
                Some(flag) => format!("at `{flag}` (`[build] add_flags`)"),
                None => "at the tree's own optimization flags".to_string(),
            };
            doc.say(format!(
                "device code: compiled for {} {optimization}",
                device.arch
            ));
        }
    }

    /// What the device check ran on, what it found, and what of the device code was not
    /// compiled: the code itself under a host-only flag, the units whose check did not end,
    /// the tree's HIP files the build does not compile.
    fn device_check_line(&self, check: &device::DeviceCheck) -> String {
        let compiled = match (&self.host_only, &self.device) {
            (None, Some(device)) => format!("compiled for {}; ", device.arch),
            _ => String::new(),
        };
        let mut line = format!(
            "device code: {compiled}semantic check for {} (no code generated) on {} of {} HIP {}",
            check.arch,
            check.checked,
            check.units,
            if check.units == 1 { "unit" } else { "units" }
        );
        if !check.device_only.is_empty() {
            let errors = plural(check.device_only.len(), "error", "errors");
            line.push_str(&format!(", {errors} the host compile does not show"));
        }
        let mut not_compiled = Vec::new();
        if let Some(flag) = &self.host_only {
            not_compiled.push(format!(
                "the device code itself (`{flag}` in `[build] add_flags`; errors only its code generator shows are not seen)"
            ));
        }
        let named = |files: &[String]| format!("`{}`", files.join("`, `"));
        if !check.not_checked.is_empty() {
            not_compiled.push(format!(
                "the check of {} (it did not end: see the build log)",
                named(&check.not_checked)
            ));
        }
        if !check.not_compiled.is_empty() {
            let files = plural(check.not_compiled.len(), "HIP file", "HIP files");
            not_compiled.push(format!(
                "{files} of the tree the build does not compile ({})",
                named(&check.not_compiled)
            ));
        }
        if !not_compiled.is_empty() {
            line.push_str(&format!("; not compiled: {}", not_compiled.join("; ")));
        }
        line
    }

    /// Where the undefined symbols were read, when not from this build's objects.
    pub(crate) fn symbols_line(&self, doc: &mut Doc) {
        if let Some(side) = &self.symbols_from {
            doc.say(format!(
                "symbols: read from a build with each of the {} taken at the pin's side ({}, {} more compiled; its errors are not counted)",
                plural(self.conflicted.len(), "file in conflict", "files in conflict"),
                plural(side.objects, "object", "objects"),
                plural(side.compiled.len(), "source", "sources"),
            ))
            .path_line("tree", &side.tree);
        }
    }

    /// The compile errors, the undefined symbols, and those that follow from a failed compile.
    fn findings(&self, doc: &mut Doc) {
        let errors: Vec<&Diagnostic> = self.all_errors().collect();
        let (ns, after) = (&self.namespace, &self.undefined_after_errors);
        let found = !(errors.is_empty() && self.undefined.is_empty() && after.is_empty());
        if self.build.is_some() && !found {
            doc.say(format!(
                "no compile errors and no undefined symbols in `{ns}`"
            ));
            return;
        }
        doc.say(format!("compile errors: {}", errors.len()));
        doc.table(
            &["where", "error"],
            errors.into_iter().map(error_row).collect(),
        );
        if self.build.is_some() {
            let count = self.undefined.len();
            let rows = self.undefined.iter().map(undefined_row).collect();
            doc.say(format!(
                "undefined symbols in `{ns}` that no object defines: {count}"
            ))
            .records(&["undefined symbol", "needed by"], rows);
        }
        if !after.is_empty() {
            let probably_in = |u: &UndefinedSymbol| vec![u.probably_in.iter().map(code).collect()];
            let rows = after
                .iter()
                .map(|u| [undefined_row(u), probably_in(u)].concat());
            doc.say(format!(
                "also undefined, probably because their file failed to compile: {}",
                after.len()
            ))
            .records(
                &["undefined symbol", "needed by", "probably in"],
                rows.collect(),
            );
        }
    }
}

impl UndefinedSymbol {
    /// The symbol as a problem: `undefined symbol `name``.
    pub(crate) fn problem(&self) -> String {
        format!("undefined symbol `{}`", self.symbol)
    }
}

/// A compile error as a table's row: where, and what.
pub(crate) fn error_row(error: &Diagnostic) -> Row {
    let place = error.place();
    let place = (!place.is_empty()).then(|| code(place));
    vec![place.into_iter().collect(), vec![text(what(error))]]
}

/// An undefined symbol as a table's row: the symbol, and the sources that need it.
fn undefined_row(symbol: &UndefinedSymbol) -> Row {
    vec![vec![code(&symbol.symbol)], codes(&symbol.needed_by)]
}

/// `severity: message`.
fn what(error: &Diagnostic) -> String {
    format!("{}: {}", error.severity, error.message)
}

/// `place: severity: message`, or without the place when the tool gave none.
fn describe(error: &Diagnostic) -> String {
    match error.place() {
        place if place.is_empty() => what(error),
        place => format!("{place}: {}", what(error)),
    }
}

fn status_text(step: &Step) -> String {
    match step.status {
        Some(code) => format!("exit {code}"),
        None => "killed by a signal".to_string(),
    }
}

/// `ok in 1.2 s`, `failed, exit 2 in 1.2 s`.
fn took(step: &Step) -> String {
    let result = match step.ok() {
        true => "ok".to_string(),
        false => format!("failed, {}", status_text(step)),
    };
    format!("{result} in {:.1} s", step.seconds)
}

/// Deterministic junk for the parsers' must-not-panic tests: `len` characters drawn from
/// `alphabet` by an xorshift generator started at `seed`.
#[cfg(test)]
fn junk_text(alphabet: &[u8], mut seed: u32, len: usize) -> String {
    let mut out = String::with_capacity(len);
    for _ in 0..len {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        out.push(alphabet[seed as usize % alphabet.len()] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_relative_to_the_tree() {
        let tree = Path::new("/w/tree");
        assert_eq!(
            relative_to_tree("/w/tree/mlx/a.cpp", tree, Path::new("/w/build")),
            "mlx/a.cpp"
        );
        assert_eq!(
            relative_to_tree("../tree/mlx/./b.h", tree, Path::new("/w/build")),
            "mlx/b.h"
        );
        assert_eq!(
            relative_to_tree("/usr/include/c++/12/tuple", tree, Path::new("/w/build")),
            "/usr/include/c++/12/tuple"
        );
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("tree");
        std::fs::create_dir_all(real.join("mlx/backend/rocm")).unwrap();
        std::fs::write(real.join("mlx/backend/rocm/qmm.hip"), "").unwrap();
        assert_eq!(
            relative_to_tree(
                "../../../../tree/mlx/backend/rocm/qmm.hip",
                &real,
                &dir.path().join("build")
            ),
            "mlx/backend/rocm/qmm.hip"
        );
    }

    #[test]
    fn default_config_expands_compiler_and_arch() {
        let cfg = BuildConfig::default();
        let args = configure_args(
            &cfg,
            Path::new("/t"),
            Path::new("/b"),
            Path::new("/usr/bin/c++"),
            Some("gfx942"),
        );
        assert!(args.contains(&"-DCMAKE_CXX_COMPILER=/usr/bin/c++".to_string()));
        assert!(args.contains(&"-DCMAKE_HIP_ARCHITECTURES=gfx942".to_string()));
        assert!(args.contains(&"-DMLX_BUILD_ROCM=ON".to_string()));
        assert_eq!(
            build_args("Ninja", Path::new("/b"), 3)[4..],
            ["--", "-k", "0"]
        );
        let parsed: BuildConfig = toml::from_str("compiler = \"clang++\"\njobs = 4").unwrap();
        assert_eq!(
            (
                parsed.compiler.as_str(),
                parsed.jobs,
                parsed.namespace.as_str()
            ),
            ("clang++", Some(4), "mlx::core")
        );
    }

    #[test]
    fn a_missing_compiler_is_an_error_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = BuildConfig::default();
        let options = BuildOptions {
            compiler: Some("no-such-hipcc-here".to_string()),
            ..BuildOptions::default()
        };
        let error = drift_build(dir.path(), &dir.path().join("b"), &cfg, &options).unwrap_err();
        assert_eq!(error.message(), "compiler `no-such-hipcc-here` not found");
        assert!(error.note.unwrap().contains("--compiler"));
    }

    #[test]
    fn definitions_in_failed_files_are_recognised() {
        let kernels = "namespace mlx::core {\nvoid Add::eval_gpu(const std::vector<array>& inputs, array& out) {}\n}";
        assert!(likely_defines(
            kernels,
            "mlx::core::Add::eval_gpu",
            "mlx::core"
        ));
        assert!(!likely_defines(
            kernels,
            "mlx::core::GatherQMM::eval_gpu",
            "mlx::core"
        ));
        let allocator = "namespace mlx::core::allocator {\nAllocator& allocator() {\n}";
        assert!(likely_defines(
            allocator,
            "mlx::core::allocator::allocator",
            "mlx::core"
        ));
        assert!(likely_defines(
            "bool operator==(const Device& a)",
            "mlx::core::operator==",
            "mlx::core"
        ));
    }

    /// The report's device line for each `[build]` setting, as a user reads it.
    #[test]
    fn the_device_line_says_what_device_code_was_compiled() {
        let line = |compiler: &str, add_flags: &[&str], arch: Option<&str>| {
            let cfg = BuildConfig {
                arch: "gfx90a;gfx1100".into(),
                add_flags: add_flags.iter().map(|f| f.to_string()).collect(),
                ..BuildConfig::default()
            };
            let options = BuildOptions {
                arch: arch.map(str::to_string),
                ..BuildOptions::default()
            };
            let report = BuildReport {
                host_only: (cfg.add_flags.iter())
                    .find(|f| HOST_ONLY_FLAGS.contains(&f.as_str()))
                    .cloned(),
                device: DeviceBuild::of(&cfg, &options, compiler),
                ..BuildReport::default()
            };
            let mut doc = Doc::default();
            report.device_line(&mut doc);
            doc.text()
        };
        assert!(line("hipcc", &["--cuda-host-only", "-O0"], None)
            .starts_with("device code: not compiled (`--cuda-host-only` in `[build] add_flags`"));
        assert_eq!(
            line("/opt/rocm/bin/hipcc", &["-O0"], Some("gfx1030")),
            "device code: compiled for gfx1030 at `-O0` (`[build] add_flags`)\n"
        );
        assert_eq!(
            line("hipcc", &["-O3", "-g", "-O1"], None),
            "device code: compiled for gfx90a;gfx1100 at `-O1` (`[build] add_flags`)\n"
        );
        assert_eq!(
            line("hipcc", &[], None),
            "device code: compiled for gfx90a;gfx1100 at the tree's own optimization flags\n"
        );
        // A C++ compiler has no device side: nothing is said.
        assert_eq!(line("c++", &["-O0"], None), "");
    }
}
