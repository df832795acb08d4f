//! `drift build`: the real build of an exported tree, to see what a pin bump breaks.
//!
//! Configures the tree with CMake and the ROCm options of the configuration, builds it with
//! the HIP compiler (or any compiler) keeping going past errors, and reports the compile errors
//! (gcc and clang formats, deduplicated, paths relative to the tree) and the symbols of the
//! upstream namespace that some object needs and no object defines (from one `nm` call over
//! every object). Undefined symbols whose definition sits in a file that failed to compile are
//! listed apart: they follow from an error already reported.
//!
//! [`confirm`] then compares the result with the static findings of `drift api`.

pub mod confirm;
pub mod differential;
pub mod log;
pub mod nm;
pub mod run;
pub mod stubs;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::doc::{code, codes, text, words, Doc, Row};
use crate::error::{Context, Error, Result};

pub use confirm::{confirm, Confirmation, Confirmed};
pub use differential::{Differential, MissingHeader};
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// The tree's files that hold conflict markers (a retarget to this pin leaves them in
    /// conflict), filled in by the caller that made the tree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicted: Vec<String>,
}

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
}

/// The tools one run needs, found up front so a missing one fails before anything runs.
struct Tools {
    compiler: PathBuf,
    cmake: PathBuf,
    nm: PathBuf,
    /// ccache, when configured and installed.
    launcher: Option<PathBuf>,
}

impl Tools {
    fn find(cfg: &BuildConfig, compiler: &str, search: &std::ffi::OsStr) -> Result<Tools> {
        let require =
            |program: &str, what: &str, note: &str| run::require_in(program, what, note, search);
        let compiler = require(
            compiler,
            "compiler",
            "drift build needs the HIP compiler: install ROCm so that `hipcc` is on PATH, \
             or pass `--compiler c++` to build the host side with another compiler",
        )?;
        let cmake = require(
            &cfg.cmake,
            "CMake",
            "install CMake (for example `apt-get install cmake`)",
        )?;
        let nm = require(
            &cfg.nm,
            "nm",
            "install binutils (for example `apt-get install binutils`)",
        )?;
        if cfg.generator == "Ninja" {
            require(
                "ninja",
                "build tool",
                "install Ninja, or set `generator = \"Unix Makefiles\"` in [build]",
            )?;
        }
        let launcher = if cfg.ccache {
            crate::tools::find_program_in("ccache", search)
        } else {
            None
        };
        Ok(Tools {
            compiler,
            cmake,
            nm,
            launcher,
        })
    }
}

/// Configures and builds `tree` in `build_dir` and reports the errors and undefined symbols.
/// `compiler`, `jobs` and `arch` override the configuration. A missing compiler, CMake or nm
/// is an error; a tree that fails to configure or build is a report with problems.
pub fn drift_build(
    tree: &Path,
    build_dir: &Path,
    cfg: &BuildConfig,
    compiler: Option<&str>,
    jobs: Option<usize>,
    arch: Option<&str>,
) -> Result<BuildReport> {
    let options = BuildOptions {
        compiler: compiler.map(str::to_string),
        jobs,
        arch: arch.map(str::to_string),
        ..BuildOptions::default()
    };
    drift_build_with(tree, build_dir, cfg, &options)
}

/// [`drift_build`] with every option: the tool path, ccache's folders.
pub fn drift_build_with(
    tree: &Path,
    build_dir: &Path,
    cfg: &BuildConfig,
    options: &BuildOptions,
) -> Result<BuildReport> {
    let compiler_name = options.compiler.as_deref().unwrap_or(&cfg.compiler);
    let search = crate::tools::search_path(options.tool_path.as_deref());
    let tools = Tools::find(cfg, compiler_name, &search)?;
    if !tree.join("CMakeLists.txt").is_file() {
        return Err(
            Error::new(format!("no `CMakeLists.txt` in `{}`", tree.display()))
                .with_note("drift build takes a tree exported with `forkbook export-tree`"),
        );
    }
    std::fs::create_dir_all(build_dir).with_context(|| {
        format!(
            "failed to create the build folder `{}`",
            build_dir.display()
        )
    })?;
    let tree = absolute(tree)?;
    let build_dir = absolute(build_dir)?;
    let jobs = options
        .jobs
        .or(cfg.jobs)
        .unwrap_or_else(default_jobs)
        .max(1);

    // With flags to drop, CMake gets the wrapper, which runs ccache itself (so the commands
    // that call the compiler directly are cached too) and no launcher.
    let (compiler, launcher) = if cfg.drop_flags.is_empty() && cfg.add_flags.is_empty() {
        (tools.compiler.clone(), tools.launcher.clone())
    } else {
        let wrapper = write_wrapper(
            &build_dir,
            &tools.compiler,
            tools.launcher.as_deref(),
            &cfg.drop_flags,
            &cfg.add_flags,
        )?;
        (wrapper, None)
    };
    let mut configure_args =
        configure_args(cfg, &tree, &build_dir, &compiler, options.arch.as_deref());
    configure_args.extend(toolchain_args(cfg, launcher.as_deref()));
    let mut env: Vec<(String, std::ffi::OsString)> = vec![("PATH".into(), search.clone())];
    if tools.launcher.is_some() {
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
    let cmake = |args: &[String], log: &str| {
        run::run_logged_env(&tools.cmake, args, &build_dir, &build_dir.join(log), &env)
    };
    let (configure, configure_log) = cmake(&configure_args, "forkbook-configure.log")?;
    let mut report = BuildReport {
        tree: tree.clone(),
        build_dir: build_dir.clone(),
        compiler: compiler_name.to_string(),
        generator: cfg.generator.clone(),
        jobs,
        namespace: cfg.namespace.clone(),
        configure_errors: relative_diagnostics(log::parse_cmake_log(&configure_log), &tree, &tree),
        configure,
        build: None,
        errors: Vec::new(),
        undefined: Vec::new(),
        undefined_after_errors: Vec::new(),
        objects: 0,
        conflicted: Vec::new(),
    };
    if !report.configure.ok() {
        return Ok(report);
    }

    let build_args = build_args(&cfg.generator, &build_dir, jobs);
    let (mut build, mut build_log) = cmake(&build_args, "forkbook-build.log")?;
    // `make -k` builds nothing that depends on a target that failed: a library whose one file
    // does not compile keeps every object of the targets after it from being compiled. A second
    // pass ignoring errors (`-i`) compiles those; what failed fails again (ccache keeps no
    // failure), and the errors are counted once. Ninja has no such flag.
    if !build.ok() && cfg.generator.contains("Makefiles") {
        let mut again = build_args.clone();
        again.push("-i".to_string());
        let (blocked, blocked_log) = cmake(&again, "forkbook-build-blocked.log")?;
        build.seconds += blocked.seconds;
        build_log.push('\n');
        build_log.push_str(&blocked_log);
    }
    report.build = Some(build);
    report.errors = dedup(relative_diagnostics(
        log::parse_compiler_log(&build_log),
        &tree,
        &build_dir,
    ));
    let failed = failed_sources(&build_log, &report.errors);
    read_symbols(&mut report, &tools.nm, &failed)?;
    Ok(report)
}

/// The folders the compiler searches for `#include <...>` on its own, as
/// `<compiler> -E -x c++ -v /dev/null` prints them.
pub fn compiler_search_path(cfg: &BuildConfig, options: &BuildOptions) -> Result<Vec<PathBuf>> {
    let name = options.compiler.as_deref().unwrap_or(&cfg.compiler);
    let search = crate::tools::search_path(options.tool_path.as_deref());
    let compiler = run::require_in(
        name,
        "compiler",
        "drift build needs the HIP compiler: install ROCm so that `hipcc` is on PATH, \
         or pass `--compiler c++` to build the host side with another compiler",
        &search,
    )?;
    let args: Vec<String> = ["-E", "-x", "c++", "-v", "/dev/null"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    let output = std::process::Command::new(&compiler)
        .args(&args)
        .env("PATH", &search)
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("failed to run `{}`", compiler.display()))?;
    // The list is on stderr; some drivers print it on stdout.
    let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stdout));
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

/// Writes `build_dir/forkbook-compiler/<compiler's name>`: a POSIX shell script that drops the
/// arguments `drop` names, adds `add` after the rest, and runs the compiler (through `launcher`
/// when given).
fn write_wrapper(
    build_dir: &Path,
    compiler: &Path,
    launcher: Option<&Path>,
    drop: &[String],
    add: &[String],
) -> Result<PathBuf> {
    let quote = |text: &str| format!("'{}'", text.replace('\'', "'\\''"));
    let mut script = String::from(
        "#!/bin/sh\n# Written by forkbook drift build: runs the compiler without the arguments\n\
         # [build] drop_flags names, with those [build] add_flags names.\nn=$#\nwhile [ \"$n\" -gt 0 ]; do\n  a=$1\n  shift\n  \
         n=$((n - 1))\n  case \"$a\" in\n",
    );
    for flag in drop {
        let pattern = match flag.strip_suffix('*') {
            Some(prefix) => format!("{}*", quote(prefix)),
            None => quote(flag),
        };
        let _ = writeln!(script, "    {pattern}) ;;");
    }
    script.push_str("    *) set -- \"$@\" \"$a\" ;;\n  esac\ndone\nexec ");
    if let Some(launcher) = launcher {
        script.push_str(&quote(&launcher.display().to_string()));
        script.push(' ');
    }
    script.push_str(&quote(&compiler.display().to_string()));
    script.push_str(" \"$@\"");
    for flag in add {
        script.push(' ');
        script.push_str(&quote(flag));
    }
    script.push('\n');
    let dir = build_dir.join("forkbook-compiler");
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("failed to create `{}`", dir.display()))?;
    let name = compiler
        .file_name()
        .map_or_else(|| "cc".to_string(), |n| n.to_string_lossy().into_owned());
    let path = dir.join(name);
    crate::fsutil::replace_file(&path, script.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("failed to make `{}` executable", path.display()))?;
    }
    Ok(path)
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
    let compiler = compiler.display().to_string();
    let arch = arch.unwrap_or(&cfg.arch);
    let mut args = vec![
        "-S".to_string(),
        tree.display().to_string(),
        "-B".to_string(),
        build_dir.display().to_string(),
        "-G".to_string(),
        cfg.generator.clone(),
    ];
    args.extend(
        cfg.cmake_args
            .iter()
            .map(|a| a.replace("{compiler}", &compiler).replace("{arch}", arch)),
    );
    args
}

/// The toolchain profile's configure arguments: ccache as the compiler launcher, and the extra
/// include folders (the stub folder last) for C++ and HIP alike.
fn toolchain_args(cfg: &BuildConfig, launcher: Option<&Path>) -> Vec<String> {
    let mut args = Vec::new();
    if let Some(launcher) = launcher {
        for lang in ["CXX", "HIP"] {
            args.push(format!(
                "-DCMAKE_{lang}_COMPILER_LAUNCHER={}",
                launcher.display()
            ));
        }
    }
    let mut includes: Vec<&str> = cfg.include_dirs.iter().map(String::as_str).collect();
    if !cfg.stubs.is_empty() {
        includes.push(&cfg.stubs);
        // The stub packages and libraries `--stubs` wrote, as an initial cache.
        let cache = Path::new(&cfg.stubs).join(stubs::CMAKE_CACHE);
        if cache.is_file() && stubs::is_ours(&cache) {
            args.push("-C".to_string());
            args.push(cache.display().to_string());
        }
    }
    if !includes.is_empty() {
        for lang in ["CXX", "HIP"] {
            args.push(format!(
                "-DCMAKE_{lang}_STANDARD_INCLUDE_DIRECTORIES={}",
                includes.join(";")
            ));
        }
    }
    args
}

/// `cmake --build` with the generator's keep-going flag, so every error shows in one run.
fn build_args(generator: &str, build_dir: &Path, jobs: usize) -> Vec<String> {
    let mut args = vec![
        "--build".to_string(),
        build_dir.display().to_string(),
        "--parallel".to_string(),
        jobs.to_string(),
    ];
    if generator == "Ninja" {
        args.extend(["--".to_string(), "-k".to_string(), "0".to_string()]);
    } else if generator.contains("Makefiles") {
        args.extend(["--".to_string(), "-k".to_string()]);
    }
    args
}

/// Makes every diagnostic's file relative to the tree; relative paths are read from `cwd`.
fn relative_diagnostics(
    mut diagnostics: Vec<Diagnostic>,
    tree: &Path,
    cwd: &Path,
) -> Vec<Diagnostic> {
    for diagnostic in &mut diagnostics {
        if !diagnostic.file.is_empty() {
            diagnostic.file = relative_to_tree(&diagnostic.file, tree, cwd);
        }
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
fn dedup(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen = BTreeSet::new();
    let mut unique: Vec<Diagnostic> = diagnostics
        .into_iter()
        .filter(|d| seen.insert((d.file.clone(), d.line, d.column, d.message.clone())))
        .collect();
    unique.sort_by(|a, b| {
        (&a.file, a.line, a.column, &a.message).cmp(&(&b.file, b.line, b.column, &b.message))
    });
    unique
}

/// The sources (relative to the tree) whose compile failed: those make or ninja name, and
/// the source files errors are in.
fn failed_sources(build_log: &str, errors: &[Diagnostic]) -> BTreeSet<String> {
    let mut sources: BTreeSet<String> = log::failed_objects(build_log)
        .iter()
        .filter_map(|object| log::source_of_object(object))
        .collect();
    let is_source = |file: &str| {
        [".cpp", ".cc", ".cxx", ".c", ".cu", ".hip"]
            .iter()
            .any(|ext| file.ends_with(ext))
    };
    sources.extend(
        errors
            .iter()
            .filter(|e| is_source(&e.file))
            .map(|e| e.file.clone()),
    );
    sources
}

/// Runs one `nm -C` over every object and fills the undefined symbols of the report.
fn read_symbols(
    report: &mut BuildReport,
    nm_program: &Path,
    failed: &BTreeSet<String>,
) -> Result<()> {
    let objects = object_files(&report.build_dir)?;
    report.objects = objects.len();
    let mut table = nm::SymbolTable::default();
    for chunk in objects.chunks(2000) {
        let mut args = vec!["-C".to_string()];
        args.extend(chunk.iter().cloned());
        let output = run::run_capture(nm_program, &args, &report.build_dir)?;
        let part = nm::parse_nm(
            &output,
            if chunk.len() == 1 {
                Some(chunk[0].as_str())
            } else {
                None
            },
        );
        table.defined.extend(part.defined);
        for (symbol, needed_by) in part.undefined {
            table.undefined.entry(symbol).or_default().extend(needed_by);
        }
    }
    let failed_texts: Vec<(String, String)> = failed
        .iter()
        .filter_map(|source| {
            Some((
                source.clone(),
                std::fs::read_to_string(report.tree.join(source)).ok()?,
            ))
        })
        .collect();
    for (symbol, objects) in table.missing_in(&report.namespace) {
        let needed_by = objects
            .iter()
            .map(|o| log::source_of_object(o).unwrap_or_else(|| o.clone()))
            .collect();
        let probably_in = failed_texts
            .iter()
            .find(|(_, text)| likely_defines(text, nm::qualified_name(&symbol), &report.namespace))
            .map(|(source, _)| source.clone());
        let undefined = UndefinedSymbol {
            symbol,
            needed_by,
            probably_in,
        };
        if undefined.probably_in.is_some() {
            report.undefined_after_errors.push(undefined);
        } else {
            report.undefined.push(undefined);
        }
    }
    Ok(())
}

/// Object files under the build folder (relative to it), except CMake's own probes.
fn object_files(build_dir: &Path) -> Result<Vec<String>> {
    let mut objects = Vec::new();
    let mut pending = vec![build_dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .with_context(|| format!("failed to read `{}`", dir.display()))?;
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let file_type = entry.file_type()?;
            if file_type.is_dir() && !is_cmake_probe_dir(&dir, &name) {
                pending.push(path);
            } else if file_type.is_file() && (name.ends_with(".o") || name.ends_with(".obj")) {
                if let Ok(relative) = path.strip_prefix(build_dir) {
                    objects.push(relative.to_string_lossy().into_owned());
                }
            }
        }
    }
    objects.sort();
    Ok(objects)
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
    let inner = qualified
        .strip_prefix(namespace)
        .and_then(|rest| rest.strip_prefix("::"))
        .unwrap_or(qualified);
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
    [" ", "&", "*"]
        .iter()
        .any(|before| text.contains(&format!("{before}{name}(")))
}

fn opens_namespace(text: &str, name: &str) -> bool {
    text.contains(&format!("namespace {name} {{")) || text.contains(&format!("::{name} {{"))
}

impl BuildReport {
    /// The configure errors, then the compile errors.
    pub fn all_errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.configure_errors.iter().chain(&self.errors)
    }

    /// One line: how configure and the build went and what they found.
    pub fn summary_line(&self) -> String {
        let mut line = format!(
            "configure {} in {:.1} s",
            step_result(&self.configure),
            self.configure.seconds
        );
        match &self.build {
            Some(build) => line.push_str(&format!(
                "; build {} in {:.1} s, {} objects, {} compile errors, {} undefined symbols",
                step_result(build),
                build.seconds,
                self.objects,
                self.errors.len() + self.configure_errors.len(),
                self.undefined.len()
            )),
            None => line.push_str("; the build did not run"),
        }
        line
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
        problems.extend(
            self.undefined
                .iter()
                .map(|u| format!("undefined symbol `{}`", u.symbol)),
        );
        if let Some(build) = self.build.as_ref().filter(|b| !b.ok()) {
            if self.errors.is_empty() && self.undefined.is_empty() {
                problems.push(format!(
                    "the build failed ({}) with no error forkbook recognised; see `{}`",
                    status_text(build),
                    build.log.display()
                ));
            }
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
        let configure = format!(
            "configure: {} in {:.1} s",
            step_result(&self.configure),
            self.configure.seconds
        );
        let build = self
            .build
            .as_ref()
            .map_or("build: not run".to_string(), |b| {
                let (result, objects) = (step_result(b), self.objects);
                format!("build: {result} in {:.1} s, {objects} objects", b.seconds)
            });
        doc.list(vec![vec![words(configure)], vec![words(build)]]);
        let errors: Vec<&Diagnostic> = self.all_errors().collect();
        let after = &self.undefined_after_errors;
        let found = !(errors.is_empty() && self.undefined.is_empty() && after.is_empty());
        if self.build.is_some() && !found {
            let ns = &self.namespace;
            doc.say(format!(
                "no compile errors and no undefined symbols in `{ns}`"
            ));
        } else {
            doc.say(format!("compile errors: {}", errors.len())).table(
                &["where", "error"],
                errors.into_iter().map(error_row).collect(),
            );
        }
        if self.build.is_some() && found {
            doc.say(format!(
                "undefined symbols in `{}` that no object defines: {}",
                self.namespace,
                self.undefined.len()
            ))
            .records(
                &["undefined symbol", "needed by"],
                self.undefined.iter().map(undefined_row).collect(),
            );
        }
        if !after.is_empty() {
            let rows = after.iter().map(|u| {
                let mut row = undefined_row(u);
                row.push(u.probably_in.iter().map(code).collect());
                row
            });
            doc.say(format!(
                "also undefined, probably because their file failed to compile: {}",
                after.len()
            ))
            .records(
                &["undefined symbol", "needed by", "probably in"],
                rows.collect(),
            );
        }
        doc.path_line("log", &self.build.as_ref().unwrap_or(&self.configure).log);
        doc
    }
}

/// A compile error as a table's row: where, and what.
pub(crate) fn error_row(error: &Diagnostic) -> Row {
    let place = error.place();
    vec![
        (!place.is_empty())
            .then(|| code(place))
            .into_iter()
            .collect(),
        vec![text(format!("{}: {}", error.severity, error.message))],
    ]
}

/// An undefined symbol as a table's row: the symbol, and the sources that need it.
fn undefined_row(symbol: &UndefinedSymbol) -> Row {
    vec![vec![code(&symbol.symbol)], codes(&symbol.needed_by)]
}

fn describe(error: &Diagnostic) -> String {
    let place = error.place();
    if place.is_empty() {
        format!("{}: {}", error.severity, error.message)
    } else {
        format!("{place}: {}: {}", error.severity, error.message)
    }
}

fn status_text(step: &Step) -> String {
    match step.status {
        Some(code) => format!("exit {code}"),
        None => "killed by a signal".to_string(),
    }
}

fn step_result(step: &Step) -> String {
    if step.ok() {
        "ok".to_string()
    } else {
        format!("failed, {}", status_text(step))
    }
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
        let error = drift_build(
            dir.path(),
            &dir.path().join("b"),
            &cfg,
            Some("no-such-hipcc-here"),
            None,
            None,
        )
        .unwrap_err();
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
}
