//! Declarations out of a tree-sitter parse: functions, members, constructors, classes and
//! enumerators, each with its enclosing namespaces and classes.
//!
//! The walk follows scopes (namespaces, class bodies, `extern "C"`, preprocessor branches,
//! templates) and salvages what it can inside ERROR nodes, so one bad macro does not hide a
//! whole header.

use super::model::{Decl, DeclKind, Param};
use super::syntax::{children, line_of, named_children, reached, squeeze, text};
use tree_sitter::Node;

/// The file being read: blanked text (what tree-sitter parsed) and the original bytes.
pub struct Source<'a> {
    pub path: &'a str,
    pub parsed: &'a [u8],
    pub original: &'a [u8],
}

/// Where the walk is: scope names and whether the innermost scope is a class (and which).
#[derive(Clone, Default)]
struct Scope {
    names: Vec<String>,
    class: Option<String>,
    template: bool,
    /// Scopes entered so far; the walk gives up below [`MAX_DEPTH`].
    depth: usize,
}

/// Real code nests namespaces, classes and conditionals a few levels deep; a file nesting
/// hundreds (or ERROR nodes inside ERROR nodes) is not worth a stack overflow.
const MAX_DEPTH: usize = 200;

/// Nodes whose children are read as at the scope around them: the file, declaration lists,
/// preprocessor branches, `extern "C"`, and ERROR nodes (salvaged).
const CONTAINERS: &[&str] = &[
    "translation_unit",
    "declaration_list",
    "preproc_if",
    "preproc_ifdef",
    "preproc_else",
    "preproc_elif",
    "preproc_elifdef",
    "ERROR",
    "linkage_specification",
];

/// All declarations of a file, in source order.
pub fn declarations(src: &Source, root: Node) -> Vec<Decl> {
    let mut out = Vec::new();
    walk(src, root, &Scope::default(), &mut out);
    out
}

/// The paths of `#include` directives, as written.
pub fn includes(src: &Source, root: Node) -> Vec<String> {
    // Includes sit at file scope or in conditional branches and namespaces.
    let scope = |n: Node| n.kind() == "namespace_definition" || CONTAINERS.contains(&n.kind());
    let reached = reached(root, scope).into_iter();
    let paths = reached.filter(|n| n.kind() == "preproc_include");
    let paths = paths.filter_map(|n| n.child_by_field_name("path"));
    let unquoted = |path| {
        text(path, src.parsed)
            .trim_matches(['"', '<', '>'])
            .to_string()
    };
    paths.map(unquoted).collect()
}

fn walk(src: &Source, node: Node, scope: &Scope, out: &mut Vec<Decl>) {
    if scope.depth > MAX_DEPTH {
        return;
    }
    let inner = Scope {
        depth: scope.depth + 1,
        ..scope.clone()
    };
    for child in named_children(node) {
        visit(src, child, &inner, out);
    }
}

fn visit(src: &Source, node: Node, scope: &Scope, out: &mut Vec<Decl>) {
    match node.kind() {
        "namespace_definition" => {
            let inner = Scope {
                names: namespace_names(node, src.parsed, &scope.names),
                depth: scope.depth,
                ..Scope::default()
            };
            if let Some(body) = node.child_by_field_name("body") {
                walk(src, body, &inner, out);
            }
        }
        "template_declaration" => {
            let inner = Scope {
                template: true,
                ..scope.clone()
            };
            walk(src, node, &inner, out);
        }
        "class_specifier" | "struct_specifier" | "union_specifier" => class(src, node, scope, out),
        "enum_specifier" => enumerators(src, node, scope, out),
        "declaration" | "field_declaration" | "function_definition" => {
            if let Some(ty) = node.child_by_field_name("type") {
                visit(src, ty, scope, out);
            }
            if let Some(decl) = function(src, node, scope) {
                out.push(decl);
            }
        }
        kind if kind == "field_declaration_list" || CONTAINERS.contains(&kind) => {
            walk(src, node, scope, out)
        }
        _ => {}
    }
}

fn class(src: &Source, node: Node, scope: &Scope, out: &mut Vec<Decl>) {
    let (Some(name), Some(body)) = (
        node.child_by_field_name("name"),
        node.child_by_field_name("body"),
    ) else {
        return;
    };
    let parts = split_path(&strip_template_args(text(name, src.parsed)));
    let Some(last) = parts.last().cloned() else {
        return;
    };
    let names = [scope.names.clone(), parts].concat();
    out.push(Decl {
        kind: DeclKind::Class,
        scope: names[..names.len() - 1].to_vec(),
        name: last.clone(),
        is_template: scope.template,
        ..base_decl(src, node)
    });
    let inner = Scope {
        names,
        class: Some(last),
        depth: scope.depth,
        ..Scope::default()
    };
    walk(src, body, &inner, out);
}

fn enumerators(src: &Source, node: Node, scope: &Scope, out: &mut Vec<Decl>) {
    let Some(body) = node.child_by_field_name("body") else {
        return;
    };
    let scoped = children(node)
        .iter()
        .any(|c| matches!(c.kind(), "class" | "struct"));
    let mut names = scope.names.clone();
    if let (true, Some(name)) = (scoped, node.child_by_field_name("name")) {
        names.push(text(name, src.parsed).to_string());
    }
    for item in named_children(body)
        .into_iter()
        .filter(|c| c.kind() == "enumerator")
    {
        if let Some(name) = item.child_by_field_name("name") {
            out.push(Decl {
                kind: DeclKind::Enumerator,
                scope: names.clone(),
                name: text(name, src.parsed).to_string(),
                ..base_decl(src, item)
            });
        }
    }
}

/// A declaration with only its place filled in.
fn base_decl(src: &Source, node: Node) -> Decl {
    Decl {
        path: src.path.to_string(),
        lines: (line_of(node), node.end_position().row + 1),
        text: String::from_utf8_lossy(&src.original[node.byte_range()]).into_owned(),
        ..Decl::default()
    }
}

/// A function, member or constructor declared or defined by `node`, if it declares one.
fn function(src: &Source, node: Node, scope: &Scope) -> Option<Decl> {
    let declarator = node.child_by_field_name("declarator")?;
    let (func, modifiers) = function_declarator(declarator, src)?;
    let name_node = func.child_by_field_name("declarator")?;
    let (qualifier, name) = declarator_name(name_node, src)?;
    let ty = node.child_by_field_name("type");
    let class_name = qualifier.last().or(scope.class.as_ref());
    let kind = if ty.is_none() && class_name == Some(&name) {
        DeclKind::Constructor
    } else if scope.class.is_some() || starts_upper(&qualifier) {
        DeclKind::Method
    } else {
        DeclKind::Function
    };
    if ty.is_none() && kind != DeclKind::Constructor {
        return None; // conversion operators, destructors, macro calls that look like declarations
    }
    let (params, variadic) = parameters(func, src);
    Some(Decl {
        kind,
        scope: [scope.names.as_slice(), &qualifier].concat(),
        name,
        ret: return_type(node, func, ty, &modifiers, src),
        params,
        variadic,
        is_const: children(func)
            .iter()
            .any(|c| c.kind() == "type_qualifier" && text(*c, src.parsed) == "const"),
        has_body: node.kind() == "function_definition",
        is_pure: node.child_by_field_name("default_value").is_some(),
        is_template: scope.template,
        qualified_name: !qualifier.is_empty(),
        ..base_decl(src, node)
    })
}

/// A member defined out of line is qualified by its class; by convention classes start with
/// an upper-case letter and namespaces do not (`Event::wait` against `gpu::eval`).
fn starts_upper(qualifier: &[String]) -> bool {
    let first = qualifier.last().and_then(|q| q.chars().next());
    first.is_some_and(|c| c.is_ascii_uppercase())
}

/// Walks pointer and reference declarators down to the function declarator, collecting the
/// `*` and `&` that belong to the return type.
fn function_declarator<'t>(mut node: Node<'t>, src: &Source) -> Option<(Node<'t>, String)> {
    let mut modifiers = String::new();
    loop {
        match node.kind() {
            "function_declarator" => return Some((node, modifiers)),
            "pointer_declarator" | "reference_declarator" => {
                let first = node.child(0)?;
                modifiers.push_str(text(first, src.parsed));
                node = node
                    .child_by_field_name("declarator")
                    .or_else(|| node.named_child(0))?;
            }
            _ => return None,
        }
    }
}

/// The qualifier and the last name of a function declarator's name (`Event::wait` gives
/// `["Event"]`, `wait`). Operators and destructors are not tracked.
fn declarator_name(node: Node, src: &Source) -> Option<(Vec<String>, String)> {
    match node.kind() {
        "identifier" | "field_identifier" | "template_function" => {
            Some((Vec::new(), strip_template_args(text(node, src.parsed))))
        }
        "qualified_identifier" => {
            let mut parts = split_path(&strip_template_args(text(node, src.parsed)));
            let name = parts.pop()?;
            let plain = name.chars().all(|c| c.is_alphanumeric() || c == '_');
            plain.then_some((parts, name))
        }
        _ => None,
    }
}

fn return_type(node: Node, func: Node, ty: Option<Node>, modifiers: &str, src: &Source) -> String {
    if let Some(trailing) = children(func)
        .into_iter()
        .find(|c| c.kind() == "trailing_return_type")
    {
        let inner = trailing.named_child(0).map_or("", |t| text(t, src.parsed));
        return squeeze(inner);
    }
    let Some(ty) = ty else { return String::new() };
    let mut parts: Vec<&str> = children(node)
        .into_iter()
        .filter(|c| c.kind() == "type_qualifier" && c.end_byte() <= ty.start_byte())
        .map(|c| text(c, src.parsed))
        .filter(|q| matches!(*q, "const" | "volatile"))
        .collect();
    parts.push(text(ty, src.parsed));
    squeeze(&format!("{} {modifiers}", parts.join(" ")))
}

fn parameters(func: Node, src: &Source) -> (Vec<Param>, bool) {
    let Some(list) = func.child_by_field_name("parameters") else {
        return (Vec::new(), false);
    };
    const VARIADIC: [&str; 2] = ["...", "variadic_parameter_declaration"];
    const DECLARED: [&str; 2] = ["parameter_declaration", "optional_parameter_declaration"];
    let items = children(list);
    let variadic = items.iter().any(|i| VARIADIC.contains(&i.kind()));
    let declared = items.into_iter().filter(|i| DECLARED.contains(&i.kind()));
    let mut params: Vec<Param> = declared.map(|item| parameter(item, src)).collect();
    // `f(void)` takes no arguments.
    if params.len() == 1 && params[0].ty == "void" {
        params.clear();
    }
    (params, variadic)
}

fn parameter(node: Node, src: &Source) -> Param {
    let default = node.child_by_field_name("default_value");
    let end = default.map_or(node.end_byte(), |d| d.start_byte());
    let mut bytes = src.parsed[node.start_byte()..end].to_vec();
    let declarator = node.child_by_field_name("declarator");
    if let Some(name) = declarator.and_then(parameter_name) {
        let start = node.start_byte();
        bytes[name.start_byte() - start..name.end_byte() - start].fill(b' ');
    }
    let ty = String::from_utf8_lossy(&bytes);
    Param {
        ty: squeeze(ty.trim_end().trim_end_matches('=')),
        has_default: default.is_some(),
    }
}

/// The identifier naming a parameter, under its pointer, reference and array declarators.
fn parameter_name(node: Node) -> Option<Node> {
    match node.kind() {
        "identifier" => Some(node),
        "pointer_declarator" | "reference_declarator" | "array_declarator" => {
            named_children(node).into_iter().find_map(parameter_name)
        }
        _ => None,
    }
}

/// The scope inside a namespace definition: `outer` and the namespace's name (`(anonymous)`
/// when it has none).
pub fn namespace_names(node: Node, parsed: &[u8], outer: &[String]) -> Vec<String> {
    let mut names = outer.to_vec();
    match node.child_by_field_name("name") {
        Some(name) => names.extend(split_path(text(name, parsed))),
        None => names.push("(anonymous)".to_string()),
    }
    names
}

/// `a::b::c` into its parts.
pub fn split_path(path: &str) -> Vec<String> {
    path.split("::")
        .map(squeeze)
        .filter(|s| !s.is_empty())
        .collect()
}

/// `make_shared<Foo>` to `make_shared`, `Foo<T>::bar` to `Foo::bar`.
pub fn strip_template_args(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}
