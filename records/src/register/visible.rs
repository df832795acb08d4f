//! The register's words as a reader of the rendered page has them: the one view every reading
//! of an entry's words (its state, links, issue references, the register's policy) is made from.
//!
//! Built from pulldown-cmark's events, so it is what mdBook and GitHub render: HTML (a comment,
//! a block, inline tags) and the content of a code block and of an image are not there; a link
//! is its text and then its destination in parentheses (its title is not there); a code span is
//! kept in backticks (a backtick of the text shows as `'`), so a reading can leave it out; a
//! block quote's paragraphs are in quotation marks (someone else's words); and every block ends
//! with a blank line, so no sentence runs from one block into the next. Struck text (`~~…~~`,
//! which mdBook and GitHub strike through, and `<del>`, `<s>`, `<strike>`) is taken back, and
//! text inside an inline element with a `hidden` or `style` attribute may not be seen at all:
//! neither is there.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// The visible text of a Markdown source, and where each piece of it comes from.
#[derive(Debug, Default)]
pub struct Visible {
    text: String,
    /// `(visible offset, source offset, length)` of each run where both advance together.
    pieces: Vec<(usize, usize, usize)>,
}

impl Visible {
    /// The visible text of `source`.
    pub fn of(source: &str) -> Visible {
        let mut view = Visible::default();
        let mut hidden = 0usize; // inside a code block, an image or struck text
        let mut quote = 0usize;
        let mut links: Vec<(String, usize)> = Vec::new();
        let mut inline_html = InlineHtml::default();
        let options = Options::ENABLE_STRIKETHROUGH;
        for (event, range) in Parser::new_ext(source, options).into_offset_iter() {
            match event {
                Event::InlineHtml(tag) => inline_html.read(&tag),
                Event::Text(_) | Event::Code(_) if inline_html.hides() => {}
                Event::Text(t) if hidden == 0 => view.push(&t.replace('`', "'"), range.start),
                Event::Code(code) if hidden == 0 => {
                    view.push(&format!("`{}`", code.replace('`', "'")), range.start)
                }
                Event::SoftBreak | Event::HardBreak if hidden == 0 => view.push(" ", range.start),
                Event::Start(Tag::CodeBlock(_) | Tag::Image { .. } | Tag::Strikethrough) => {
                    hidden += 1
                }
                Event::End(TagEnd::Strikethrough) => hidden -= 1,
                Event::End(TagEnd::CodeBlock) => {
                    hidden -= 1;
                    view.push("\n\n", range.end);
                }
                Event::End(TagEnd::Image) => hidden -= 1,
                Event::Start(Tag::BlockQuote(_)) => quote += 1,
                Event::End(TagEnd::BlockQuote(_)) => quote -= 1,
                Event::Start(Tag::Paragraph) if quote > 0 => view.push("“", range.start),
                Event::Start(Tag::Link { dest_url, .. }) if hidden == 0 => {
                    links.push((dest_url.to_string(), view.text.len()))
                }
                Event::End(TagEnd::Link) if hidden == 0 => {
                    if let Some((dest, at)) = links.pop() {
                        if view.text[at..].trim() != dest {
                            view.push(&format!(" ({dest})"), range.end);
                        }
                    }
                }
                Event::End(TagEnd::Paragraph) if quote > 0 => view.push("”\n\n", range.end),
                Event::End(
                    TagEnd::Paragraph
                    | TagEnd::Heading(_)
                    | TagEnd::Item
                    | TagEnd::HtmlBlock
                    | TagEnd::List(_),
                ) => view.push("\n\n", range.end),
                _ => {}
            }
        }
        view
    }

    fn push(&mut self, shown: &str, source: usize) {
        let at = self.text.len();
        match self.pieces.last_mut() {
            Some((vis, src, len)) if *vis + *len == at && *src + *len == source => {
                *len += shown.len()
            }
            _ => self.pieces.push((at, source, shown.len())),
        }
        self.text.push_str(shown);
    }

    /// The whole visible text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The source byte the visible offset `at` was shown from.
    pub fn source_at(&self, at: usize) -> usize {
        let index = self.pieces.partition_point(|p| p.0 <= at);
        index
            .checked_sub(1)
            .and_then(|i| self.pieces.get(i))
            .map_or(0, |&(vis, src, len)| src + (at - vis).min(len))
    }
}

/// The inline HTML elements open at a point of a paragraph, each with whether it hides what it
/// holds from a reader: struck (`<del>`, `<s>`, `<strike>`) or with an attribute that can hide it
/// (`hidden`, or a `style`, which may say `display:none` or anything else that hides).
#[derive(Default)]
struct InlineHtml {
    open: Vec<(String, bool)>,
}

impl InlineHtml {
    fn read(&mut self, tag: &str) {
        let Some(inner) = tag.trim().strip_prefix('<') else {
            return;
        };
        let inner = inner.trim_end_matches('>');
        if let Some(name) = inner.strip_prefix('/') {
            let name = name.trim().to_ascii_lowercase();
            if let Some(at) = self.open.iter().rposition(|(open, _)| *open == name) {
                self.open.truncate(at);
            }
            return;
        }
        if inner.starts_with('!') || inner.starts_with('?') || inner.ends_with('/') {
            return;
        }
        let mut words = inner.split(|c: char| c.is_whitespace() || c == '=');
        let name = words.next().unwrap_or_default().to_ascii_lowercase();
        let struck = matches!(name.as_str(), "del" | "s" | "strike");
        let hiding = words.any(|word| {
            let word = word.to_ascii_lowercase();
            word == "hidden" || word == "style"
        });
        self.open.push((name, struck || hiding));
    }

    fn hides(&self) -> bool {
        self.open.iter().any(|(_, hides)| *hides)
    }
}

/// `text` without its code spans (each becomes one space): what a claim is read from. A code
/// span is an example, a name or a value, never a sentence of the register.
pub fn without_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        match (c, in_code) {
            ('`', false) => in_code = true,
            ('`', true) => {
                in_code = false;
                out.push(' ');
            }
            (_, true) => {}
            (c, false) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_code_blocks_titles_and_images_are_not_shown() {
        let source = "Kept <!-- merged as https://x/pull/1 --> here.\n\n\
                      <!--\n- state: merged\n-->\n\n```\nMerged as https://x/pull/2.\n```\n\n\
                      See [the PR](https://x/pull/3 \"merged\") and ![merged](a.png) `merged`.\n\n\
                      > Merged upstream.\n";
        let view = Visible::of(source);
        let text = view.text();
        assert!(
            !text.contains("pull/1") && !text.contains("pull/2"),
            "{text}"
        );
        assert!(
            text.contains("See the PR (https://x/pull/3) and  `merged`."),
            "{text}"
        );
        assert!(text.contains("“Merged upstream.”"), "{text}");
        assert_eq!(text.matches("merged").count(), 1, "{text}");
        assert_eq!(
            without_code("a `merged` b"),
            "a   b",
            "a code span says nothing"
        );
    }

    /// Fails on main before this change: each sentence below read as this entry merged
    /// (`fixes list`: `[merged]`), though a reader of the page sees the words struck through or
    /// not at all.
    #[test]
    fn struck_and_hidden_words_are_not_shown() {
        for source in [
            "Sent as https://x/pull/1 ~~and merged into the fork~~.\n",
            "Sent as https://x/pull/1 <del>and merged into the fork</del>.\n",
            "Sent as https://x/pull/1 <S>and merged into the fork</S>.\n",
            "Sent as https://x/pull/1 <strike>and merged into the fork</strike>.\n",
            "Sent as https://x/pull/1 <span hidden>and merged into the fork</span>.\n",
            "Sent as https://x/pull/1 <sup hidden=\"\">and <b>merged</b> into the fork</sup>.\n",
            "Sent as https://x/pull/1 <span style=\"display:none\">and merged into the fork</span>.\n",
        ] {
            let text = Visible::of(source).text().to_string();
            assert!(!text.contains("merged"), "{source:?}: {text}");
            assert!(text.contains("Sent as https://x/pull/1"), "{source:?}: {text}");
        }
        let shown = Visible::of("Sent <b>and merged</b> <br> into <i>the</i> fork.\n");
        assert_eq!(shown.text().trim(), "Sent and merged  into the fork.");
    }

    #[test]
    fn a_visible_offset_maps_back_to_its_source() {
        let source = "# T\n\n<!-- x -->\n\nOne two.\n";
        let view = Visible::of(source);
        let start = source.find("One").unwrap();
        let at = view.text().find("One").unwrap();
        assert_eq!(view.source_at(at), start);
        assert_eq!(view.source_at(at + 4), start + 4);
    }
}
