//! The drafts' C++: read through tree-sitter's parse of the text as `drift api` prepares it
//! (macros blanked in place, so every node's byte range points into the real text), and written
//! so that other people's text quoted in it stays inert.

use crate::drift::api::{children, parse, prepare, reached, squeeze, Prep, StubUse};
use std::ops::Range;
use std::sync::LazyLock;
use tree_sitter::{Node, Query, QueryCursor, StreamingIterator, Tree};

/// A C++ text and tree-sitter's parse of it.
pub struct Cpp<'t> {
    pub text: &'t str,
    tree: Tree,
    /// The stub macros' invocations the preparation found (`NO_GPU(Abs)`), in order.
    pub stubs: Vec<StubUse>,
}

/// A function declarator of the parse: its name, its parameter list, the declaration (or
/// definition) it belongs to, and that definition's body where it has one.
#[derive(Clone, Copy)]
pub struct Function<'n> {
    pub name: Node<'n>,
    pub params: Node<'n>,
    pub holder: Node<'n>,
    pub body: Option<Node<'n>>,
}

/// One item of a bracketed list (a parameter, a name of a binding): its text between the list's
/// separators, trimmed (a comment beside it stays in it), where that starts, and the node it
/// holds.
pub struct Item<'t, 'n> {
    pub text: &'t str,
    start: usize,
    node: Option<Node<'n>>,
}

fn query(source: &str) -> Query {
    Query::new(&tree_sitter_cpp::LANGUAGE.into(), source)
        .expect("the drafts' queries are C++ queries")
}

static FUNCTIONS: LazyLock<Query> = LazyLock::new(|| {
    query("(function_declarator declarator: (_) @name parameters: (parameter_list) @params) @declarator")
});
static CALLS: LazyLock<Query> =
    LazyLock::new(|| query("(call_expression function: (_) @function) @call"));
static CLASSES: LazyLock<Query> = LazyLock::new(|| {
    query("[(class_specifier name: (_) @name body: (_)) (struct_specifier name: (_) @name body: (_))]")
});
/// `auto [a, b] = f(..)`, `const auto& [a, b]{f(..)}`: the binding and the call it binds.
static BINDINGS: LazyLock<Query> = LazyLock::new(|| {
    query(
        "(init_declarator
           declarator: [(structured_binding_declarator) @binding
                        (reference_declarator (structured_binding_declarator) @binding)]
           value: [(call_expression) @call (initializer_list . (call_expression) @call .)])",
    )
});
static INCLUDES: LazyLock<Query> =
    LazyLock::new(|| query("(preproc_include path: (_) @path) @include"));

/// Kinds that stand before a declaration's return type without being part of it.
const SPECIFIERS: &[&str] = &[
    "storage_class_specifier",
    "virtual",
    "attribute_specifier",
    "attribute_declaration",
    "comment",
];

impl<'t> Cpp<'t> {
    /// `text` prepared as `prep` says (the stub macros recorded and blanked) and parsed.
    pub fn parse(text: &'t str, prep: &Prep) -> Cpp<'t> {
        let prepared = prepare(text.as_bytes(), prep);
        let tree = parse(&prepared.text).expect("tree-sitter parses unless cancelled");
        Cpp {
            text,
            tree,
            stubs: prepared.stubs,
        }
    }

    /// The real text of `node`.
    pub fn text(&self, node: Node) -> &'t str {
        &self.text[node.byte_range()]
    }

    /// Each match of `query` over the whole parse, in the text's order: its captures in the
    /// order the query's text names them (an enclosing node's capture, written after its
    /// pattern, comes last).
    fn matches(&self, query: &Query) -> Vec<Vec<Node<'_>>> {
        let mut cursor = QueryCursor::new();
        let mut found = cursor.matches(query, self.tree.root_node(), self.text.as_bytes());
        let mut out = Vec::new();
        while let Some(m) = found.next() {
            let mut nodes: Vec<(u32, Node)> =
                m.captures.iter().map(|c| (c.index, c.node)).collect();
            nodes.sort_by_key(|(index, _)| *index);
            out.push(nodes.into_iter().map(|(_, node)| node).collect());
        }
        out
    }

    /// Every function declarator, in the text's order.
    pub fn functions(&self) -> Vec<Function<'_>> {
        let mut out = Vec::new();
        for m in self.matches(&FUNCTIONS) {
            let (name, params, declarator) = (m[0], m[1], m[2]);
            // Up past what wraps a declarator (`&f()`, `*f()`, `f() = 0`) to its declaration.
            let mut holder = declarator.parent();
            while let Some(inner) = holder.filter(|h| h.kind().ends_with("_declarator")) {
                holder = inner.parent();
            }
            let Some(holder) = holder.filter(|_| self.inner(params).is_some()) else {
                continue;
            };
            let body = (holder.kind() == "function_definition")
                .then(|| holder.child_by_field_name("body"))
                .flatten()
                .filter(|body| self.inner(*body).is_some());
            out.push(Function {
                name,
                params,
                holder,
                body,
            });
        }
        out
    }

    /// Whether `name` (an identifier, or a qualified name like `Event::wait`) is the name of
    /// `node`, as declared or called: its whole text or its last qualified or member part.
    pub fn names(&self, node: Node, name: &str) -> bool {
        let written = squeeze(self.text(node));
        let tail = written.strip_suffix(name);
        tail.is_some_and(|rest| {
            rest.is_empty() || [":", ".", ">"].iter().any(|p| rest.ends_with(p))
        })
    }

    /// The function declarators named `name`.
    pub fn functions_named(&self, name: &str) -> Vec<Function<'_>> {
        let functions = self.functions().into_iter();
        functions.filter(|f| self.names(f.name, name)).collect()
    }

    /// The calls of `name`, in the text's order.
    pub fn calls(&self, name: &str) -> Vec<Node<'_>> {
        let calls = self.matches(&CALLS).into_iter();
        calls
            .filter(|m| self.names(m[0], name))
            .map(|m| m[1])
            .collect()
    }

    /// Each structured binding initialized by a call, with that call.
    pub fn bindings(&self) -> Vec<(Node<'_>, Node<'_>)> {
        let bindings = self.matches(&BINDINGS).into_iter();
        bindings.map(|m| (m[0], m[1])).collect()
    }

    /// The names of the classes and structs the text defines (with a body), in its order.
    pub fn class_names(&self) -> Vec<String> {
        let classes = self.matches(&CLASSES).into_iter();
        classes.map(|m| self.text(m[0]).to_string()).collect()
    }

    /// Each `#include`: the whole directive (its line break included) and its path as written.
    pub fn includes(&self) -> Vec<(Node<'_>, &'t str)> {
        let includes = self.matches(&INCLUDES).into_iter();
        includes.map(|m| (m[1], self.text(m[0]))).collect()
    }

    /// The byte range inside the brackets that open and close `node` (a body, a parameter list, a
    /// binding), when the parse found both: a list its text leaves open is no list to edit.
    pub fn inner(&self, node: Node) -> Option<Range<usize>> {
        let open = node.child(0)?;
        let close = node.child(node.child_count().checked_sub(1)?)?;
        let both = !open.is_missing() && !close.is_missing() && open.id() != close.id();
        both.then(|| open.end_byte()..close.start_byte())
    }

    /// The items of the bracketed list `list` (`(a, b)`, `[x, y]`).
    pub fn items<'n>(&self, list: Node<'n>) -> Vec<Item<'t, 'n>> {
        let mut items = Vec::new();
        let mut start = list.start_byte() + 1;
        let mut node = None;
        let parts = children(list);
        for (i, part) in parts.iter().enumerate().skip(1) {
            if part.kind() != "," && i + 1 < parts.len() {
                if part.is_named() && part.kind() != "comment" {
                    node = Some(*part);
                }
                continue;
            }
            let between = &self.text[start..part.start_byte()];
            let text = between.trim();
            if !text.is_empty() || !items.is_empty() || part.kind() == "," {
                let start = start + (between.len() - between.trim_start().len());
                let node = node.take();
                items.push(Item { text, start, node });
            }
            start = part.end_byte();
        }
        items
    }

    /// A parameter without its default argument (`int x = 0` -> `int x`).
    pub fn without_default<'i>(&self, item: &Item<'i, '_>) -> &'i str {
        let default = item
            .node
            .and_then(|n| children(n).into_iter().find(|c| c.kind() == "="));
        let end = default.map_or(item.text.len(), |eq| eq.start_byte() - item.start);
        item.text[..end].trim_end()
    }

    /// A parameter's type: its text without default, comments and name, squeezed
    /// (`const array& q` -> `const array&`; `bool /*unused*/` -> `bool`).
    pub fn param_type(&self, item: &Item) -> String {
        let Some(param) = item.node else {
            return squeeze(item.text);
        };
        let default = item.start + self.without_default(item).len();
        let kept = param.start_byte()..default.min(param.end_byte());
        let declared = param.child_by_field_name("declarator");
        let name = declared.and_then(|d| {
            let identifiers = reached(d, |_| true)
                .into_iter()
                .filter(|n| n.kind() == "identifier");
            identifiers.min_by_key(|n| n.start_byte())
        });
        let comments = reached(param, |_| true)
            .into_iter()
            .filter(|n| n.kind() == "comment");
        let mut cut: Vec<Range<usize>> = comments.chain(name).map(|n| n.byte_range()).collect();
        cut.sort_by_key(|r| r.start);
        let mut text = String::new();
        let mut at = kept.start;
        for range in cut {
            if range.start >= at && range.end <= kept.end {
                text.push_str(&self.text[at..range.start]);
                at = range.end;
            }
        }
        text.push_str(&self.text[at..kept.end.max(at)]);
        squeeze(&text)
    }

    /// The parameter types of `function`.
    pub fn param_types(&self, function: &Function) -> Vec<String> {
        let items = self.items(function.params);
        items.iter().map(|item| self.param_type(item)).collect()
    }

    /// The return type written before `function`'s name, without specifiers, squeezed.
    pub fn return_type(&self, function: &Function) -> Option<String> {
        let specifier = |c: &Node| {
            SPECIFIERS.contains(&c.kind())
                || (c.kind() == "type_qualifier" && self.text(*c) == "constexpr")
        };
        let first = children(function.holder)
            .into_iter()
            .find(|c| !specifier(c))?;
        let start = first.start_byte().min(function.name.start_byte());
        Some(squeeze(&self.text[start..function.name.start_byte()]))
    }
}

/// `text` as `//` comment lines, each starting with `prefix` (`"//   "`), that nothing in it can
/// end: every line terminator a compiler or editor knows (LF, CR, CRLF, VT, FF, NEL, U+2028,
/// U+2029) starts a new `//` line of its own; every other control character is shown escaped
/// (`\033`), never written; and a line that would end with a backslash, or with its trigraph
/// `??/`, which would splice the next line (the code after the quote) into the comment, gets a
/// `|` after it. Quoted text is other people's (upstream's or the fork's bodies and paths).
pub fn comment_lines(prefix: &str, text: &str) -> String {
    let is_break = |c: char| {
        matches!(
            c,
            '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    };
    let mut out = String::with_capacity(text.len() + 16);
    for line in text.replace("\r\n", "\n").split(is_break) {
        let line = crate::terminal::escape_controls(line.trim());
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(prefix);
        out.push_str(&line);
        if line.ends_with('\\') || line.ends_with("??/") {
            out.push_str(" |");
        }
    }
    out
}

/// `text` as a C++ string literal that means exactly it: quotes, backslashes and `?` (trigraphs)
/// escaped, every other character outside printable ASCII written as octal escapes of its UTF-8
/// bytes, so no line break, splice or quote of it reaches the source.
pub fn string_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' | '?' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c => {
                for b in c.encode_utf8(&mut [0; 4]).bytes() {
                    out.push_str(&format!("\\{b:03o}"));
                }
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Cpp<'_> {
        Cpp::parse(text, &Prep::default())
    }

    #[test]
    fn parameters_split_and_lose_names_defaults_and_comments() {
        let text = "void f(const array& q, bool /*is_training*/, std::pair<int, int> p = {1, 2}, Stream s, unsigned int);";
        let cpp = parsed(text);
        let f = cpp.functions_named("f")[0];
        let items = cpp.items(f.params);
        let texts: Vec<&str> = items.iter().map(|i| i.text).collect();
        assert_eq!(texts[1], "bool /*is_training*/");
        assert_eq!(
            cpp.param_types(&f),
            [
                "const array&",
                "bool",
                "std::pair<int,int>",
                "Stream",
                "unsigned int"
            ]
        );
        assert_eq!(cpp.without_default(&items[2]), "std::pair<int, int> p");
    }

    /// Fails on main before this change: parameters were split at commas outside brackets, and
    /// the `>` of a comparison in a default argument closed a bracket that was never opened.
    #[test]
    fn a_default_argument_with_a_comparison_is_one_parameter() {
        let cpp = parsed("void f(bool wide = sizeof(T) > 4, int n = g(1, 2), Stream s);");
        let f = cpp.functions_named("f")[0];
        assert_eq!(cpp.param_types(&f), ["bool", "int", "Stream"]);
    }

    #[test]
    fn return_types_and_tuple_elements() {
        let text =
            "static std::tuple<bool, Shape, std::vector<Strides>> collapse(\n    const A& a);";
        let cpp = parsed(text);
        let f = cpp.functions_named("collapse")[0];
        let ret = cpp.return_type(&f).unwrap();
        assert_eq!(ret, "std::tuple<bool,Shape,std::vector<Strides>>");
        assert_eq!(
            crate::drift::api::tuple_elements(&ret).unwrap(),
            ["bool", "Shape", "std::vector<Strides>"]
        );
        assert_eq!(cpp.text(f.params), "(\n    const A& a)");
    }

    /// The C++ preprocessor's view of `source` (`c++ -E -P` with `flags`): the tokens left,
    /// whitespace collapsed.
    fn preprocessed(source: &str, flags: &[&str]) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("c++")
            .args(["-E", "-P", "-x", "c++"])
            .args(flags)
            .arg("-")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("`c++` runs (.ci/run installs g++)");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(source.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Fails on main before this change: the draft quoted a body with `//` before each of its
    /// `lines()`, so a lone CR (GCC and Clang end a `//` comment there), a last line ending in a
    /// backslash or `??/` (splicing the drafted signature into the comment) and the other line
    /// terminators let quoted text out of its comment.
    #[test]
    fn quoted_text_never_leaves_its_comment() {
        let hostile = [
            "return x;\rint lone_cr = 1;",
            "a\r\nint crlf = 2;",
            "b \\\nint spliced = 3;",
            "c ??/\nint trigraph = 4;",
            "d\u{2028}int line_separator = 5;",
            "e\u{2029}int paragraph = 6;",
            "f\u{85}int next_line = 7;",
            "g\u{b}int vertical_tab = 8;\u{c}int form_feed = 9;",
            "h */ int block_end = 10; /*",
            "i \u{1b}[2J\u{7} \u{202e}int bidi = 11;",
            "ends with a backslash \\",
            "ends with a spaced backslash \\  \t",
            "ends with a trigraph ??/",
        ];
        for body in hostile {
            let source = format!("{}\nint after_quote;\n", comment_lines("//   ", body));
            for flags in [&["-fpreprocessed"][..], &["-trigraphs"][..], &[][..]] {
                assert_eq!(
                    preprocessed(&source, flags),
                    "int after_quote;",
                    "{flags:?}: {body:?} quoted as:\n{source}"
                );
            }
            assert!(
                !source.contains(|c: char| c.is_control() && c != '\n' && c != '\t'),
                "{source:?}"
            );
        }
        // Plain text is quoted as it is, one line to a line.
        assert_eq!(
            comment_lines("//   ", "  a();\n  return b;\n"),
            "//   a();\n//   return b;\n//   "
        );
        assert_eq!(
            preprocessed(
                &format!(
                    "const char* m = {};",
                    string_literal("X::f\"); int evil = (\"\u{7}??/\n")
                ),
                &["-trigraphs"]
            ),
            r#"const char* m = "X::f\"); int evil = (\"\007\?\?/\012";"#
        );
    }
}
