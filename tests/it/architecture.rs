//! The layout docs/architecture.md promises: within each crate, files import one another in one
//! direction (no import cycle). Cycles crept back twice unnoticed (`ci` and `roll_ci`; the drift
//! parse's `sources` and `syntax`) while the page said there were none.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each crate's source root.
const CRATES: &[&str] = &[
    "src",
    "engine/src",
    "records/src",
    "checks",
    "preprocessor/src",
];

#[test]
fn no_file_imports_from_a_file_that_imports_from_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cycles = Vec::new();
    for krate in CRATES {
        let modules = modules_of(&root.join(krate));
        assert!(modules.len() > 3, "no modules read under {krate}");
        let edges = import_edges(&modules);
        cycles.extend(
            find_cycles(&edges)
                .into_iter()
                .map(|c| format!("{krate}: {c}")),
        );
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn a_cycle_is_found_where_two_files_import_each_other() {
    let edges = BTreeMap::from([
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["c".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
        ("d".to_string(), BTreeSet::from(["a".to_string()])),
    ]);
    assert_eq!(find_cycles(&edges), vec!["a, b, c".to_string()]);
    let paths = use_paths("use super::{a::{B, c::D}, e as f};");
    assert_eq!(paths, ["super::a::B", "super::a::c::D", "super::e"]);
    let inline = inline_paths("    x.map(super::roll_ci::describe);\n/// [`super::ci`]\n");
    assert_eq!(inline, ["super::roll_ci::describe"]);
    let kept = without_tests(
        "use a;\n#[cfg(test)]\nmod tests;\nuse b;\n#[cfg(test)]\nmod t {\n    use c;\n}\nuse d;\n",
    );
    assert_eq!(kept, "use a;\nuse b;\nuse d;\n");
}

/// Every module file below `dir` by its module path (`drift::api::syntax`; the crate root is
/// ``), with its code less its `#[cfg(test)]` items.
fn modules_of(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if !matches!(path.file_name().and_then(|n| n.to_str()), Some("tests")) {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            out.insert(module_path(dir, &path), without_tests(&text));
        }
    }
    out
}

/// `text` without its `#[cfg(test)]` items: a `mod tests;` line, or everything up to the `}`
/// that closes the item at the attribute's indentation (rustfmt's layout). Code after a test
/// module (`src/cli/mod.rs`, `drift/api.rs` after its `mod tests;`) is kept.
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let close = format!("{}}}", &line[..line.len() - line.trim_start().len()]);
        match lines.next() {
            Some(item) if item.trim_end().ends_with(';') => {}
            Some(_) => {
                for inner in lines.by_ref() {
                    if inner.trim_end() == close {
                        break;
                    }
                }
            }
            None => {}
        }
    }
    out
}

fn module_path(dir: &Path, file: &Path) -> String {
    let rel: PathBuf = file.strip_prefix(dir).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("lib" | "main" | "mod")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// For each module, the other modules of its crate it takes names from (`use crate::…`,
/// `use super::…`, or such a path written in the code), each path taken to the deepest module
/// it names.
fn import_edges(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges = BTreeMap::new();
    for (module, code) in modules {
        let mut targets = BTreeSet::new();
        let used = use_statements(code).into_iter().flat_map(|s| use_paths(&s));
        for path in used.chain(inline_paths(code)) {
            if let Some(target) = resolve(module, &path, modules) {
                if &target != module {
                    targets.insert(target);
                }
            }
        }
        edges.insert(module.clone(), targets);
    }
    edges
}

/// The `use` items of a file, each as one string up to its `;`.
fn use_statements(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in code.lines() {
        let trimmed = line.trim_start();
        if current.is_none() {
            let item = trimmed
                .strip_prefix("pub(crate) ")
                .or_else(|| trimmed.strip_prefix("pub "))
                .unwrap_or(trimmed);
            if item.starts_with("use ") {
                current = Some(String::new());
            }
        }
        if let Some(text) = current.as_mut() {
            text.push_str(trimmed);
            if trimmed.trim_end().ends_with(';') {
                out.push(current.take().unwrap());
            }
        }
    }
    out
}

/// The paths written in code outside `use` and comments: `super::roll_ci::describe(cron)`.
fn inline_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines().map(str::trim_start) {
        if line.starts_with("//") || line.starts_with("use ") || line.starts_with("pub use ") {
            continue;
        }
        for start in ["super::", "crate::"]
            .iter()
            .flat_map(|w| line.match_indices(w))
        {
            let at = start.0;
            let before = line[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &line[at..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            out.push(rest[..end].trim_end_matches(':').to_string());
        }
    }
    out
}

/// The paths one `use` names: `use super::{a::B, c};` gives `super::a::B` and `super::c`.
fn use_paths(statement: &str) -> Vec<String> {
    let body = statement.split_once("use ").map_or("", |(_, b)| b);
    let body: String = body
        .trim_end_matches(';')
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = Vec::new();
    expand("", &body, &mut out);
    out
}

fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = format!("{prefix}{}", &tree[..open]);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&head, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&head, &inner[start..], out);
    } else if !tree.is_empty() {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        out.push(format!("{prefix}{path}"));
    }
}

/// The module of this crate that `path`, written in `module`, reaches deepest.
fn resolve(module: &str, path: &str, modules: &BTreeMap<String, String>) -> Option<String> {
    let mut here: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
    let mut segments = path.split("::").peekable();
    match *segments.peek()? {
        "crate" => {
            here.clear();
            segments.next();
        }
        "super" | "self" => {
            while let Some(&step) = segments.peek() {
                match step {
                    "super" => here.pop(),
                    "self" => None,
                    _ => break,
                };
                segments.next();
            }
        }
        _ => return None,
    }
    let mut reached = here.join("::");
    let mut walk = here.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for segment in segments {
        walk.push(segment.to_string());
        let candidate = walk.join("::");
        if modules.contains_key(&candidate) {
            reached = candidate;
        } else {
            break;
        }
    }
    modules.contains_key(&reached).then_some(reached)
}

/// The groups of modules that import one another in a circle (each module reaches every other
/// of its group through imports), as `a, b, c`.
fn find_cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(node) = todo.pop() {
            for next in edges.get(node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut groups = BTreeSet::new();
    for (module, seen) in &reached {
        let group: Vec<&str> = reached
            .iter()
            .filter(|(other, back)| seen.contains(**other) && back.contains(*module))
            .map(|(other, _)| other.as_str())
            .collect();
        if !group.is_empty() {
            groups.insert(group.join(", "));
        }
    }
    groups.into_iter().collect()
}
