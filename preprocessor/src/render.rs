//! The HTML spliced into a chapter for a step's result.
//!
//! Output comes from other people's trees (compiler messages, file names), so every byte of it is
//! escaped, including `{` and `}` so that no later mdBook preprocessor expands an `{{#include}}`
//! found in it. The HTML holds no blank line: a blank line would end Markdown's HTML block and
//! let the rest of the output be read as Markdown.

use crate::{Fingerprint, Step, StepOutcome};
use pulldown_cmark::{Event, Parser};
use std::time::Duration;

/// Output beyond this many lines is cut, with a note saying how much was left out.
const MAX_LINES: usize = 2000;

/// A step's outcome with what the page says about it.
#[derive(Debug, Clone)]
pub struct Shown<'a> {
    pub step: &'a Step,
    pub outcome: &'a StepOutcome,
    pub fingerprint: &'a Fingerprint,
    /// The result came from the cache.
    pub cached: bool,
}

/// Escapes text for HTML, drops terminal colour codes and makes control characters visible.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '{' => out.push_str("&#123;"),
            '}' => out.push_str("&#125;"),
            '\u{1b}' => skip_ansi(&mut chars),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Skips a CSI sequence (`ESC [ ... letter`), the form compilers use for colour.
fn skip_ansi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    if chars.peek() == Some(&'[') {
        chars.next();
        for c in chars.by_ref() {
            if c.is_ascii_alphabetic() {
                break;
            }
        }
    }
}

/// The inline HTML a result's Markdown may keep, exactly as written.
const HARMLESS_TAGS: [&str; 3] = ["<code>", "</code>", "<wbr>"];

/// Makes Markdown from a directive safe to splice: raw HTML in it is shown as text, a link or
/// image whose address fails [`url_allowed`] is shown as text, and no `{{#...}}` in it is left
/// for a later preprocessor to expand. Markdown itself (tables, code spans, safe links) keeps
/// working, so directives can render tables of names from other trees.
pub fn inert_markdown(text: &str) -> String {
    use pulldown_cmark::Tag;
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (event, range) in
        Parser::new_ext(text, crate::blocks::markdown_options()).into_offset_iter()
    {
        if range.start < at {
            continue;
        }
        let replacement = match &event {
            // Shown as its own text with every markup character escaped, not only `<`: the
            // escaped text is read as Markdown again, and a link inside the HTML would come alive.
            // Three inline tags carry no address, script or style and stay: a name in a table
            // cell is `<code>` with a `<wbr>` after each separator, so a narrow column breaks it
            // there and not inside a word (a code span cannot hold a `<wbr>`).
            Event::InlineHtml(tag) if HARMLESS_TAGS.contains(&tag.as_ref()) => None,
            Event::Html(_) | Event::InlineHtml(_) => {
                Some(markdown_as_text(&text[range.clone()], true))
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. })
                if !url_allowed(dest_url) =>
            {
                Some(markdown_as_text(&text[range.clone()], false))
            }
            _ => None,
        };
        if let Some(replacement) = replacement {
            out.push_str(&text[at..range.start]);
            out.push_str(&replacement);
            at = range.end;
        }
    }
    out.push_str(&text[at..]);
    break_brace_pairs(&out)
}

/// The one rule for every address that reaches a page (register, directives, step results):
/// `http:`, `https:`, `mailto:` and relative addresses pass; any other scheme (`javascript:`,
/// `data:`, `vbscript:`, `file:`...) does not. Judged on the address as a browser reads it:
/// entities already decoded by the Markdown parser, leading spaces and control characters and
/// any tab or line break inside removed, the scheme compared without case.
pub fn url_allowed(url: &str) -> bool {
    let cleaned: String = url
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let scheme_end = cleaned.find(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)));
    match scheme_end {
        Some(end) if end > 0 && cleaned[end..].starts_with(':') => {
            let scheme = cleaned[..end].to_ascii_lowercase();
            matches!(scheme.as_str(), "http" | "https" | "mailto")
        }
        // No scheme: a path, `#anchor`, `?query` or `//host/...` (http or https by the page's own).
        _ => !cleaned.contains(|c: char| c.is_control()),
    }
}

/// Markdown source shown as its own text: every character that could start markup is escaped.
/// `keep_lines` keeps its line breaks (an HTML block); otherwise they become spaces (a link's
/// source inside a paragraph or a table cell).
fn markdown_as_text(source: &str, keep_lines: bool) -> String {
    let mut out = String::with_capacity(source.len() + 8);
    for c in source.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' if keep_lines => out.push('\n'),
            '\n' | '\r' => out.push(' '),
            '[' | ']' | '(' | ')' | '!' | '*' | '_' | '`' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A zero-width space after every `{` that another `{` follows: invisible, and no `{{#include}}`
/// survives, however many braces there are (`str::replace` would leave `{{{` half intact).
fn break_brace_pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '{' && chars.peek() == Some(&'{') {
            out.push('\u{200b}');
        }
    }
    out
}

#[cfg(test)]
mod brace_tests {
    use super::*;

    #[test]
    fn no_brace_pair_survives_however_many_braces() {
        for text in ["{{#include x}}", "{{{#include x}}}", "{{{{a", "a{{b{{{c"] {
            let inert = inert_markdown(text);
            assert!(!inert.contains("{{"), "{text:?} -> {inert:?}");
            assert_eq!(inert.replace('\u{200b}', ""), text);
        }
    }
}

/// The box a failed gate puts at the top of a chapter: how many problems the gate found in all,
/// and `problems` (those of this chapter, or every one on the first page), each naming its file
/// and line as the terminal did.
pub fn gate_failure_html(problems: &[String], total: usize, first_page: bool) -> String {
    let what = if first_page {
        let all = plural(total, "problem", "problems");
        format!("The book's gate failed with {all}")
    } else {
        let here = plural(problems.len(), "problem is", "problems are");
        format!("The book's gate failed; {here} on this page")
    };
    format!(
        "<div class=\"forkbook-step forkbook-failed forkbook-gate-failed\">\
         <p class=\"forkbook-skip-reason\"><strong>{what}:</strong> the pages were written so \
         they can be read, and the build or test exits 1 until each is fixed.</p>\
         <pre class=\"forkbook-output\">{}</pre></div>",
        output_html(&problems.join("\n\n"))
    )
}

/// The result box for a step. The command is shown once: by the code block above the box, or,
/// when the block is hidden (`hide`), in the box's head.
pub fn step_html(shown: &Shown<'_>) -> String {
    let command = escape(&shown.step.display_command());
    let command = command.trim_end().replace('\n', "&#10;");
    let head = if shown.step.attrs.hide {
        format!("<div class=\"forkbook-head\"><code>$ {command}</code></div>")
    } else {
        String::new()
    };
    match shown.outcome {
        StepOutcome::Skipped { reason } => format!(
            "<div class=\"forkbook-step forkbook-skipped\">{head}\
             <p class=\"forkbook-skip-reason\"><strong>skipped:</strong> {}</p></div>",
            code_spans(&escape(reason).replace('\n', " "))
        ),
        StepOutcome::Ran {
            exit,
            duration,
            output,
            view,
        } => ran_html(shown, &head, *exit, *duration, output, view.as_deref()),
    }
}

/// Escaped text with each `` `a pair` `` of backticks made inline code, as Markdown would.
/// The text is escaped already, so what goes inside `<code>` is too; an odd backtick stays.
fn code_spans(escaped: &str) -> String {
    let parts: Vec<&str> = escaped.split('`').collect();
    let mut out = String::with_capacity(escaped.len() + 16);
    let pairs = (parts.len() - 1) / 2;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            let opening = i % 2 == 1;
            match (opening, i.div_ceil(2) <= pairs) {
                (true, true) => out.push_str("<code>"),
                (false, true) => out.push_str("</code>"),
                _ => out.push('`'),
            }
        }
        out.push_str(part);
    }
    out
}

fn ran_html(
    shown: &Shown<'_>,
    head: &str,
    exit: i32,
    duration: Duration,
    output: &str,
    view: Option<&str>,
) -> String {
    let expect = shown.step.attrs.expect;
    let passed = exit == expect;
    let class = if passed {
        "forkbook-passed"
    } else {
        "forkbook-failed"
    };
    let mut status = format!("exit {exit}");
    if !passed {
        status.push_str(&format!(", expected {expect}"));
        if shown.step.attrs.gate {
            status.push_str(": the gate fails");
        }
    }
    let cached = if shown.cached { " (cached)" } else { "" };
    let pre = format!(
        "<pre class=\"forkbook-output\">{}</pre>",
        output_html(output)
    );
    let lines = output.lines().count();
    let body = match view {
        // The result's own Markdown (diffs, tables, links) between blank lines, so mdBook reads
        // it as Markdown inside the box; the printed text folded beneath it.
        Some(view) => format!(
            "<div class=\"forkbook-view\">\n\n{}\n\n</div>\
             <details><summary>printed output ({lines} lines)</summary>{pre}</details>",
            inert_markdown(view).trim_end()
        ),
        None if shown.step.attrs.collapsed => {
            format!("<details><summary>output ({lines} lines)</summary>{pre}</details>")
        }
        None => pre,
    };
    format!(
        "<div class=\"forkbook-step {class}\">{head}\
         <div class=\"forkbook-meta\"><span class=\"forkbook-exit\">{status}</span> · \
         <span class=\"forkbook-duration\">{}</span>{cached}{}</div>{body}</div>",
        format_duration(duration),
        commits_html(shown.fingerprint),
    )
}

fn commits_html(fingerprint: &Fingerprint) -> String {
    if fingerprint.commits.is_empty() {
        return String::new();
    }
    let commits: Vec<String> = fingerprint
        .commits
        .iter()
        .map(|(label, id)| format!("{} <code>{}</code>", escape(label), escape(id)))
        .collect();
    format!(
        " · <span class=\"forkbook-commits\">ran against {}</span>",
        commits.join(", ")
    )
}

/// The output inside `<pre>`: escaped, cut at [`MAX_LINES`], with no blank line. Diff lines
/// (a residual's hunks, a patch) are coloured: added, removed, hunk headers; conflict lines are
/// marked.
fn output_html(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let mut html: Vec<String> = lines
        .iter()
        .take(MAX_LINES)
        .map(|line| {
            if line.trim().is_empty() {
                "&#32;".to_string()
            } else {
                match line_class(line) {
                    Some(class) => format!("<span class=\"{class}\">{}</span>", escape(line)),
                    None => escape(line),
                }
            }
        })
        .collect();
    if lines.len() > MAX_LINES {
        html.push(format!(
            "… {} more lines not shown",
            lines.len() - MAX_LINES
        ));
    }
    if html.is_empty() {
        html.push("(no output)".to_string());
    }
    html.join("\n")
}

/// The class of an output line worth colouring, if it is one: diff lines as `git diff` shows
/// them (indented or not), and lines that report a conflict.
fn line_class(line: &str) -> Option<&'static str> {
    let body = line.trim_start();
    if body.starts_with("@@ ") {
        Some("forkbook-diff-hunk")
    } else if body.starts_with("+++ ") || body.starts_with("--- ") {
        Some("forkbook-diff-file")
    } else if body.starts_with('+') && line.len() - body.len() <= 4 {
        Some("forkbook-diff-add")
    } else if body.starts_with('-') && !body.starts_with("--") && line.len() - body.len() <= 4 {
        Some("forkbook-diff-del")
    } else if body.contains("CONFLICT") {
        Some("forkbook-conflict")
    } else {
        None
    }
}

/// `1 thing` or `N things`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `0.12 s`, `3 min 05 s`.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.2} s")
    } else {
        format!("{} min {:02} s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

/// The lines of an output worth repeating in a failure message on the terminal: the first
/// `n` that mention an error or a conflict, and the last `n`, in their order, `…` where lines
/// were left out.
pub fn summary(output: &str, n: usize) -> Vec<&str> {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    let key = |line: &&str| {
        let lower = line.to_ascii_lowercase();
        lower.contains("error") || lower.contains("conflict")
    };
    let mut keep: Vec<usize> = (0..lines.len())
        .filter(|&i| key(&lines[i]))
        .take(n)
        .collect();
    keep.extend(lines.len().saturating_sub(n)..lines.len());
    keep.sort_unstable();
    keep.dedup();
    let mut picked = Vec::new();
    for (k, &i) in keep.iter().enumerate() {
        if (k == 0 && i > 0) || (k > 0 && i > keep[k - 1] + 1) {
            picked.push("…");
        }
        picked.push(lines[i]);
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Attrs, StepKind};

    fn step(attrs: Attrs) -> Step {
        Step {
            kind: StepKind::Forkbook,
            command: "status".into(),
            attrs,
            chapter: "src/a.md".into(),
            line: 3,
            book_root: ".".into(),
            renderer: "html".into(),
        }
    }

    fn html(attrs: Attrs, outcome: StepOutcome) -> String {
        let fingerprint = Fingerprint {
            commits: vec![("pin".into(), "846d176".into())],
            ..Default::default()
        };
        let step = step(attrs);
        step_html(&Shown {
            step: &step,
            outcome: &outcome,
            fingerprint: &fingerprint,
            cached: false,
        })
    }

    fn ran(exit: i32, output: &str) -> StepOutcome {
        StepOutcome::Ran {
            exit,
            duration: Duration::from_millis(120),
            output: output.into(),
            view: None,
        }
    }

    #[test]
    fn hostile_output_is_escaped() {
        let out = html(
            Attrs::default(),
            ran(
                0,
                "<script>alert(1)</script> {{#include /etc/passwd}} \u{1b}[31mred\u{1b}[0m",
            ),
        );
        assert!(!out.contains("<script>"));
        assert!(out.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!out.contains("{{"));
        assert!(out.contains(" red"));
        assert!(!out.contains('\u{1b}'));
    }

    #[test]
    fn only_code_and_wbr_tags_stay_in_a_results_markdown() {
        let kept = "| <code>mlx/<wbr>core</code> |";
        assert_eq!(inert_markdown(kept), kept);
        for hostile in [
            "<code onclick=\"x()\">a</code>",
            "<code style=\"color:red\">a</code>",
            "<wbr/><script>x()</script>",
            "<a href=\"javascript:x()\">a</a>",
        ] {
            let out = inert_markdown(hostile);
            let live = ["<code ", "<script", "<a ", "<wbr/>"];
            assert!(!live.iter().any(|tag| out.contains(tag)), "{out}");
        }
    }

    #[test]
    fn result_names_command_exit_duration_and_commits() {
        let hidden = Attrs {
            hide: true,
            ..Default::default()
        };
        let out = html(hidden, ran(0, "all good"));
        assert!(out.contains("$ forkbook status"));
        assert!(out.contains("exit 0"));
        assert!(out.contains("0.12 s"));
        assert!(out.contains("ran against pin <code>846d176</code>"));
        assert!(out.contains("forkbook-passed"));
    }

    #[test]
    fn no_blank_line_inside_the_html() {
        let out = html(Attrs::default(), ran(1, "a\n\n  \nb\n"));
        assert!(out.lines().all(|l| !l.trim().is_empty()), "{out}");
        assert!(out.contains("exit 1, expected 0"));
        assert!(out.contains("forkbook-failed"));
    }

    #[test]
    fn a_result_with_markdown_shows_it_and_folds_the_printed_text() {
        let outcome = StepOutcome::Ran {
            exit: 0,
            duration: Duration::from_millis(5),
            output: "residual: 1 hunk\n\n  a.cpp:3\n".into(),
            view: Some(
                "| file | fix |\n| --- | --- |\n| `a.cpp` | [fix 2](register.md#fix-2) |\n\
                 <script>x</script> [y](javascript:alert(1))\n"
                    .into(),
            ),
        };
        let out = html(Attrs::default(), outcome);
        let (head, rest) = out
            .split_once("\n\n")
            .expect("the Markdown sits between blank lines");
        assert!(head.ends_with("<div class=\"forkbook-view\">"), "{out}");
        let (view, tail) = rest.split_once("\n\n").unwrap();
        assert!(view.contains("[fix 2](register.md#fix-2)"), "{view}");
        assert!(
            view.contains("&lt;script&gt;") && !view.contains("<script>"),
            "{view}"
        );
        assert!(!view.contains("](javascript:"), "{view}");
        assert!(
            tail.starts_with("</div><details><summary>printed output (3 lines)</summary>"),
            "{tail}"
        );
        // The printed text keeps its own rule: no blank line inside it.
        assert!(tail.lines().all(|l| !l.trim().is_empty()), "{tail}");
    }

    #[test]
    fn directive_markdown_keeps_tables_and_loses_raw_html() {
        let md = "| file | state |\n|---|---|\n| `a<b>.cpp` | <script>x</script> |\n\n<div onclick=x>\nhi\n</div>\n{{#include /etc/passwd}}\n";
        let out = inert_markdown(md);
        assert!(
            out.contains("| `a<b>.cpp` | &lt;script&gt;x&lt;/script&gt; |"),
            "{out}"
        );
        assert!(
            out.contains("&lt;div onclick=x&gt;\nhi\n&lt;/div&gt;"),
            "{out}"
        );
        assert!(!out.contains("{{"), "{out}");
    }

    /// Fails on main before issue 12: these became live `javascript:` / `data:` links.
    #[test]
    fn directive_links_with_a_dangerous_address_become_text() {
        let hostile = [
            "[x](javascript:alert(1))",
            "[x](JaVaScRiPt:alert(1))",
            "<javascript:alert(1)>",
            "[x](&#106;avascript:alert(1))",
            "[x](java\tscript:alert(1))",
            "[x]( javascript:alert(1))",
            "[x](data:text/html;base64,PHNjcmlwdD4=)",
            "![x](data:image/svg+xml;base64,PHN2Zz4=)",
            "[x][r]\n\n[r]: vbscript:msgbox",
            "| 1 | [title](javascript:alert(1)) |",
            // Found while adding step views: the escaped HTML block was read again as Markdown,
            // and the link in it came alive.
            "<script>x</script> [x](javascript:alert(1))",
            "<div>\n[x](javascript:alert(1))\n</div>",
        ];
        for md in hostile {
            let md = if md.starts_with('|') {
                format!("| n | t |\n|---|---|\n{md}\n")
            } else {
                md.to_string()
            };
            let out = inert_markdown(&md);
            // What a renderer would make of it: no link, no image, no raw HTML at all.
            let mut text = String::new();
            for event in Parser::new_ext(&out, crate::blocks::markdown_options()) {
                match event {
                    Event::Start(pulldown_cmark::Tag::Link { dest_url, .. })
                    | Event::Start(pulldown_cmark::Tag::Image { dest_url, .. }) => {
                        panic!("{md:?} -> {out:?} still links to {dest_url}")
                    }
                    Event::Html(h) | Event::InlineHtml(h) => panic!("{md:?} -> {out:?}: html {h}"),
                    Event::Text(t) => text.push_str(&t),
                    _ => {}
                }
            }
            assert!(
                text.contains("alert") || text.contains("base64") || text.contains('x'),
                "the text stays visible: {md:?} -> {text:?}"
            );
        }
        for safe in [
            "[pr](https://github.com/o/r/pull/1)",
            "[m](mailto:a@b.c)",
            "[page](register.html#fix-1)",
            "<https://example.com/x>",
        ] {
            let out = inert_markdown(safe);
            assert_eq!(out, safe);
        }
        assert!(url_allowed("http://x") && url_allowed("../a.html") && url_allowed("#top"));
        assert!(
            !url_allowed("javascript:x")
                && !url_allowed("\u{1}javascript:x")
                && !url_allowed("file:///etc/passwd")
        );
    }

    #[test]
    fn summary_keeps_conflicts_and_the_end() {
        let output = "a\nb: conflict (2 regions)\nc\nd\ne\nf\n";
        assert_eq!(
            summary(output, 2),
            ["…", "b: conflict (2 regions)", "…", "e", "f"]
        );
        assert_eq!(summary("x\ny\n", 2), ["x", "y"]);
    }

    #[test]
    fn collapsed_output_is_folded_and_skips_say_why() {
        let attrs = Attrs {
            collapsed: true,
            ..Default::default()
        };
        assert!(
            html(attrs, ran(0, "x\ny")).contains("<details><summary>output (2 lines)</summary>")
        );
        let skipped = html(
            Attrs::default(),
            StepOutcome::Skipped {
                reason: "`hipcc` is not on PATH".into(),
            },
        );
        assert!(skipped.contains("<strong>skipped:</strong> <code>hipcc</code> is not on PATH"));
    }

    #[test]
    fn the_command_is_shown_once() {
        // The code block above the box shows it; the box repeats it only when the block is hidden.
        let out = html(Attrs::default(), ran(0, "ok"));
        assert!(!out.contains("$ forkbook status"), "{out}");
    }

    #[test]
    fn skip_reasons_make_code_of_backtick_pairs_and_stay_escaped() {
        assert_eq!(
            code_spans("needs `a&lt;b` and `c`"),
            "needs <code>a&lt;b</code> and <code>c</code>"
        );
        assert_eq!(code_spans("odd ` tick"), "odd ` tick");
        assert_eq!(code_spans("`a` then `"), "<code>a</code> then `");
        let out = html(
            Attrs::default(),
            StepOutcome::Skipped {
                reason: "needs `<script>`".into(),
            },
        );
        assert!(out.contains("<code>&lt;script&gt;</code>"), "{out}");
    }

    #[test]
    fn diff_lines_are_coloured_and_escaped() {
        let out = html(
            Attrs::default(),
            ran(
                1,
                "  @@ -1,2 +1,2 @@\n  -old <b>\n  +new\n  mlx/a.cpp: CONFLICT (1 region)\nplain\n",
            ),
        );
        assert!(
            out.contains("<span class=\"forkbook-diff-hunk\">  @@ -1,2 +1,2 @@</span>"),
            "{out}"
        );
        assert!(
            out.contains("<span class=\"forkbook-diff-del\">  -old &lt;b&gt;</span>"),
            "{out}"
        );
        assert!(
            out.contains("<span class=\"forkbook-diff-add\">  +new</span>"),
            "{out}"
        );
        assert!(out.contains("<span class=\"forkbook-conflict\">"), "{out}");
        assert!(out.contains("\nplain"), "{out}");
    }
}
