//! What backend code uses: the functions it calls, the classes it constructs, and every name
//! it mentions, each with its place and the namespaces around it.
//!
//! This is syntax only. A call is known by its spelled name (`f`, `ns::f`, `x.f`) and its
//! argument count; the analysis matches those against the upstream declarations.

use super::extract::{split_path, strip_template_args, Source};
use super::model::Loc;
use super::syntax::{line_of, named_children, text};
use std::collections::HashMap;
use tree_sitter::Node;

/// A call as written in the backend.
#[derive(Debug, Clone)]
pub struct Call {
    pub name: String,
    /// The spelled qualifier (`["allocator"]` for `allocator::f(..)`).
    pub qualifier: Vec<String>,
    /// `x.f(..)` or `x->f(..)`.
    pub member: bool,
    pub args: usize,
    /// Namespaces enclosing the call, outermost first.
    pub namespaces: Vec<String>,
    pub loc: Loc,
}

/// An object of a named class built with arguments (`Buffer b(p)`, `new Buffer(p)`,
/// `Buffer{p}`, `std::make_shared<Buffer>(p)`). Calls spelled like `Buffer(p)` are in
/// [`Uses::calls`]: only the headers can tell a class from a function.
#[derive(Debug, Clone)]
pub struct Construct {
    pub name: String,
    pub qualifier: Vec<String>,
    pub args: usize,
    pub loc: Loc,
}

#[derive(Debug, Default)]
pub struct Uses {
    pub calls: Vec<Call>,
    pub constructs: Vec<Construct>,
    /// Every identifier, type, namespace and field name, with its first place.
    pub names: HashMap<String, Loc>,
}

/// Collects the uses in one backend file.
pub fn collect(src: &Source, root: Node, uses: &mut Uses) {
    let mut walker = Walker { src, uses };
    walker.walk(root);
}

struct Walker<'s, 'u> {
    src: &'s Source<'s>,
    uses: &'u mut Uses,
}

impl Walker<'_, '_> {
    fn loc(&self, node: Node) -> Loc {
        Loc {
            path: self.src.path.to_string(),
            line: line_of(node),
        }
    }

    /// Visits every node without recursion (expressions nest as deep as a file wants), each
    /// with the namespaces around it (an index into `paths`) and whether it is in a body.
    fn walk(&mut self, root: Node) {
        let mut paths: Vec<Vec<String>> = vec![Vec::new()];
        let mut stack = vec![(root, 0usize, false)];
        while let Some((node, path, in_body)) = stack.pop() {
            let mut inner_path = path;
            match node.kind() {
                "namespace_definition" => {
                    let mut namespaces = paths[path].clone();
                    match node.child_by_field_name("name") {
                        Some(name) => namespaces.extend(split_path(text(name, self.src.parsed))),
                        None => namespaces.push("(anonymous)".to_string()),
                    }
                    paths.push(namespaces);
                    inner_path = paths.len() - 1;
                }
                "call_expression" => self.call(node, &paths[path]),
                "declaration" if in_body => self.local_declaration(node),
                "new_expression" => self.typed_construct(node, "type", "arguments"),
                "compound_literal_expression" => self.typed_construct(node, "type", "value"),
                "identifier" | "type_identifier" | "namespace_identifier" | "field_identifier" => {
                    let name = text(node, self.src.parsed).to_string();
                    let loc = self.loc(node);
                    self.uses.names.entry(name).or_insert(loc);
                }
                _ => {}
            }
            let in_body = in_body || node.kind() == "compound_statement";
            // Reversed, so children come off the stack in source order.
            for child in named_children(node).into_iter().rev() {
                stack.push((child, inner_path, in_body));
            }
        }
    }

    fn call(&mut self, node: Node, namespaces: &[String]) {
        let (Some(function), Some(arguments)) = (
            node.child_by_field_name("function"),
            node.child_by_field_name("arguments"),
        ) else {
            return;
        };
        let args = argument_count(arguments);
        let (member, spelled) = match function.kind() {
            "field_expression" => match function.child_by_field_name("field") {
                Some(field) => (true, text(field, self.src.parsed)),
                None => return,
            },
            "identifier" | "qualified_identifier" | "template_function" => {
                (false, text(function, self.src.parsed))
            }
            _ => return,
        };
        if !member {
            self.make_function(function, args);
        }
        let mut parts = split_path(&strip_template_args(spelled));
        let Some(name) = parts.pop() else { return };
        self.uses.calls.push(Call {
            name,
            qualifier: parts,
            member,
            args,
            namespaces: namespaces.to_vec(),
            loc: self.loc(node),
        });
    }

    /// `std::make_shared<T>(args)` and `std::make_unique<T>(args)` construct a `T`.
    fn make_function(&mut self, function: Node, args: usize) {
        let template = if function.kind() == "qualified_identifier" {
            function.child_by_field_name("name")
        } else {
            Some(function)
        };
        let Some(template) = template.filter(|t| t.kind() == "template_function") else {
            return;
        };
        let name = template
            .child_by_field_name("name")
            .map(|n| text(n, self.src.parsed));
        if !matches!(name, Some("make_shared" | "make_unique")) {
            return;
        }
        let first_type = template
            .child_by_field_name("arguments")
            .and_then(|list| list.named_child(0))
            .map(|t| text(t, self.src.parsed).to_string());
        if let Some(ty) = first_type {
            self.push_construct(&ty, args, template);
        }
    }

    /// `Buffer b(p);` (which tree-sitter reads as a function declaration, C++'s most vexing
    /// parse) and `Buffer b{p};` inside a function body.
    fn local_declaration(&mut self, node: Node) {
        let Some(ty) = node.child_by_field_name("type") else {
            return;
        };
        if !matches!(
            ty.kind(),
            "type_identifier" | "qualified_identifier" | "template_type"
        ) {
            return;
        }
        let ty_text = text(ty, self.src.parsed).to_string();
        let mut cursor = node.walk();
        let declarators: Vec<Node> = node
            .children_by_field_name("declarator", &mut cursor)
            .collect();
        for declarator in declarators {
            let args = match declarator.kind() {
                "function_declarator" => declarator
                    .child_by_field_name("parameters")
                    .map(argument_count),
                "init_declarator" => declarator
                    .child_by_field_name("value")
                    .filter(|v| matches!(v.kind(), "argument_list" | "initializer_list"))
                    .map(argument_count),
                _ => None,
            };
            if let Some(args) = args {
                self.push_construct(&ty_text, args, declarator);
            }
        }
    }

    fn typed_construct(&mut self, node: Node, type_field: &str, args_field: &str) {
        let Some(ty) = node.child_by_field_name(type_field) else {
            return;
        };
        let args = node
            .child_by_field_name(args_field)
            .map_or(0, argument_count);
        let ty_text = text(ty, self.src.parsed).to_string();
        self.push_construct(&ty_text, args, node);
    }

    fn push_construct(&mut self, ty: &str, args: usize, at: Node) {
        let mut parts = split_path(&strip_template_args(ty));
        let Some(name) = parts.pop() else { return };
        let loc = self.loc(at);
        self.uses.constructs.push(Construct {
            name,
            qualifier: parts,
            args,
            loc,
        });
    }
}

/// Arguments in an argument, parameter or initializer list (comments do not count).
fn argument_count(list: Node) -> usize {
    named_children(list)
        .iter()
        .filter(|c| c.kind() != "comment")
        .count()
}
