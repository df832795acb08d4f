//! Getting C++ into tree-sitter in a shape it can parse, and small helpers over its nodes.
//!
//! tree-sitter-cpp does not run the preprocessor, so export macros (`MLX_API`), macro lines in
//! class bodies (`DEFINE_VMAP()`), device qualifiers (`__device__`) and brace-initialized default
//! arguments (`s = {}`) break its parse. [`prepare`] blanks them with spaces of equal length
//! (newlines kept), so every line and column of the parse still points into the real file. It is
//! a small lexer (comments, strings, brackets), not a regular expression over C++; the same pass
//! records the backend's stub-macro invocations (`NO_GPU(Abs)`) and blanks them too, and blanks
//! kernel launch configurations (`<<<grid, block>>>`).

use std::collections::{BTreeMap, BTreeSet};
use tree_sitter::{Node, Parser, Tree};

/// What to blank before parsing, and the backend's stub macros: the configured ones plus
/// those learned from the files' own `#define` lines (`sources::prep` gathers them).
#[derive(Debug, Default)]
pub struct Prep {
    /// Blanked anywhere, with their argument list when one follows.
    pub blank: BTreeSet<String>,
    /// Function-like macros defined anywhere in the input, blanked in statement position.
    pub statement: BTreeSet<String>,
    /// Stub and definer macros with the members each defines for its argument (recorded where
    /// used, then blanked).
    pub stubs: BTreeMap<String, Vec<String>>,
}

/// One invocation of a stub macro, `NO_GPU(Abs)`: the macro, its argument, the 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StubUse {
    pub macro_name: String,
    pub argument: String,
    pub line: usize,
}

/// A source ready for tree-sitter: the blanked bytes and the stub invocations found on the way.
pub struct Prepared {
    pub text: Vec<u8>,
    pub stubs: Vec<StubUse>,
}

/// Blanks macros, brace-initialized default arguments and kernel launch configurations,
/// keeping every byte offset. Preprocessor directives are left alone. Which identifiers are
/// blanked: `blanking.blank` macros (with their argument list when one follows) anywhere,
/// `blanking.statement` macros only where a statement or declaration starts
/// (`half_binop(+, operator+);`, `DISPATCH(float);`), and `blanking.stubs` macros (recorded,
/// then blanked).
pub fn prepare(src: &[u8], blanking: &Prep) -> Prepared {
    let mut out = src.to_vec();
    let mut stubs = Vec::new();
    let mut brackets: Vec<u8> = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // The last two significant bytes (not space, not comment): a statement starts after
    // `;`, `{`, `}`, a label's `:` (not `::`) or a directive.
    let mut last = [b';', b';'];
    let mut line_start = true;
    while i < src.len() {
        let (c, start) = (src[i], i);
        if is_ident_start(c) {
            let end = ident_end(src, i);
            if let Some((stop, used)) = macro_at(src, start, end, last, blanking, line) {
                stubs.extend(used);
                blank(&mut out, start, stop);
                (i, last) = (stop, [b';', b';']);
                line += count_newlines(&src[start..i]);
                continue;
            }
            i = end;
        } else {
            let in_parens = brackets.last() == Some(&b'(');
            i = token_end(src, &mut out, i, line_start, in_parens);
        }
        match c {
            b'(' | b'[' | b'{' => brackets.push(c),
            b')' | b']' | b'}' => {
                brackets.pop();
            }
            b'#' if line_start => last = [b';', b';'],
            _ => {}
        }
        if c == b'\n' {
            line_start = true;
        } else if !c.is_ascii_whitespace() {
            line_start = false;
            let comment = c == b'/' && matches!(src.get(start + 1), Some(b'/' | b'*'));
            if !comment && c != b'#' {
                last = [last[1], src[i - 1]];
            }
        }
        line += count_newlines(&src[start..i]);
    }
    Prepared { text: out, stubs }
}

/// Where the token at `i` that starts no identifier ends: a directive at a line's start, a
/// comment, a quoted literal, a kernel launch configuration or a brace-initialized default
/// argument (`in_parens`), the last two blanked in `out`; else the byte itself.
fn token_end(src: &[u8], out: &mut [u8], i: usize, line_start: bool, in_parens: bool) -> usize {
    if let Some(end) = comment_end(src, i) {
        return end;
    }
    match src[i] {
        b'#' if line_start => directive_end(src, i),
        b'"' | b'\'' => skip_quoted(src, i),
        b'<' if src[i..].starts_with(b"<<<") => blank_launch_config(src, out, i),
        b'=' if in_parens && is_plain_assign(src, i) => blank_braced_default(src, out, i),
        _ => i + 1,
    }
}

/// Whether the identifier at `start..end` starts a macro use to blank (after the significant
/// bytes `last`): where the blank stops (after its arguments), and a stub macro's use where its
/// one argument is an identifier.
fn macro_at(
    src: &[u8],
    start: usize,
    end: usize,
    last: [u8; 2],
    blanking: &Prep,
    line: usize,
) -> Option<(usize, Option<StubUse>)> {
    let word = std::str::from_utf8(&src[start..end]).unwrap_or("");
    let statement_start =
        matches!(last[1], b';' | b'{' | b'}') || (last[1] == b':' && last[0] != b':');
    let stub = blanking.stubs.contains_key(word);
    let statement = statement_start && blanking.statement.contains(word);
    if !(stub || statement || blanking.blank.contains(word)) {
        // Not a macro: its arguments are not looked for, which for every name of `f(f(f(…)))`
        // costs the square of the nesting.
        return None;
    }
    let args = macro_args_end(src, end);
    let blank_it = blanking.blank.contains(word) || ((stub || statement) && args.is_some());
    if !blank_it {
        return None;
    }
    let stop = args.unwrap_or(end);
    let used = stub
        .then(|| single_ident_arg(&src[end..stop]))
        .flatten()
        .map(|argument| StubUse {
            macro_name: word.to_string(),
            argument,
            line,
        });
    Some((stop, used))
}

/// The end of a preprocessor directive, backslash continuations included.
pub(super) fn directive_end(src: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < src.len() {
        match src[i] {
            b'\\' if src.get(i + 1) == Some(&b'\n') => i += 2,
            b'\\' if src.get(i + 1) == Some(&b'\r') && src.get(i + 2) == Some(&b'\n') => i += 3,
            b'\n' => return i,
            _ => i += 1,
        }
    }
    src.len()
}

pub(super) fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

pub(super) fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

pub(super) fn ident_end(src: &[u8], start: usize) -> usize {
    let mut end = start;
    while end < src.len() && (src[end].is_ascii_alphanumeric() || src[end] == b'_') {
        end += 1;
    }
    end
}

/// Where the comment that starts at byte `i` ends, when one starts there: at the line break that
/// ends a `//` comment, just after the `*/` of a `/* */` one (the text's end when none).
fn comment_end(src: &[u8], i: usize) -> Option<usize> {
    let rest = &src[i..];
    let end = if rest.starts_with(b"//") {
        rest.iter().position(|&b| b == b'\n')
    } else if rest.starts_with(b"/*") {
        rest[2..].windows(2).position(|w| w == b"*/").map(|p| p + 4)
    } else {
        return None;
    };
    Some(end.map_or(src.len(), |p| i + p))
}

/// Splits at commas outside brackets and comments: `a, std::pair<b, c> d` is two items.
pub fn split_top_level(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if let Some(end) = comment_end(bytes, i) {
            i = end;
            continue;
        }
        match bytes[i] {
            b'(' | b'<' | b'[' | b'{' => depth += 1,
            b')' | b'>' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => {
                items.push(text[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = text[start..].trim();
    if !last.is_empty() || !items.is_empty() {
        items.push(last.to_string());
    }
    items
}

/// The end of a string or character literal starting at `start` (its quote), escapes honoured.
/// A literal never spans an unescaped newline, so a stray quote cannot swallow the file.
fn skip_quoted(src: &[u8], start: usize) -> usize {
    let quote = src[start];
    let mut i = start + 1;
    while i < src.len() {
        match src[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    src.len()
}

/// `=` that is an assignment or default, not part of `==`, `<=`, `>=`, `!=`, `+=`, ...
fn is_plain_assign(src: &[u8], i: usize) -> bool {
    let before = if i > 0 { src[i - 1] } else { b' ' };
    let after = src.get(i + 1).copied().unwrap_or(b' ');
    !b"=<>!+-*/%&|^".contains(&before) && after != b'='
}

/// For `= {..}` inside a parameter list, replaces the braces by `0` and spaces, so the
/// parameter still reads as one with a default value. Returns where scanning resumes.
fn blank_braced_default(src: &[u8], out: &mut [u8], eq: usize) -> usize {
    let mut j = eq + 1;
    while j < src.len() && src[j].is_ascii_whitespace() {
        j += 1;
    }
    if src.get(j) != Some(&b'{') {
        return eq + 1;
    }
    let Some(end) = balanced_end(src, j) else {
        return eq + 1;
    };
    blank(out, j, end);
    out[j] = b'0';
    end
}

/// HIP and CUDA kernel launches, `kernel<<<grid, block>>>(args)`: blanking the launch
/// configuration leaves an ordinary call.
fn blank_launch_config(src: &[u8], out: &mut [u8], start: usize) -> usize {
    match src[start..].windows(3).position(|w| w == b">>>") {
        Some(p) if !src[start..start + p].contains(&b';') => {
            blank(out, start, start + p + 3);
            start + p + 3
        }
        _ => start + 3,
    }
}

/// The end (exclusive) of the bracket group opening at `open` (`(`, `<`, `[` or `{`): the
/// bracket matcher of the blanking. Comments and string or character literals are skipped, so a
/// bracket inside them does not count.
fn balanced_end(src: &[u8], open: usize) -> Option<usize> {
    let (left, right) = match src.get(open)? {
        b'(' => (b'(', b')'),
        b'{' => (b'{', b'}'),
        b'[' => (b'[', b']'),
        b'<' => (b'<', b'>'),
        _ => return None,
    };
    let mut depth = 0usize;
    let mut i = open;
    while i < src.len() {
        if let Some(end) = comment_end(src, i) {
            i = end;
            continue;
        }
        match src[i] {
            b'"' | b'\'' if !is_digit_separator(src, i) => {
                i = skip_quoted(src, i);
                continue;
            }
            c if c == left => depth += 1,
            c if c == right => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A `'` between digits (`1'000`, C++14) separates them and opens no character literal; the
/// character literal `u8'a'` follows its prefix.
fn is_digit_separator(src: &[u8], i: usize) -> bool {
    src[i] == b'\'' && i > 0 && src[i - 1].is_ascii_digit() && !src[..i].ends_with(b"u8")
}

/// If a macro's argument list follows `after` (spaces allowed), where it ends.
fn macro_args_end(src: &[u8], after: usize) -> Option<usize> {
    let blanks = src[after..]
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'));
    let open = after + blanks.count();
    let paren = src.get(open).filter(|&&b| b == b'(');
    paren.and_then(|_| balanced_end(src, open))
}

/// `(Name)` with one identifier inside: the identifier.
fn single_ident_arg(group: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(group).ok()?.trim();
    let inner = text.strip_prefix('(')?.strip_suffix(')')?.trim();
    let ok = !inner.is_empty()
        && inner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    ok.then(|| inner.to_string())
}

fn blank(out: &mut [u8], start: usize, end: usize) {
    for b in &mut out[start..end] {
        if *b != b'\n' {
            *b = b' ';
        }
    }
}

/// Parses prepared C++ source. tree-sitter only fails to return a tree when cancelled.
pub fn parse(text: &[u8]) -> Option<Tree> {
    // One parser per thread, kept: a new one per file allocated and freed its stacks each time.
    thread_local! {
        static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
    }
    PARSER.with_borrow_mut(|kept| {
        if kept.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_cpp::LANGUAGE.into())
                .ok()?;
            *kept = Some(parser);
        }
        kept.as_mut()?.parse(text, None)
    })
}

/// The source text of a node (empty if not UTF-8).
pub fn text<'a>(node: Node, src: &'a [u8]) -> &'a str {
    std::str::from_utf8(&src[node.byte_range()]).unwrap_or("")
}

/// The 1-based line a node starts on.
pub fn line_of(node: Node) -> usize {
    node.start_position().row + 1
}

/// The named children of a node, collected (tree-sitter's iterator borrows a cursor).
pub fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// All children of a node, named or not.
pub fn children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

/// The nodes a walk from `root` reaches when it enters the children of the nodes `enter`
/// accepts, `root` first; without recursion (files nest as deep as they want), the children of
/// each node last first.
pub fn reached<'t>(root: Node<'t>, enter: impl Fn(Node) -> bool) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if enter(node) {
            stack.extend(children(node));
        }
        out.push(node);
    }
    out
}

/// Counts ERROR and MISSING nodes: how badly a file parsed.
pub fn error_count(root: Node) -> usize {
    let reached = reached(root, |n| n.has_error());
    reached
        .iter()
        .filter(|n| n.is_error() || n.is_missing())
        .count()
}

/// C++ text with whitespace collapsed the way a type or name is compared: single spaces only
/// between two word characters (`unsigned int`, `const T`), none around punctuation
/// (`const  array &` -> `const array&`). The one rule: `drift api`'s model and the drafts both
/// use it, so a drafted type compares equal to the recorded one.
pub fn squeeze(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = true;
            continue;
        }
        let word = |c: char| c.is_alphanumeric() || c == '_';
        if pending_space && out.chars().last().is_some_and(word) && word(c) {
            out.push(' ');
        }
        pending_space = false;
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blank_set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn blanking_keeps_offsets_and_records_stubs() {
        let blank = blank_set(&["MLX_API", "DEFINE_VMAP"]);
        let stubs = [("NO_GPU".to_string(), vec!["eval_gpu".to_string()])].into();
        let src = b"MLX_API array f(int a, Shape s = {1, 2});\nclass A { DEFINE_VMAP()\n};\nNO_GPU(Abs)\n// NO_GPU(Hidden)\n";
        let statement = blank_set(&[]);
        let prepared = prepare(
            src,
            &Prep {
                blank: blank.clone(),
                statement: statement.clone(),
                stubs,
            },
        );
        let text = String::from_utf8(prepared.text).unwrap();
        assert_eq!(text.len(), src.len());
        assert_eq!(
            text,
            "        array f(int a, Shape s = 0     );\nclass A {              \n};\n           \n// NO_GPU(Hidden)\n"
        );
        assert_eq!(
            prepared.stubs,
            vec![StubUse {
                macro_name: "NO_GPU".into(),
                argument: "Abs".into(),
                line: 4
            }]
        );
    }

    #[test]
    fn comparisons_and_bodies_are_not_blanked() {
        let blank = blank_set(&[]);
        let stubs = BTreeMap::new();
        let src = b"bool f(int a) { return g(a == 1, b <= 2); std::vector<int> v = {1}; }";
        let prepared = prepare(
            src,
            &Prep {
                blank: blank.clone(),
                statement: blank.clone(),
                stubs,
            },
        );
        assert_eq!(prepared.text, src.to_vec());
    }

    #[test]
    fn statement_macros_are_blanked_only_where_a_statement_starts() {
        let none = blank_set(&[]);
        let statement = blank_set(&["half_binop", "LIKELY", "NO_GPU"]);
        let stubs = [("NO_GPU".to_string(), vec!["eval_gpu".to_string()])].into();
        let src = b"#define NO_GPU(f) void f::eval_gpu() {}\n#define MLX_API\nhalf_binop(+, operator+);\nint f(int x) { if (LIKELY(x)) { return 1; } LIKELY(x); return ns::LIKELY(x); }\n";
        let blanking = Prep {
            blank: none.clone(),
            statement: statement.clone(),
            stubs,
        };
        let prepared = prepare(src, &blanking);
        let text = String::from_utf8(prepared.text).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "#define NO_GPU(f) void f::eval_gpu() {}");
        assert_eq!(lines[1], "#define MLX_API");
        assert_eq!(lines[2].trim(), ";");
        assert_eq!(
            lines[3],
            "int f(int x) { if (LIKELY(x)) { return 1; }          ; return ns::LIKELY(x); }"
        );
        assert!(prepared.stubs.is_empty(), "{:?}", prepared.stubs);
    }

    #[test]
    fn kernel_launches_become_plain_calls() {
        let none = blank_set(&[]);
        let stubs = BTreeMap::new();
        let src = b"void f() { kernel<<<grid,\n block>>>(a, b); }";
        let prepared = prepare(
            src,
            &Prep {
                blank: none.clone(),
                statement: none.clone(),
                stubs,
            },
        );
        let expected = format!(
            "void f() {{ kernel{}\n{}(a, b); }}",
            " ".repeat(8),
            " ".repeat(9)
        );
        assert_eq!(String::from_utf8(prepared.text).unwrap(), expected);
    }

    #[test]
    fn brackets_match_past_comments_and_strings() {
        let end = |text: &str| balanced_end(text.as_bytes(), 1);
        let text = "f(a /* ) */, \")\", g(b)) rest";
        assert_eq!(end(text), text.find(" rest"));
        // A digit separator opens no character literal, and a stray quote ends at its line:
        // neither swallows the brackets after it.
        let text = "f(1'000, g(b)) rest";
        assert_eq!(end(text), text.find(" rest"));
        let text = "f(a, ' stray\n  g(b)) rest";
        assert_eq!(end(text), text.find(" rest"));
    }

    #[test]
    fn squeeze_keeps_only_word_separating_spaces() {
        assert_eq!(
            squeeze("const  std::vector< array > &"),
            "const std::vector<array>&"
        );
        assert_eq!(squeeze("unsigned\n int"), "unsigned int");
    }
}
