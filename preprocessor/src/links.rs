//! What mdBook's `links` preprocessor reads, by mdBook's own grammar. mdBook 0.5.4
//! (`mdbook-driver`, `builtin_preprocessors/links.rs` and `links/take_lines.rs`) expands
//! `{{#include}}`, `{{#rustdoc_include}}` and `{{#playground}}` (and the old `{{#playpen}}`) in
//! every chapter, then again in the text each one brought in, whatever the file's type, ten
//! levels deep. Its parser is private, so its rules are kept here, each as mdBook has it: the
//! same regular expression (an escape is a backslash right before `{{#` with no space, and it
//! runs to the last `}}` of its line), the same argument parsing (`file:2:10`, `file:anchor`),
//! and the same selection of lines, since a nested include is found in the lines an include
//! took, not in its whole file. [`links`] lists what a text reads; [`taken`] is the text a
//! link brings in, where mdBook looks for the next ones.
//!
//! mdBook's own links preprocessor is the one that expands them; this module only says where
//! they lead, so `bounds` can refuse one that leaves the book before anything is read.

use regex::Regex;
use std::path::PathBuf;
use std::sync::LazyLock;

/// How deep mdBook expands includes inside included text (`MAX_LINK_NESTED_DEPTH`): the
/// chapter is depth 0; the files found in text at depth 10 are read but not expanded further.
pub const MAX_DEPTH: usize = 10;

/// mdBook 0.5.4's `find_links` expression, unchanged: an escaped link, or `{{`, spaces, `#`,
/// the link type, spaces and its arguments (anything but `}`, line breaks included), `}}`.
static LINK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\\{\{\#.*\}\}|\{\{\s*\#([a-zA-Z0-9_]+)\s+([^}]+)\}\}").expect("a valid pattern")
});
static ANCHOR_START: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"ANCHOR:\s*(?P<anchor_name>[\w_-]+)").expect("a valid pattern"));
static ANCHOR_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"ANCHOR_END:\s*(?P<anchor_name>[\w_-]+)").expect("a valid pattern")
});

/// One directive that reads a file, as mdBook parses it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Link {
    /// The byte offset of the directive in the text it was found in.
    pub at: usize,
    /// The file as written, relative to the folder of the text's file (mdBook joins it as is).
    pub file: PathBuf,
    pub kind: Kind,
}

/// What a link takes from its file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `{{#include file:…}}`: the lines selected.
    Include(Selection),
    /// `{{#rustdoc_include file:…}}`: every line, those outside the selection behind `# `.
    RustdocInclude(Selection),
    /// `{{#playground file attrs…}}`: the whole file in a fenced `rust` block.
    Playground(Vec<String>),
}

/// The lines a `file:…` suffix names: a range of 0-based line numbers (end excluded, `None`
/// open), or the lines between `ANCHOR: name` and `ANCHOR_END: name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Selection {
    Lines { start: usize, end: Option<usize> },
    Anchor(String),
}

/// Every link of `text` that reads a file, in order; escaped links, `{{#title}}` and unknown
/// types read nothing.
pub fn links(text: &str) -> Vec<Link> {
    LINK.captures_iter(text)
        .filter_map(|cap| {
            let (typ, rest) = (cap.get(1)?.as_str(), cap.get(2)?.as_str());
            let mut words = rest.split_whitespace();
            let file = words.next()?;
            let (file, kind) = match typ {
                "include" => {
                    let (file, selection) = file_and_selection(file);
                    (file, Kind::Include(selection))
                }
                "rustdoc_include" => {
                    let (file, selection) = file_and_selection(file);
                    (file, Kind::RustdocInclude(selection))
                }
                "playground" | "playpen" => {
                    (file, Kind::Playground(words.map(str::to_string).collect()))
                }
                _ => return None,
            };
            Some(Link {
                at: cap.get(0)?.start(),
                file: file.into(),
                kind,
            })
        })
        .collect()
}

/// `file:2:10` as mdBook's `parse_include_path` and `parse_range_or_anchor` read it: a number
/// is 1-based (`0` reads as `1`), a missing end takes that one line, an end that is no number
/// leaves the range open, a first part that is no number is an anchor.
fn file_and_selection(arg: &str) -> (&str, Selection) {
    let mut parts = arg.splitn(2, ':');
    let file = parts.next().unwrap_or_default();
    let mut parts = parts.next().unwrap_or("").splitn(3, ':').fuse();
    let first = parts.next();
    let start = match first {
        Some(value) => match value.parse::<usize>() {
            Ok(n) => Some(n.saturating_sub(1)),
            Err(_) if value.is_empty() => None,
            Err(_) => return (file, Selection::Anchor(value.to_string())),
        },
        None => None,
    };
    let end = parts.next().map(str::parse::<usize>);
    let (start, end) = match (start, end) {
        (Some(start), Some(Ok(end))) => (start, Some(end)),
        (Some(start), Some(Err(_))) => (start, None),
        (Some(start), None) => (start, Some(start + 1)),
        (None, Some(Ok(end))) => (0, Some(end)),
        (None, _) => (0, None),
    };
    (file, Selection::Lines { start, end })
}

/// The text a link brings in from its file's `content`, where mdBook looks for the next links,
/// and for each of its lines the line of the file it came from (1-based; `None` for a line
/// mdBook added).
pub fn taken(content: &str, kind: &Kind) -> (String, Vec<Option<usize>>) {
    let all: Vec<&str> = content.lines().collect();
    let numbered = all.iter().enumerate();
    let lines: Vec<(Option<usize>, String)> = match kind {
        Kind::Include(Selection::Lines { start, end }) => {
            let count = end.map_or(usize::MAX, |end| end.saturating_sub(*start));
            let taken = numbered.skip(*start).take(count);
            taken.map(|(i, l)| (Some(i + 1), l.to_string())).collect()
        }
        Kind::Include(Selection::Anchor(anchor)) => anchored(content, anchor, false)
            .into_iter()
            .filter(|(_, inside)| *inside)
            .map(|(i, _)| (Some(i + 1), all[i].to_string()))
            .collect(),
        Kind::RustdocInclude(Selection::Lines { start, end }) => numbered
            .map(|(i, l)| {
                let inside = i >= *start && end.is_none_or(|end| i < end);
                (Some(i + 1), hidden_unless(inside, l))
            })
            .collect(),
        Kind::RustdocInclude(Selection::Anchor(anchor)) => anchored(content, anchor, true)
            .into_iter()
            .map(|(i, inside)| (Some(i + 1), hidden_unless(inside, all[i])))
            .collect(),
        Kind::Playground(attrs) => return playground(content, attrs),
    };
    let text: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    (text.join("\n"), lines.into_iter().map(|(n, _)| n).collect())
}

/// A line rustdoc hides unless it is inside the selection.
fn hidden_unless(inside: bool, line: &str) -> String {
    match inside {
        true => line.to_string(),
        false => format!("# {line}"),
    }
}

/// The lines of `content` mdBook keeps around `anchor` (no line naming an anchor of the kind
/// mdBook drops there), each with whether it lies between `ANCHOR: anchor` and its end. An
/// include takes those inside, up to the anchor's first end (`reopen` false); a rustdoc include
/// keeps all of them, and the anchor may open again.
fn anchored(content: &str, anchor: &str, reopen: bool) -> Vec<(usize, bool)> {
    let names = |re: &Regex, l: &str| re.captures(l).map(|c| &c["anchor_name"] == anchor);
    let mut kept = Vec::new();
    let mut inside = false;
    for (i, l) in content.lines().enumerate() {
        if inside {
            match names(&ANCHOR_END, l) {
                Some(true) if !reopen => break,
                Some(true) => inside = false,
                Some(false) => {}
                None if ANCHOR_START.is_match(l) => {}
                None => kept.push((i, true)),
            }
        } else if let Some(ours) = names(&ANCHOR_START, l) {
            inside = ours;
        } else if !ANCHOR_END.is_match(l) {
            kept.push((i, false));
        }
    }
    kept
}

/// `{{#playground}}`'s text: the file in a fence, its attributes after `rust,`.
fn playground(content: &str, attrs: &[String]) -> (String, Vec<Option<usize>>) {
    let ftype = if attrs.is_empty() { "rust" } else { "rust," };
    let mut body = content.to_string();
    if !body.ends_with('\n') {
        body.push('\n');
    }
    let text = format!("```{ftype}{}\n{body}```\n", attrs.join(","));
    let file_lines = body.split('\n').count() - 1;
    let mut lines = vec![None];
    lines.extend((1..=file_lines).map(Some));
    lines.extend([None, None]);
    (text, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(text: &str) -> Vec<String> {
        links(text)
            .iter()
            .map(|l| l.file.display().to_string())
            .collect()
    }

    #[test]
    fn only_a_backslash_right_before_braces_and_hash_escapes_and_it_takes_its_line() {
        // `\{{#` with no space is escaped; `\{{ #` is not (mdBook's expression allows spaces
        // after `{{`, its escape does not).
        assert!(files("\\{{#include a.txt}}").is_empty());
        assert_eq!(files("\\{{ #include ../../x.txt }}"), ["../../x.txt"]);
        // The escape runs to the line's last `}}`: what follows on its line is text too.
        assert!(files("\\{{#title x}} {{#include ../y}}").is_empty());
        // It needs its `}}` on its own line; without one, the link is read.
        assert_eq!(files("\\{{#include\n../z}}"), ["../z"]);
        assert_eq!(files("{{ #playground  b.rs editable }}"), ["b.rs"]);
        assert_eq!(
            files("{{#rustdoc_include r.rs:2}} {{#playpen p.rs}}"),
            ["r.rs", "p.rs"]
        );
        assert!(files("{{#title T}} {{#forkbook checks}} {{#include   }}").is_empty());
    }

    #[test]
    fn arguments_are_read_as_mdbook_reads_them() {
        let kind = |text: &str| links(text).remove(0).kind;
        let lines = |start, end| Kind::Include(Selection::Lines { start, end });
        assert_eq!(kind("{{#include a:2:10}}"), lines(1, Some(10)));
        assert_eq!(kind("{{#include a:2}}"), lines(1, Some(2)));
        assert_eq!(kind("{{#include a:2:}}"), lines(1, None));
        assert_eq!(kind("{{#include a::3}}"), lines(0, Some(3)));
        assert_eq!(kind("{{#include a:}}"), lines(0, None));
        assert_eq!(kind("{{#include a:0}}"), lines(0, Some(1)));
        assert_eq!(
            kind("{{#include a:here}}"),
            Kind::Include(Selection::Anchor("here".into()))
        );
    }

    #[test]
    fn the_lines_taken_are_mdbook_s_and_where_they_came_from() {
        let file = "one\n{{#include a\n{{#include ../../b}}\r\nfour\n";
        let take = |kind| taken(file, &kind);
        let lines = |start, end| Selection::Lines { start, end };
        // The whole file hides the second line's include inside the first's arguments;
        // line 3 alone is an include.
        assert_eq!(files(&take(Kind::Include(lines(0, None))).0), ["a"]);
        let third = take(Kind::Include(lines(2, Some(3))));
        assert_eq!(third, ("{{#include ../../b}}".to_string(), vec![Some(3)]));
        assert_eq!(files(&third.0), ["../../b"]);
        let rustdoc = take(Kind::RustdocInclude(lines(2, Some(3))));
        assert_eq!(
            rustdoc.0,
            "# one\n# {{#include a\n{{#include ../../b}}\n# four"
        );
        let anchors = "ANCHOR: x\n{{#include\nANCHOR: y\n../../c}}\nANCHOR_END: x\nafter";
        let (text, lines) = taken(anchors, &Kind::Include(Selection::Anchor("x".into())));
        assert_eq!(text, "{{#include\n../../c}}");
        assert_eq!(lines, [Some(2), Some(4)]);
        assert_eq!(files(&text), ["../../c"]);
        let (text, _) = taken(
            anchors,
            &Kind::RustdocInclude(Selection::Anchor("x".into())),
        );
        assert_eq!(text, "{{#include\n../../c}}\n# after");
        let (text, lines) = taken("x}}", &Kind::Playground(vec!["{{#include".into()]));
        assert_eq!(text, "```rust,{{#include\nx}}\n```\n");
        assert_eq!(files(&text), ["x"]);
        assert_eq!(lines, [None, Some(1), None, None]);
    }
}
