//! Markdown for the book's pages: how a command's result is shown where Markdown says more than
//! terminal text (a residual's hunks as diffs linked to their fixes, conflicts and drift findings
//! as tables linking upstream), and the quoting every such page needs.
//!
//! The text comes from other people's trees and histories, so everything put into Markdown here
//! goes through one of the quoting functions below; the book escapes raw HTML and unsafe links
//! again when it splices the Markdown in. The engine knows nothing of mdBook: a page is plain
//! Markdown, and [`PageLinks`] says where its links point.

use forkbook_records::remote::web_address;

/// Where the links of a result's Markdown point.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageLinks {
    /// The upstream repository's web address (`https://github.com/ml-explore/mlx`), when the
    /// configuration names one: commits and pull requests link there.
    pub upstream_web: Option<String>,
    /// The page holding the register's entries, each under the anchor `fix-N` (`register.md`);
    /// `None` names fixes without a link.
    pub register_page: Option<String>,
}

impl PageLinks {
    /// `[fix 3](register.md#fix-3)`, or `fix 3` with no register page.
    pub fn fix(&self, number: usize) -> String {
        match &self.register_page {
            Some(page) => format!("[fix {number}]({page}#fix-{number})"),
            None => format!("fix {number}"),
        }
    }

    /// The fixes as links, `, `-separated; `no fix` for none.
    pub fn fixes(&self, numbers: &[usize]) -> String {
        if numbers.is_empty() {
            return "no fix".to_string();
        }
        let links: Vec<String> = numbers.iter().map(|&n| self.fix(n)).collect();
        links.join(", ")
    }

    /// An upstream commit as a link (with its pull request's link), or as code with no web
    /// address.
    pub fn upstream_commit(&self, sha: &str, summary: &str) -> String {
        commit_link(
            self.upstream_web.as_deref(),
            sha,
            summary,
            pr_number(summary),
        )
    }
}

impl PageLinks {
    /// `path:line` linked to the file at upstream commit `sha`, or as code with no web address.
    pub fn upstream_file(&self, sha: &str, path: &str, line: usize) -> String {
        let shown = code_cell(&format!("{path}:{line}"));
        match &self.upstream_web {
            Some(web) if sha.chars().all(|c| c.is_ascii_hexdigit()) && !sha.is_empty() => {
                format!("[{shown}]({web}/blob/{sha}/{}#L{line})", url_path(path))
            }
            _ => shown,
        }
    }
}

/// A repository path as it goes into a URL: every byte outside `A-Z a-z 0-9 - . _ ~ /`
/// percent-encoded, so no path can end the link or add a query.
fn url_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// forkbook's own words, where each `` `pair` `` of backticks holds a name from someone's tree:
/// the names become code spans, the rest text, both quoted; an odd backtick stays text.
pub fn prose(words: &str) -> String {
    prose_with(words, code_span)
}

/// [`prose`] in a table cell: each name as [`code_cell`], which breaks only at its separators.
pub fn prose_cell(words: &str) -> String {
    prose_with(words, code_cell)
}

fn prose_with(words: &str, code: fn(&str) -> String) -> String {
    let parts: Vec<&str> = words.split('`').collect();
    let pairs = (parts.len() - 1) / 2;
    let mut out = String::with_capacity(words.len() + 16);
    for (i, part) in parts.iter().enumerate() {
        let inside = i % 2 == 1 && i.div_ceil(2) <= pairs;
        if inside {
            out.push_str(&code(part));
        } else {
            if i > 0 && !(i % 2 == 0 && i / 2 <= pairs) {
                out.push_str("\\`");
            }
            out.push_str(&cell(&text(part)));
        }
    }
    out
}

/// Text safe inside Markdown: punctuation Markdown reads is backslash-escaped, `<` and `&`
/// become entities so no HTML survives, control characters become visible.
pub fn text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Control characters shown as the terminal shows them (`\033`, its backslash escaped
    // below); a line break or tab left by that becomes U+FFFD, so the text stays inline.
    for c in crate::terminal::escape_controls(text).chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '#' | '!' | '|' | '~' | '{' | '}'
            | '>' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    inert_references(&out)
}

/// The zero-width space (U+200B) that [`inert_references`] puts inside a mention or reference.
const ZERO_WIDTH_SPACE: char = '\u{200b}';

/// `text` with a zero-width space after each `@` that starts a GitHub mention (`@user`,
/// `@org/team`), each `#` that starts a reference (`#12`, `owner/repo#12`) and each `GH-` before
/// a number: text from upstream's history or the register, posted in a pull request, then
/// notifies no one and links no issue of the repository it is posted in (upstream's `#12` is not
/// ours). GitHub finds mentions and references in the rendered text, after Markdown's escapes
/// are gone (so `\@` or `\#` would not do), and not in code or links; the space is invisible,
/// and the way Dependabot quotes a release note's mentions.
pub fn inert_references(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        out.push(c);
        let next = chars.peek().map(|&(_, next)| next);
        let starts = match c {
            // The full-width sign too: what a reader takes for a mention is kept from being one.
            '@' | '\u{ff20}' => next.is_some_and(|n| n.is_ascii_alphanumeric()),
            '#' => next.is_some_and(|n| n.is_ascii_digit()),
            '-' => {
                // Bytes, not a slice of the text: the two bytes before `-` may end a wider
                // character, and a slice there would panic.
                let before = &text.as_bytes()[..at];
                let gh =
                    before.len() >= 2 && before[before.len() - 2..].eq_ignore_ascii_case(b"gh");
                gh && next.is_some_and(|n| n.is_ascii_digit())
            }
            _ => false,
        };
        if starts {
            out.push(ZERO_WIDTH_SPACE);
        }
    }
    out
}

/// Markdown someone wrote (a register entry's prose, posted in a pull request to the fork) with
/// the mentions and references of its text made inert ([`inert_references`]), the text of its
/// HTML too (GitHub finds mentions in the text an HTML block shows); code, code blocks, links,
/// HTML tags and web addresses (`https://…/#12`) stay as they are written.
pub fn inert_references_in(markdown: &str) -> String {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut out = String::with_capacity(markdown.len() + 16);
    let (mut copied, mut kept) = (0, 0usize);
    for (event, range) in Parser::new(markdown).into_offset_iter() {
        match event {
            Event::Start(Tag::Link { .. } | Tag::Image { .. } | Tag::CodeBlock(_)) => kept += 1,
            Event::End(TagEnd::Link | TagEnd::Image | TagEnd::CodeBlock) => {
                kept = kept.saturating_sub(1)
            }
            Event::Text(_) if kept == 0 && range.start >= copied => {
                out.push_str(&markdown[copied..range.start]);
                out.push_str(&inert_words(&markdown[range.clone()]));
                copied = range.end;
            }
            Event::Html(_) | Event::InlineHtml(_) if kept == 0 && range.start >= copied => {
                out.push_str(&markdown[copied..range.start]);
                out.push_str(&inert_html(&markdown[range.clone()]));
                copied = range.end;
            }
            _ => {}
        }
    }
    out.push_str(&markdown[copied..]);
    out
}

/// [`inert_references`] of each word of `text` but its web address: the part of a word from a
/// `scheme://` on is a link GitHub makes (a `#12` there is the address's), the part before it is
/// text (`(@someone:https://x.org)` mentions someone).
fn inert_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for word in text.split_inclusive(char::is_whitespace) {
        let Some(at) = word.find("://") else {
            out.push_str(&inert_references(word));
            continue;
        };
        let scheme = word[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
            .map_or(0, |before| before + 1);
        out.push_str(&inert_references(&word[..scheme]));
        out.push_str(&word[scheme..]);
    }
    out
}

/// HTML someone wrote with the text between its tags made inert ([`inert_words`]); each tag
/// (`<…>`, a comment's start to its first `>`) as it is written.
fn inert_html(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + 8);
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&inert_words(&rest[..open]));
        let close = rest[open..]
            .find('>')
            .map_or(rest.len(), |at| open + at + 1);
        out.push_str(&rest[open..close]);
        rest = &rest[close..];
    }
    out.push_str(&inert_words(rest));
    out
}

/// The remote's web address ([`web_address`]) for a link on a page, only when it is plain: no
/// credentials, query, fragment, spaces or characters that end a Markdown link.
pub fn web_base(url: &str) -> Option<String> {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-._~/".contains(c);
    web_address(url).filter(|web| {
        let rest = web.trim_start_matches("https://");
        rest.contains('/') && rest.chars().all(safe)
    })
}

/// The last `(#N)` of a commit subject, GitHub's squash-merge form.
pub fn pr_number(summary: &str) -> Option<u64> {
    let mut found = None;
    let mut rest = summary;
    while let Some(at) = rest.find("(#") {
        let after = &rest[at + 2..];
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() && after[digits.len()..].starts_with(')') {
            found = digits.parse().ok();
        }
        rest = after;
    }
    found
}

/// `[`sha`](web/commit/SHA) subject ([#N](web/pull/N))`: an upstream commit linked, its pull
/// request (the subject's `(#N)`) linked on its own; `` `sha` subject `` with no web address.
/// The subject comes from someone else's history: every Markdown-significant character in it
/// is escaped.
pub fn commit_link(web: Option<&str>, sha: &str, summary: &str, pr: Option<u64>) -> String {
    let short = crate::text::short_id(sha);
    match web {
        Some(base) => {
            let subject = match pr {
                Some(n) => summary
                    .trim_end()
                    .strip_suffix(&format!("(#{n})"))
                    .unwrap_or(summary)
                    .trim_end(),
                None => summary,
            };
            let pr = pr
                .map(|n| format!(" ([#{n}]({base}/pull/{n}))"))
                .unwrap_or_default();
            format!("[`{short}`]({base}/commit/{sha}) {}{pr}", text(subject))
        }
        None => format!("`{short}` {}", text(summary)),
    }
}

/// Text safe inside a table cell: one line, no `|`, control characters shown escaped as on a
/// terminal (`\033`).
pub fn cell(text: &str) -> String {
    crate::terminal::escape_controls(&text.replace(['\n', '\r'], " ")).replace('|', "\\|")
}

/// A code span holding `text` whatever backticks it contains, safe in a table cell.
pub fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    cell(&format!("{ticks} {text} {ticks}"))
}

/// A name in a table cell: HTML code with a break opportunity (`<wbr>`) after each `/`, `::`,
/// `_`, `.`, `:` of `path:line`, `,` and `(`, so a narrow column breaks a path or a symbol there rather than inside a word
/// (`collapse_co|ntiguous_di|ms`); each piece quoted as [`text`] quotes it, so no Markdown or
/// HTML of the name's survives (a code span cannot hold a `<wbr>`).
pub fn code_cell(name: &str) -> String {
    let mut out = String::from("<code>");
    let mut piece = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        piece.push(c);
        let next = chars.peek().copied();
        let after = match c {
            '/' | '_' | '.' | ',' | '(' => true,
            // `a::b` breaks after the pair, `path:line` after its colon.
            ':' => next != Some(':'),
            _ => false,
        };
        if after && next.is_some() {
            out.push_str(&cell(&text(&piece)));
            out.push_str("<wbr>");
            piece.clear();
        }
    }
    out.push_str(&cell(&text(&piece)));
    out.push_str("</code>");
    out
}

/// Text safe as a heading: one line, no trailing `{…}` that would read as attributes, and no
/// leading `#` that would change the level.
pub fn heading_text(text: &str) -> String {
    crate::terminal::escape_controls(&text.replace(['\n', '\r'], " "))
        .replace('{', "\\{")
        .replace('}', "\\}")
        .trim()
        .trim_start_matches('#')
        .to_string()
}

/// A link for a plain web address (`NripeshN/mlx#12` for a GitHub pull request), else code.
pub fn link(url: &str) -> String {
    let plain = url.starts_with("https://")
        && !url.contains(|c: char| c.is_whitespace() || "<>()[]|`".contains(c));
    if !plain || never_resolves(url) {
        return code_span(url);
    }
    let text = match url
        .trim_start_matches("https://github.com/")
        .split('/')
        .collect::<Vec<_>>()[..]
    {
        [owner, repo, "pull", number] if url.starts_with("https://github.com/") => {
            format!("{owner}/{repo}#{number}")
        }
        _ => url.to_string(),
    };
    format!("[{text}]({url})")
}

/// Whether `url`'s host is under `.invalid`, the name reserved never to resolve (RFC 2606): the
/// demo's examples of links, which a page shows as code rather than as a link that leads
/// nowhere.
pub fn never_resolves(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    let host = host.split(':').next().unwrap_or(host).trim_end_matches('.');
    host.to_ascii_lowercase().ends_with(".invalid") || host.eq_ignore_ascii_case("invalid")
}

/// A fenced code block of `language` holding `body` whatever it contains: the fence is longer
/// than any run of backticks in it.
pub fn code_block(language: &str, body: &str) -> String {
    let longest = body
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or(0)
        .max(2);
    let fence = "`".repeat(longest + 1);
    let body = crate::terminal::escape_controls(body.strip_suffix('\n').unwrap_or(body));
    format!("{fence}{language}\n{body}\n{fence}\n")
}

/// A table: a header row and rows of cells already quoted for Markdown.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!("|{}\n", " --- |".repeat(header.len())));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `-` after a character wider than one byte is no `GH-` reference, and no panic: the
    /// two bytes before it end the character (a slice of the text there panicked).
    #[test]
    fn a_dash_after_a_wide_character_is_kept_as_it_is() {
        assert_eq!(
            inert_references("\u{20ac}-1 GH-2"),
            "\u{20ac}-1 GH-\u{200b}2"
        );
    }

    /// Fails on main before this change: a code span, cell, code block or heading carried a
    /// fork file name's ESC and BEL into the page as raw bytes.
    #[test]
    fn control_characters_are_shown_as_the_terminal_shows_them() {
        let name = "a\u{1b}]0;owned\u{7}\r\u{7f}\u{9b}b";
        for (what, md) in [
            ("code span", code_span(name)),
            ("cell", cell(name)),
            ("code block", code_block("text", name)),
            ("heading", heading_text(name)),
            ("text", text(name)),
            ("prose", prose(&format!("`{name}` and {name}"))),
        ] {
            assert!(
                !md.contains(|c: char| c.is_control() && c != '\n'),
                "{what}: {md:?}"
            );
            assert!(md.contains("033") && md.contains("owned"), "{what}: {md:?}");
        }
        assert_eq!(code_span(name), "` a\\033]0;owned\\a \\177\\302\\233b `");
    }

    #[test]
    fn cells_and_spans_survive_pipes_backticks_and_odd_links() {
        assert_eq!(code_span("a|b`c"), "`` a\\|b`c ``");
        assert_eq!(
            code_cell("mlx/core::collapse_contiguous_dims<a|b>"),
            "<code>mlx/<wbr>core::<wbr>collapse\\_<wbr>contiguous\\_<wbr>dims&lt;a\\\\|b\\></code>"
        );
        assert_eq!(
            code_cell("a/b.cpp:12 f(x,y)"),
            "<code>a/<wbr>b.<wbr>cpp:<wbr>12 f\\(<wbr>x,<wbr>y\\)</code>"
        );
        assert_eq!(
            link("https://github.com/NripeshN/mlx/pull/12"),
            "[NripeshN/mlx#12](https://github.com/NripeshN/mlx/pull/12)"
        );
        assert_eq!(link("javascript:alert(1)"), "` javascript:alert(1) `");
        assert_eq!(
            link("https://fork.example.invalid/pull/101"),
            "` https://fork.example.invalid/pull/101 `"
        );
        assert!(!never_resolves("https://github.com/o/r/pull/1"));
        assert!(never_resolves("https://u@Fork.Example.INVALID.:443/x"));
    }

    #[test]
    fn upstream_files_link_with_their_path_encoded() {
        let links = PageLinks {
            upstream_web: Some("https://github.com/o/r".into()),
            register_page: None,
        };
        assert_eq!(
            links.upstream_file("abc123", "mlx/a b).h", 7),
            "[<code>mlx/<wbr>a b\\).<wbr>h:<wbr>7</code>](https://github.com/o/r/blob/abc123/mlx/a%20b%29.h#L7)"
        );
        assert_eq!(
            PageLinks::default().upstream_file("abc123", "mlx/a.h", 7),
            "<code>mlx/<wbr>a.<wbr>h:<wbr>7</code>"
        );
    }

    #[test]
    fn prose_makes_code_of_backtick_pairs_and_quotes_the_rest() {
        assert_eq!(
            prose("calls `f(a|b)` with *1*"),
            "calls ` f(a\\|b) ` with \\*1\\*"
        );
        assert_eq!(prose("odd ` tick"), "odd \\` tick");
        assert_eq!(prose("`a` and `b"), "` a ` and \\`b");
    }

    #[test]
    fn a_code_block_outlasts_the_backticks_inside_it() {
        let block = code_block("diff", "+ ```` not the end\n");
        assert!(block.starts_with("`````diff\n"), "{block}");
        assert!(block.ends_with("\n`````\n"), "{block}");
    }

    #[test]
    fn fixes_link_to_their_register_cards_when_there_is_a_page() {
        let links = PageLinks {
            upstream_web: None,
            register_page: Some("register.md".into()),
        };
        assert_eq!(
            links.fixes(&[2, 5]),
            "[fix 2](register.md#fix-2), [fix 5](register.md#fix-5)"
        );
        assert_eq!(PageLinks::default().fixes(&[2]), "fix 2");
        assert_eq!(links.fixes(&[]), "no fix");
    }

    /// Fails on main before this change: an upstream subject's `@someone` went into a pull
    /// request's body as it was, and GitHub notified someone; `#12` linked our issue 12.
    #[test]
    fn mentions_and_references_are_made_inert() {
        let subject =
            "fix: thanks @someone and @ml-explore/core (#12, GH-7, a/b#3); mail a@b, #x, @-";
        let zw = ZERO_WIDTH_SPACE;
        assert_eq!(
            text(subject),
            format!(
                "fix: thanks @{zw}someone and @{zw}ml-explore/core \\(\\#{zw}12, GH-{zw}7, \
                 a/b\\#{zw}3\\); mail a@{zw}b, \\#x, @-"
            )
        );
        assert_eq!(inert_references("gh-12"), format!("gh-{zw}12"));
        assert_eq!(inert_references("@"), "@");
        assert_eq!(
            inert_references("\u{ff20}someone"),
            format!("\u{ff20}{zw}someone")
        );
    }

    /// Fails on main before this change: a word holding a web address was kept whole, so the
    /// `@someone` before the address in it stayed a mention, and the text of an HTML block or
    /// inline element (`<p>thanks @someone</p>`, which GitHub renders and finds mentions in)
    /// went into the fork's pull request as it was.
    #[test]
    fn a_mention_beside_an_address_or_in_html_is_made_inert() {
        let zw = ZERO_WIDTH_SPACE;
        let prose = "Found by (@someone:https://example.org/a#12) and @a,https://x.org.\n\n\
                     <p>thanks @someone and <b>@ml-explore/core</b> (#7)</p>\n\n\
                     Inline <span title=\"@x\">@other</span> <!-- @hidden --> too.\n";
        assert_eq!(
            inert_references_in(prose),
            format!(
                "Found by (@{zw}someone:https://example.org/a#12) and @{zw}a,https://x.org.\n\n\
                 <p>thanks @{zw}someone and <b>@{zw}ml-explore/core</b> (#{zw}7)</p>\n\n\
                 Inline <span title=\"@x\">@{zw}other</span> <!-- @hidden --> too.\n"
            )
        );
    }

    #[test]
    fn the_register_s_mentions_are_inert_and_its_code_links_and_addresses_kept() {
        let zw = ZERO_WIDTH_SPACE;
        let prose = "Thanks @someone (see #12 and https://example.org/a#12).\n\n\
                     `@code #1` [@link #2](https://x.org/#3)\n\n```\n@block #4\n```\n";
        assert_eq!(
            inert_references_in(prose),
            format!(
                "Thanks @{zw}someone (see #{zw}12 and https://example.org/a#12).\n\n\
                 `@code #1` [@link #2](https://x.org/#3)\n\n```\n@block #4\n```\n"
            )
        );
    }
}
