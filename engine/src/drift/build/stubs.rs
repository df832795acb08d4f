//! `drift build --stubs DIR`: stub headers for the libraries this machine lacks.
//!
//! A backend written for a full ROCm includes headers of libraries a smaller installation does
//! not have (rocBLAS, hipBLASLt, rocThrust, ...). Every file including one stops at its first
//! line, so nothing else in it is compiled, at either pin of a differential build. For each
//! header the backend includes that neither the exported trees, the `[build]` include folders
//! nor the compiler's own search list (`<compiler> -E -x c++ -v /dev/null`) has, a stub is
//! written into DIR under the path as included, declaring the library's names the backend uses
//! (read by the parse `drift api` uses): functions as variadic templates returning an int
//! status, handle and descriptor types as opaque pointers, other types as `int`, the rest as
//! integer constants (distinct, so they can be `case` labels), names spelled with the library's
//! namespace (`thrust::`, `hipcub::`) inside that namespace. What a stub cannot satisfy (a
//! member of a library struct, a template taking values) stays an error, at both pins alike, so
//! it is never drift.
//!
//! Each stub starts with [`MARKER`]; a file in DIR without it is someone else's and is never
//! overwritten, and nothing in DIR is ever deleted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::doc::{code, codes, words, Doc};
use crate::drift::api::BackendUses;
use crate::error::Result;

/// The first line of every stub header forkbook writes; it is followed by the header's path.
pub const MARKER: &str = "// forkbook-stub:";
/// The first line of every CMake stub forkbook writes.
pub const CMAKE_MARKER: &str = "# forkbook-stub:";
/// The initial-cache script (`cmake -C`) of the CMake stubs, under the stub folder.
pub const CMAKE_CACHE: &str = "cmake/forkbook-stubs.cmake";

/// What happened to one stub header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StubState {
    /// Written (new, or replacing an older stub of forkbook's).
    Written,
    /// Already there with the same text.
    Unchanged,
    /// A file forkbook did not write is at that path: kept as it is, and used.
    KeptNotOurs,
}

/// One header the machine lacks, and its stub.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StubHeader {
    /// As written in the `#include`.
    pub header: String,
    /// The stub's file.
    pub path: PathBuf,
    /// The backend files that include it.
    pub included_by: Vec<String>,
    /// Declared as variadic function templates.
    pub functions: Vec<String>,
    /// Declared as types.
    pub types: Vec<String>,
    /// Declared as integer constants.
    pub constants: Vec<String>,
    pub state: StubState,
}

/// What `--stubs` wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StubsReport {
    pub dir: PathBuf,
    /// The compiler's own include folders, as it printed them.
    pub compiler_search_path: Vec<PathBuf>,
    pub headers: Vec<StubHeader>,
    /// Included headers that could not be given a stub (a path that would leave DIR, or with
    /// characters no header path has): they stay missing.
    pub refused: Vec<String>,
    /// Packages the backend's CMake files require that the machine lacks, given a stub
    /// package config (so configuring gets as far as the compile).
    pub packages: Vec<String>,
    /// `find_library` results the machine lacks, as `VARIABLE=name`, given an empty archive.
    pub libraries: Vec<String>,
}

/// The folders `compiler -E -x c++ -v /dev/null` prints between `search starts here:` and
/// `End of search list.`, in order.
pub fn parse_search_list(output: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut inside = false;
    for line in output.lines() {
        // Apple's clang marks frameworks: `/path (framework directory)`.
        let dir = line.trim().trim_end_matches(" (framework directory)");
        match line {
            _ if line.contains("search starts here:") => inside = true,
            _ if line.trim() == "End of search list." => inside = false,
            _ if inside && !dir.is_empty() => dirs.push(PathBuf::from(dir)),
            _ => {}
        }
    }
    dirs
}

/// Everything [`write_stubs`] reads.
pub struct StubInputs<'a> {
    /// The backend's includes and uses.
    pub uses: &'a BackendUses,
    /// The exported trees (a header one holds is not missing).
    pub trees: &'a [PathBuf],
    /// The compiler's search list and the `[build]` include folders.
    pub search: &'a [PathBuf],
    pub compiler_search_path: Vec<PathBuf>,
    /// The backend's CMake files (path, text).
    pub cmake_files: &'a [(String, String)],
}

/// Writes a stub into `dir` for each header the backend includes that nothing provides.
pub fn write_stubs(dir: &Path, inputs: &StubInputs) -> Result<StubsReport> {
    let (missing, refused) = missing_headers(inputs);
    let stub = |(header, included_by): (String, BTreeSet<String>)| {
        let library = Library::of(&header, inputs.search);
        let names = library.names(inputs.uses);
        let path = dir.join(&header);
        // Someone's own stand-in in the folder is used as it is, and reported as kept.
        let state = write_stub(&path, &render(&header, &library, &names))?;
        Ok(StubHeader {
            header,
            path,
            included_by: included_by.into_iter().collect(),
            functions: joined(names.functions.iter()),
            types: joined(names.types.keys()),
            constants: joined(names.constants.iter().chain(names.objects.keys())),
            state,
        })
    };
    let headers = missing.into_iter().map(stub).collect::<Result<_>>()?;
    let (packages, libraries) = write_cmake_stubs(dir, inputs.cmake_files)?;
    Ok(StubsReport {
        dir: dir.to_path_buf(),
        compiler_search_path: inputs.compiler_search_path.clone(),
        headers,
        refused: refused.into_iter().collect(),
        packages,
        libraries,
    })
}

/// Qualified names spelled with `::`.
fn joined<'a>(names: impl Iterator<Item = &'a Vec<String>>) -> Vec<String> {
    names.map(|n| n.join("::")).collect()
}

/// The headers the backend includes that neither the trees nor the search folders hold, with
/// the files including each; and those refused a stub (see [`safe_header`]).
fn missing_headers(inputs: &StubInputs) -> (BTreeMap<String, BTreeSet<String>>, BTreeSet<String>) {
    let files_of = |tree| crate::fsutil::files_below(tree, false, |_, _| false).unwrap_or_default();
    let tree_files: Vec<Vec<String>> = inputs.trees.iter().map(|t| files_of(t)).collect();
    let mut missing: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut refused = BTreeSet::new();
    for (file, include) in &inputs.uses.includes {
        let in_tree = tree_files.iter().zip(inputs.trees).any(|(files, tree)| {
            let beside = file.rsplit_once('/').map_or("", |(dir, _)| dir);
            tree.join(beside).join(include).is_file()
                || files
                    .iter()
                    .any(|f| f == include || f.ends_with(&format!("/{include}")))
        });
        // A header under a folder of the tree itself (`mlx/…`) is the tree's to have: no
        // library stands behind it, and a stub would declare the tree's own names.
        let first = include.split('/').next().unwrap_or_default();
        let trees_own =
            include.contains('/') && inputs.trees.iter().any(|t| t.join(first).is_dir());
        if in_tree || trees_own || inputs.search.iter().any(|d| d.join(include).is_file()) {
            continue;
        }
        if !safe_header(include) {
            refused.insert(include.clone());
            continue;
        }
        missing
            .entry(include.clone())
            .or_default()
            .insert(file.clone());
    }
    (missing, refused)
}

/// Writes a stub's `text` at `path`, unless a file forkbook did not write is there.
fn write_stub(path: &Path, text: &str) -> Result<StubState> {
    Ok(if path.exists() && !is_ours(path) {
        StubState::KeptNotOurs
    } else if std::fs::read(path).ok().as_deref() == Some(text.as_bytes()) {
        StubState::Unchanged
    } else {
        crate::fsutil::replace_file(path, text.as_bytes())?;
        StubState::Written
    })
}

/// Where CMake finds installed packages and libraries on its own (the standard prefixes).
const PREFIXES: &[&str] = &["/usr", "/usr/local", "/opt/rocm"];

/// The library folders under the standard prefixes: `lib`, `lib64`, `lib/<multiarch>`, `share`.
fn library_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for prefix in PREFIXES.iter().map(Path::new) {
        dirs.extend(["lib", "lib64", "share"].map(|d| prefix.join(d)));
        if let Ok(entries) = std::fs::read_dir(prefix.join("lib")) {
            let multiarch = entries.flatten().map(|e| e.path());
            dirs.extend(multiarch.filter(|p| p.to_string_lossy().ends_with("-linux-gnu")));
        }
    }
    dirs
}

/// Whether some entry of `dir` (none when it cannot be read) is `found`.
fn any_entry(dir: &Path, found: impl Fn(&std::fs::DirEntry) -> bool) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| entries.flatten().any(|e| found(&e)))
}

/// The name of `entry`, lowercased.
fn lower_name(entry: &std::fs::DirEntry) -> String {
    entry.file_name().to_string_lossy().to_ascii_lowercase()
}

/// Whether a config file for package `name` (`<name>-config.cmake` or `<Name>Config.cmake`,
/// any case) is under `<prefix>/<libdir>/cmake/<name>*/` for a standard prefix.
fn package_installed(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let wanted = [
        format!("{lower}-config.cmake"),
        format!("{lower}config.cmake"),
    ];
    library_dirs().iter().any(|dir| {
        any_entry(&dir.join("cmake"), |entry| {
            lower_name(entry).starts_with(&lower)
                && any_entry(&entry.path(), |f| wanted.contains(&lower_name(f)))
        })
    })
}

/// Whether `lib<name>.so`, `.so.N` or `.a` is in a standard library folder.
fn library_installed(name: &str) -> bool {
    let (shared, archive) = (format!("lib{name}.so"), format!("lib{name}.a"));
    library_dirs().iter().any(|dir| {
        any_entry(dir, |f| {
            let file = f.file_name().to_string_lossy().into_owned();
            file == archive || file == shared || file.starts_with(&format!("{shared}."))
        })
    })
}

/// What the backend's CMake files ask for: required config-mode packages (with the imported
/// targets the files name for each, `roc::rocblas`) and `find_library` calls.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CmakeNeeds {
    pub packages: BTreeMap<String, BTreeSet<String>>,
    /// `(variable, library name)`.
    pub libraries: BTreeSet<(String, String)>,
}

/// Reads `find_package(NAME … REQUIRED … CONFIG)`, `find_library(VAR [NAMES] name …)` and the
/// `ns::target` names out of CMake text.
pub fn cmake_needs(files: &[(String, String)]) -> CmakeNeeds {
    let pattern = |p: &str| regex::Regex::new(p).expect("a valid pattern");
    let package = pattern(r"(?i)find_package\s*\(\s*([A-Za-z0-9_.+-]+)([^)]*)\)");
    let library =
        pattern(r"(?i)find_library\s*\(\s*([A-Za-z0-9_]+)\s+(?:NAMES\s+)?([A-Za-z0-9_.+-]+)");
    let target = pattern(r"\b([A-Za-z0-9_]+)::([A-Za-z0-9_.+-]+)");
    let mut needs = CmakeNeeds::default();
    let mut targets = BTreeSet::new();
    for (_, text) in files {
        let lines = text.lines().map(|l| l.split('#').next().unwrap_or(""));
        let text = lines.collect::<Vec<_>>().join("\n");
        for c in package.captures_iter(&text) {
            let words: Vec<String> = c[2].split_whitespace().map(|w| w.to_uppercase()).collect();
            let has = |w: &str| words.iter().any(|x| x == w);
            if has("REQUIRED") && (has("CONFIG") || has("NO_MODULE")) {
                needs.packages.entry(c[1].to_string()).or_default();
            }
        }
        needs.libraries.extend(pairs(&library, &text));
        targets.extend(pairs(&target, &text));
    }
    for (name, wanted) in needs.packages.iter_mut() {
        let named = targets.iter().filter(|(_, t)| t.eq_ignore_ascii_case(name));
        wanted.extend(named.map(|(ns, target)| format!("{ns}::{target}")));
    }
    needs
}

/// The first two groups of each match of `re` in `text`.
fn pairs<'a>(re: &'a regex::Regex, text: &'a str) -> impl Iterator<Item = (String, String)> + 'a {
    re.captures_iter(text)
        .map(|c| (c[1].to_string(), c[2].to_string()))
}

/// The CMake side of the stubs: for each required package the machine lacks, a package config
/// under `DIR/cmake/<name>/` defining the imported targets the CMake files name (an empty
/// archive as their library, the stub folder as their include folder); for each library
/// `find_library` would not find, an empty archive; and the initial-cache script
/// ([`CMAKE_CACHE`], given to `cmake -C`) pointing CMake at both.
fn write_cmake_stubs(
    dir: &Path,
    cmake_files: &[(String, String)],
) -> Result<(Vec<String>, Vec<String>)> {
    let needs = cmake_needs(cmake_files);
    let mut cache = format!(
        "{CMAKE_MARKER} the initial cache of forkbook's stub packages\n\
         # Written by forkbook (`forkbook drift build --stubs`) for packages and libraries this\n\
         # machine lacks; forkbook passes it to `cmake -C`. Nothing here links to anything.\n"
    );
    let (mut packages, mut libraries) = (Vec::new(), Vec::new());
    for (name, targets) in &needs.packages {
        let config = dir.join(format!("cmake/{name}/{name}-config.cmake"));
        if package_installed(name) || (config.exists() && !is_ours(&config)) {
            continue;
        }
        let lib = write_archive(dir, name)?;
        write_stub(&config, &package_config(name, targets, &lib))?;
        let _ = writeln!(
            cache,
            "set({name}_DIR \"${{CMAKE_CURRENT_LIST_DIR}}/{name}\" CACHE PATH \"forkbook stub\")"
        );
        packages.push(name.clone());
    }
    for (variable, name) in &needs.libraries {
        if library_installed(name) {
            continue;
        }
        let lib = write_archive(dir, name)?;
        let _ = writeln!(
            cache,
            "set({variable} \"${{CMAKE_CURRENT_LIST_DIR}}/lib/{lib}\" CACHE FILEPATH \"forkbook stub\")"
        );
        libraries.push(format!("{variable}={name}"));
    }
    if !packages.is_empty() || !libraries.is_empty() {
        write_stub(&dir.join(CMAKE_CACHE), &cache)?;
    }
    Ok((packages, libraries))
}

/// The empty archive standing in for library `name` under `DIR/cmake/lib/`, written unless it
/// is there; its file name.
fn write_archive(dir: &Path, name: &str) -> Result<String> {
    let lib = format!("libforkbook-stub-{name}.a");
    let file = dir.join("cmake/lib").join(&lib);
    if !file.exists() {
        // An archive with no members: it links, and resolves nothing.
        crate::fsutil::replace_file(&file, b"!<arch>\n")?;
    }
    Ok(lib)
}

/// The stub package config of `name`: its `targets`, each the archive `lib` with the stub
/// headers.
fn package_config(name: &str, targets: &BTreeSet<String>, lib: &str) -> String {
    let mut text = format!(
        "{CMAKE_MARKER} cmake package {name}\n\
         # A stub package config written by forkbook (`forkbook drift build --stubs`): the\n\
         # machine has no `{name}` package; this defines the targets the backend's CMake\n\
         # files name, with an empty library and the stub headers, so configuring goes on.\n\
         get_filename_component(_forkbook_stubs \"${{CMAKE_CURRENT_LIST_DIR}}/../..\" ABSOLUTE)\n\
         set({name}_FOUND TRUE)\n"
    );
    for target in targets {
        let _ = write!(
            text,
            "if(NOT TARGET {target})\n  add_library({target} STATIC IMPORTED)\n  \
             set_target_properties({target} PROPERTIES\n    \
             IMPORTED_LOCATION \"${{_forkbook_stubs}}/cmake/lib/{lib}\"\n    \
             INTERFACE_INCLUDE_DIRECTORIES \"${{_forkbook_stubs}}\")\nendif()\n"
        );
    }
    text
}

/// Whether the file at `path` is a stub forkbook wrote: its first line is the marker.
pub fn is_ours(path: &Path) -> bool {
    let bytes = std::fs::read(path).unwrap_or_default();
    bytes.starts_with(MARKER.as_bytes()) || bytes.starts_with(CMAKE_MARKER.as_bytes())
}

/// A relative path of plain components and the characters header names use: a stub for it
/// stays inside the stub folder, and its name can go in a C++ comment as it is.
fn safe_header(header: &str) -> bool {
    !header.is_empty()
        && !header.starts_with('/')
        && header.split('/').all(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c))
        })
}

/// Which of the backend's names a missing header stands for.
struct Library {
    /// Unqualified names starting with one of these (compared without case) are the library's.
    prefixes: Vec<String>,
    /// Names spelled in this namespace are the library's.
    namespace: Option<String>,
    /// The include guard.
    guard: String,
}

impl Library {
    /// `rocblas/rocblas.h`: the library `rocblas` (`rocblas_…` and `rocblas::…`); a `…lt`
    /// library's base library's names too (`hipblaslt`: `hipblas…`). A header missing from a
    /// folder the compiler has (`hip/hip_fp8.h` where `hip/` is installed, only older) stands
    /// for the names starting with its own name alone, never for the installed library's.
    fn of(header: &str, search: &[PathBuf]) -> Library {
        let file_stem = |name: &str| name.split('.').next().unwrap_or(name).to_string();
        let first = header.split('/').next().unwrap_or(header);
        let installed = header.contains('/') && search.iter().any(|d| d.join(first).is_dir());
        let (stem, namespace) = if header.contains('/') && !installed {
            (first.to_string(), Some(first.to_string()))
        } else {
            (file_stem(header.rsplit('/').next().unwrap_or(header)), None)
        };
        let mut prefixes = vec![stem.to_ascii_lowercase()];
        if let Some(base) = prefixes[0].strip_suffix("lt").filter(|b| b.len() > 2) {
            prefixes.push(base.to_string());
        }
        let guard = header
            .to_ascii_uppercase()
            .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        Library {
            prefixes,
            namespace: namespace.filter(|n| is_identifier(n)),
            guard: format!("FORKBOOK_STUB_{guard}"),
        }
    }

    /// Whether `path` (a qualified name as spelled) is this library's.
    fn owns(&self, path: &[String]) -> bool {
        match path {
            [name] => {
                let lower = name.to_ascii_lowercase();
                // `rocblas_` alone is a macro's token pasting, not a name; the library's own
                // name is a namespace or a variable of the backend's.
                let bare = |p: &String| lower.trim_end_matches('_') == p.as_str();
                !self.prefixes.iter().any(bare)
                    && self.prefixes.iter().any(|p| {
                        lower
                            .strip_prefix(p.as_str())
                            .is_some_and(|rest| !rest.trim_start_matches('_').is_empty())
                    })
            }
            [first, ..] => self.namespace.as_deref() == Some(first.as_str()),
            [] => false,
        }
    }

    fn names(&self, uses: &BackendUses) -> Names {
        let (mut names, calls) = (Names::default(), &uses.uses.calls);
        let called: BTreeSet<String> = (calls.iter())
            .filter(|c| !c.member)
            .map(|c| {
                [c.qualifier.as_slice(), std::slice::from_ref(&c.name)]
                    .concat()
                    .join("::")
            })
            .collect();
        // Each name once: their order does not matter.
        for (key, used) in &uses.uses.spelled {
            let path: Vec<String> = key.split("::").map(str::to_string).collect();
            let last = path.last().map(String::as_str).unwrap_or_default();
            if !path.iter().all(|p| is_identifier(p)) || !self.owns(&path) || used.as_field {
                continue;
            }
            // The backend's own helpers (`rocblas_gemm_ptrs(..)`, `ROCBLAS_CHECK(..)`) are not
            // the library's.
            if path.len() == 1 && uses.declared.contains(last) {
                continue;
            }
            if used.as_type {
                names.types.insert(path, used.as_template);
            } else if called.contains(key.as_str()) {
                names.functions.insert(path);
            } else if used.as_value && path.len() > 1 {
                // `thrust::hip::par.on(stream)`: an object whose members are those called on
                // the line it is first used on.
                let members: BTreeSet<String> = (calls.iter())
                    .filter(|c| c.member && c.loc == used.loc && is_identifier(&c.name))
                    .map(|c| c.name.clone())
                    .collect();
                names.objects.insert(path, members);
            } else if used.as_value {
                names.constants.insert(path);
            }
        }
        // `thrust::device_vector<T>::iterator` is a member of a type, not a namespace's name.
        let types: BTreeSet<Vec<String>> = names.types.keys().cloned().collect();
        let inside_type = |path: &Vec<String>| (1..path.len()).any(|n| types.contains(&path[..n]));
        names.types.retain(|p, _| !inside_type(p));
        names.functions.retain(|p| !inside_type(p));
        names.constants.retain(|p| !inside_type(p));
        names.objects.retain(|p, _| !inside_type(p));
        names
    }
}

#[derive(Debug, Default)]
struct Names {
    functions: BTreeSet<Vec<String>>,
    /// Type names, and whether they are used as templates.
    types: BTreeMap<Vec<String>, bool>,
    constants: BTreeSet<Vec<String>>,
    /// Namespaced values, with the member functions called on them.
    objects: BTreeMap<Vec<String>, BTreeSet<String>>,
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A handle or descriptor: an opaque pointer, as the libraries declare them.
fn is_handle(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [
        "handle",
        "desc",
        "layout",
        "preference",
        "plan",
        "context",
        "stream",
        "event",
        "info",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// The stub's text: the marker, what it is, then the declarations grouped by namespace.
fn render(header: &str, library: &Library, names: &Names) -> String {
    let mut out = format!("{MARKER} {header}\n");
    let _ = writeln!(
        out,
        "// A stub header written by forkbook (`forkbook drift build --stubs`). It stands in for\n\
         // <{header}>, which this machine's compiler does not find, and declares only the names\n\
         // the backend uses, so that the rest of each file including it is compiled. Nothing of\n\
         // the library is here: what needs more than these declarations stays an error, at both\n\
         // pins of a differential build. forkbook rewrites this file while its first line is\n\
         // the marker above; remove that line to keep your own version.\n"
    );
    let guard = &library.guard;
    let _ = writeln!(out, "#ifndef {guard}\n#define {guard}\n\n{HOST_DEVICE}");
    for (scope, decls) in declarations(names) {
        let scope = scope.join("::");
        if !scope.is_empty() {
            let _ = writeln!(out, "namespace {scope} {{");
        }
        for decl in decls {
            let _ = writeln!(out, "{decl}");
        }
        if !scope.is_empty() {
            let _ = writeln!(out, "}} // namespace {scope}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "#endif // {guard}");
    out
}

/// The stubs' functions are callable from host and device code alike: a kernel calls a device
/// library's functions, and a stub callable from the host alone is an error in every kernel
/// that calls it once the device side is compiled (`[build] device_check`).
const HOST_DEVICE: &str = "#ifndef FORKBOOK_STUB_HD\n\
     #if defined(__HIP__) || defined(__CUDA__)\n\
     #define FORKBOOK_STUB_HD __attribute__((host, device))\n\
     #else\n\
     #define FORKBOOK_STUB_HD\n\
     #endif\n\
     #endif\n";

/// The library templates whose parameters are not all types, by qualified name: the parameter
/// list of the library's public API and the members the backend reads. A template taking types
/// alone (the stub's default) refuses every value given to it.
const TEMPLATE_SHAPES: &[(&str, &str, &str)] = &[(
    // A matrix tile: its use (`matrix_a`, `accumulator`), its M x N x K block, its element type
    // and layout; each thread holds `num_elements` of them in `x`.
    "rocwmma::fragment",
    "typename Use, unsigned M, unsigned N, unsigned K, typename Data, typename Layout = void",
    "  static constexpr unsigned num_elements = 1;\n  Data x[num_elements];\n",
)];

/// The declarations of `names` by the namespace they are in (as a path): the types, the
/// constants (distinct numbers, a `…success…` one 0), the objects, then the functions.
fn declarations(names: &Names) -> BTreeMap<Vec<String>, Vec<String>> {
    let last = |path: &Vec<String>| path.last().cloned().unwrap_or_default();
    let types = (names.types.iter()).map(|(path, template)| (path, type_decl(path, *template)));
    let mut value = 0usize;
    let constants = names.constants.iter().map(|path| {
        let name = last(path);
        let number = if name.to_ascii_lowercase().contains("success") {
            0
        } else {
            value += 1;
            value
        };
        (path, format!("constexpr int {name} = {number};"))
    });
    let objects =
        (names.objects.iter()).map(|(path, members)| (path, object_decl(&last(path), members)));
    let functions = names.functions.iter().map(|path| {
        let name = last(path);
        let (ret, body) = match name.to_ascii_lowercase().contains("string") {
            true => ("const char*", "\"\""),
            false => ("int", "0"),
        };
        let decl = format!(
            "template <typename... T, typename... A> FORKBOOK_STUB_HD inline {ret} {name}(A&&...) {{ return {body}; }}"
        );
        (path, decl)
    });
    let mut groups: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    for (path, decl) in types.chain(constants).chain(objects).chain(functions) {
        let scope = path[..path.len().saturating_sub(1)].to_vec();
        groups.entry(scope).or_default().push(decl);
    }
    groups
}

/// A type: a template of the library's shape ([`TEMPLATE_SHAPES`]) or taking any types, an
/// opaque pointer for a handle, `int` otherwise.
fn type_decl(path: &[String], template: bool) -> String {
    let name = path.last().map(String::as_str).unwrap_or_default();
    let shape = TEMPLATE_SHAPES.iter().find(|(n, ..)| *n == path.join("::"));
    let (parameters, members) = shape.map_or(("typename...", ""), |(_, p, m)| (*p, *m));
    if template {
        format!(
            "template <{parameters}> struct {name} {{\n{members}  template <typename... A> FORKBOOK_STUB_HD {name}(A&&...) {{}}\n}};"
        )
    } else if is_handle(name) {
        format!("typedef struct forkbook_stub_{name}* {name};")
    } else {
        format!("typedef int {name};")
    }
}

/// A namespaced object whose `members` take anything and return it.
fn object_decl(name: &str, members: &BTreeSet<String>) -> String {
    let ty = format!("forkbook_stub_{name}_t");
    let mut decl = format!("struct {ty} {{\n");
    for member in members {
        let _ = writeln!(
            decl,
            "  template <typename... A> FORKBOOK_STUB_HD const {ty}& {member}(A&&...) const {{ return *this; }}"
        );
    }
    let _ = write!(decl, "}};\ninline constexpr {ty} {name}{{}};");
    decl
}

impl StubsReport {
    /// The stub headers and CMake stubs written for what the machine lacks.
    pub fn doc(&self) -> Doc {
        let count = |s: StubState| self.headers.iter().filter(|h| h.state == s).count();
        let mut doc = Doc::default();
        doc.say(format!(
            "stubs for what this machine lacks: {} headers ({} written, {} unchanged, {} kept: not forkbook's)",
            self.headers.len(),
            count(StubState::Written),
            count(StubState::Unchanged),
            count(StubState::KeptNotOurs)
        ))
        .path_line("stub folder", &self.dir);
        let rows = self.headers.iter().map(|h| {
            let (f, t, c) = (h.functions.len(), h.types.len(), h.constants.len());
            let what = match h.state {
                StubState::KeptNotOurs => "kept as it is (not written by forkbook)".to_string(),
                _ => format!("{f} functions, {t} types, {c} constants"),
            };
            vec![
                vec![code(&h.header)],
                vec![words(what)],
                codes(&h.included_by),
            ]
        });
        doc.records(&["header", "stub", "included by"], rows.collect());
        if !self.packages.is_empty() || !self.libraries.is_empty() {
            let names = |names: &[String]| match names {
                [] => "none".to_string(),
                names => format!("`{}`", names.join("`, `")),
            };
            doc.say(format!(
                "CMake stubs (through `cmake -C` of the stub folder's `{CMAKE_CACHE}`): packages {}; libraries {}",
                names(&self.packages),
                names(&self.libraries)
            ));
        }
        let refused = ": no stub (not a plain relative header path); it stays missing";
        let items = self.refused.iter().map(|h| vec![code(h), words(refused)]);
        doc.list(items.collect());
        doc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_list_is_read_from_the_compilers_output() {
        let output = "clang version 15\n#include \"...\" search starts here:\n\
                      #include <...> search starts here:\n /usr/lib/llvm-15/include\n /usr/include\n\
                      End of search list.\n# 1 \"/dev/null\"\n";
        assert_eq!(
            parse_search_list(output),
            [
                PathBuf::from("/usr/lib/llvm-15/include"),
                PathBuf::from("/usr/include")
            ]
        );
    }

    #[test]
    fn header_paths_that_leave_the_folder_are_refused() {
        assert!(safe_header("rocblas/rocblas.h"));
        assert!(safe_header("hipcub/hipcub.hpp"));
        assert!(!safe_header("../etc/passwd"));
        assert!(!safe_header("/usr/include/x.h"));
        assert!(!safe_header("a//b.h"));
        assert!(!safe_header("a\nb.h"));
    }

    #[test]
    fn a_library_owns_its_prefix_and_its_namespace() {
        let lib = Library::of("hipblaslt/hipblaslt.h", &[]);
        let owns = |s: &str| lib.owns(&s.split("::").map(str::to_string).collect::<Vec<_>>());
        assert!(owns("hipblasLtMatmul"));
        assert!(owns("HIPBLAS_OP_N"));
        assert!(owns("hipblaslt::x"));
        assert!(!owns("hipMalloc"));
        assert!(!owns("hipblaslt"));
        let thrust = Library::of("thrust/execution_policy.h", &[]);
        assert!(thrust.owns(&["thrust".to_string(), "device".to_string()]));
        assert!(!thrust.owns(&["std".to_string(), "sort".to_string()]));
    }

    #[test]
    fn cmake_files_say_which_packages_and_libraries_they_need() {
        let text = "find_package(hip REQUIRED CONFIG)\nfind_package(rocblas REQUIRED CONFIG)\n\
                    find_package(Threads)\n# find_package(old REQUIRED CONFIG)\n\
                    find_library(HIPBLASLT_LIB hipblaslt PATHS /opt/rocm/lib)\n\
                    target_link_libraries(x PRIVATE roc::rocblas hip::host)\n";
        let needs = cmake_needs(&[("CMakeLists.txt".to_string(), text.to_string())]);
        let packages: Vec<&str> = needs.packages.keys().map(String::as_str).collect();
        assert_eq!(packages, ["hip", "rocblas"]);
        assert_eq!(
            needs.packages["rocblas"],
            BTreeSet::from(["roc::rocblas".to_string()])
        );
        assert!(needs.packages["hip"].is_empty());
        assert_eq!(
            needs.libraries,
            BTreeSet::from([("HIPBLASLT_LIB".to_string(), "hipblaslt".to_string())])
        );
    }
}

#[cfg(test)]
mod device_tests {
    use super::*;

    /// The rocWMMA stub as the backend's kernels use it: its tile takes the library's values
    /// among its types, and its functions are callable from a kernel.
    #[test]
    fn a_stub_holds_up_in_device_code() {
        let path = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
        let mut names = Names::default();
        names.types.insert(path("rocwmma::fragment"), true);
        names.types.insert(path("rocwmma::matrix_a"), false);
        names
            .functions
            .insert(path("rocwmma::synchronize_workgroup"));
        let text = render(
            "rocwmma/rocwmma.hpp",
            &Library::of("rocwmma/rocwmma.hpp", &[]),
            &names,
        );
        if let Ok(out) = std::env::var("FORKBOOK_STUB_OUT") {
            std::fs::write(out, &text).unwrap();
        }
        assert!(text.contains(
            "template <typename Use, unsigned M, unsigned N, unsigned K, typename Data, typename Layout = void> struct fragment {\n  static constexpr unsigned num_elements = 1;"
        ));
        assert!(text.contains("FORKBOOK_STUB_HD inline int synchronize_workgroup(A&&...)"));
        assert!(text.contains("#define FORKBOOK_STUB_HD __attribute__((host, device))"));
    }
}
