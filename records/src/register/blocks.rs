//! The top-level blocks of a Markdown text, with their byte ranges, as pulldown-cmark reads them.
//!
//! The register parser and the migration both work on this flat list: a heading, a paragraph
//! or a list at the top level, each with its plain text, its code spans and (for lists) its
//! items. Ranges index the original text, so edits keep every other byte as it was.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// What kind of top-level block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Kind {
    Heading(u8),
    Paragraph,
    List,
    #[default]
    Other,
}

/// One top-level block.
#[derive(Debug, Clone, Default)]
pub struct Block {
    pub kind: Kind,
    pub range: Range<usize>,
    /// Plain text: text and code spans, soft breaks as spaces.
    pub text: String,
    /// Code spans: content and the byte offset where the span starts.
    pub codes: Vec<(String, usize)>,
    /// For lists: the range of each top-level item.
    pub items: Vec<Range<usize>>,
    /// For lists: whether the list is numbered.
    pub ordered: bool,
    /// For paragraphs that open with bold text: that text and the range of the bold part.
    pub strong_lead: Option<(String, Range<usize>)>,
}

/// The top-level blocks of `text`, in order.
pub fn blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut depth = 0usize;
    let mut strong: Option<(String, usize)> = None;
    let mut opened_with_strong = false;
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    blocks.push(start_block(&tag, range.clone()));
                    opened_with_strong = false;
                } else if let Some(block) = blocks.last_mut() {
                    start_inner(
                        block,
                        &tag,
                        depth,
                        range.clone(),
                        &mut strong,
                        &mut opened_with_strong,
                    );
                }
                depth += 1;
            }
            Event::End(tag) => {
                depth -= 1;
                if let (TagEnd::Strong, Some((lead, start)), Some(block)) =
                    (tag, strong.take(), blocks.last_mut())
                {
                    block.strong_lead = Some((lead, start..range.end));
                }
            }
            Event::Text(t) => push_text(&mut blocks, &mut strong, &t),
            Event::Code(code) => {
                push_text(&mut blocks, &mut strong, &code);
                if let Some(block) = blocks.last_mut() {
                    block.codes.push((code.to_string(), range.start));
                }
            }
            Event::SoftBreak | Event::HardBreak => push_text(&mut blocks, &mut strong, " "),
            _ => {}
        }
    }
    blocks
}

fn start_block(tag: &Tag, range: Range<usize>) -> Block {
    let kind = match tag {
        Tag::Heading { level, .. } => Kind::Heading(*level as u8),
        Tag::Paragraph => Kind::Paragraph,
        Tag::List(_) => Kind::List,
        _ => Kind::Other,
    };
    Block {
        kind,
        range,
        ordered: matches!(tag, Tag::List(Some(_))),
        ..Block::default()
    }
}

/// A tag inside a top-level block: list items at depth 1, a paragraph's opening bold text.
fn start_inner(
    block: &mut Block,
    tag: &Tag,
    depth: usize,
    range: Range<usize>,
    strong: &mut Option<(String, usize)>,
    opened_with_strong: &mut bool,
) {
    match tag {
        Tag::Item if depth == 1 && block.kind == Kind::List => block.items.push(range),
        Tag::Strong
            if block.kind == Kind::Paragraph && block.text.is_empty() && !*opened_with_strong =>
        {
            *opened_with_strong = true;
            *strong = Some((String::new(), range.start));
        }
        _ => {}
    }
}

fn push_text(blocks: &mut [Block], strong: &mut Option<(String, usize)>, text: &str) {
    if let Some(block) = blocks.last_mut() {
        block.text.push_str(text);
    }
    if let Some((lead, _)) = strong {
        lead.push_str(text);
    }
}

/// Maps byte offsets to 1-based line numbers.
pub struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    pub fn new(text: &str) -> Lines {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { starts }
    }

    /// The line holding byte `offset`.
    pub fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_carry_kinds_codes_items_and_bold_leads() {
        let text = "# T\n\n**1. Fix** it in `a.cpp`.\n\n- state: merged\n- link: x\n";
        let blocks = blocks(text);
        let kinds: Vec<Kind> = blocks.iter().map(|b| b.kind).collect();
        assert_eq!(kinds, [Kind::Heading(1), Kind::Paragraph, Kind::List]);
        assert_eq!(blocks[1].strong_lead.as_ref().unwrap().0, "1. Fix");
        assert_eq!(blocks[1].codes, [("a.cpp".to_string(), 22)]);
        assert_eq!(blocks[2].items.len(), 2);
        assert_eq!(&text[blocks[2].items[1].clone()], "- link: x\n");
        let lines = Lines::new(text);
        assert_eq!(
            (
                lines.line(0),
                lines.line(5),
                lines.line(blocks[2].items[1].start)
            ),
            (1, 3, 6)
        );
    }
}
