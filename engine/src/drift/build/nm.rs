//! Reading `nm -C` output: which objects define and which need each symbol.
//!
//! With several files, GNU nm prints a `FILE:` header before each file's symbols, one symbol a
//! line: `VALUE TYPE NAME`, the value blank for undefined symbols. Names are demangled, so
//! they hold spaces, parentheses and template brackets; the helpers here find the qualified
//! name inside them. The input comes from other people's objects: nothing here panics.

use std::collections::{BTreeMap, BTreeSet};

/// Which symbols the objects define and which objects need each undefined one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SymbolTable {
    pub defined: BTreeSet<String>,
    /// Undefined symbol -> the objects that reference it.
    pub undefined: BTreeMap<String, BTreeSet<String>>,
    /// Defined symbol of the namespace [`parse_nm_in`] was given -> the objects that define it:
    /// what a differential build needs to tell which source a symbol comes from.
    pub defined_by: BTreeMap<String, BTreeSet<String>>,
}

impl SymbolTable {
    /// Adds what `other` (another `nm` call's table) defines and needs.
    pub fn extend(&mut self, other: SymbolTable) {
        self.defined.extend(other.defined);
        for (symbol, objects) in other.defined_by {
            self.defined_by.entry(symbol).or_default().extend(objects);
        }
        for (symbol, needed_by) in other.undefined {
            self.undefined.entry(symbol).or_default().extend(needed_by);
        }
    }

    /// Symbols some object needs and no object defines, whose qualified name is in
    /// `namespace` (for example `mlx::core`), with the objects that need them.
    pub fn missing_in(&self, namespace: &str) -> Vec<(String, Vec<String>)> {
        self.undefined
            .iter()
            .filter(|(symbol, _)| {
                !self.defined.contains(*symbol) && in_namespace(symbol, namespace)
            })
            .map(|(symbol, objects)| (symbol.clone(), objects.iter().cloned().collect()))
            .collect()
    }
}

/// Reads the output of one `nm -C` call. `only_file` names the object when nm was given a
/// single file (it then prints no header).
pub fn parse_nm(output: &str, only_file: Option<&str>) -> SymbolTable {
    parse_nm_in(output, only_file, None)
}

/// [`parse_nm`], also noting which objects define each symbol of `namespace`.
pub fn parse_nm_in(output: &str, only_file: Option<&str>, namespace: Option<&str>) -> SymbolTable {
    let mut table = SymbolTable::default();
    let mut current = only_file.unwrap_or_default().to_string();
    for line in output.lines() {
        if let Some((kind, name)) = parse_symbol_line(line) {
            if kind == 'U' {
                table
                    .undefined
                    .entry(name.to_string())
                    .or_default()
                    .insert(current.clone());
            } else if is_definition(kind) {
                if namespace.is_some_and(|ns| in_namespace(name, ns)) {
                    let objects = table.defined_by.entry(name.to_string()).or_default();
                    objects.insert(current.clone());
                }
                table.defined.insert(name.to_string());
            }
        } else if let Some(file) = line.strip_suffix(':').filter(|_| !line.starts_with(' ')) {
            current = file.to_string();
        }
    }
    table
}

/// `0000000000000010 T name` or `                 U name`: the type letter and the name.
fn parse_symbol_line(line: &str) -> Option<(char, &str)> {
    let rest = if line.starts_with(' ') {
        line.trim_start_matches(' ')
    } else {
        let (value, rest) = line.split_once(' ')?;
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        rest
    };
    let mut chars = rest.chars();
    let kind = chars
        .next()
        .filter(|c| c.is_ascii_alphabetic() || *c == '?' || *c == '-')?;
    let name = chars.as_str().strip_prefix(' ')?;
    (!name.is_empty()).then_some((kind, name))
}

/// Every type letter but undefined (`U`), weak undefined (`w`, `v`) and debug (`N`, `-`, `?`)
/// marks a definition.
fn is_definition(kind: char) -> bool {
    !matches!(kind, 'U' | 'w' | 'v' | 'N' | '-' | '?')
}

/// The demangler's prefixes for compiler-made symbols about a C++ entity.
const SPECIAL_PREFIXES: [&str; 11] = [
    "vtable for ",
    "typeinfo for ",
    "typeinfo name for ",
    "VTT for ",
    "construction vtable for ",
    "guard variable for ",
    "non-virtual thunk to ",
    "virtual thunk to ",
    "covariant return thunk to ",
    "TLS init function for ",
    "TLS wrapper function for ",
];

/// The qualified name inside a demangled symbol: no special prefix, no return type (template
/// functions have one), no parameters or qualifiers. `int mlx::core::ceil_div<int>(int, int)`
/// gives `mlx::core::ceil_div<int>`.
pub fn qualified_name(symbol: &str) -> &str {
    let mut name = symbol;
    while let Some(rest) = SPECIAL_PREFIXES
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))
    {
        name = rest;
    }
    let head = &name[..end_of_head(name)];
    start_after_return_type(head).map_or(head, |start| &head[start..])
}

/// Where the parameter list starts: the first `(` outside template brackets (or any `(`, or
/// the end, when the brackets do not balance, as in `operator<`).
fn end_of_head(name: &str) -> usize {
    let first = outside_templates(name, '(').first().copied();
    first.unwrap_or_else(|| name.find('(').unwrap_or(name.len()))
}

/// After the last space outside template brackets, unless that space belongs to a conversion
/// operator (`operator bool`).
fn start_after_return_type(head: &str) -> Option<usize> {
    let last = outside_templates(head, ' ').last().map(|at| at + 1);
    last.filter(|start| *start < head.len())
}

/// Where `wanted` stands in `text` outside template brackets, and not right after `operator`.
fn outside_templates(text: &str, wanted: char) -> Vec<usize> {
    let mut depth = 0usize;
    let mut found = Vec::new();
    for (at, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            c if c == wanted && depth == 0 && !text[..at].ends_with("operator") => found.push(at),
            _ => {}
        }
    }
    found
}

/// Whether the symbol's qualified name lies in `namespace` (`mlx::core` holds
/// `mlx::core::gpu::eval` but not `mlx::core_extra::f`).
pub fn in_namespace(symbol: &str, namespace: &str) -> bool {
    inside(qualified_name(symbol), namespace).is_some()
}

/// `name` without its leading `namespace::`, when it is in `namespace`.
pub fn inside<'a>(name: &'a str, namespace: &str) -> Option<&'a str> {
    name.strip_prefix(namespace)?.strip_prefix("::")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NM: &str = "
CMakeFiles/mlx.dir/mlx/stream.cpp.o:
0000000000000000 T mlx::core::wait_for(mlx::core::Event&)
                 U mlx::core::Event::is_signaled() const
                 U mlx::core::Event::wait()
                 w __gmon_start__

CMakeFiles/mlx.dir/mlx/backend/cpu/primitives.cpp.o:
0000000000000000 V vtable for mlx::core::GatherQMM
                 U mlx::core::GatherQMM::eval_gpu(std::vector<mlx::core::array, std::allocator<mlx::core::array> > const&, mlx::core::array&)
                 U std::vector<mlx::core::array, std::allocator<mlx::core::array> >::~vector()
                 U int mlx::core::ceil_div<int>(int, int)

CMakeFiles/mlx.dir/mlx/backend/rocm/event.cpp.o:
0000000000000010 T mlx::core::Event::wait()
";

    #[test]
    fn undefined_symbols_no_object_defines_in_the_namespace() {
        let table = parse_nm(NM, None);
        let missing = table.missing_in("mlx::core");
        let names: Vec<&str> = missing
            .iter()
            .map(|(symbol, _)| qualified_name(symbol))
            .collect();
        assert_eq!(
            names,
            [
                "mlx::core::ceil_div<int>",
                "mlx::core::Event::is_signaled",
                "mlx::core::GatherQMM::eval_gpu"
            ]
        );
        assert_eq!(missing[1].1, ["CMakeFiles/mlx.dir/mlx/stream.cpp.o"]);
        assert!(table.defined.contains("vtable for mlx::core::GatherQMM"));
        assert!(table.defined_by.is_empty());
        let noted = parse_nm_in(NM, None, Some("mlx::core")).defined_by;
        assert_eq!(
            noted["mlx::core::Event::wait()"],
            BTreeSet::from(["CMakeFiles/mlx.dir/mlx/backend/rocm/event.cpp.o".to_string()])
        );
        assert!(!noted.keys().any(|s| s.contains("__gmon_start__")));
    }

    #[test]
    fn a_single_file_has_no_header() {
        let table = parse_nm("                 U mlx::core::f()\n", Some("a.o"));
        assert_eq!(
            table.missing_in("mlx::core"),
            [("mlx::core::f()".to_string(), vec!["a.o".to_string()])]
        );
    }

    #[test]
    fn qualified_names_of_demangled_symbols() {
        assert_eq!(
            qualified_name("vtable for mlx::core::Add"),
            "mlx::core::Add"
        );
        assert_eq!(
            qualified_name(
                "mlx::core::operator==(mlx::core::Device const&, mlx::core::Device const&)"
            ),
            "mlx::core::operator=="
        );
        assert_eq!(
            qualified_name("mlx::core::operator<(int, int)"),
            "mlx::core::operator<"
        );
        assert_eq!(
            qualified_name("mlx::core::Foo::operator bool() const"),
            "mlx::core::Foo::operator bool"
        );
        assert!(!in_namespace("mlx::core_extra::f()", "mlx::core"));
        assert!(in_namespace(
            "mlx::core::gpu::eval(mlx::core::array&)",
            "mlx::core"
        ));
    }

    #[test]
    fn junk_never_panics() {
        let samples = [
            "",
            ":",
            " ",
            "  U",
            "0 ",
            "0 T",
            "0 T ",
            "zz T x",
            " U  ",
            "(",
            "<<(",
            "operator",
            " operator(",
            "\u{e9} U x",
        ];
        let random = super::super::junk_text(
            b"0123456789abcdef TUWwv:<>() operator\nvtable for mlx::core",
            0x9e37_79b9_u32,
            20_000,
        );
        for text in samples.iter().copied().chain([random.as_str()]) {
            let table = parse_nm(text, Some("x.o"));
            table.missing_in("mlx::core");
            for line in text.lines() {
                qualified_name(line);
                in_namespace(line, "");
            }
        }
    }
}
