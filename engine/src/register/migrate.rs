//! `fixes migrate`: an older register (bold numbered titles, a status sentence at the end of
//! each entry) turned into one with `## N. Title` headings and a field list with a state.
//!
//! The state is a proposal read from the status sentence ("sent upstream as PR #12",
//! "merged in 1a2b3c4", "not upstreamed: …"); the user reads the diff before `--write`. The
//! prose stays byte for byte; only the title line and the status sentence change.

use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

use super::blocks::{blocks, Block, Kind, Lines};
use super::{numbered_title, State};

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
    /// Line of the bold title in the old text.
    pub line: usize,
    /// The status sentence it read, when it found one.
    pub status: Option<String>,
    pub state: Option<State>,
    pub fields: Vec<(String, String)>,
    /// Fields the state needs that the status sentence did not give.
    pub missing: Vec<String>,
}

/// Migrates `text`; `file` labels the diff, `fork_web` (e.g. `https://github.com/NripeshN/mlx`)
/// turns a bare `PR #12` into a link.
pub fn migrate(text: &str, file: &str, fork_web: Option<&str>) -> Migration {
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
    let diff = unified_diff(text, &out, file);
    Migration {
        text: out,
        diff,
        proposals,
    }
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

/// One entry's new text and what was proposed for it.
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
    let status = last_paragraph.and_then(|p| status_range(text, p));
    let mut body = String::new();
    match &status {
        Some(range) => {
            body.push_str(&text[body_start..range.start]);
            body.push_str(&text[range.end..end]);
        }
        None => body.push_str(&text[body_start..end]),
    }
    let sentence = status.map(|r| text[r].split_whitespace().collect::<Vec<_>>().join(" "));
    let proposal = propose(
        number,
        &title,
        lines.line(title_block.range.start),
        sentence,
        fork_web,
    );
    (entry_text(&proposal, &body), proposal)
}

/// The new entry: heading, prose, fields, and the blank line before what follows.
fn entry_text(proposal: &Proposal, body: &str) -> String {
    let prose = body.trim_start_matches([' ', '.', ':', '—', '-']).trim();
    let mut text = format!("## {}. {}\n\n", proposal.number, proposal.title);
    if !prose.is_empty() {
        text.push_str(prose);
        text.push_str("\n\n");
    }
    for (key, value) in &proposal.fields {
        text.push_str(&format!("- {key}: {value}\n"));
    }
    if !proposal.fields.is_empty() {
        text.push('\n');
    }
    text
}

/// The status sentence in the last paragraph: the whole paragraph, or its last sentence, when
/// it reads as a status.
fn status_range(text: &str, paragraph: Range<usize>) -> Option<Range<usize>> {
    let source = &text[paragraph.clone()];
    let start = last_sentence_start(source.trim_end());
    let sentence = &source[start..];
    let plain = sentence.trim().to_ascii_lowercase();
    let labelled = ["status:", "upstream:", "upstream status:"]
        .iter()
        .any(|p| plain.starts_with(p));
    (labelled || classify(&plain).is_some()).then(|| paragraph.start + start..paragraph.end)
}

/// Byte offset where the last sentence of `text` starts.
fn last_sentence_start(text: &str) -> usize {
    let bytes = text.as_bytes();
    (1..bytes.len())
        .rev()
        .find(|&i| {
            bytes[i].is_ascii_whitespace()
                && matches!(bytes[i - 1], b'.' | b'!' | b'?')
                && i + 1 < bytes.len()
        })
        .map_or(0, |i| {
            i + 1 + text[i + 1..].len() - text[i + 1..].trim_start().len()
        })
}

/// The state a status sentence (lowercase) describes.
fn classify(sentence: &str) -> Option<State> {
    let has = |words: &[&str]| words.iter().any(|w| sentence.contains(w));
    if has(&[
        "not upstreamed",
        "not sent",
        "not proposed",
        "kept local",
        "keep local",
        "local only",
        "local-only",
        "won't",
        "will not",
        "stays local",
    ]) {
        Some(State::KeptLocal)
    } else if sentence.contains("merged") && !has(&["not merged", "unmerged"]) {
        Some(State::Merged)
    } else if has(&[
        "pr #",
        "/pull/",
        "pull request",
        "sent upstream",
        "proposed",
        "submitted",
        "opened",
    ]) {
        Some(State::Proposed)
    } else if has(&[
        "retarget",
        "new pin",
        "upstream commit",
        "upstream change",
        "adapt",
    ]) {
        Some(State::RetargetOnly)
    } else {
        None
    }
}

/// Reads the fields a state needs out of the status sentence.
fn propose(
    number: u32,
    title: &str,
    line: usize,
    status: Option<String>,
    fork_web: Option<&str>,
) -> Proposal {
    let state = status
        .as_deref()
        .and_then(|s| classify(&s.to_ascii_lowercase()));
    let mut fields = Vec::new();
    if let (Some(state), Some(sentence)) = (state, status.as_deref()) {
        fields.push(("state".to_string(), state.as_str().to_string()));
        fields.extend(state_fields(state, sentence, fork_web));
    }
    let missing = state
        .map(|s| {
            s.required_fields()
                .iter()
                .filter(|k| !fields.iter().any(|(f, _)| f == *k))
                .map(|k| k.to_string())
                .collect()
        })
        .unwrap_or_else(|| vec!["state".to_string()]);
    Proposal {
        number,
        title: title.to_string(),
        line,
        status,
        state,
        fields,
        missing,
    }
}

fn state_fields(state: State, sentence: &str, fork_web: Option<&str>) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    let mut add = |key: &str, value: Option<String>| {
        if let Some(value) = value {
            fields.push((key.to_string(), value));
        }
    };
    match state {
        State::Proposed => add("link", pull_link(sentence, fork_web)),
        State::Merged => {
            add("link", pull_link(sentence, fork_web));
            add("fork-commit", sha(sentence));
        }
        State::KeptLocal => {
            add("reason", Some(without_label(sentence)));
            add("issue", issue(sentence));
        }
        State::RetargetOnly => add(
            "cause",
            urls(sentence)
                .into_iter()
                .next()
                .or_else(|| sha(sentence))
                .or_else(|| pr_number(sentence).map(|n| format!("#{n}"))),
        ),
    }
    fields
}

fn without_label(sentence: &str) -> String {
    let lower = sentence.to_ascii_lowercase();
    let cut = ["upstream status:", "status:", "upstream:"]
        .iter()
        .find(|p| lower.starts_with(*p))
        .map_or(0, |p| p.len());
    sentence[cut..].trim().to_string()
}

fn pull_link(sentence: &str, fork_web: Option<&str>) -> Option<String> {
    let urls = urls(sentence);
    if let Some(url) = urls.iter().find(|u| u.contains("/pull/")) {
        return Some(url.clone());
    }
    let number = pr_number(sentence)?;
    fork_web.map(|web| format!("{}/pull/{number}", web.trim_end_matches('/')))
}

fn issue(sentence: &str) -> Option<String> {
    let urls = urls(sentence);
    urls.iter()
        .find(|u| u.contains("/issues/"))
        .cloned()
        .or_else(|| {
            static ISSUE: OnceLock<Regex> = OnceLock::new();
            let issue = ISSUE.get_or_init(|| Regex::new(r"(?i)issue\s*#(\d+)").unwrap());
            issue.captures(sentence).map(|c| format!("#{}", &c[1]))
        })
}

fn urls(sentence: &str) -> Vec<String> {
    static URL: OnceLock<Regex> = OnceLock::new();
    let url = URL.get_or_init(|| Regex::new(r"https?://[^\s<>()\]]+").unwrap());
    url.find_iter(sentence)
        .map(|m| {
            m.as_str()
                .trim_end_matches(['.', ',', ';', ')'])
                .to_string()
        })
        .collect()
}

fn pr_number(sentence: &str) -> Option<String> {
    static PR: OnceLock<Regex> = OnceLock::new();
    let pr = PR.get_or_init(|| Regex::new(r"(?i)\b(?:PR|pull request)\s*#(\d+)").unwrap());
    pr.captures(sentence).map(|c| c[1].to_string())
}

fn sha(sentence: &str) -> Option<String> {
    static SHA: OnceLock<Regex> = OnceLock::new();
    let sha = SHA.get_or_init(|| Regex::new(r"\b[0-9a-f]{7,40}\b").unwrap());
    sha.find_iter(sentence)
        .map(|m| m.as_str())
        .find(|s| s.bytes().any(|b| b.is_ascii_alphabetic()))
        .map(String::from)
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
    fn status_sentences_propose_states() {
        assert_eq!(
            classify("status: sent upstream as pr #12."),
            Some(State::Proposed)
        );
        assert_eq!(
            classify("not upstreamed: only our build needs it."),
            Some(State::KeptLocal)
        );
        assert_eq!(
            classify("merged in the fork as 1a2b3c4."),
            Some(State::Merged)
        );
        assert_eq!(
            classify("needed since the retarget to the new pin."),
            Some(State::RetargetOnly)
        );
        assert_eq!(classify("the kernel now checks its bounds."), None);
    }

    #[test]
    fn the_last_sentence_is_found_after_the_last_full_stop() {
        let text = "Fixes the leak. Status: sent upstream as PR #12.";
        assert_eq!(
            &text[last_sentence_start(text)..],
            "Status: sent upstream as PR #12."
        );
        assert_eq!(last_sentence_start("One sentence only."), 0);
    }
}
