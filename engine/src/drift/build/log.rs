//! Reading compiler and CMake output: the errors, where they are, and the lines that explain
//! them.
//!
//! gcc and clang print diagnostics the same way, `FILE:LINE[:COL]: error: MESSAGE`, followed by
//! indented context (the source line and the caret, `required from` chains) and by `note:`
//! diagnostics; both are kept with the error, since the symbol an error is about often appears
//! only there. CMake prints `CMake Error at FILE:LINE (COMMAND):` and an indented message.
//! Make and ninja name the object whose compile failed. The input is other people's build
//! output: every parser here takes any text and never panics.

use crate::paths::normalize;
use serde::Serialize;

/// One error from the compiler or CMake.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// As printed (the caller makes it relative to the tree); empty when the tool gave none.
    pub file: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// `error` or `fatal error` (compiler), `CMake Error` (configure).
    pub severity: String,
    pub message: String,
    /// The notes and the indented lines that followed the error, as printed.
    pub context: Vec<String>,
}

impl Diagnostic {
    /// `file:line:column`, as much of it as the tool gave.
    pub fn place(&self) -> String {
        let mut place = self.file.clone();
        for number in [self.line, self.column].into_iter().flatten() {
            place.push_str(&format!(":{number}"));
        }
        place
    }
}

/// At most this many context lines are kept per error: enough for clang's chain of notes from
/// an error in a standard header back to the tree's file that instantiated it (21 lines for the
/// real overlay's `make_shared<CustomKernel>`).
const MAX_CONTEXT: usize = 48;

/// The errors in a compiler log (gcc or clang), in order, not yet deduplicated.
pub fn parse_compiler_log(log: &str) -> Vec<Diagnostic> {
    let mut errors: Vec<Diagnostic> = Vec::new();
    // Whether the lines that follow belong to the last error (and not to a warning).
    let mut attached = false;
    for line in log.lines() {
        if let Some(header) = parse_header(line) {
            match header.severity.as_str() {
                "error" | "fatal error" => {
                    errors.push(header);
                    attached = true;
                }
                "note" if attached => push_context(errors.last_mut(), line.trim_end()),
                _ => attached = false,
            }
        } else if attached && is_context(line) {
            push_context(errors.last_mut(), line.trim_end());
        } else if !line.trim().is_empty() && !is_context(line) {
            attached = false;
        }
    }
    errors
}

fn push_context(error: Option<&mut Diagnostic>, line: &str) {
    if let Some(error) = error {
        if error.context.len() < MAX_CONTEXT {
            error.context.push(line.to_string());
        }
    }
}

/// Lines that continue a diagnostic: indented source excerpts, carets, `required from` chains.
fn is_context(line: &str) -> bool {
    line.starts_with(' ') || line.starts_with('\t')
}

/// Splits `FILE:LINE[:COL]: SEVERITY: MESSAGE`. The file may itself hold colons (a Windows
/// drive, an odd name), so the line number is searched from the left for the first
/// `:DIGITS:` that is followed by a known severity.
fn parse_header(line: &str) -> Option<Diagnostic> {
    let bytes = line.as_bytes();
    let mut search_from = 0;
    while let Some(offset) = line.get(search_from..)?.find(':') {
        let colon = search_from + offset;
        search_from = colon + 1;
        if colon == 0 || !bytes.get(colon + 1).is_some_and(u8::is_ascii_digit) {
            continue;
        }
        if let Some(header) = header_after_file(&line[..colon], &line[colon + 1..]) {
            return Some(header);
        }
    }
    None
}

/// `rest` is what follows `FILE:`: `LINE[:COL]: SEVERITY: MESSAGE`.
fn header_after_file(file: &str, rest: &str) -> Option<Diagnostic> {
    let (line, rest) = split_number(rest)?;
    let rest = rest.strip_prefix(':')?;
    let (column, rest) = match split_number(rest) {
        Some((column, after)) => (Some(column), after.strip_prefix(':')?),
        None => (None, rest),
    };
    let rest = rest.strip_prefix(' ')?;
    let (severity, message) = rest.split_once(": ")?;
    let severity = match severity {
        "error" | "fatal error" | "warning" | "note" => severity,
        _ => return None,
    };
    Some(Diagnostic {
        file: file.to_string(),
        line: Some(line),
        column,
        severity: severity.to_string(),
        message: message.trim().to_string(),
        ..Diagnostic::default()
    })
}

/// A leading decimal number (at most 9 digits, so it fits) and the rest.
fn split_number(text: &str) -> Option<(u32, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let number = text[..digits].parse().ok()?;
    Some((number, &text[digits..]))
}

/// The errors in CMake's configure output: `CMake Error at FILE:LINE (COMMAND):` or
/// `CMake Error: MESSAGE`, each with its indented message lines.
pub fn parse_cmake_log(log: &str) -> Vec<Diagnostic> {
    let mut errors: Vec<Diagnostic> = Vec::new();
    let mut in_error = false;
    for line in log.lines() {
        if let Some(rest) = line.strip_prefix("CMake Error") {
            errors.push(cmake_error(rest));
            in_error = true;
        } else if in_error && (is_context(line) || line.trim().is_empty()) {
            let text = line.trim();
            match errors.last_mut().filter(|_| !text.is_empty()) {
                Some(error) if error.message.is_empty() => error.message = text.to_string(),
                error => push_context(error, text),
            }
        } else {
            in_error = false;
        }
    }
    errors
}

/// `rest` follows `CMake Error`: ` at FILE:LINE (COMMAND):`, `: MESSAGE` or ` in ...`.
fn cmake_error(rest: &str) -> Diagnostic {
    let mut error = Diagnostic {
        severity: "CMake Error".to_string(),
        ..Diagnostic::default()
    };
    if let Some(message) = rest.strip_prefix(": ") {
        error.message = message.trim().to_string();
    } else if let Some(location) = rest.strip_prefix(" at ") {
        let location = location.trim_end().trim_end_matches(':');
        let place = location
            .rsplit_once(" (")
            .map_or(location, |(place, _command)| place);
        let (file, line) = (place.rsplit_once(':'))
            .and_then(|(file, line)| Some((file, Some(line.parse().ok()?))))
            .unwrap_or((place, None));
        (error.file, error.line) = (file.to_string(), line);
    }
    error
}

/// The objects whose compile failed, as make (`*** [...: OBJECT] Error N`) and ninja
/// (`FAILED: OBJECT`) name them. Only object files (`.o`, `.obj`) are returned.
pub fn failed_objects(log: &str) -> Vec<String> {
    let mut objects = Vec::new();
    for line in log.lines() {
        let candidate = if let Some(rest) = line.split_once("FAILED: ").map(|(_, rest)| rest) {
            rest.split_whitespace().next()
        } else if let Some((_, rest)) = line.split_once("*** [") {
            rest.split(']')
                .next()
                .and_then(|target| target.rsplit(": ").next())
        } else {
            None
        };
        let new = |o: &&str| is_object(o) && !objects.iter().any(|known| known == o);
        if let Some(object) = candidate.filter(new) {
            objects.push(object.to_string());
        }
    }
    objects
}

/// The translation units of a compiler log that failed without make or ninja naming them (a
/// `make -i` pass prints no error line): the file an include chain starts from when an error
/// follows it (`In file included from X.cpp:4:`, then an error in a header), and the source of
/// a compile whose frontend crashed (clang's `Program arguments:` line of its stack dump). As
/// printed; the caller makes them relative to the tree.
pub fn failed_units(log: &str) -> Vec<String> {
    let mut units: Vec<String> = Vec::new();
    let mut chain: Option<String> = None;
    let push = |unit: String, units: &mut Vec<String>| {
        if !units.contains(&unit) {
            units.push(unit);
        }
    };
    for line in log.lines() {
        if let Some(rest) = line.strip_prefix("In file included from ") {
            let place = rest.trim_end().trim_end_matches([':', ',']);
            if chain.is_none() {
                chain = place.rsplit_once(':').map(|(file, _)| file.to_string());
            }
            continue;
        }
        if line.trim_start().starts_with("from ") && chain.is_some() {
            continue;
        }
        if let Some(header) = parse_header(line) {
            if matches!(header.severity.as_str(), "error" | "fatal error") {
                if let Some(unit) = chain.take() {
                    push(unit, &mut units);
                }
            }
        }
        chain = None;
        if let Some((_, args)) = line.split_once("Program arguments: ") {
            let source = args.split_whitespace().rev().find(|a| is_source(a));
            if let Some(source) = source {
                push(source.to_string(), &mut units);
            }
        }
    }
    units
}

/// Whether `file` names a source a compile reads (C, C++, CUDA or HIP).
pub fn is_source(file: &str) -> bool {
    [".cpp", ".cc", ".cxx", ".c", ".cu", ".hip"]
        .iter()
        .any(|ext| file.ends_with(ext))
}

/// Whether `file` is an object file (`.o`, `.obj`).
pub fn is_object(file: &str) -> bool {
    file.ends_with(".o") || file.ends_with(".obj")
}

/// The source file of a CMake object path, relative to the top of the source tree:
/// `tests/CMakeFiles/mlx_tests.dir/tests.cpp.o` is `tests/tests.cpp` (CMake names an object by
/// its source's path relative to the folder of the target's CMakeLists.txt, writing `..` as
/// `__`).
pub fn source_of_object(object: &str) -> Option<String> {
    let (target, after) = object.split_once(".dir/")?;
    let source = after
        .strip_suffix(".o")
        .or_else(|| after.strip_suffix(".obj"))?;
    let folder = target.rfind("CMakeFiles/").map_or("", |at| &target[..at]);
    let source = source
        .split('/')
        .map(|part| if part == "__" { ".." } else { part })
        .collect::<Vec<_>>()
        .join("/");
    normalize(&format!("{folder}{source}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_that_failed_in_a_header_or_crashed_are_found_without_make() {
        let log = "[ 91%] Building CXX object CMakeFiles/mlx.dir/mlx/backend/rocm/primitives.cpp.o\n\
In file included from /w/tree/mlx/backend/rocm/primitives.cpp:4:\n\
In file included from /w/tree/mlx/fast_primitives.h:2:\n\
/w/tree/mlx/fast_primitives.h:389:1: error: version control conflict marker in file\n\
In file included from /w/tree/mlx/array.cpp:3:\n\
/w/tree/mlx/array.h:10:1: warning: something\n\
/w/tree/mlx/ops.cpp:12:3: error: not in a chain\n\
Stack dump:\n\
0.\tProgram arguments: /usr/lib/llvm-15/bin/clang -cc1 -main-file-name stream.cpp -o /tmp/s.o -x c++ /w/tree/mlx/stream.cpp\n\
clang: error: clang frontend command failed with exit code 139 (use -v to see invocation)\n";
        assert_eq!(
            failed_units(log),
            [
                "/w/tree/mlx/backend/rocm/primitives.cpp",
                "/w/tree/mlx/stream.cpp"
            ]
        );
    }

    const GCC: &str = "\
/tmp/t/mlx/backend/rocm/copy.cpp: In function 'void mlx::core::rocm::copy_general(const mlx::core::array&, mlx::core::array&)':
/tmp/t/mlx/backend/rocm/copy.cpp:11:8: error: only 2 names provided for structured binding
   11 |   auto [shape, strides] = collapse_contiguous_dims(in.shape(), in.strides());
      |        ^~~~~~~~~~~~~~~~
/tmp/t/mlx/backend/rocm/copy.cpp:11:8: note: while 'std::tuple<std::vector<int>, std::vector<long int>, long int>' decomposes into 3 elements
/tmp/t/mlx/backend/rocm/copy.cpp:20:3: warning: unused variable 'x' [-Wunused-variable]
   20 |   int x;
      |       ^
gmake[2]: *** [CMakeFiles/mlx.dir/build.make:328: CMakeFiles/mlx.dir/mlx/backend/rocm/copy.cpp.o] Error 1
In file included from /tmp/t/mlx/backend/rocm/kernels.cpp:4:
/tmp/t/mlx/utils.h:3:10: fatal error: missing.h: No such file or directory
compilation terminated.
";

    const CLANG: &str = "\
/src/mlx/backend/rocm/allocator.cpp:16:12: error: no matching constructor for initialization of 'Buffer'
   16 |     return Buffer(ptr);
      |            ^      ~~~
/src/mlx/allocator.h:13:3: note: candidate constructor not viable: requires 2 arguments, but 1 was provided
   13 |   Buffer(void* ptr, size_t size) : ptr_(ptr), size_(size) {}
      |   ^
1 error generated.
FAILED: CMakeFiles/mlx.dir/mlx/backend/rocm/allocator.cpp.o
C:\\src\\x.cpp:3: error: no column here
";

    #[test]
    fn gcc_errors_keep_their_source_lines_and_notes_but_not_warnings() {
        let errors = parse_compiler_log(GCC);
        assert_eq!(errors.len(), 2);
        let binding = &errors[0];
        assert_eq!(binding.file, "/tmp/t/mlx/backend/rocm/copy.cpp");
        assert_eq!((binding.line, binding.column), (Some(11), Some(8)));
        assert_eq!(
            binding.message,
            "only 2 names provided for structured binding"
        );
        assert_eq!(binding.context.len(), 3);
        assert!(binding.context[0].contains("collapse_contiguous_dims"));
        assert!(binding.context[2].contains("decomposes into 3 elements"));
        assert_eq!(errors[1].severity, "fatal error");
        assert_eq!(errors[1].file, "/tmp/t/mlx/utils.h");
    }

    #[test]
    fn clang_errors_and_windows_paths_without_column() {
        let errors = parse_compiler_log(CLANG);
        assert_eq!(errors.len(), 2);
        assert_eq!(
            errors[0].message,
            "no matching constructor for initialization of 'Buffer'"
        );
        assert!(errors[0]
            .context
            .iter()
            .any(|c| c.contains("requires 2 arguments")));
        assert!(!errors[0]
            .context
            .iter()
            .any(|c| c.contains("error generated")));
        assert_eq!(errors[1].file, "C:\\src\\x.cpp");
        assert_eq!((errors[1].line, errors[1].column), (Some(3), None));
    }

    #[test]
    fn make_and_ninja_name_the_failed_objects() {
        let log = format!("{GCC}{CLANG}");
        assert_eq!(
            failed_objects(&log),
            [
                "CMakeFiles/mlx.dir/mlx/backend/rocm/copy.cpp.o",
                "CMakeFiles/mlx.dir/mlx/backend/rocm/allocator.cpp.o"
            ]
        );
        assert_eq!(
            source_of_object("mlx/backend/rocm/CMakeFiles/r.dir/__/gpu/primitives.cpp.o")
                .as_deref(),
            Some("mlx/backend/gpu/primitives.cpp")
        );
        assert_eq!(
            source_of_object("tests/CMakeFiles/mlx_tests.dir/tests.cpp.o").as_deref(),
            Some("tests/tests.cpp")
        );
        assert_eq!(source_of_object("CMakeFiles/x.dir/__/__/y.cpp.o"), None);
        assert_eq!(source_of_object("libfoo.a"), None);
    }

    #[test]
    fn cmake_errors_with_and_without_location() {
        let log = "\
-- Configuring incomplete
CMake Error at mlx/CMakeLists.txt:17 (add_subdirectory):
  add_subdirectory given source \"/t/mlx/backend/rocm\" which is not an
  existing directory.


CMake Error: CMAKE_CXX_COMPILER not set, after EnableLanguage
-- Done
";
        let errors = parse_cmake_log(log);
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].file, "mlx/CMakeLists.txt");
        assert_eq!(errors[0].line, Some(17));
        assert!(errors[0]
            .message
            .starts_with("add_subdirectory given source"));
        assert_eq!(errors[0].context, ["existing directory."]);
        assert_eq!(
            errors[1].message,
            "CMAKE_CXX_COMPILER not set, after EnableLanguage"
        );
    }

    #[test]
    fn junk_never_panics() {
        let samples = [
            "",
            ":",
            "::",
            ":1:",
            "a:1",
            "a:1:",
            "a:1: ",
            "a:1:2: error",
            "a:99999999999: error: x",
            "a:1:2: error: ",
            "\u{feff}x:1:1: error: é",
            "CMake Error at",
            "CMake Error at :",
            "CMake Error at a:b (c",
            "*** [",
            "*** [x.o",
            "FAILED: ",
            ".dir/",
            "x.dir/.o",
            "  | ^",
        ];
        let random = super::super::junk_text(
            b": 0123456789error fatalnote|^\n\t/.*[]FAILED()CMake",
            0x2545_f491_u32,
            20_000,
        );
        for text in samples.iter().copied().chain([random.as_str()]) {
            parse_compiler_log(text);
            parse_cmake_log(text);
            for object in failed_objects(text) {
                source_of_object(&object);
            }
            source_of_object(text);
        }
    }
}
