//! One description of a report, two renderings: a report says what it found once, as a [`Doc`]
//! of lines, lists and tables made of [`Span`]s, and the `Doc` renders itself as terminal text
//! and as Markdown for the book's page.
//!
//! The spans say where their text comes from, and that decides its quoting: forkbook's own
//! words go out as written; text and names from other people's trees and histories go through
//! [`crate::terminal::escape_field`] on a terminal and through [`crate::markdown`]'s quoting on a
//! page, so no report can forget to quote them.

use crate::markdown::{self, PageLinks};
use crate::report_value::{CommandReport, Verdict};
use crate::terminal::{escape_field, quote_path};

/// A piece of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    /// forkbook's own words, as they are in both renderings.
    Words(String),
    /// Text from someone's tree or history (a compiler message, a commit subject).
    Text(String),
    /// A name from someone's tree: `` `name` `` on a terminal (plain in a table's cell), a code
    /// span on a page.
    Code(String),
    /// forkbook's words where each `` `pair` `` of backticks holds a name (see
    /// [`markdown::prose`]).
    Prose(String),
    /// `text` on a terminal, `markdown` (quoted already, safe in a table's cell) on a page.
    Link { text: String, markdown: String },
    /// A path from someone's tree: quoted the way git quotes it on a terminal
    /// ([`crate::terminal::quote_path`]), a code span on a page.
    Path(String),
}

/// forkbook's own words.
pub fn words(words: impl Into<String>) -> Span {
    Span::Words(words.into())
}

/// Text from someone's tree.
pub fn text(text: impl Into<String>) -> Span {
    Span::Text(text.into())
}

/// A name from someone's tree.
pub fn code(name: impl Into<String>) -> Span {
    Span::Code(name.into())
}

/// A path from someone's tree.
pub fn path(path: impl Into<String>) -> Span {
    Span::Path(path.into())
}

/// forkbook's words that differ between the two renderings: `text` on a terminal, `markdown`
/// (quoted already) on a page; either may be empty.
pub fn either(text: impl Into<String>, markdown: impl Into<String>) -> Span {
    Span::Link {
        text: text.into(),
        markdown: markdown.into(),
    }
}

/// Names from someone's tree, `, `-separated.
pub fn codes<S: AsRef<str>>(names: &[S]) -> Vec<Span> {
    separated(names.iter().map(|n| code(n.as_ref())), ", ")
}

/// `spans` with forkbook's `separator` between each two.
pub fn separated(spans: impl IntoIterator<Item = Span>, separator: &str) -> Vec<Span> {
    let mut out = Vec::new();
    for span in spans {
        if !out.is_empty() {
            out.push(words(separator));
        }
        out.push(span);
    }
    out
}

/// Local fixes: `fix 1, fix 2` on a terminal, linked to their register entries on a page.
pub fn fixes(links: &PageLinks, numbers: &[usize]) -> Span {
    let text: Vec<String> = numbers.iter().map(|n| format!("fix {n}")).collect();
    let markdown = links.fixes(numbers);
    Span::Link {
        text: text.join(", "),
        markdown,
    }
}

/// An upstream commit: `sha8 subject` on a terminal, linked (with its pull request) on a page.
pub fn commit(links: &PageLinks, sha: &str, summary: &str) -> Span {
    let text = format!("{} {summary}", crate::text::short_id(sha));
    let markdown = markdown::cell(&links.upstream_commit(sha, summary));
    Span::Link { text, markdown }
}

impl Span {
    fn text(&self, in_cell: bool) -> String {
        match self {
            Span::Words(words) => words.clone(),
            Span::Text(text) | Span::Prose(text) | Span::Link { text, .. } => {
                escape_field(text).into_owned()
            }
            Span::Code(name) if in_cell => escape_field(name).into_owned(),
            Span::Code(name) => format!("`{}`", escape_field(name)),
            Span::Path(path) => quote_path(path).into_owned(),
        }
    }

    fn markdown(&self, in_cell: bool) -> String {
        match self {
            Span::Words(words) => words.clone(),
            Span::Text(text) if in_cell => markdown::cell(&markdown::text(text)),
            Span::Text(text) => markdown::text(text),
            Span::Code(name) | Span::Path(name) if in_cell => markdown::code_cell(name),
            Span::Code(name) | Span::Path(name) => markdown::code_span(name),
            Span::Prose(words) if in_cell => markdown::prose_cell(words),
            Span::Prose(words) => markdown::prose(words),
            Span::Link { markdown, .. } => markdown.clone(),
        }
    }
}

/// The spans of one line or cell, rendered one way.
fn join(spans: &[Span], render: impl Fn(&Span) -> String) -> String {
    spans.iter().map(render).collect()
}

/// A table's row: its cells, each of spans.
pub type Row = Vec<Vec<Span>>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Block {
    /// A line on a terminal, a paragraph on a page.
    Line(Vec<Span>),
    /// Items indented a line each on a terminal, a bulleted list on a page; the number says how
    /// deep (0 for a list of its own, 1 for items under the previous list's last item).
    List(Vec<Vec<Span>>, usize),
    /// A table on a page; on a terminal, its columns aligned under the header or, as records,
    /// each row's first cell on a line and its other cells `header: cell` on lines below.
    Table(Vec<&'static str>, Vec<Row>, bool),
    /// A fenced code block of a language (a diff) on a page; the terminal shows no such block.
    Code(&'static str, String),
    /// Paths, `, `-separated: on a terminal wrapped to lines of 96 characters, indented.
    Paths(Vec<String>),
}

/// Where a block shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Both,
    Terminal,
    Page,
}

/// What a report says, in blocks; each block shown on both, on the terminal alone (a machine's
/// path, a log to read) or on the page alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Doc {
    blocks: Vec<(Block, Shown)>,
}

impl Doc {
    /// A line of its own; a paragraph on a page (capitalised, with a full stop).
    pub fn line(&mut self, spans: Vec<Span>) -> &mut Doc {
        self.push_if(true, Block::Line(spans))
    }

    /// A line of forkbook's words where each `` `pair` `` of backticks holds a name.
    pub fn say(&mut self, prose: impl Into<String>) -> &mut Doc {
        self.line(vec![Span::Prose(prose.into())])
    }

    /// `label` (up to 8 characters) and its value on a line: the values of fields one after
    /// another line up.
    pub fn field(&mut self, label: &str, mut spans: Vec<Span>) -> &mut Doc {
        spans.insert(0, words(format!("{label:<8} ")));
        self.line(spans)
    }

    /// An empty line on a terminal; a page parts its paragraphs anyway.
    pub fn gap(&mut self) -> &mut Doc {
        self.line(Vec::new()).terminal_only()
    }

    /// `label: `path`` on the terminal only: a path of this machine (a tree, a log) is no part
    /// of a page.
    pub fn path_line(&mut self, label: &str, path: &std::path::Path) -> &mut Doc {
        let spans = vec![
            words(format!("{label}: ")),
            code(path.display().to_string()),
        ];
        self.line(spans).terminal_only()
    }

    /// The block added last shows on the terminal alone.
    pub fn terminal_only(&mut self) -> &mut Doc {
        self.show_last(Shown::Terminal)
    }

    /// The block added last shows on the page alone.
    pub fn page_only(&mut self) -> &mut Doc {
        self.show_last(Shown::Page)
    }

    fn show_last(&mut self, shown: Shown) -> &mut Doc {
        if let Some(last) = self.blocks.last_mut() {
            last.1 = shown;
        }
        self
    }

    /// A fenced code block of `language` holding `body` (from someone's tree), on the page only.
    pub fn page_code(&mut self, language: &'static str, body: &str) -> &mut Doc {
        self.push_if(true, Block::Code(language, body.to_string()))
    }

    /// A list of items; nothing when there are none. Lists one after another on a page are
    /// one list.
    pub fn list(&mut self, items: Vec<Vec<Span>>) -> &mut Doc {
        self.push_if(!items.is_empty(), Block::List(items, 0))
    }

    /// The first `shown` items, then `… N REST` for the ones left out: a list from someone's
    /// folder can hold any number.
    pub fn list_first(&mut self, mut items: Vec<Vec<Span>>, shown: usize, rest: &str) -> &mut Doc {
        if items.len() > shown {
            let more = items.len() - shown;
            items.truncate(shown);
            items.push(vec![words(format!("… {more} {rest}"))]);
        }
        self.list(items)
    }

    /// Items under the last item of the list before, indented deeper.
    pub fn sublist(&mut self, items: Vec<Vec<Span>>) -> &mut Doc {
        self.push_if(!items.is_empty(), Block::List(items, 1))
    }

    /// Paths from someone's tree, `, `-separated, wrapped on a terminal; nothing when there are
    /// none.
    pub fn paths(&mut self, paths: &[String]) -> &mut Doc {
        self.push_if(!paths.is_empty(), Block::Paths(paths.to_vec()))
    }

    /// A table whose columns line up on a terminal; nothing when it has no rows. An empty cell
    /// shows as `—`.
    pub fn table(&mut self, header: &[&'static str], rows: Vec<Row>) -> &mut Doc {
        self.push_if(!rows.is_empty(), Block::Table(header.to_vec(), rows, false))
    }

    /// A table of records: on a terminal each row's first cell on a line and each other cell
    /// that is not empty below it, named by its header.
    pub fn records(&mut self, header: &[&'static str], rows: Vec<Row>) -> &mut Doc {
        self.push_if(!rows.is_empty(), Block::Table(header.to_vec(), rows, true))
    }

    fn push_if(&mut self, wanted: bool, block: Block) -> &mut Doc {
        if wanted {
            self.blocks.push((block, Shown::Both));
        }
        self
    }

    /// `other`'s blocks after these.
    pub fn append(&mut self, other: Doc) -> &mut Doc {
        self.blocks.extend(other.blocks);
        self
    }

    /// The text a person reads, every line ending in `\n`.
    pub fn text(&self) -> String {
        let shown = self.blocks.iter().filter(|(_, s)| *s != Shown::Page);
        shown.map(|(block, _)| block.text()).collect()
    }

    /// The Markdown for the book's page.
    pub fn markdown(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut last_was_list = false;
        for (block, _) in self.blocks.iter().filter(|(_, s)| *s != Shown::Terminal) {
            let list = matches!(block, Block::List(..));
            let part = block.markdown();
            match parts.last_mut() {
                Some(last) if list && last_was_list => last.push_str(&part),
                _ => parts.push(part),
            }
            last_was_list = list;
        }
        parts.join("\n")
    }
}

impl Block {
    fn text(&self) -> String {
        let line = |spans: &[Span]| join(spans, |s| s.text(false));
        match self {
            Block::Code(..) => String::new(),
            Block::Line(spans) => format!("{}\n", line(spans)),
            Block::List(items, depth) => {
                let indent = "  ".repeat(depth + 1);
                items
                    .iter()
                    .map(|i| format!("{indent}{}\n", line(i)))
                    .collect()
            }
            Block::Paths(paths) => {
                let quoted: Vec<String> = paths.iter().map(|p| quote_path(p).into()).collect();
                format!("  {}\n", crate::text::wrap_list(&quoted, "  ", 96))
            }
            Block::Table(header, rows, records) => {
                let cells = |row: &Row| row.iter().map(|c| join(c, |s| s.text(true))).collect();
                let cells: Vec<Vec<String>> = rows.iter().map(cells).collect();
                if *records {
                    text_records(header, &cells)
                } else {
                    text_columns(header, &cells)
                }
            }
        }
    }

    fn markdown(&self) -> String {
        match self {
            Block::Line(spans) => format!("{}\n", paragraph(spans)),
            Block::List(items, depth) => {
                let indent = "  ".repeat(*depth);
                let item =
                    |i: &Vec<Span>| format!("{indent}- {}\n", join(i, |s| s.markdown(false)));
                items.iter().map(item).collect()
            }
            Block::Paths(paths) => {
                let spans: Vec<String> = paths.iter().map(|p| markdown::code_span(p)).collect();
                format!("{}\n", spans.join(", "))
            }
            Block::Code(language, body) => markdown::code_block(language, body),
            Block::Table(header, rows, _) => {
                let rows: Vec<Vec<String>> = rows
                    .iter()
                    .map(|row| row.iter().map(|c| markdown_cell(c)).collect())
                    .collect();
                markdown::table(header, &rows)
            }
        }
    }
}

/// A report a [`Doc`] says all of: its text for a terminal and its Markdown for the book's page
/// both come from [`Described::doc`].
pub trait Described: serde::Serialize {
    /// The report; `links` make the page's links (a terminal gets the default, none).
    fn doc(&self, links: &PageLinks) -> Doc;

    /// Whether it found a problem (conflicts, drift, a note to review).
    fn found_problems(&self) -> bool;
}

impl<T: Described> CommandReport for T {
    fn text(&self) -> String {
        self.doc(&PageLinks::default()).text()
    }

    fn verdict(&self) -> Verdict {
        Verdict::problems_if(self.found_problems())
    }

    fn markdown(&self, links: &PageLinks) -> Option<String> {
        Some(self.doc(links).markdown())
    }
}

/// A line as a paragraph: starting with a capital where forkbook's words start it, ending with a
/// full stop where it does not end with punctuation already.
fn paragraph(spans: &[Span]) -> String {
    let mut out = join(spans, |s| s.markdown(false));
    if matches!(spans.first(), Some(Span::Words(_) | Span::Prose(_))) {
        if let Some(c) = out.chars().next().filter(char::is_ascii_lowercase) {
            out.replace_range(..1, &c.to_ascii_uppercase().to_string());
        }
    }
    if !out.ends_with(['.', ':', '!', '?']) {
        out.push('.');
    }
    out
}

fn markdown_cell(cell: &[Span]) -> String {
    if cell.is_empty() {
        return "—".to_string();
    }
    join(cell, |s| s.markdown(true))
}

/// Rows with their columns aligned under the header, indented by two spaces.
fn text_columns(header: &[&str], rows: &[Vec<String>]) -> String {
    let shown = |cell: &String| if cell.is_empty() { "—" } else { cell }.to_string();
    let mut lines = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    lines.extend(rows.iter().map(|r| r.iter().map(shown).collect()));
    let width = |i: usize| {
        lines
            .iter()
            .map(|l| l.get(i).map_or(0, |c| c.chars().count()))
            .max()
    };
    let widths: Vec<usize> = (0..header.len()).map(|i| width(i).unwrap_or(0)).collect();
    let line = |l: &Vec<String>| {
        let cells = l.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}"));
        format!("  {}", cells.collect::<Vec<_>>().join("  ").trim_end())
    };
    lines.iter().map(|l| line(l) + "\n").collect()
}

/// Each row's first cell on a line, its other cells that are not empty below it as
/// `header: cell`.
fn text_records(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for row in rows {
        out.push_str(&format!("  {}\n", row.first().map_or("", String::as_str)));
        for (name, cell) in header.iter().zip(row).skip(1) {
            if !cell.is_empty() {
                out.push_str(&format!("      {name}: {cell}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Doc {
        let hostile = "a\u{1b}[2K|b`c\nforged";
        let mut doc = Doc::default();
        doc.line(vec![
            words("found "),
            code(hostile),
            words(" in "),
            text(hostile),
        ])
        .path_line("log", std::path::Path::new("/tmp/log"))
        .list(vec![vec![words("one "), code("x")]])
        .table(
            &["where", "error"],
            vec![
                vec![vec![code("a.cpp:3")], vec![text(hostile)]],
                vec![vec![], vec![words("undefined")]],
            ],
        )
        .records(
            &["symbol", "needed by", "probably in"],
            vec![vec![vec![code("f")], codes(&["a.cpp", "b.cpp"]), vec![]]],
        );
        doc
    }

    #[test]
    fn a_doc_renders_as_terminal_text() {
        assert_eq!(
            sample().text(),
            "found `a\\033[2K|b`c\\nforged` in a\\033[2K|b`c\\nforged\n\
             log: `/tmp/log`\n\
             \x20 one `x`\n\
             \x20 where    error\n\
             \x20 a.cpp:3  a\\033[2K|b`c\\nforged\n\
             \x20 —        undefined\n\
             \x20 f\n\
             \x20     needed by: a.cpp, b.cpp\n"
        );
    }

    #[test]
    fn a_doc_renders_as_markdown_with_everything_quoted() {
        let md = sample().markdown();
        assert!(
            !md.contains(|c: char| c.is_control() && c != '\n'),
            "{md:?}"
        );
        assert!(
            !md.contains("/tmp/log"),
            "terminal lines stay off the page: {md}"
        );
        assert!(
            md.starts_with("Found `` a\\033[2K\\|b`c forged `` in a\\\\033"),
            "{md}"
        );
        assert!(
            md.contains("\n\n- one ` x `\n\n| where | error |\n"),
            "{md}"
        );
        assert!(md.contains("| — | undefined |\n"), "{md}");
        assert!(
            md.ends_with(
                "| <code>f</code> | <code>a.<wbr>cpp</code>, <code>b.<wbr>cpp</code> | — |\n"
            ),
            "{md}"
        );
    }
}
