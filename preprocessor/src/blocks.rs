//! Finding the annotated blocks and directives in a chapter.
//!
//! pulldown-cmark gives each fenced block with its byte range, so a block's opening line is exact
//! and a block can be replaced without touching the prose around it. Directives
//! (`{{#forkbook NAME ARGS}}`) are found in the text outside code, so a chapter can still show a
//! directive's syntax in backticks.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

/// How a block runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// ```` ```forkbook ````: a forkbook command, run in process.
    Forkbook,
    /// ```` ```sh,run ````: a shell script, only where book.toml allows shell steps.
    Shell,
}

/// The annotations of a block's info string.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attrs {
    /// A failure fails the build.
    pub gate: bool,
    /// The exit status that counts as success.
    pub expect: i32,
    pub timeout: Option<Duration>,
    /// Tools that must be on PATH; the step is shown as skipped otherwise.
    pub requires: Vec<String>,
    /// Show only the result, not the block.
    pub hide: bool,
    /// Fold the output into a `<details>` element.
    pub collapsed: bool,
}

/// A step block as written in the chapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The whole fenced block, fences included.
    pub range: Range<usize>,
    /// 1-based line of the opening fence.
    pub line: usize,
    pub kind: StepKind,
    pub attrs: Attrs,
    /// The block's text, variables not yet substituted.
    pub body: String,
    /// What precedes the fence on its line (list indentation, `> `), repeated on inserted lines.
    pub indent: String,
}

/// `{{#forkbook NAME ARGS...}}` in the prose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    pub range: Range<usize>,
    pub line: usize,
    pub name: String,
    pub args: Vec<String>,
}

/// A problem in the chapter's source, with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    pub line: usize,
    pub message: String,
}

/// Everything the preprocessor acts on in one chapter, in source order.
#[derive(Debug, Default)]
pub struct Scan {
    pub blocks: Vec<Block>,
    pub directives: Vec<Directive>,
    /// Malformed annotations and directives; the build fails on them.
    pub errors: Vec<SourceError>,
}

const DIRECTIVE_OPEN: &str = "{{#forkbook";

/// The Markdown extensions mdBook's renderer enables, so that what is code here is code there.
pub fn markdown_options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// Finds the step blocks and directives of a chapter. Variables in info strings are filled in
/// from `vars` first, so an annotation can follow a variable (`requires={{compiler}}`).
pub fn scan(content: &str, vars: &BTreeMap<String, String>) -> Scan {
    let mut scan = Scan::default();
    let mut code: Vec<Range<usize>> = Vec::new();
    let mut open: Option<(Range<usize>, String)> = None;
    let mut body = String::new();
    for (event, range) in Parser::new_ext(content, markdown_options()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                code.push(range.clone());
                if let CodeBlockKind::Fenced(info) = kind {
                    open = Some((range, info.to_string()));
                    body.clear();
                }
            }
            Event::Text(text) if open.is_some() => body.push_str(&text),
            Event::End(TagEnd::CodeBlock) => {
                if let Some((range, info)) = open.take() {
                    add_block(&mut scan, content, range, &info, &body, vars);
                }
            }
            Event::Code(_) | Event::Html(_) | Event::InlineHtml(_) => code.push(range),
            _ => {}
        }
    }
    find_directives(&mut scan, content, &code);
    scan
}

fn add_block(
    scan: &mut Scan,
    content: &str,
    range: Range<usize>,
    info: &str,
    body: &str,
    vars: &BTreeMap<String, String>,
) {
    let line = line_of(content, range.start);
    let mut missing = Vec::new();
    let info = substitute(info, vars, &mut missing);
    if let Some(name) = missing.first() {
        let message = format!("undefined variable `{name}` in the block's annotations");
        scan.errors.push(SourceError { line, message });
        return;
    }
    match parse_info(&info) {
        Ok(None) => {}
        Ok(Some((kind, attrs))) => {
            let indent = line_prefix(content, range.start);
            scan.blocks.push(Block {
                range,
                line,
                kind,
                attrs,
                body: body.to_string(),
                indent,
            });
        }
        Err(message) => scan.errors.push(SourceError { line, message }),
    }
}

/// Parses an info string in mdBook's comma style. `Ok(None)` for a block that is not a step.
pub fn parse_info(info: &str) -> Result<Option<(StepKind, Attrs)>, String> {
    let mut tokens = info.split([',', ' ', '\t']).filter(|t| !t.is_empty());
    let kind = match tokens.next() {
        Some("forkbook") => StepKind::Forkbook,
        Some("sh") if info.split([',', ' ', '\t']).any(|t| t == "run") => StepKind::Shell,
        _ => return Ok(None),
    };
    let mut attrs = Attrs::default();
    for token in tokens {
        apply_attr(&mut attrs, kind, token)?;
    }
    Ok(Some((kind, attrs)))
}

fn apply_attr(attrs: &mut Attrs, kind: StepKind, token: &str) -> Result<(), String> {
    let (key, value) = token
        .split_once('=')
        .map_or((token, None), |(k, v)| (k, Some(v)));
    match (key, value) {
        ("gate", None) => attrs.gate = true,
        ("hide", None) => attrs.hide = true,
        ("collapsed", None) => attrs.collapsed = true,
        ("run", None) if kind == StepKind::Shell => {}
        ("expect", Some(v)) => {
            attrs.expect = v
                .parse()
                .map_err(|_| format!("`expect={v}` is not an exit status"))?
        }
        ("timeout", Some(v)) => attrs.timeout = Some(parse_seconds(v)?),
        ("requires", Some(v)) if !v.is_empty() => attrs.requires.extend(split_tools(v)),
        _ => {
            return Err(format!(
                "unknown block attribute `{token}` (known: gate, expect=N, timeout=S, \
                 requires=TOOL[+TOOL], hide, collapsed)"
            ))
        }
    }
    Ok(())
}

/// `hipcc+cmake` is two tools, `g++` one: a `+` separates only where a name follows it.
fn split_tools(value: &str) -> Vec<String> {
    let mut tools = vec![String::new()];
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        let separates = c == '+' && chars.peek().is_some_and(|n| n.is_ascii_alphanumeric());
        match tools.last_mut() {
            Some(tool) if !separates => tool.push(c),
            _ => tools.push(String::new()),
        }
    }
    tools.retain(|t| !t.is_empty());
    tools
}

fn parse_seconds(value: &str) -> Result<Duration, String> {
    let seconds: f64 = value
        .parse()
        .map_err(|_| format!("`timeout={value}` is not a number of seconds"))?;
    if !(seconds > 0.0 && seconds < 1e9) {
        return Err(format!(
            "`timeout={value}` must be a positive number of seconds"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn find_directives(scan: &mut Scan, content: &str, code: &[Range<usize>]) {
    let mut from = 0;
    while let Some(found) = content[from..].find(DIRECTIVE_OPEN) {
        let start = from + found;
        from = start + DIRECTIVE_OPEN.len();
        if code.iter().any(|r| r.contains(&start)) {
            continue;
        }
        let line = line_of(content, start);
        let Some(close) = content[from..].find("}}") else {
            scan.errors.push(SourceError {
                line,
                message: "directive `{{#forkbook` is not closed by `}}`".into(),
            });
            return;
        };
        let inner = &content[from..from + close];
        let mut words = inner.split_whitespace().map(str::to_string);
        let end = from + close + 2;
        match words.next() {
            Some(name) => scan.directives.push(Directive {
                range: start..end,
                line,
                name,
                args: words.collect(),
            }),
            None => scan.errors.push(SourceError {
                line,
                message: "directive `{{#forkbook}}` names nothing".into(),
            }),
        }
        from = end;
    }
}

/// Replaces `{{name}}` for every name in `vars`; other double braces are left alone.
pub fn substitute_known(text: &str, vars: &BTreeMap<String, String>) -> String {
    substitute(text, vars, &mut Vec::new())
}

/// Replaces `{{name}}`; names that look like variables but are not defined are collected in
/// `missing` (and left in place).
pub fn substitute(
    text: &str,
    vars: &BTreeMap<String, String>,
    missing: &mut Vec<String>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        // A variable's name is only name characters (and spaces around them), so the search for
        // its `}}` stops at the first other character: each byte is looked at a bounded number
        // of times, however many `{{` the text holds (100k pairs took 8.8 s before).
        let name_end = after
            .find(|c: char| !(is_name_char(c) || c.is_whitespace()))
            .unwrap_or(after.len());
        let name = after[..name_end].trim();
        if after[name_end..].starts_with("}}") && is_var_name(name) {
            match vars.get(name) {
                Some(value) => out.push_str(value),
                None => {
                    missing.push(name.to_string());
                    out.push_str(&rest[start..start + 2 + name_end + 2]);
                }
            }
            rest = &after[name_end + 2..];
        } else {
            out.push_str("{{");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn is_var_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(is_name_char)
}

/// 1-based line number of a byte offset.
pub fn line_of(content: &str, offset: usize) -> usize {
    content[..offset].matches('\n').count() + 1
}

fn line_prefix(content: &str, offset: usize) -> String {
    let line_start = content[..offset].rfind('\n').map_or(0, |i| i + 1);
    let prefix = &content[line_start..offset];
    if prefix.chars().all(|c| c == ' ' || c == '\t' || c == '>') {
        prefix.to_string()
    } else {
        // A list marker (`1. `) only opens the item; continuation lines are indented instead.
        " ".repeat(prefix.chars().count())
    }
}

#[cfg(test)]
mod tests {
    /// Fails on main before issue 12 by time: 100k `{{` pairs took 8.8 s (quadratic).
    #[test]
    fn substitution_is_linear_in_the_number_of_braces() {
        let vars: BTreeMap<String, String> = [("pin".to_string(), "846d176".to_string())].into();
        assert_eq!(
            substitute_known("a {{ pin }} {{nope {{pin}}}} {{", &vars),
            "a 846d176 {{nope 846d176}} {{"
        );
        for text in [
            "{{".repeat(200_000),
            "{{ }}".repeat(100_000),
            format!("{}}}}}", "{{a b ".repeat(100_000)),
        ] {
            let started = std::time::Instant::now();
            let out = substitute_known(&text, &vars);
            assert_eq!(out, text);
            assert!(
                started.elapsed() < std::time::Duration::from_secs(2),
                "{:?}",
                started.elapsed()
            );
        }
    }

    use super::*;

    const CHAPTER: &str = "# Pin bump\n\nSome prose with `{{#forkbook checks}}` in code.\n\n\
```forkbook,gate,expect=1\nforkbook retarget {{pin}} --check\n```\n\n\
{{#forkbook register full}}\n\n```sh\necho not a step\n```\n\n\
```sh,run,timeout=2.5,requires=hipcc+cmake,hide\necho hi\n```\n";

    #[test]
    fn finds_steps_with_exact_lines_and_attributes() {
        let scan = scan(CHAPTER, &BTreeMap::new());
        assert!(scan.errors.is_empty(), "{:?}", scan.errors);
        assert_eq!(scan.blocks.len(), 2);
        let first = &scan.blocks[0];
        assert_eq!((first.line, first.kind), (5, StepKind::Forkbook));
        assert!(first.attrs.gate);
        assert_eq!(first.attrs.expect, 1);
        assert_eq!(first.body, "forkbook retarget {{pin}} --check\n");
        assert!(CHAPTER[first.range.clone()].starts_with("```forkbook"));
        assert!(CHAPTER[first.range.clone()].trim_end().ends_with("```"));
        let second = &scan.blocks[1];
        assert_eq!((second.line, second.kind), (15, StepKind::Shell));
        assert_eq!(second.attrs.requires, ["hipcc", "cmake"]);
        assert_eq!(second.attrs.timeout, Some(Duration::from_millis(2500)));
        assert!(second.attrs.hide);
    }

    #[test]
    fn finds_directives_outside_code_only() {
        let scan = scan(CHAPTER, &BTreeMap::new());
        assert_eq!(scan.directives.len(), 1);
        let d = &scan.directives[0];
        assert_eq!(
            (d.line, d.name.as_str(), d.args.clone()),
            (9, "register", vec!["full".to_string()])
        );
        assert_eq!(&CHAPTER[d.range.clone()], "{{#forkbook register full}}");
    }

    #[test]
    fn unknown_attribute_is_an_error_with_its_line() {
        let scan = scan(
            "text\n\n```forkbook,gaet\nforkbook status\n```\n",
            &BTreeMap::new(),
        );
        assert_eq!(scan.errors.len(), 1);
        assert_eq!(scan.errors[0].line, 3);
        assert!(scan.errors[0].message.contains("`gaet`"));
    }

    #[test]
    fn annotations_take_variables() {
        let vars = BTreeMap::from([("compiler".to_string(), "clang++".to_string())]);
        assert_eq!(split_tools("g+++cmake"), ["g++", "cmake"]);
        let scan = scan(
            "```forkbook,requires={{compiler}}+cmake\nforkbook x\n```\n",
            &vars,
        );
        assert_eq!(scan.blocks[0].attrs.requires, ["clang++", "cmake"]);
        let scan = super::scan("```forkbook,requires={{nope}}\nforkbook x\n```\n", &vars);
        assert!(scan.errors[0].message.contains("undefined variable `nope`"));
    }

    #[test]
    fn bad_values_are_errors() {
        assert!(parse_info("forkbook,expect=x").is_err());
        assert!(parse_info("forkbook,timeout=-1").is_err());
        assert!(parse_info("forkbook,requires=").is_err());
        assert!(parse_info("forkbook,run").is_err());
        assert_eq!(parse_info("rust,ignore"), Ok(None));
        assert_eq!(parse_info("sh"), Ok(None));
    }

    #[test]
    fn substitutes_defined_variables_and_reports_missing_ones() {
        let vars = BTreeMap::from([("pin".to_string(), "846d176".to_string())]);
        let mut missing = Vec::new();
        let out = substitute(
            "a {{pin}} {{ pin }} {{other}} {{#include x}} {{",
            &vars,
            &mut missing,
        );
        assert_eq!(out, "a 846d176 846d176 {{other}} {{#include x}} {{");
        assert_eq!(missing, ["other"]);
    }

    #[test]
    fn block_in_a_list_keeps_its_indentation() {
        let scan = scan(
            "1. step\n\n   ```forkbook\n   forkbook status\n   ```\n",
            &BTreeMap::new(),
        );
        assert_eq!(scan.blocks[0].indent, "   ");
    }
}
