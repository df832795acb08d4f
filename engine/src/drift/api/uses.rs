//! What backend code uses: the functions it calls, the classes it constructs, and every name
//! it mentions, each with its place and the namespaces around it.
//!
//! This is syntax only. A call is known by its spelled name (`f`, `ns::f`, `x.f`), its
//! argument count and what the statement around it does with the result ([`ResultUse`]); the
//! analysis matches those against the upstream declarations.

use super::extract::{namespace_names, split_path, strip_template_args, Source};
use super::model::Loc;
use super::syntax::{line_of, named_children, text};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::LazyLock;
use tree_sitter::Node;

/// A call as written in the backend.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Call {
    pub name: String,
    /// The spelled qualifier (`["allocator"]` for `allocator::f(..)`).
    pub qualifier: Vec<String>,
    /// `x.f(..)` or `x->f(..)`.
    pub member: bool,
    pub args: usize,
    /// Namespaces enclosing the call, outermost first.
    pub namespaces: Vec<String>,
    pub result: ResultUse,
    pub loc: Loc,
}

/// What the code around a call does with its result, as far as a changed return type matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ResultUse {
    /// The initializer of a structured binding with this many names
    /// (`auto [shape, strides] = f(..)`, also `auto&`, `const auto&` and `auto [..]{f(..)}`).
    Structured(usize),
    /// The initializer of one variable whose type is deduced (`auto r = f(..)`,
    /// `const auto& r = f(..)`, `decltype(auto) r = f(..)`, `auto r{f(..)}`).
    Deduced,
    /// A statement of its own (`f(..);` or `(void)f(..);`).
    Discarded,
    /// Anything else: passed on, returned, assigned to a named type, member-accessed.
    Other,
}

/// An object of a named class built with arguments (`Buffer b(p)`, `new Buffer(p)`,
/// `Buffer{p}`, `std::make_shared<Buffer>(p)`). Calls spelled like `Buffer(p)` are in
/// [`Uses::calls`]: only the headers can tell a class from a function.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Construct {
    pub name: String,
    pub qualifier: Vec<String>,
    pub args: usize,
    pub loc: Loc,
}

/// How a name, as spelled with its qualifier (`thrust::device_ptr`, `rocblas_handle`), is used.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Spelled {
    /// As a type (`rocblas_handle h;`).
    pub as_type: bool,
    /// As a template's name (`device_ptr<float>`, `f<T>(..)`).
    pub as_template: bool,
    /// As a value or a function (`rocblas_operation_none`, `f(..)`).
    pub as_value: bool,
    /// As a member (`x.name`, a field's declaration).
    pub as_field: bool,
    /// Its first place.
    pub loc: Loc,
}

impl Spelled {
    fn merge(&mut self, other: &Spelled) {
        self.as_type |= other.as_type;
        self.as_template |= other.as_template;
        self.as_value |= other.as_value;
        self.as_field |= other.as_field;
        if other.loc < self.loc {
            self.loc = other.loc.clone();
        }
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Uses {
    pub calls: Vec<Call>,
    pub constructs: Vec<Construct>,
    /// Every identifier, type, namespace and field name, with its first place.
    pub names: HashMap<String, Loc>,
    /// Type and value names with their qualifier as spelled (`a::b::c`), and how each is used.
    pub spelled: HashMap<String, Spelled>,
}

impl Uses {
    /// Takes `other`'s uses in after these, each name keeping its first place of both.
    pub fn merge(&mut self, other: Uses) {
        self.calls.extend(other.calls);
        self.constructs.extend(other.constructs);
        for (name, loc) in other.names {
            let slot = self.names.entry(name).or_insert_with(|| loc.clone());
            if loc < *slot {
                *slot = loc;
            }
        }
        for (name, spelled) in other.spelled {
            self.spelled
                .entry(name)
                .or_insert_with(|| spelled.clone())
                .merge(&spelled);
        }
    }
}

/// The deepest nesting read as written: clang takes no more brackets (`-fbracket-depth`), and the
/// deepest file of the fork and MLX nests 51 syntax levels.
const MAX_NESTING: usize = 256;

/// The grammar's ids of the fields the walk reads, looked up once: a lookup by name compares
/// the name with each of the grammar's field names, and the walk asks for a field at most of a
/// file's nodes.
struct Fields {
    arguments: u16,
    declarator: u16,
    field: u16,
    function: u16,
    name: u16,
    parameters: u16,
    scope: u16,
    type_: u16,
    value: u16,
}

static FIELDS: LazyLock<Fields> = LazyLock::new(|| {
    let language: tree_sitter::Language = tree_sitter_cpp::LANGUAGE.into();
    // Every name is one of the grammar's; an unknown one (0) finds no child.
    let id = |name: &str| language.field_id_for_name(name).map_or(0, |id| id.get());
    Fields {
        arguments: id("arguments"),
        declarator: id("declarator"),
        field: id("field"),
        function: id("function"),
        name: id("name"),
        parameters: id("parameters"),
        scope: id("scope"),
        type_: id("type"),
        value: id("value"),
    }
});

/// Collects the uses in one backend file.
pub fn collect(src: &Source, root: Node, uses: &mut Uses) {
    let mut walker = Walker {
        src,
        uses,
        result_uses: HashMap::new(),
        fields: &FIELDS,
    };
    walker.walk(root);
}

struct Walker<'s, 'u> {
    src: &'s Source<'s>,
    uses: &'u mut Uses,
    /// Result uses of call nodes (by node id), noted when their statement is visited, which
    /// comes before the call itself.
    result_uses: HashMap<usize, ResultUse>,
    fields: &'static Fields,
}

impl Walker<'_, '_> {
    fn loc(&self, node: Node) -> Loc {
        self.loc_at(line_of(node))
    }

    fn loc_at(&self, line: usize) -> Loc {
        Loc {
            path: self.src.path.to_string(),
            line,
        }
    }

    /// Visits every node without recursion (expressions nest as deep as a file wants), each
    /// with the namespaces around it (an index into `paths`) and whether it is in a body.
    fn walk(&mut self, root: Node) {
        let mut paths: Vec<Vec<String>> = vec![Vec::new()];
        let mut stack = vec![(root, 0usize, false, None)];
        let mut cursor = root.walk();
        while let Some((node, path, in_body, parent)) = stack.pop() {
            let mut inner_path = path;
            let kind = node.kind();
            match kind {
                // Past the nesting any compiler takes (clang's brackets: 256), the namespaces
                // around are the outer ones: a copy of them a level costs what the square of
                // the depth does.
                "namespace_definition" if paths[path].len() < MAX_NESTING => {
                    paths.push(namespace_names(node, self.src.parsed, &paths[path]));
                    inner_path = paths.len() - 1;
                }
                "call_expression" => self.call(node, &paths[path]),
                "declaration" => {
                    self.deduced_declaration(node);
                    if in_body {
                        self.local_declaration(node);
                    }
                }
                "expression_statement" => self.discarded(node),
                "new_expression" => {
                    let fields = self.fields;
                    self.typed_construct(node, fields.type_, fields.arguments)
                }
                "compound_literal_expression" => {
                    let fields = self.fields;
                    self.typed_construct(node, fields.type_, fields.value)
                }
                "identifier" | "type_identifier" | "namespace_identifier" | "field_identifier" => {
                    let name = text(node, self.src.parsed);
                    let line = line_of(node);
                    self.spelled(node, kind, parent, name, line);
                    // A name is copied once, where it is first met.
                    if !self.uses.names.contains_key(name) {
                        let loc = self.loc_at(line);
                        self.uses.names.insert(name.to_string(), loc);
                    }
                }
                _ => {}
            }
            let in_body = in_body || kind == "compound_statement";
            let first = stack.len();
            stack.extend(
                node.named_children(&mut cursor)
                    .map(|child| (child, inner_path, in_body, Some(node))),
            );
            // Reversed, so children come off the stack in source order.
            stack[first..].reverse();
        }
    }

    /// Notes a type or value name with the qualifier it is spelled with: the scopes of the
    /// qualified identifiers it is the name of, outermost first.
    ///
    /// `parent` is the walk's: tree-sitter finds a node's parent from the root down, so asking
    /// it for every name costs the square of the depth. It is asked only up a qualified or
    /// template name, at most [`MAX_NESTING`] levels.
    fn spelled(&mut self, node: Node, kind: &str, parent: Option<Node>, name: &str, line: usize) {
        let mut used = Spelled::default();
        match kind {
            "type_identifier" => used.as_type = true,
            "identifier" => used.as_value = true,
            "field_identifier" => used.as_field = true,
            _ => return,
        }
        let mut qualifier: Vec<String> = Vec::new();
        let (mut at, mut up, mut levels) = (node, parent, 0);
        let is_name = |parent: Node, at: Node| {
            let name = parent.child_by_field_id(self.fields.name);
            name.is_some_and(|n| n.id() == at.id())
        };
        while let Some(parent) = up.filter(|_| levels < MAX_NESTING) {
            match parent.kind() {
                "template_type" | "template_function" if is_name(parent, at) => {
                    used.as_template = true
                }
                "qualified_identifier" if is_name(parent, at) => {
                    if let Some(scope) = parent.child_by_field_id(self.fields.scope) {
                        let scope = strip_template_args(text(scope, self.src.parsed));
                        qualifier.splice(0..0, split_path(&scope));
                    }
                }
                _ => break,
            }
            (at, up, levels) = (parent, parent.parent(), levels + 1);
        }
        // An unqualified name (most of them) is its own key: copied only where it is new.
        let key = match qualifier.is_empty() {
            true => None,
            false => {
                qualifier.push(name.to_string());
                Some(qualifier.join("::"))
            }
        };
        let key = key.as_deref().unwrap_or(name);
        match self.uses.spelled.get_mut(key) {
            Some(kept) => {
                kept.as_type |= used.as_type;
                kept.as_template |= used.as_template;
                kept.as_value |= used.as_value;
                kept.as_field |= used.as_field;
                let path = self.src.path;
                if (path, line) < (kept.loc.path.as_str(), kept.loc.line) {
                    kept.loc = Loc {
                        path: path.to_string(),
                        line,
                    };
                }
            }
            None => {
                used.loc = self.loc_at(line);
                self.uses.spelled.insert(key.to_string(), used);
            }
        }
    }

    fn call(&mut self, node: Node, namespaces: &[String]) {
        let fields = self.fields;
        let (Some(function), Some(arguments)) = (
            node.child_by_field_id(fields.function),
            node.child_by_field_id(fields.arguments),
        ) else {
            return;
        };
        let args = argument_count(arguments);
        let (member, spelled) = match function.kind() {
            "field_expression" => match function.child_by_field_id(fields.field) {
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
            result: self
                .result_uses
                .remove(&node.id())
                .unwrap_or(ResultUse::Other),
            loc: self.loc(node),
        });
    }

    /// Notes the calls that initialize `auto` variables and structured bindings.
    fn deduced_declaration(&mut self, node: Node) {
        let fields = self.fields;
        let deduced = node
            .child_by_field_id(fields.type_)
            .is_some_and(|ty| matches!(text(ty, self.src.parsed), "auto" | "decltype(auto)"));
        if !deduced {
            return;
        }
        for declarator in declarators(node)
            .into_iter()
            .filter(|d| d.kind() == "init_declarator")
        {
            let (Some(target), Some(value)) = (
                declarator.child_by_field_id(fields.declarator),
                declarator.child_by_field_id(fields.value),
            ) else {
                continue;
            };
            let Some(call) = initializing_call(value) else {
                continue;
            };
            if let Some(result) = binding_of(target) {
                self.result_uses.insert(call.id(), result);
            }
        }
    }

    /// Notes a call that is the whole statement, or cast to `void`.
    fn discarded(&mut self, node: Node) {
        let Some(mut expression) = node.named_child(0) else {
            return;
        };
        if expression.kind() == "cast_expression" {
            let to_void = expression
                .child_by_field_id(self.fields.type_)
                .is_some_and(|ty| text(ty, self.src.parsed) == "void");
            match expression.child_by_field_id(self.fields.value) {
                Some(value) if to_void => expression = value,
                _ => return,
            }
        }
        if expression.kind() == "call_expression" {
            self.result_uses
                .insert(expression.id(), ResultUse::Discarded);
        }
    }

    /// `std::make_shared<T>(args)` and `std::make_unique<T>(args)` construct a `T`.
    fn make_function(&mut self, function: Node, args: usize) {
        let fields = self.fields;
        let template = if function.kind() == "qualified_identifier" {
            function.child_by_field_id(fields.name)
        } else {
            Some(function)
        };
        let Some(template) = template.filter(|t| t.kind() == "template_function") else {
            return;
        };
        let name = template
            .child_by_field_id(fields.name)
            .map(|n| text(n, self.src.parsed));
        if !matches!(name, Some("make_shared" | "make_unique")) {
            return;
        }
        let first_type = template
            .child_by_field_id(fields.arguments)
            .and_then(|list| list.named_child(0))
            .map(|t| text(t, self.src.parsed).to_string());
        if let Some(ty) = first_type {
            self.push_construct(&ty, args, template);
        }
    }

    /// `Buffer b(p);` (which tree-sitter reads as a function declaration, C++'s most vexing
    /// parse) and `Buffer b{p};` inside a function body.
    fn local_declaration(&mut self, node: Node) {
        let fields = self.fields;
        let Some(ty) = node.child_by_field_id(fields.type_) else {
            return;
        };
        if !matches!(
            ty.kind(),
            "type_identifier" | "qualified_identifier" | "template_type"
        ) {
            return;
        }
        let ty_text = text(ty, self.src.parsed).to_string();
        for declarator in declarators(node) {
            let args = match declarator.kind() {
                "function_declarator" => declarator
                    .child_by_field_id(fields.parameters)
                    .map(argument_count),
                "init_declarator" => declarator
                    .child_by_field_id(fields.value)
                    .filter(|v| matches!(v.kind(), "argument_list" | "initializer_list"))
                    .map(argument_count),
                _ => None,
            };
            if let Some(args) = args {
                self.push_construct(&ty_text, args, declarator);
            }
        }
    }

    fn typed_construct(&mut self, node: Node, type_field: u16, args_field: u16) {
        let Some(ty) = node.child_by_field_id(type_field) else {
            return;
        };
        let args = node.child_by_field_id(args_field).map_or(0, argument_count);
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

/// The call an initializer consists of: `= f(..)`, `{f(..)}` or `(f(..))`.
fn initializing_call(value: Node) -> Option<Node> {
    let value = match value.kind() {
        "initializer_list" | "argument_list" => {
            let items = named_children(value);
            match items.as_slice() {
                [only] => *only,
                _ => return None,
            }
        }
        _ => value,
    };
    (value.kind() == "call_expression").then_some(value)
}

/// What a declarator of a deduced type makes of its initializer: a structured binding of so
/// many names, or one variable (by value or reference; `auto*` wants a pointer, so it is not
/// covered).
fn binding_of(target: Node) -> Option<ResultUse> {
    let target = if target.kind() == "reference_declarator" {
        target.named_child(0)?
    } else {
        target
    };
    match target.kind() {
        "structured_binding_declarator" => {
            let names = named_children(target)
                .iter()
                .filter(|n| n.kind() == "identifier")
                .count();
            Some(ResultUse::Structured(names))
        }
        "identifier" => Some(ResultUse::Deduced),
        _ => None,
    }
}

/// The declarators of a declaration (`a = f(), b{2}`).
fn declarators(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.children_by_field_name("declarator", &mut cursor)
        .collect()
}

/// Arguments in an argument, parameter or initializer list (comments do not count).
fn argument_count(list: Node) -> usize {
    named_children(list)
        .iter()
        .filter(|c| c.kind() != "comment")
        .count()
}
