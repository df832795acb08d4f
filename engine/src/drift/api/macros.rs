//! Function-like macros, learned from the files themselves.
//!
//! Two things are read off `#define` lines (a token scan of the directive, not a regular
//! expression): which function-like macros exist, so their invocations in statement position
//! can be blanked before parsing (`half_binop(+, operator+);` is no C++ tree-sitter can
//! read), and which backend macros define a member of the class they are given
//! (`#define UNARY_GPU(func) void func::eval_gpu(..)`), so that `UNARY_GPU(Abs)` counts as a
//! definition of `Abs::eval_gpu` just like a configured stub macro.

use super::syntax::{directive_end, ident_end, is_ident_start};
use std::collections::{BTreeMap, BTreeSet};

/// One `#define NAME(params) body`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacroDef {
    pub name: String,
    /// `#define NAME(..)` rather than `#define NAME ..`.
    pub function_like: bool,
    pub params: Vec<String>,
    /// The body's tokens (identifiers, `::`, and single punctuation bytes).
    pub body: Vec<String>,
}

/// The macros a file defines.
pub fn definitions(src: &[u8]) -> Vec<MacroDef> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < src.len() {
        let c = src[i];
        if c == b'#' && line_start {
            let end = directive_end(src, i);
            out.extend(parse_define(&src[i + 1..end]));
            i = end;
            continue;
        }
        if c == b'\n' {
            line_start = true;
        } else if !c.is_ascii_whitespace() {
            line_start = false;
        }
        i += 1;
    }
    out
}

/// `define NAME(a, b) body` (after the `#`) into a definition; object-like macros give none.
fn parse_define(directive: &[u8]) -> Option<MacroDef> {
    let tokens = tokens(directive);
    let mut it = tokens.iter();
    if it.next().map(String::as_str) != Some("define") {
        return None;
    }
    let name = it.next()?.clone();
    // A function-like macro has `(` right after its name, with no space.
    let after_define = directive.windows(6).position(|w| w == b"define")? + 6;
    let rest = &directive[after_define..];
    let name_end = after_define
        + rest
            .windows(name.len())
            .position(|w| w == name.as_bytes())?
        + name.len();
    let function_like = directive.get(name_end) == Some(&b'(');
    let mut params = Vec::new();
    if function_like {
        it.next(); // `(`
        let names = it.by_ref().take_while(|t| *t != ")");
        params.extend(names.filter(|t| *t != ",").cloned());
    }
    Some(MacroDef {
        name,
        function_like,
        params,
        body: it.cloned().collect(),
    })
}

/// Identifiers, `::` and other bytes as tokens; comments, strings and line splices skipped.
fn tokens(text: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        if is_ident_start(c) {
            let end = ident_end(text, i);
            out.push(String::from_utf8_lossy(&text[i..end]).into_owned());
            i = end;
        } else if text[i..].starts_with(b"::") {
            out.push("::".to_string());
            i += 2;
        } else if text[i..].starts_with(b"//") {
            break;
        } else if c == b'"' {
            i += 1 + text[i + 1..]
                .iter()
                .position(|&b| b == b'"')
                .map_or(text.len(), |p| p + 1);
        } else {
            if !c.is_ascii_whitespace() && c != b'\\' {
                out.push((c as char).to_string());
            }
            i += 1;
        }
    }
    out
}

/// Object-like macros that expand to nothing or to an attribute (`#define MLX_API`,
/// `#define MLX_NOINLINE __attribute__((noinline))`): noise in a declaration, blanked.
pub fn is_attribute_like(def: &MacroDef) -> bool {
    if def.function_like {
        return false;
    }
    let first = def.body.first().map(String::as_str);
    let second = def.body.get(1).map(String::as_str);
    matches!(first, None | Some("__attribute__" | "__declspec"))
        || (first == Some("[") && second == Some("["))
}

/// Macros that define members of the class passed as their first argument: `param :: member (`
/// in the body, or an invocation of another such macro with `param` as first argument.
pub fn definers(defs: &[MacroDef]) -> BTreeMap<String, Vec<String>> {
    let mut members: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    loop {
        let mut changed = false;
        for def in defs {
            let Some(param) = def.params.first() else {
                continue;
            };
            let mut found: BTreeSet<String> = BTreeSet::new();
            for window in def.body.windows(4) {
                if &window[0] == param
                    && window[1] == "::"
                    && window[3] == "("
                    && is_ident(&window[2])
                {
                    found.insert(window[2].clone());
                }
                if window[1] == "(" && &window[2] == param {
                    if let Some(inherited) = members.get(&window[0]) {
                        found.extend(inherited.iter().cloned());
                    }
                }
            }
            let entry = members.entry(def.name.clone()).or_default();
            let before = entry.len();
            entry.extend(found);
            changed |= entry.len() != before;
        }
        if !changed {
            break;
        }
    }
    members
        .into_iter()
        .filter(|(_, m)| !m.is_empty())
        .map(|(k, v)| (k, v.into_iter().collect()))
        .collect()
}

fn is_ident(token: &str) -> bool {
    token.bytes().next().is_some_and(is_ident_start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definer_macros_are_learned_through_other_macros() {
        let src = b"#define NO_GPU_MULTI(func) \\\n  void func::eval_gpu(const std::vector<array>& in, std::vector<array>& out) { \\\n    throw 1; }\n#define USE_FALLBACK(func) bool func::use_fallback(Stream s) { return true; } \\\n  NO_GPU_MULTI(func)\n#define PLAIN(x) (x + 1)\n#define OBJECT (1)\n";
        let defs = definitions(src);
        let names: Vec<&str> = defs
            .iter()
            .filter(|d| d.function_like)
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(names, ["NO_GPU_MULTI", "USE_FALLBACK", "PLAIN"]);
        let learned = definers(&defs);
        assert_eq!(
            learned.get("NO_GPU_MULTI"),
            Some(&vec!["eval_gpu".to_string()])
        );
        assert_eq!(
            learned.get("USE_FALLBACK"),
            Some(&vec!["eval_gpu".to_string(), "use_fallback".to_string()])
        );
        assert_eq!(learned.get("PLAIN"), None);
    }

    #[test]
    fn attribute_macros_are_told_from_value_macros() {
        let src = b"#define MLX_API\n#define NOINLINE __attribute__((noinline))\n#define DEPRECATED [[deprecated]]\n#define SIZE 4\n#define F(x) x\n";
        let attributes: Vec<String> = definitions(src)
            .into_iter()
            .filter(is_attribute_like)
            .map(|d| d.name)
            .collect();
        assert_eq!(attributes, ["MLX_API", "NOINLINE", "DEPRECATED"]);
    }
}
