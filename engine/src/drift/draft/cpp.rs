//! The little C++ text handling drafts need: matching brackets, splitting parameter lists,
//! a parameter's type. Comments and string literals are skipped so that a `)` or `,` in them
//! does not count; nothing here parses C++ beyond that.

/// Byte index of the bracket closing the one at `open` (`(`, `<`, `[` or `{`).
pub fn matching(text: &str, open: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let (o, c) = match bytes.get(open)? {
        b'(' => (b'(', b')'),
        b'{' => (b'{', b'}'),
        b'[' => (b'[', b']'),
        b'<' => (b'<', b'>'),
        _ => return None,
    };
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |n| i + 2 + n + 2);
                continue;
            }
            b'"' | b'\'' => {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b if b == o => depth += 1,
            b if b == c => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Splits at commas outside brackets and comments: `a, std::pair<b, c> d` is two items.
pub fn split_top_level(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |n| i + 2 + n + 2);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                continue;
            }
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
    let mut out = String::new();
    let mut rest = text;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.is_none_or(|l| b < l) => {
                out.push_str(&rest[..b]);
                rest = rest[b + 2..]
                    .find("*/")
                    .map_or("", |e| &rest[b + 2 + e + 2..]);
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |e| &rest[l + e..]);
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// Whitespace squeezed out of a type where C++ does not need it: `const  array &` -> `const array&`.
pub fn squeeze(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = words.join(" ");
    for p in ["&", "*", "<", ">", ",", "::", "(", ")"] {
        out = out
            .replace(&format!(" {p}"), p)
            .replace(&format!("{p} "), p);
    }
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

/// The element types of `std::tuple<..>` / `std::pair<..>` (or a reference to one).
pub fn tuple_elements(ty: &str) -> Option<Vec<String>> {
    let ty = squeeze(ty);
    let ty = ty.trim_end_matches('&').trim();
    let ty = ty.strip_prefix("const ").unwrap_or(ty);
    let ty = ty.strip_prefix("std::").unwrap_or(ty);
    let inner = ty
        .strip_prefix("tuple<")
        .or_else(|| ty.strip_prefix("pair<"))?
        .strip_suffix('>')?;
    Some(split_top_level(inner).iter().map(|t| squeeze(t)).collect())
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
    loop {
        let mut stripped = false;
        for spec in [
            "MLX_API",
            "inline",
            "static",
            "extern",
            "constexpr",
            "virtual",
        ] {
            if let Some(rest) = words.strip_prefix(spec) {
                if rest.starts_with(char::is_whitespace) {
                    words = rest.trim_start();
                    stripped = true;
                }
            }
        }
        if !stripped {
            break;
        }
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

    #[test]
    fn brackets_match_past_comments_and_strings() {
        let text = "f(a /* ) */, \")\", g(b)) rest";
        assert_eq!(matching(text, 1), Some(text.find(" rest").unwrap() - 1));
    }
}
