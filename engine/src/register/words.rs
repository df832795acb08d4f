//! What an entry's own words say about its upstream state, when it has no `state` field.
//!
//! People write the state as a sentence: "Applies to the fork; to be proposed there.", "Kept in
//! our project under the fork policy (owner/repo#12).", "Sent as https://…/pull/12.". This
//! module reads such sentences, conservatively: a state that claims a pull request exists
//! (`proposed`, `merged`) needs the pull request's link in the sentence, and where nothing
//! says, there is no state (the checks then name the entry's line). Every rule of that reading
//! is here, so the parser, `fixes list`, the book and `fixes migrate` agree.

use std::sync::OnceLock;

use regex::Regex;

use super::blocks::Lines;
use super::{State, Stated};

/// A register-wide rule the register states outside its entries, e.g. that entries marked
/// "Applies to the fork" stay local and are not proposed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    pub sentence: String,
    pub line: usize,
}

/// The sentences of `text` with the byte offset where each starts, whitespace collapsed.
/// A sentence ends at `.`, `!` or `?` (closing markup allowed after it) before whitespace, or
/// at a blank line; never inside a code span.
pub(crate) fn sentences(text: &str) -> Vec<(usize, String)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_code = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'`' {
            in_code = !in_code;
        }
        let blank_line = b == b'\n' && text[i + 1..].starts_with('\n');
        let mut end = None;
        if blank_line {
            end = Some(i);
            in_code = false;
        } else if !in_code && matches!(b, b'.' | b'!' | b'?') {
            let mut j = i + 1;
            while j < bytes.len() && matches!(bytes[j], b'*' | b'_' | b')' | b'"' | b'\'') {
                j += 1;
            }
            if j >= bytes.len() || bytes[j].is_ascii_whitespace() {
                end = Some(j);
            }
        }
        if let Some(end) = end {
            push_sentence(&mut out, text, start, end);
            start = end;
            i = end.max(i + 1);
            continue;
        }
        i += 1;
    }
    push_sentence(&mut out, text, start, text.len());
    out
}

fn push_sentence(out: &mut Vec<(usize, String)>, text: &str, start: usize, end: usize) {
    let piece = &text[start..end];
    let lead = piece.len() - piece.trim_start().len();
    let sentence = piece.split_whitespace().collect::<Vec<_>>().join(" ");
    if !sentence.is_empty() {
        out.push((start + lead, sentence));
    }
}

/// The register's policy for entries that apply to the fork, read from text outside entries:
/// a sentence that names "applies to the fork" and says such entries are not proposed.
pub(crate) fn policy(text: &str, start: usize, lines: &Lines) -> Option<Policy> {
    sentences(text).into_iter().find_map(|(at, sentence)| {
        let lower = sentence.to_lowercase();
        (applies_to_fork(&lower) && not_proposed(&lower)).then(|| Policy {
            sentence,
            line: lines.line(start + at),
        })
    })
}

/// The state an entry's words give: its last sentence that says one, else its section's
/// (a section about the retarget onto the pin), else none.
///
/// `source` is the entry's text, starting at byte `start` of the register.
pub(crate) fn stated(
    source: &str,
    start: usize,
    lines: &Lines,
    section: Option<&str>,
    policy: Option<&Policy>,
) -> Option<Stated> {
    let said = sentences(source)
        .into_iter()
        .rev()
        .find_map(|(at, sentence)| {
            let said = classify(&sentence, policy)?;
            Some(Stated {
                state: said.state,
                from: said.from,
                line: lines.line(start + at),
                fields: said.fields,
            })
        });
    said.or_else(|| {
        let section = section.filter(|s| is_retarget_section(s))?;
        Some(Stated {
            state: State::RetargetOnly,
            from: format!("section \"{section}\""),
            line: lines.line(start),
            fields: vec![("cause".to_string(), section.to_string())],
        })
    })
}

/// A section whose items are adaptations to the pin ("Retarget onto the MLX pin").
pub(crate) fn is_retarget_section(section: &str) -> bool {
    let lower = section.to_lowercase();
    lower.contains("retarget")
}

/// What one sentence says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Said {
    pub state: State,
    /// The fields it gives, as `(key, value)`.
    pub fields: Vec<(String, String)>,
    /// Where the state comes from: the sentence, quoted, or the register's policy it invokes.
    pub from: String,
}

/// What one sentence says: the state, the fields it gives, and where the state comes from.
pub(crate) fn classify(sentence: &str, policy: Option<&Policy>) -> Option<Said> {
    let lower = sentence.to_lowercase();
    let quoted = format!("\"{sentence}\"");
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    let mut fields = Vec::new();
    let mut add = |key: &str, value: Option<String>| {
        if let Some(value) = value {
            fields.push((key.to_string(), value));
        }
    };
    if kept_local(&lower) {
        add("reason", Some(without_label(sentence)));
        add("issue", issue(sentence));
        return Some(Said {
            state: State::KeptLocal,
            fields,
            from: quoted,
        });
    }
    if applies_to_fork(&lower) && has(&["to be proposed", "should be proposed", "will be proposed"])
    {
        add("reason", hold(sentence));
        return Some(Said {
            state: State::ToPropose,
            fields,
            from: quoted,
        });
    }
    // A pull request state needs the pull request in the sentence: its link or its number.
    let link = pull_link(sentence);
    let names_pull = link.is_some() || pr_number(sentence).is_some();
    if names_pull && lower.contains("merged") && !has(&["not merged", "unmerged", "not yet"]) {
        add("link", link);
        add("fork-commit", sha(sentence));
        return Some(Said {
            state: State::Merged,
            fields,
            from: quoted,
        });
    }
    if names_pull
        && has(&[
            "proposed",
            "sent",
            "submitted",
            "opened",
            "filed",
            "upstreamed as",
        ])
        && !has(&["to be proposed", "not yet sent", "to be sent"])
    {
        add("link", link);
        return Some(Said {
            state: State::Proposed,
            fields,
            from: quoted,
        });
    }
    if applies_to_fork(&lower) {
        if let Some(policy) = policy {
            add("reason", Some(policy.sentence.clone()));
            add("issue", issue(&policy.sentence));
            let from = format!("{quoted} under the policy at line {}", policy.line);
            return Some(Said {
                state: State::KeptLocal,
                fields,
                from,
            });
        }
        return Some(Said {
            state: State::ToPropose,
            fields,
            from: quoted,
        });
    }
    if lower.starts_with("retarget-only") || has(&["needed since the retarget", "for the new pin"])
    {
        add(
            "cause",
            urls(sentence).into_iter().next().or_else(|| sha(sentence)),
        );
        return Some(Said {
            state: State::RetargetOnly,
            fields,
            from: quoted,
        });
    }
    None
}

/// "Applies to the fork", not "applies to the fork's kernels".
fn applies_to_fork(lower: &str) -> bool {
    static APPLIES: OnceLock<Regex> = OnceLock::new();
    let applies =
        APPLIES.get_or_init(|| Regex::new(r"\bappl(?:y|ies) to the fork(?:$|[^'’a-z])").unwrap());
    applies.is_match(lower)
}

/// Words that say a fix is deliberately not sent back.
fn not_proposed(lower: &str) -> bool {
    [
        "not proposed",
        "not be proposed",
        "not to be proposed",
        "never proposed",
        "stay here",
        "stays here",
        "kept here",
        "not sent",
        "not upstreamed",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// "Kept local", "not upstreamed", or "kept in / stays in <project>" said about the fork.
fn kept_local(lower: &str) -> bool {
    static KEPT_IN: OnceLock<Regex> = OnceLock::new();
    let kept_in = KEPT_IN
        .get_or_init(|| Regex::new(r"\b(?:kept|keep|stays|stay|remains) in [\w.-]+").unwrap());
    let said = [
        "kept local",
        "kept-local",
        "keep local",
        "stays local",
        "stay local",
        "local only",
        "local-only",
        "won't be proposed",
        "will not be proposed",
    ]
    .iter()
    .any(|w| lower.contains(w));
    let about_the_fork = ["fork", "upstream", "propos", "policy"]
        .iter()
        .any(|w| lower.contains(w));
    said || not_proposed(lower) || (kept_in.is_match(lower) && about_the_fork)
}

/// The hold of a to-propose sentence: "to be proposed there after a root cause".
fn hold(sentence: &str) -> Option<String> {
    let lower = sentence.to_lowercase();
    let at = lower.find("to be proposed")?;
    let rest = &sentence[at..];
    let held = [" after ", " once ", " when ", " until ", " pending "]
        .iter()
        .any(|w| rest.to_lowercase().contains(w));
    held.then(|| rest.trim_end_matches(['.', ' ']).to_string())
}

fn without_label(sentence: &str) -> String {
    let lower = sentence.to_lowercase();
    let cut = ["upstream status:", "status:", "upstream:"]
        .iter()
        .find(|p| lower.starts_with(*p))
        .map_or(0, |p| p.len());
    sentence[cut..].trim().to_string()
}

/// The first issue a sentence cites: `owner/repo#N`, an issue URL, or `issue #N`.
fn issue(sentence: &str) -> Option<String> {
    if let Some(reference) = issue_refs(sentence).into_iter().next() {
        return Some(reference);
    }
    if let Some(url) = urls(sentence).into_iter().find(|u| u.contains("/issues/")) {
        return Some(url);
    }
    static ISSUE: OnceLock<Regex> = OnceLock::new();
    let issue = ISSUE.get_or_init(|| Regex::new(r"(?i)issue\s*#(\d+)").unwrap());
    issue.captures(sentence).map(|c| format!("#{}", &c[1]))
}

/// A pull request the sentence links, as a URL.
fn pull_link(sentence: &str) -> Option<String> {
    urls(sentence)
        .into_iter()
        .find(|u| u.contains("/pull/") || u.contains("/merge_requests/"))
}

/// The number of a pull request named as `PR #12` or `pull request #12`.
pub(crate) fn pr_number(sentence: &str) -> Option<String> {
    static PR: OnceLock<Regex> = OnceLock::new();
    let pr = PR.get_or_init(|| Regex::new(r"(?i)\b(?:PR|pull request)\s*#(\d+)").unwrap());
    pr.captures(sentence).map(|c| c[1].to_string())
}

/// The web addresses in `text`, in order, each once, without trailing punctuation.
pub(crate) fn urls(text: &str) -> Vec<String> {
    static URL: OnceLock<Regex> = OnceLock::new();
    let url = URL.get_or_init(|| Regex::new(r"https?://[^\s<>()\[\]`]+").unwrap());
    let mut out: Vec<String> = Vec::new();
    for m in url.find_iter(text) {
        let found = m
            .as_str()
            .trim_end_matches(['.', ',', ';', ':', ')', '*', '_', '"', '\''])
            .to_string();
        if !out.contains(&found) {
            out.push(found);
        }
    }
    out
}

/// The `owner/repo#N` references in `text`, in order, each once.
pub(crate) fn issue_refs(text: &str) -> Vec<String> {
    static REF: OnceLock<Regex> = OnceLock::new();
    let reference = REF.get_or_init(|| {
        Regex::new(r"(?:^|[^\w/.#-])([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*#\d+)\b").unwrap()
    });
    let mut out: Vec<String> = Vec::new();
    for c in reference.captures_iter(text) {
        let found = c[1].to_string();
        if !out.contains(&found) {
            out.push(found);
        }
    }
    out
}

/// A commit SHA (7 to 40 hex digits with a letter among them).
fn sha(sentence: &str) -> Option<String> {
    static SHA: OnceLock<Regex> = OnceLock::new();
    let sha = SHA.get_or_init(|| Regex::new(r"\b[0-9a-f]{7,40}\b").unwrap());
    sha.find_iter(sentence)
        .map(|m| m.as_str())
        .find(|s| s.bytes().any(|b| b.is_ascii_alphabetic()))
        .map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(sentence: &str, policy: Option<&Policy>) -> Option<State> {
        classify(sentence, policy).map(|s| s.state)
    }

    #[test]
    fn sentences_split_after_stops_but_not_inside_code() {
        let text =
            "**Title.** It keeps `a.b c. d` intact. Applies to the fork; to be proposed there.";
        let found: Vec<String> = sentences(text).into_iter().map(|(_, s)| s).collect();
        assert_eq!(
            found,
            [
                "**Title.**",
                "It keeps `a.b c. d` intact.",
                "Applies to the fork; to be proposed there."
            ]
        );
    }

    #[test]
    fn fork_sentences_give_to_propose_holds_and_kept_local() {
        let policy = Policy {
            sentence: "Entries that apply to the fork stay here and are not proposed.".into(),
            line: 3,
        };
        assert_eq!(
            state("Applies to the fork; to be proposed there.", None),
            Some(State::ToPropose)
        );
        let fields = classify(
            "Applies to the fork; to be proposed there after a root cause.",
            None,
        )
        .unwrap()
        .fields;
        assert_eq!(
            fields,
            [(
                "reason".to_string(),
                "to be proposed there after a root cause".to_string()
            )]
        );
        assert_eq!(state("Applies to the fork.", None), Some(State::ToPropose));
        assert_eq!(
            state("Applies to the fork.", Some(&policy)),
            Some(State::KeptLocal)
        );
        let fields = classify(
            "Kept in ourproject under the fork policy (acme/app#21).",
            None,
        )
        .unwrap()
        .fields;
        assert_eq!(fields[1], ("issue".to_string(), "acme/app#21".to_string()));
        assert_eq!(state("The sum is kept in float.", None), None);
        assert_eq!(state("It applies to the fork's kernels too.", None), None);
    }

    #[test]
    fn a_pull_request_state_needs_its_link() {
        assert_eq!(
            state("Sent upstream as PR #12.", None),
            Some(State::Proposed)
        );
        assert_eq!(state("Sent upstream soon.", None), None);
        assert_eq!(
            state("Sent as https://github.com/o/r/pull/12.", None),
            Some(State::Proposed)
        );
        assert_eq!(
            state(
                "Merged as https://github.com/o/r/pull/15 in 1a2b3c4d.",
                None
            ),
            Some(State::Merged)
        );
        assert_eq!(state("Upstream merged its own fix.", None), None);
    }

    #[test]
    fn references_are_found_once_each() {
        let text = "See acme/app#12, https://x.org/a/b. and acme/app#12 (o/r#3); not a/b#c.";
        assert_eq!(issue_refs(text), ["acme/app#12", "o/r#3"]);
        assert_eq!(urls(text), ["https://x.org/a/b"]);
    }
}
