//! The top-level blocks of a Markdown text, with their byte ranges, as pulldown-cmark reads them.
//!
//! The register parser and the migration both work on this flat list: a heading, a paragraph
//! or a list at the top level, each with its code spans and (for lists) its items. Ranges index
//! the original text, so edits keep every other byte as it was. What a block says is what a
//! reader of the rendered page sees: text in an HTML comment or block, inline HTML and the
//! content of a code block are no part of it (see [`super::visible`] for the words).

use std::collections::VecDeque;
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
    /// How the block's visible text opens (at most [`OPENING`] bytes): enough to tell a `Files:`
    /// line, without a copy of every paragraph.
    pub opening: String,
    /// Code spans: content and the byte offset where the span starts.
    pub codes: Vec<(String, usize)>,
    /// For lists: each top-level item.
    pub items: Vec<Item>,
    /// For lists: whether the list is numbered.
    pub ordered: bool,
    /// For paragraphs that open with bold text: that text and the range of the bold part.
    pub strong_lead: Option<(String, Range<usize>)>,
}

/// How many bytes of a block's opening text [`Block::opening`] keeps.
pub const OPENING: usize = 16;

/// One item of a list.
#[derive(Debug, Clone, Default)]
pub struct Item {
    pub range: Range<usize>,
    /// The item's first paragraph as the page shows it, when it opens like a field (`key:`):
    /// text and code spans (in backticks), a link as its destination. What a field's value is.
    pub field: Option<String>,
    /// Where the last text shown in that first paragraph ends in the source.
    pub field_end: usize,
    /// The items of the lists nested right in this item (a list entry's field list).
    pub nested: Vec<Item>,
}

/// The top-level blocks of `text`, in order.
pub fn blocks(text: &str) -> Vec<Block> {
    each_block(text).collect()
}

/// The top-level blocks of `text`, in order, one at a time: pulldown-cmark's events are read as
/// they come and each block is handed on when it ends, so a long register is never held as a
/// list of blocks.
pub fn each_block(text: &str) -> impl Iterator<Item = Block> + '_ {
    let mut events = events(text, CHUNK);
    let mut walk = Walk::default();
    std::iter::from_fn(move || {
        for (event, range) in events.by_ref() {
            walk.event(event, range);
            if walk.depth == 0 {
                if let Some(block) = walk.blocks.pop() {
                    return Some(block);
                }
            }
        }
        walk.blocks.pop()
    })
}

/// How many bytes of a text pulldown-cmark is given at a time (see [`events`]).
const CHUNK: usize = 64 * 1024;

/// pulldown-cmark's events of `text` with their byte ranges, the same as one parser over the
/// whole text gives, read `chunk` bytes at a time: a parser builds the tree of all it is given
/// before its first event, about three times the text's bytes, which for a register of 48 MB
/// was the larger part of `status`'s memory.
///
/// A piece is parsed up to the end of a line past `chunk` bytes; its events are taken up to
/// its last top-level ATX heading (`# …`, `## …` on a line of their own) and the next piece
/// starts there. That is the whole text's reading: whether a line opens a top-level ATX
/// heading depends on the lines before it alone, the heading closes every block before it, and
/// no block after it reaches back. A piece with no such heading is read again twice as long.
/// Link reference and footnote definitions are the exception (a definition anywhere changes a
/// link before it): a text with `]:` anywhere is read whole.
fn events(text: &str, chunk: usize) -> impl Iterator<Item = (Event<'_>, Range<usize>)> + '_ {
    let whole = text.contains("]:");
    let mut at = 0;
    // The events of the piece being handed on; their room is kept for the next piece, not
    // grown anew and faulted in again for each piece.
    let mut taken: VecDeque<(Event<'_>, Range<usize>)> = VecDeque::new();
    std::iter::from_fn(move || loop {
        if let Some(event) = taken.pop_front() {
            return Some(event);
        }
        if at >= text.len() {
            return None;
        }
        let mut length = chunk.max(1);
        let end = loop {
            let past = at.saturating_add(length);
            let end = match text.as_bytes().get(past..) {
                Some(after) if !whole => {
                    (after.iter().position(|&b| b == b'\n')).map_or(text.len(), |n| past + n + 1)
                }
                _ => text.len(),
            };
            let piece = &text[at..end];
            let events = &mut taken;
            events.clear();
            let mut depth = 0usize;
            let mut last_heading = None;
            for (event, range) in Parser::new_ext(piece, Options::empty()).into_offset_iter() {
                match &event {
                    Event::Start(tag) => {
                        if depth == 0
                            && matches!(tag, Tag::Heading { .. })
                            && range.start > 0
                            && piece[range.start..].starts_with('#')
                        {
                            last_heading = Some((events.len(), range.start));
                        }
                        depth += 1;
                    }
                    Event::End(_) => depth -= 1,
                    _ => {}
                }
                events.push_back((event, at + range.start..at + range.end));
            }
            if end == text.len() {
                break end;
            }
            if let Some((count, start)) = last_heading {
                events.truncate(count);
                break at + start;
            }
            length *= 2;
        };
        at = end;
    })
}

/// The walk over one text's events: the block being read (at most one) and where in it it is.
#[derive(Default)]
struct Walk {
    blocks: Vec<Block>,
    depth: usize,
    strong: Option<(String, usize)>,
    opened_with_strong: bool,
    /// Open items, outermost first, with the depth of their `Item` tag.
    items: Vec<(Item, usize, ItemState)>,
    /// Inside a code block, an image or a link (whose text is replaced by its destination in a
    /// field): their text is no field's.
    code_block: usize,
    image: usize,
    link: usize,
}

/// Where an open item's first paragraph stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ItemState {
    /// Still reading it.
    Reading,
    /// It ended, or it does not open like a field.
    Done,
}

impl Walk {
    fn event(&mut self, event: Event, range: Range<usize>) {
        match event {
            Event::Start(tag) => self.start(tag, range),
            Event::End(tag) => self.end(tag, range),
            Event::Text(t) if self.code_block == 0 && self.image == 0 => self.text(&t, range),
            Event::Code(code) if self.image == 0 => {
                let shown = format!("`{}`", code.replace('`', "'"));
                self.push_field(&shown, range.end);
                if let Some((lead, _)) = &mut self.strong {
                    lead.push_str(&code);
                }
                self.push_opening(&code);
                if let Some(block) = self.blocks.last_mut() {
                    block.codes.push((code.to_string(), range.start));
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((lead, _)) = &mut self.strong {
                    lead.push(' ');
                }
                self.push_opening(" ");
                self.push_field(" ", range.end);
            }
            _ => {}
        }
    }

    fn text(&mut self, t: &str, range: Range<usize>) {
        if let Some((lead, _)) = &mut self.strong {
            lead.push_str(t);
        }
        self.push_opening(t);
        if self.link == 0 {
            self.push_field(t, range.end);
        }
    }

    fn start(&mut self, tag: Tag, range: Range<usize>) {
        if self.depth == 0 {
            self.blocks.push(start_block(&tag, range.clone()));
            self.opened_with_strong = false;
        }
        match &tag {
            Tag::Item => self.open_item(range),
            Tag::CodeBlock(_) => self.code_block += 1,
            Tag::Image { .. } => self.image += 1,
            Tag::Link { dest_url, .. } => {
                if self.image == 0 {
                    let dest = dest_url.to_string();
                    self.push_field(&dest, range.end);
                }
                self.link += 1;
            }
            Tag::Strong => self.lead_strong(range.start),
            Tag::Paragraph => {}
            // Any other block in an item ends its first paragraph (a tight item has none).
            _ if !is_inline(&tag) => self.end_reading(),
            _ => {}
        }
        self.depth += 1;
    }

    fn end(&mut self, tag: TagEnd, range: Range<usize>) {
        self.depth -= 1;
        match tag {
            TagEnd::Strong => {
                if let (Some((lead, start)), Some(block)) =
                    (self.strong.take(), self.blocks.last_mut())
                {
                    block.strong_lead = Some((lead, start..range.end));
                }
            }
            TagEnd::Paragraph => self.end_reading(),
            TagEnd::CodeBlock => self.code_block -= 1,
            TagEnd::Image => self.image -= 1,
            TagEnd::Link => self.link -= 1,
            TagEnd::Item => self.close_item(range.end),
            _ => {}
        }
    }

    /// An item opens: a top-level list's (depth 1) or one nested right in an open item.
    fn open_item(&mut self, range: Range<usize>) {
        let top = self.depth == 1 && self.blocks.last().is_some_and(|b| b.kind == Kind::List);
        let nested = self.items.len() == 1 && self.depth == self.items[0].1 + 2;
        if top || nested {
            let item = Item {
                field_end: range.start,
                range,
                field: Some(String::new()),
                ..Item::default()
            };
            self.items.push((item, self.depth, ItemState::Reading));
        }
    }

    fn close_item(&mut self, end: usize) {
        let Some((_, depth, _)) = self.items.last() else {
            return;
        };
        if *depth != self.depth {
            return;
        }
        let (mut item, _, _) = self.items.pop().expect("an open item");
        item.range.end = item.range.end.max(end);
        match self.items.last_mut() {
            Some((parent, _, _)) => parent.nested.push(item),
            None => {
                if let Some(block) = self.blocks.last_mut() {
                    block.items.push(item);
                }
            }
        }
    }

    /// The innermost open item's first paragraph ends (where the last text shown in it ended).
    fn end_reading(&mut self) {
        if let Some((_, _, state)) = self.items.last_mut() {
            *state = ItemState::Done;
        }
    }

    /// Adds what the page shows to the innermost item's first paragraph while it reads like a
    /// field: the text up to its colon may only be a key's.
    fn push_field(&mut self, shown: &str, end: usize) {
        let Some((item, _, state)) = self.items.last_mut() else {
            return;
        };
        if *state != ItemState::Reading {
            return;
        }
        if let Some(field) = &mut item.field {
            field.push_str(shown);
            item.field_end = end;
            if !opens_like_a_field(field) {
                item.field = None;
            }
        }
    }

    fn push_opening(&mut self, text: &str) {
        if let Some(block) = self.blocks.last_mut() {
            let room = OPENING.saturating_sub(block.opening.len());
            let mut cut = room.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            block.opening.push_str(&text[..cut]);
        }
    }

    /// A paragraph's opening bold text.
    fn lead_strong(&mut self, at: usize) {
        let Some(block) = self.blocks.last() else {
            return;
        };
        if block.kind == Kind::Paragraph && block.opening.is_empty() && !self.opened_with_strong {
            self.opened_with_strong = true;
            self.strong = Some((String::new(), at));
        }
    }
}

/// Whether a tag is inline (text-level) rather than a block.
fn is_inline(tag: &Tag) -> bool {
    matches!(
        tag,
        Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Link { .. }
            | Tag::Image { .. }
            | Tag::Superscript
            | Tag::Subscript
    )
}

/// Whether `text` may still be the start of `key: value`: no colon yet and only a key's
/// characters, or a key's characters then a colon.
fn opens_like_a_field(text: &str) -> bool {
    let text = text.trim_start();
    let (key, rest) = match text.split_once(':') {
        Some((key, rest)) => (key, Some(rest)),
        None => (text, None),
    };
    let key_ok = key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " _-".contains(c));
    key_ok && (rest.is_some() || key.len() <= 40)
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

/// Maps byte offsets to 1-based line numbers.
pub struct Lines {
    starts: Starts,
}

/// Where each line starts: as `u32` for a text of less than 4 GiB (half the room of a `usize`:
/// a register of 600,000 short entries has 1.2 million lines).
enum Starts {
    Narrow(Vec<u32>),
    Wide(Vec<usize>),
}

impl Lines {
    pub fn new(text: &str) -> Lines {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
        let starts = match u32::try_from(text.len()) {
            Ok(_) => Starts::Narrow(starts.map(|start| start as u32).collect()),
            Err(_) => Starts::Wide(starts.collect()),
        };
        Lines { starts }
    }

    /// The line holding byte `offset`.
    pub fn line(&self, offset: usize) -> usize {
        match &self.starts {
            Starts::Narrow(starts) => starts.partition_point(|&start| start as usize <= offset),
            Starts::Wide(starts) => starts.partition_point(|&start| start <= offset),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_read_in_pieces_gives_the_events_of_the_whole() {
        let texts = [
            "# Local fixes\n\n## 1. A\n\nProse `a.cpp`.\n\n- state: merged\n\n## 2. B\n\nMore.\n",
            // `##` lines inside a fence, an HTML comment, an HTML block, a list item and a
            // block quote are no headings; an unclosed fence runs to the end.
            "## 1. A\n\n```text\n## not a heading\n\n## nor this\n```\n\n## 2. B\n",
            "## 1. A\n\n<!--\n## hidden\n\n## hidden too\n-->\n\n## 2. B\n\n<div>\n\n## 3. C\n</div>\n",
            "1. **One.** text\n\n   ## inside the item\n\n2. **Two.**\n## 2. Out\n> quote\n## 3. After\n",
            "## 1. A\n\n~~~\n## in an unclosed fence\n\n## still in it\n",
            "Setext\n------\n\n## 1. A\n  ## 2. Indented\n## 3. É\n\n  text é\n## 4. D\n",
            // A definition after the link it serves: the text is read whole.
            "## 1. A\n\nsee [the trace][t]\n\n## 2. B\n\n[t]: https://example.org/t\n",
        ];
        for text in texts {
            let whole: Vec<_> = Parser::new_ext(text, Options::empty())
                .into_offset_iter()
                .collect();
            for chunk in 0..=text.len() {
                let pieces: Vec<_> = events(text, chunk).collect();
                assert_eq!(pieces, whole, "pieces of {chunk} bytes of {text:?}");
            }
        }
    }

    #[test]
    fn blocks_carry_kinds_codes_items_and_bold_leads() {
        let text = "# T\n\n**1. Fix** it in `a.cpp`.\n\n- state: merged\n- link: x\n";
        let blocks = blocks(text);
        let kinds: Vec<Kind> = blocks.iter().map(|b| b.kind).collect();
        assert_eq!(kinds, [Kind::Heading(1), Kind::Paragraph, Kind::List]);
        assert_eq!(blocks[1].strong_lead.as_ref().unwrap().0, "1. Fix");
        assert_eq!(blocks[1].codes, [("a.cpp".to_string(), 22)]);
        assert_eq!(blocks[2].items.len(), 2);
        assert_eq!(&text[blocks[2].items[1].range.clone()], "- link: x\n");
        assert_eq!(blocks[2].items[0].field.as_deref(), Some("state: merged"));
        let lines = Lines::new(text);
        assert_eq!(
            (
                lines.line(0),
                lines.line(5),
                lines.line(blocks[2].items[1].range.start)
            ),
            (1, 3, 6)
        );
    }

    #[test]
    fn a_field_is_what_the_page_shows_and_a_link_is_its_destination() {
        let text = "- link: [the PR](https://x/pull/1 \"merged\")\n\
                    - state: <!-- merged --> proposed\n\
                    - a sentence, no field: here\n\
                    1. **Entry.** Prose.\n\n   - cause: `1a2b3c4d`\n\n   ```\n   - state: merged\n   ```\n";
        let blocks = blocks(text);
        let fields: Vec<Option<&str>> = (blocks[0].items.iter())
            .map(|i| i.field.as_deref())
            .collect();
        assert_eq!(
            fields,
            [
                Some("link: https://x/pull/1"),
                Some("state:  proposed"),
                None
            ]
        );
        let entry = &blocks[1].items[0];
        assert_eq!(entry.field, None);
        let nested: Vec<Option<&str>> = entry.nested.iter().map(|i| i.field.as_deref()).collect();
        assert_eq!(nested, [Some("cause: `1a2b3c4d`")]);
    }
}
