//! `fixes migrate`: a register whose entries are numbered list items (`N. **Title.** prose…`)
//! or bold numbered paragraphs (`**N. Title.** prose…`) turned into one with `## N. Title`
//! headings and a field list with a state, for users who want the heading form.
//!
//! It is lossless: every word of every entry's prose stays, in order, status sentence
//! included, and the numbering stays. What changes is stated: the bold title becomes a
//! `## N. Title` heading (without its closing period), a list entry's continuation lines lose
//! the item's indentation, and a field list is added with what the entry's words give (see
//! [`super::words`]). Sections, intros and other lists stay byte for byte. The user reads the
//! diff before `--write`.

use serde::Serialize;

use super::{list_item_head, numbered_title, parse, Entry, Form, State};
use forkbook_records::register::blocks::{blocks, Block, Kind, Lines};
use forkbook_records::register::visible::Visible;
use forkbook_records::register::words;

/// The migrated text, its diff against the original, and what was proposed for each entry.
#[derive(Debug, Clone, Serialize)]
pub struct Migration {
    pub text: String,
    /// Unified diff from the old text to the new (empty when nothing changes).
    pub diff: String,
    pub proposals: Vec<Proposal>,
}

/// What the migration made of one entry.
#[derive(Debug, Clone, Serialize)]
pub struct Proposal {
    pub number: u32,
    pub title: String,
    /// Line of the title in the old text.
    pub line: usize,
    /// The sentence (or section) the state was read from, when one says it.
    pub status: Option<String>,
    pub state: Option<State>,
    pub fields: Vec<(String, String)>,
    /// Fields the state needs that the words did not give.
    pub missing: Vec<String>,
}

/// Migrates `text`; `file` labels the diff, `fork_web` (e.g. `https://github.com/NripeshN/mlx`)
/// turns a bare `PR #12` into a link.
pub fn migrate(text: &str, file: &str, fork_web: Option<&str>) -> Migration {
    let register = parse(file, text);
    let listed: Vec<&Entry> = register
        .entries
        .iter()
        .filter(|e| matches!(e.form, Form::ListItem { .. }))
        .collect();
    let (out, mut proposals) = if listed.is_empty() {
        migrate_bold(text, fork_web)
    } else {
        migrate_list(text, &listed, fork_web)
    };
    let diff = unified_diff(text, &out, file);
    // What each entry still needs is what `check` will ask of it once migrated: one rule.
    let migrated = parse(file, &out);
    for proposal in &mut proposals {
        if let Some(entry) = migrated.entry(proposal.number) {
            proposal.missing = entry.still_needs().into_iter().map(String::from).collect();
        }
    }
    Migration {
        text: out,
        diff,
        proposals,
    }
}

/// List entries: each item becomes a heading entry in its place.
fn migrate_list(text: &str, entries: &[&Entry], fork_web: Option<&str>) -> (String, Vec<Proposal>) {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut proposals = Vec::new();
    let mut next_line = 1;
    for entry in entries {
        let Form::ListItem { indent } = entry.form else {
            continue;
        };
        // An item inside the previous one's lines (a nested or overlapping list) was written
        // with it; an item whose lines are not all there cannot be moved either.
        if entry.line < next_line || entry.end_line < entry.line || entry.end_line > lines.len() {
            continue;
        }
        // What lies between the previous entry and this one stays as it was.
        for line in &lines[next_line - 1..entry.line - 1] {
            out.push_str(line);
        }
        let mut proposal = proposal_of(entry, fork_web);
        // Fields the entry already has stay where they are, so only its words add any.
        if entry.field("state").is_some() {
            proposal.fields.clear();
        }
        let source: String = lines[entry.line - 1..entry.end_line].concat();
        // The item's lines as the register reader saw them; where they no longer read as a list
        // item on their own (line ends the reader took differently), the item stays as written.
        let Some(heading) = heading_entry(&source, indent, &proposal) else {
            out.push_str(&source);
            next_line = entry.end_line + 1;
            continue;
        };
        out.push_str(&heading);
        let following = lines.get(entry.end_line).map_or("", |l| l.trim());
        if !following.is_empty() {
            out.push('\n');
        }
        proposals.push(proposal);
        next_line = entry.end_line + 1;
    }
    for line in &lines[(next_line - 1).min(lines.len())..] {
        out.push_str(line);
    }
    (out, proposals)
}

/// One list item's text as a heading entry, ending with a newline; `None` when its first line
/// is not a list item's head.
fn heading_entry(source: &str, indent: usize, proposal: &Proposal) -> Option<String> {
    let head = list_item_head(source)?;
    let mut body = String::new();
    let mut offset = 0;
    for (index, line) in source.split_inclusive('\n').enumerate() {
        // A bold title may run onto later lines: the body starts at `body_start`, wherever it is.
        let start = offset;
        offset += line.len();
        if head.body_start >= offset {
            continue;
        } else if head.body_start > start || index == 0 {
            let from = head.body_start.saturating_sub(start);
            body.push_str(line.get(from..).unwrap_or("").trim_start());
        } else {
            let spaces = line.len() - line.trim_start_matches(' ').len();
            body.push_str(&line[spaces.min(indent)..]);
        }
    }
    Some(heading_text(proposal, &body))
}

/// An entry as a `## N. Title` heading, its body (trimmed at its end) and the proposed fields,
/// ending with a newline.
fn heading_text(proposal: &Proposal, body: &str) -> String {
    let mut text = format!("## {}. {}\n\n", proposal.number, proposal.title);
    let body = body.trim_end();
    if !body.is_empty() {
        text.push_str(body);
        text.push('\n');
    }
    if !proposal.fields.is_empty() {
        text.push('\n');
    }
    for (key, value) in &proposal.fields {
        text.push_str(&format!("- {key}: {value}\n"));
    }
    text
}

/// What the entry's words give, as the fields the migration adds.
fn proposal_of(entry: &Entry, fork_web: Option<&str>) -> Proposal {
    let stated = entry.stated.as_ref();
    let status = stated.map(|s| s.from.clone());
    let said = stated.map(|s| (s.state, s.fields.as_slice()));
    let title = entry.title.clone();
    proposal(entry.number, title, entry.line, status, said, fork_web)
}

/// The proposal for entry `number`: with the state `said` gives (and the fields the words give
/// with it), the fields `state` first, then those, then the pull request's link `status` names.
fn proposal(
    number: u32,
    title: String,
    line: usize,
    status: Option<String>,
    said: Option<(State, &[(String, String)])>,
    fork_web: Option<&str>,
) -> Proposal {
    let mut fields = Vec::new();
    if let Some((state, given)) = said {
        fields.push(("state".to_string(), state.as_str().to_string()));
        fields.extend_from_slice(given);
        let sentence = status.as_deref().unwrap_or("");
        add_pull_link(state, sentence, fork_web, &mut fields);
    }
    let state = said.map(|(state, _)| state);
    Proposal {
        number,
        title,
        line,
        missing: missing(state, &fields),
        status,
        state,
        fields,
    }
}

/// `PR #12` in a proposed or merged sentence becomes a link to the fork's pull request.
fn add_pull_link(
    state: State,
    sentence: &str,
    fork_web: Option<&str>,
    fields: &mut Vec<(String, String)>,
) {
    let wants_link = matches!(state, State::Proposed | State::Merged);
    if !wants_link || fields.iter().any(|(k, _)| k == "link") {
        return;
    }
    if let (Some(number), Some(web)) = (words::pr_number(sentence), fork_web) {
        let link = format!("{}/pull/{number}", web.trim_end_matches('/'));
        fields.insert(1, ("link".to_string(), link));
    }
}

fn missing(state: Option<State>, fields: &[(String, String)]) -> Vec<String> {
    match state {
        None => vec!["state".to_string()],
        Some(state) => {
            let mut needed: Vec<&str> = state.required_fields().to_vec();
            if state == State::ToPropose {
                needed.push("link");
            }
            needed
                .into_iter()
                .filter(|k| !fields.iter().any(|(f, _)| f == k))
                .map(String::from)
                .collect()
        }
    }
}

/// Bold numbered paragraphs: the title becomes a heading, the rest stays.
fn migrate_bold(text: &str, fork_web: Option<&str>) -> (String, Vec<Proposal>) {
    let blocks = blocks(text);
    let lines = Lines::new(text);
    let titles: Vec<usize> = (0..blocks.len())
        .filter(|&i| bold_title(&blocks[i]).is_some())
        .collect();
    let mut out = String::new();
    let mut proposals = Vec::new();
    let mut at = 0;
    for (k, &index) in titles.iter().enumerate() {
        let end = region_end(&blocks, index, titles.get(k + 1).copied(), text.len());
        out.push_str(&text[at..blocks[index].range.start]);
        let (entry, proposal) = migrate_entry(text, &blocks, index, end, &lines, fork_web);
        out.push_str(&entry);
        if end == text.len() {
            out.truncate(out.trim_end().len());
            out.push('\n');
        }
        proposals.push(proposal);
        at = end;
    }
    out.push_str(&text[at..]);
    (out, proposals)
}

/// A paragraph opening with bold `N. Title`: the number and title.
fn bold_title(block: &Block) -> Option<(u32, String)> {
    let (lead, range) = block.strong_lead.as_ref()?;
    if block.kind != Kind::Paragraph || range.start != block.range.start {
        return None;
    }
    numbered_title(lead).map(|(n, title)| (n, title.trim_end_matches(['.', ':']).to_string()))
}

/// Where the entry starting at block `index` ends: the next title, the next heading, or the end.
fn region_end(blocks: &[Block], index: usize, next_title: Option<usize>, len: usize) -> usize {
    let stop = blocks[index + 1..]
        .iter()
        .position(|b| matches!(b.kind, Kind::Heading(l) if l <= 2))
        .map(|p| p + index + 1);
    match (next_title, stop) {
        (Some(t), Some(s)) => blocks[t.min(s)].range.start,
        (Some(i), None) | (None, Some(i)) => blocks[i].range.start,
        (None, None) => len,
    }
}

/// One bold entry's new text and what was proposed for it.
fn migrate_entry(
    text: &str,
    blocks: &[Block],
    index: usize,
    end: usize,
    lines: &Lines,
    fork_web: Option<&str>,
) -> (String, Proposal) {
    let title_block = &blocks[index];
    let (number, title) = bold_title(title_block).unwrap_or_default();
    let body_start = title_block
        .strong_lead
        .as_ref()
        .map_or(title_block.range.end, |(_, r)| r.end);
    let last_paragraph = blocks[index..]
        .iter()
        .take_while(|b| b.range.start < end)
        .filter(|b| b.kind == Kind::Paragraph)
        .last()
        .map(|b| b.range.start.max(body_start)..b.range.end);
    let sentence = last_paragraph.and_then(|p| status_sentence(&text[p]));
    // The state a status sentence says and the fields it gives.
    let said = sentence.as_deref().and_then(|s| words::classify(s, None));
    let said = said.as_ref().map(|s| (s.state, s.fields.as_slice()));
    let line = lines.line(title_block.range.start);
    let proposal = proposal(number, title, line, sentence, said, fork_web);
    let mut entry = heading_text(&proposal, entry_body(title_block, &text[body_start..end]));
    entry.push('\n');
    (entry, proposal)
}

/// The body after a bold title. A title that ends itself (`**3. Title.**`) has no separator
/// after it: the body is kept whole, whatever it starts with.
fn entry_body<'t>(title_block: &Block, body: &'t str) -> &'t str {
    let closed = title_block
        .strong_lead
        .as_ref()
        .is_some_and(|(lead, _)| lead.trim_end().ends_with(['.', ':', '!', '?']));
    if closed {
        body.trim_start()
    } else {
        without_separator(body)
    }
}

/// An open bold title's body without the separator written after the title on its line
/// (`**3. Title** — prose`, `**3. Title**: prose`): one `:`, `.`, `-`, `–` or `—` standing
/// alone before a space. Anything else is the body's own text and stays, `-O3`, `...`, `::` and
/// a list's `- ` on the next line included.
fn without_separator(body: &str) -> &str {
    let rest = body.trim_start_matches([' ', '\t']);
    let mut chars = rest.chars();
    let separator = chars
        .next()
        .filter(|c| matches!(c, ':' | '.' | '-' | '–' | '—'));
    let after = chars.as_str();
    match separator {
        Some(_) if after.starts_with([' ', '\t']) => after.trim_start(),
        _ => rest.trim_start(),
    }
}

/// The status sentence of the last paragraph, as the page shows it (no comment, no code block,
/// link titles left out): its last sentence, when it reads as a status.
fn status_sentence(paragraph: &str) -> Option<String> {
    let view = Visible::of(paragraph);
    let (_, sentence) = words::sentences(view.text()).pop()?;
    let plain = sentence.trim().to_ascii_lowercase();
    let labelled = ["status:", "upstream:", "upstream status:"]
        .iter()
        .any(|p| plain.starts_with(p));
    (labelled || words::classify(&sentence, None).is_some()).then_some(sentence)
}

/// A unified diff of the register, labelled `a/<file>` and `b/<file>`.
fn unified_diff(old: &str, new: &str, file: &str) -> String {
    if old == new {
        return String::new();
    }
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{file}"), &format!("b/{file}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_keeps_its_leading_punctuation_and_loses_only_a_separator() {
        assert_eq!(without_separator(" -O3 is needed"), "-O3 is needed");
        assert_eq!(without_separator(" ... and more"), "... and more");
        assert_eq!(without_separator(" — and more"), "and more");
        assert_eq!(without_separator(" —dash"), "—dash");
        assert_eq!(without_separator(":: a scope"), ":: a scope");
        assert_eq!(without_separator(": prose"), "prose");
        assert_eq!(without_separator("\n- a list item"), "- a list item");
    }
}
