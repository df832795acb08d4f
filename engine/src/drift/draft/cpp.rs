//! The little C++ text handling drafts need: matching brackets, splitting parameter lists,
//! a parameter's type. Comments and string literals are skipped so that a `)` or `,` in them
//! does not count; nothing here parses C++ beyond that.

use crate::drift::api::{balanced_end, comment_end};

/// Byte index of the bracket closing the one at `open` (`(`, `<`, `[` or `{`).
pub fn matching(text: &str, open: usize) -> Option<usize> {
    balanced_end(text.as_bytes(), open).map(|end| end - 1)
}

/// A parameter without its default argument (`int x = 0` -> `int x`).
pub fn strip_default(param: &str) -> String {
    let mut depth = 0i32;
    for (i, c) in param.char_indices() {
        match c {
            '(' | '<' | '[' | '{' => depth += 1,
            ')' | '>' | ']' | '}' => depth -= 1,
            '=' if depth == 0 => return param[..i].trim_end().to_string(),
            _ => {}
        }
    }
    param.trim().to_string()
}

/// Removes `/* .. */` and `// ..` comments.
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(c) = text[i..].chars().next() {
        match comment_end(text.as_bytes(), i) {
            Some(end) => i = end,
            None => {
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// The one C++ text normalizer, splitter and tuple reader, shared with `drift api`: a drafted
/// type compares equal to the type the API model recorded.
pub(crate) use crate::drift::api::{split_top_level, squeeze, tuple_elements};

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

const TYPE_WORDS: &[&str] = &[
    "int", "long", "short", "char", "bool", "float", "double", "unsigned", "signed", "auto",
    "void", "const", "volatile",
];

/// A parameter's type: its text without default, comments and name (`const array& q` ->
/// `const array&`; `bool /*unused*/` -> `bool`).
pub fn param_type(param: &str) -> String {
    let text = squeeze(&strip_comments(&strip_default(param)));
    let end = text.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
    let name = &text[end.len()..];
    let has_name = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !end.trim().is_empty()
        && !end.ends_with("::")
        && !TYPE_WORDS.contains(&name);
    if has_name {
        squeeze(end)
    } else {
        text
    }
}

/// The parameter list of the first `name(` in `text` at or after byte `from`: the byte range
/// inside the parentheses.
pub fn param_span(text: &str, name: &str, from: usize) -> Option<std::ops::Range<usize>> {
    let mut at = from;
    while let Some(found) = text[at..].find(name) {
        let start = at + found;
        let before_ok = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        let after = start + name.len();
        let open = after + (text[after..].len() - text[after..].trim_start().len());
        if before_ok && text[open..].starts_with('(') {
            let close = matching(text, open)?;
            return Some(open + 1..close);
        }
        at = start + name.len();
    }
    None
}

/// The return type written before `name(` in a declaration's text, without specifiers.
pub fn return_type(decl_text: &str, name: &str) -> Option<String> {
    let span = param_span(decl_text, name, 0)?;
    let head = &decl_text[..span.start - 1];
    let head = head.trim_end().strip_suffix(name)?.trim();
    let mut words: &str = head;
    // `template <..>` first, then specifiers.
    if let Some(rest) = words.strip_prefix("template") {
        let open = rest.find('<')?;
        let close = matching(rest, open)?;
        words = rest[close + 1..].trim();
    }
    const SPECIFIERS: [&str; 6] = [
        "MLX_API",
        "inline",
        "static",
        "extern",
        "constexpr",
        "virtual",
    ];
    let spaced = |rest: &&str| rest.starts_with(char::is_whitespace);
    while let Some(rest) = SPECIFIERS
        .iter()
        .find_map(|spec| words.strip_prefix(spec).filter(spaced))
    {
        words = rest.trim_start();
    }
    Some(squeeze(words))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_split_and_lose_names_defaults_and_comments() {
        let list = "const array& q, bool /*is_training*/, std::pair<int, int> p = {1, 2}, Stream s";
        let params = split_top_level(list);
        assert_eq!(params.len(), 4);
        let types: Vec<String> = params.iter().map(|p| param_type(p)).collect();
        assert_eq!(
            types,
            ["const array&", "bool", "std::pair<int,int>", "Stream"]
        );
        assert_eq!(param_type("unsigned int"), "unsigned int");
        assert_eq!(param_type("Stream"), "Stream");
        assert_eq!(strip_default("StreamOrDevice s = {}"), "StreamOrDevice s");
    }

    #[test]
    fn return_types_and_tuple_elements() {
        let decl =
            "MLX_API std::tuple<bool, Shape, std::vector<Strides>> collapse(\n    const A& a);";
        let ret = return_type(decl, "collapse").unwrap();
        assert_eq!(ret, "std::tuple<bool,Shape,std::vector<Strides>>");
        assert_eq!(
            tuple_elements(&ret).unwrap(),
            ["bool", "Shape", "std::vector<Strides>"]
        );
        let span = param_span(decl, "collapse", 0).unwrap();
        assert_eq!(&decl[span], "\n    const A& a");
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

    #[test]
    fn brackets_match_past_comments_and_strings() {
        let text = "f(a /* ) */, \")\", g(b)) rest";
        assert_eq!(matching(text, 1), Some(text.find(" rest").unwrap() - 1));
        // A digit separator opens no character literal, and a stray quote ends at its line:
        // neither swallows the brackets after it.
        let text = "f(1'000, g(b)) rest";
        assert_eq!(matching(text, 1), Some(text.find(" rest").unwrap() - 1));
        let text = "f(a, ' stray\n  g(b)) rest";
        assert_eq!(matching(text, 1), Some(text.find(" rest").unwrap() - 1));
    }
}
