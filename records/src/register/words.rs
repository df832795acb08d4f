//! What an entry's own words say about its upstream state, when it has no `state` field.
//!
//! People write the state as a sentence: "Applies to the fork; to be proposed there.", "Kept in
//! our project under the fork policy (owner/repo#12).", "Sent as https://…/pull/12.". This
//! module reads such sentences, conservatively: a state that claims a pull request exists
//! (`proposed`, `merged`) needs the pull request's link in the sentence, and where nothing
//! says, there is no state (the checks then name the entry's line). Every rule of that reading
//! is here, so the parser, `fixes list`, the book and `fixes migrate` agree.

use std::sync::LazyLock;

use regex::Regex;

pub use super::visible::without_code;
use super::{State, Stated};

/// A register-wide rule the register states outside its entries, e.g. that entries marked
/// "Applies to the fork" stay local and are not proposed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub sentence: String,
    pub line: usize,
}

/// The sentences of `text` with the byte offset where each starts, whitespace collapsed.
/// A sentence ends at `.`, `!` or `?` (closing markup allowed after it) before whitespace, or
/// at a blank line; never inside a code span.
pub fn sentences(text: &str) -> Vec<(usize, String)> {
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

/// The register's policy for entries that apply to the fork, read from visible text outside
/// entries: a sentence that names "applies to the fork" and says such entries are not proposed.
/// `line_of` gives the line of a byte offset of `text`.
pub fn policy(text: &str, line_of: impl Fn(usize) -> usize) -> Option<Policy> {
    sentences(text).into_iter().find_map(|(at, sentence)| {
        let lower = without_code(&sentence).to_lowercase();
        (applies_to_fork(&lower) && not_proposed(&lower)).then(|| Policy {
            sentence,
            line: line_of(at),
        })
    })
}

/// The state an entry's words give: its last sentence that says one, else its section's
/// (a section about the retarget onto the pin), else none.
///
/// `text` is the entry's visible text ([`super::visible`]); `line_of` gives the line of a byte
/// offset of it, and `start_line` is the entry's first line.
pub fn stated(
    text: &str,
    line_of: impl Fn(usize) -> usize,
    start_line: usize,
    section: Option<&str>,
    policy: Option<&Policy>,
) -> Option<Stated> {
    let said = sentences(text)
        .into_iter()
        .rev()
        .find_map(|(at, sentence)| {
            let said = classify(&sentence, policy)?;
            Some(Stated {
                state: said.state,
                from: said.from,
                line: line_of(at),
                fields: said.fields,
            })
        });
    said.or_else(|| {
        let section = section.filter(|s| is_retarget_section(s))?;
        Some(Stated {
            state: State::RetargetOnly,
            from: format!("section \"{section}\""),
            line: start_line,
            fields: vec![("cause".to_string(), section.to_string())],
        })
    })
}

/// A section whose items are adaptations to the pin ("Retarget onto the MLX pin").
pub fn is_retarget_section(section: &str) -> bool {
    let lower = section.to_lowercase();
    lower.contains("retarget")
}

/// What one sentence says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub state: State,
    /// The fields it gives, as `(key, value)`.
    pub fields: Vec<(String, String)>,
    /// Where the state comes from: the sentence, quoted, or the register's policy it invokes.
    pub from: String,
}

/// What one sentence says: the state, the fields it gives, and where the state comes from.
pub fn classify(sentence: &str, policy: Option<&Policy>) -> Option<Said> {
    let (state, fields, policy_line) = reading(sentence, policy)?;
    let quoted = format!("\"{sentence}\"");
    let fields = fields
        .into_iter()
        .filter_map(|(key, value)| Some((key.to_string(), value?)));
    Some(Said {
        state,
        fields: fields.collect(),
        from: match policy_line {
            Some(line) => format!("{quoted} under the policy at line {line}"),
            None => quoted,
        },
    })
}

/// A sentence's reading: the state, the fields it gives (`None` where the sentence lacks the
/// value), and the line of the register's policy when the state comes from the policy.
type Reading = (State, Vec<(&'static str, Option<String>)>, Option<usize>);

/// The rules in order: the first that holds decides the state.
fn reading(sentence: &str, policy: Option<&Policy>) -> Option<Reading> {
    // A code span is an example or a name: its words claim nothing. A commit id may be one.
    let commit = sha(sentence);
    let sentence = &without_code(sentence);
    let lower = sentence.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if kept_local(&lower) {
        let fields = vec![
            ("reason", Some(without_label(sentence))),
            ("issue", issue(sentence)),
        ];
        return Some((State::KeptLocal, fields, None));
    }
    let to_be_proposed = ["to be proposed", "should be proposed", "will be proposed"];
    if applies_to_fork(&lower) && has(&to_be_proposed) {
        return Some((State::ToPropose, vec![("reason", hold(sentence))], None));
    }
    // A pull request state needs the pull request in the sentence: its link or its number.
    let link = pull_link(sentence);
    let names_pull = link.is_some() || pr_number(sentence).is_some();
    // A sentence naming two pull requests ("Sent as <ours>; <theirs> got merged upstream")
    // does not say which one was merged: in doubt, no merge.
    let one_pull = pull_links(sentence) <= 1;
    if names_pull && one_pull && affirms(&lower, &["merged"]) {
        let fields = vec![("link", link), ("fork-commit", commit)];
        return Some((State::Merged, fields, None));
    }
    // Every state verb but "merged", read just above.
    if names_pull && affirms(&lower, &STATE_VERBS[1..]) {
        return Some((State::Proposed, vec![("link", link)], None));
    }
    if applies_to_fork(&lower) {
        return Some(match policy {
            Some(policy) => {
                let reason = Some(policy.sentence.clone());
                let fields = vec![("reason", reason), ("issue", issue(&policy.sentence))];
                (State::KeptLocal, fields, Some(policy.line))
            }
            None => (State::ToPropose, Vec::new(), None),
        });
    }
    if lower.starts_with("retarget-only") || has(&["needed since the retarget", "for the new pin"])
    {
        let cause = urls(sentence).into_iter().next().or(commit);
        return Some((State::RetargetOnly, vec![("cause", cause)], None));
    }
    None
}

/// Whether `lower` (a lowercased sentence) says one of `verbs` happened: some occurrence of
/// one, as a whole word, that no negation or condition holds in its scope.
///
/// A pull request state is a claim that something happened, so it is read only from a plain
/// statement. The scope of a denial is the clause the verb sits in (clauses end at `;`, `:`
/// before a new statement, `—`, and a contrasting "but", "however", "although", "whereas",
/// "while", "though"): in that clause, before the verb, a negation ("not", "never", "no", a
/// word ending in "n't", "neither", "nor", "without", "yet to", "pending", "awaiting",
/// "instead of", "rather than", "failed to", "nobody") or a condition or modal ("if", "once",
/// "when", "unless", "until", "whether", "would", "could", "should", "will", "may", "might",
/// "can", "shall", "must", "to be", "going to", "about to", "plan", "intend", "hope",
/// "expect", "ready to", "in case", "as soon as", "assuming", "provided", "suppose") denies
/// it; so does a condition anywhere in the clause ("merged if the CI passes"), a negation right
/// after it ("merged: no", "merged? not yet"), a question, and a sentence that says the pull
/// request was rejected, reverted, abandoned or withdrawn. In doubt there is no state:
/// the checks then name the entry's line, and a `state:` field says it plainly.
pub fn affirms(lower: &str, verbs: &[&str]) -> bool {
    // Addresses are names, not words: a repository called `no` or `will` says nothing.
    static URL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"https?://\S+").unwrap());
    let lower = URL.replace_all(lower, " link ");
    if lower.contains('?') || undone(&lower) || answered_no(&lower) {
        return false;
    }
    // What a quotation says is someone else's claim, not this entry's.
    let lower = unquoted(&lower);
    clauses(&lower).into_iter().any(|clause| {
        let words = words_of(clause);
        words.iter().enumerate().any(|(at, word)| {
            if !verbs.contains(&word.as_str()) {
                return false;
            }
            // After the verb, up to the next state verb or "and": a condition on this one.
            let after = words[at + 1..].iter().take_while(|w| {
                !STATE_VERBS.contains(&w.as_str()) && !matches!(w.as_str(), "and" | "then")
            });
            !words[..at]
                .iter()
                .any(|w| negates(w) || CONDITIONS.contains(&w.as_str()))
                && !phrase_before(&words[..at])
                && !after.clone().any(|w| subordinates(w))
                && !words.get(at + 1).is_some_and(|w| negates(w) || w == "yet")
                && about_this_change(&words, at)
        })
    })
}

/// Whether the state verb at `at` of a clause's `words` is said of this entry's own change, by
/// the shape of the clause before it (and, for an active verb, the object after it):
///
/// - no subject: "Merged upstream as <link>", "Sent as PR #12", "Status: merged";
/// - a subject that is this change: "It was merged", "The fix got merged", "Our patch is
///   merged", "PR #12 was merged", "<link> was merged";
/// - an earlier claim of the clause with no subject: "Proposed as PR #12 and merged in …";
/// - an active verb whose object is this change: "The fork merged it", "Upstream merged our fix".
///
/// Anything else is about something else: a relative or subordinate clause ("…, which the fork
/// merged", "after upstream merged <link>", "since X merged Y"), another subject ("Upstream's
/// rename was merged", "Entry 2 was merged"), an active verb with another object ("Upstream
/// merged <link>, which broke us"), and what the clause goes on to call a cause ("<link> got
/// merged upstream and caused it", "<link> (merged) broke the build"): what was merged is what
/// made this entry needed, not the entry's change.
fn about_this_change(words: &[String], at: usize) -> bool {
    let before = &words[..at];
    // What the verb's own words say, up to the next state verb: a cause said after a later
    // verb is that verb's ("Sent as <link>, which was merged and caused …" sends this change).
    let own = words[at + 1..]
        .iter()
        .take_while(|w| !STATE_VERBS.contains(&w.as_str()));
    if attaches_elsewhere(before) || own.clone().any(|w| CAUSES.contains(&w.as_str())) {
        return false;
    }
    let mut end = before.len();
    let mut passive = false;
    while end > 0 {
        let word = before[end - 1].as_str();
        let since_been = word == "since" && before.get(end).is_some_and(|w| w == "been");
        if !(AUXILIARIES.contains(&word) || ADVERBS.contains(&word) || since_been) {
            break;
        }
        passive |= PASSIVE.contains(&word);
        end -= 1;
    }
    let subject = &before[..end];
    match subject.first().map(String::as_str) {
        None => true,
        Some(first) if STATE_VERBS.contains(&first) => true,
        Some(_) if is_this_change(subject, true) => true,
        Some(_) if passive => false,
        Some(_) => {
            let object: Vec<String> = words[at + 1..]
                .iter()
                .take_while(|w| !matches!(w.as_str(), "as" | "in" | "into" | "via" | "to"))
                .cloned()
                .collect();
            !object.is_empty() && is_this_change(&object, false)
        }
    }
}

/// A word before the verb that opens a relative or subordinate clause: the verb is then said
/// of what that clause is about. "since" before "been" is an adverb ("has since been merged").
fn attaches_elsewhere(before: &[String]) -> bool {
    before.iter().enumerate().any(|(i, w)| {
        let since_been = w == "since" && before.get(i + 1).is_some_and(|n| n == "been");
        ATTACHES.contains(&w.as_str()) && !since_been
    })
}

/// Verbs that say what a change did to the code: said after a merge in its clause, the merged
/// change is a cause.
const CAUSES: &[&str] = &[
    "caused",
    "causes",
    "causing",
    "broke",
    "breaks",
    "breaking",
    "broken",
    "introduced",
    "introduces",
    "introducing",
    "triggered",
    "triggers",
    "prompted",
    "prompts",
    "required",
    "requires",
    "forced",
    "forces",
    "regressed",
    "regresses",
];

const ATTACHES: &[&str] = &[
    "which", "that", "who", "whom", "whose", "where", "after", "before", "since", "because",
    "than", "like", "unlike", "whereby",
];

const AUXILIARIES: &[&str] = &[
    "was", "were", "is", "are", "been", "being", "has", "have", "had", "got", "gets", "get",
    "getting",
];

/// The auxiliaries that make the verb passive: its subject is what was merged.
const PASSIVE: &[&str] = &[
    "was", "were", "is", "are", "been", "being", "got", "gets", "get", "getting",
];

const ADVERBS: &[&str] = &[
    "now",
    "already",
    "finally",
    "also",
    "then",
    "just",
    "recently",
    "successfully",
    "fully",
    "all",
    "both",
    "cleanly",
    "since",
];

/// Words that name this entry's change: "it", "this", "this fix", "our patch", "the pull
/// request"; as the subject also a reference of its own, "PR 12" or a link (addresses are `link`
/// by then). As the object of someone else's verb a reference names another pull request:
/// "Upstream merged <link>" is upstream's change.
fn is_this_change(words: &[String], subject: bool) -> bool {
    const DETERMINERS: &[&str] = &["this", "the", "our", "my", "its"];
    const NOUNS: &[&str] = &[
        "fix",
        "fixes",
        "change",
        "changes",
        "patch",
        "patches",
        "pr",
        "pull",
        "request",
        "commit",
        "commits",
        "work",
        "entry",
        "adaptation",
        "workaround",
        "one",
        "package",
        "proposal",
        "link",
    ];
    let number = |w: &String| w.bytes().all(|b| b.is_ascii_digit());
    match words {
        [only] => matches!(only.as_str(), "it" | "this") || (subject && only == "link"),
        [first, rest @ ..] if DETERMINERS.contains(&first.as_str()) => rest
            .iter()
            .all(|w| NOUNS.contains(&w.as_str()) || number(w)),
        [first, rest @ ..] if subject && matches!(first.as_str(), "pr" | "pull") => {
            rest.iter().all(|w| w == "request" || number(w)) && rest.iter().any(number)
        }
        _ => false,
    }
}

/// `lower` with every quotation blanked: straight and curly double quotes and guillemets. A
/// closing mark with no opening one before it means the sentence began inside the quotation.
fn unquoted(lower: &str) -> String {
    let first_close = lower.find(['”', '»']);
    let first_open = lower.find(['“', '«']);
    let mut inside = match (first_close, first_open) {
        (Some(close), Some(open)) => close < open,
        (Some(_), None) => true,
        _ => false,
    };
    let mut out = String::with_capacity(lower.len());
    for c in lower.chars() {
        match c {
            '“' | '«' => inside = true,
            '”' | '»' => inside = false,
            '"' => inside = !inside,
            _ if inside => continue,
            c => {
                out.push(c);
                continue;
            }
        }
        out.push(' ');
    }
    out
}

/// Every verb a pull request state is read from, "merged" first (`classify` reads it apart).
const STATE_VERBS: &[&str] = &[
    "merged",
    "proposed",
    "sent",
    "submitted",
    "opened",
    "filed",
    "upstreamed",
];

/// A state verb answered with a no: "merged: no", "proposed = false", "sent - not yet".
fn answered_no(lower: &str) -> bool {
    static NO: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?:merged|proposed|sent|submitted|opened|filed|upstreamed)\s*[:=–—-]\s*(?:no|not|never|false|none|nope|pending|tbd|n/a)\b").unwrap()
    });
    NO.is_match(lower)
}

/// A word that opens a subordinate condition, which holds the verb before it too ("merged if
/// the CI passes", "proposed once the fork reopens").
fn subordinates(word: &str) -> bool {
    matches!(
        word,
        "if" | "unless"
            | "once"
            | "when"
            | "whenever"
            | "until"
            | "till"
            | "whether"
            | "provided"
            | "providing"
            | "assuming"
            | "lest"
    )
}

/// The clauses of a sentence: a denial's scope ends where a new statement starts.
fn clauses(lower: &str) -> Vec<&str> {
    static BREAK: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"[;—–]|:\s+[a-z]|\s-\s|\b(?:but|however|although|though|whereas|while|except)\b",
        )
        .unwrap()
    });
    let mut out = Vec::new();
    let mut start = 0;
    for m in BREAK.find_iter(lower) {
        out.push(&lower[start..m.start()]);
        // A colon's new statement starts at its first letter, which belongs to the next clause.
        start = m.end() - if m.as_str().starts_with(':') { 1 } else { 0 };
    }
    out.push(&lower[start..]);
    out
}

/// The words of a clause, lowercase letters and apostrophes only (`hasn’t` as `hasn't`).
fn words_of(clause: &str) -> Vec<String> {
    clause
        .replace('’', "'")
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .filter(|w| !w.is_empty())
        .map(|w| w.trim_matches(['\'', '-']).to_string())
        .collect()
}

/// A word that negates what follows it in its clause.
fn negates(word: &str) -> bool {
    word.ends_with("n't") || NEGATIONS.contains(&word)
}

const NEGATIONS: &[&str] = &[
    "not", "never", "no", "neither", "nor", "without", "pending", "awaiting", "nobody", "none",
    "nothing", "cannot", "unable", "instead", "rather", "failed", "fails", "refused", "nowhere",
    "hardly", "barely",
];

/// Words that make their clause a condition, a wish, a plan or a possibility, not a fact.
const CONDITIONS: &[&str] = &[
    "if",
    "once",
    "when",
    "whenever",
    "unless",
    "until",
    "till",
    "whether",
    "would",
    "could",
    "should",
    "will",
    "shall",
    "may",
    "might",
    "can",
    "must",
    "plan",
    "plans",
    "planned",
    "planning",
    "intend",
    "intends",
    "intended",
    "hope",
    "hopes",
    "hoped",
    "hopefully",
    "expect",
    "expects",
    "expected",
    "assuming",
    "provided",
    "providing",
    "suppose",
    "supposing",
    "lest",
    "wish",
    "want",
    "wants",
    "eventually",
    "someday",
    "later",
    "soon",
    "tbd",
    "todo",
    "maybe",
    "perhaps",
    "possibly",
    "probably",
    "likely",
    "unlikely",
];

/// Multi-word conditions before the verb: "to be", "yet to", "going to", "about to", "ready
/// to", "in case", "as soon as", "needs to".
fn phrase_before(words: &[String]) -> bool {
    words.windows(2).any(|pair| {
        matches!(
            (pair[0].as_str(), pair[1].as_str()),
            ("to", "be")
                | ("yet", "to")
                | ("going", "to")
                | ("about", "to")
                | ("ready", "to")
                | ("in", "case")
                | ("as", "soon")
                | ("needs", "to")
                | ("need", "to")
                | ("has", "to")
                | ("have", "to")
                | ("is", "to")
                | ("are", "to")
        )
    })
}

/// A sentence saying the pull request did not stand: rejected, reverted, abandoned.
fn undone(lower: &str) -> bool {
    static UNDONE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"\b(?:rejected|reverted|declined|abandoned|withdrawn|withdrew|superseded|unmerged)\b",
        )
        .unwrap()
    });
    UNDONE.is_match(lower)
}

/// "Applies to the fork", not "applies to the fork's kernels".
fn applies_to_fork(lower: &str) -> bool {
    static APPLIES: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\bappl(?:y|ies) to the fork(?:$|[^'’a-z])").unwrap());
    APPLIES.is_match(lower)
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
    static KEPT_IN: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b(?:kept|keep|stays|stay|remains) in [\w.-]+").unwrap());
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
    said || not_proposed(lower) || (KEPT_IN.is_match(lower) && about_the_fork)
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

/// The first issue a sentence cites: `owner/repo#N`, a bare `#N`, or an issue URL.
fn issue(sentence: &str) -> Option<String> {
    if let Some(reference) = issue_refs(sentence).into_iter().next() {
        return Some(reference);
    }
    urls(sentence).into_iter().find(|u| u.contains("/issues/"))
}

/// A pull request the sentence links, as a URL.
fn pull_link(sentence: &str) -> Option<String> {
    urls(sentence)
        .into_iter()
        .find(|u| u.contains("/pull/") || u.contains("/merge_requests/"))
}

/// How many pull requests the sentence links.
fn pull_links(sentence: &str) -> usize {
    let urls = urls(sentence).into_iter();
    urls.filter(|u| u.contains("/pull/") || u.contains("/merge_requests/"))
        .count()
}

/// The number of a pull request named as `PR #12` or `pull request #12`.
pub fn pr_number(sentence: &str) -> Option<String> {
    static PR: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\b(?:PR|pull request)\s*#(\d+)").unwrap());
    PR.captures(sentence).map(|c| c[1].to_string())
}

/// The web addresses in `text`, in order, each once, without trailing punctuation.
pub fn urls(text: &str) -> Vec<String> {
    static URL: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"https?://[^\s<>()\[\]`]+").unwrap());
    each_once(URL.find_iter(text).map(|m| {
        m.as_str()
            .trim_end_matches(['.', ',', ';', ':', ')', '*', '_', '"', '\''])
            .to_string()
    }))
}

/// The issue references in `text`, in order, each once: `owner/repo#N`, and a bare `#N`, which
/// is an issue of the project's own (not after "PR" or "pull request", which name a pull
/// request). The one rule for what an entry's words cite: `check`, `fixes list` and
/// `fixes migrate` read it alike.
pub fn issue_refs(text: &str) -> Vec<String> {
    static REF: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?:^|[^\w/.#&-])((?:[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)?#\d+)\b").unwrap()
    });
    let pull = |before: &str| {
        let before = before.trim_end().to_ascii_lowercase();
        [
            "pr",
            "pull request",
            "pull",
            "mr",
            "merge request",
            "pull-request",
        ]
        .iter()
        .any(|w| {
            before.ends_with(w)
                && !before[..before.len() - w.len()].ends_with(char::is_alphanumeric)
        })
    };
    each_once(REF.captures_iter(text).filter_map(|c| {
        let reference = c.get(1)?;
        let bare = reference.as_str().starts_with('#');
        (!bare || !pull(&text[..reference.start()])).then(|| reference.as_str().to_string())
    }))
}

/// The items in order, each once.
fn each_once(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// A commit SHA (7 to 40 hex digits with a letter among them).
fn sha(sentence: &str) -> Option<String> {
    static SHA: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b[0-9a-f]{7,40}\b").unwrap());
    SHA.find_iter(sentence)
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
    fn a_denied_or_conditional_pull_request_is_no_state() {
        let url = "https://github.com/o/r/pull/12";
        let denied = [
            "PR #12 was never merged.",
            "PR #12 has not been merged.",
            "PR #12 hasn't been merged.",
            "PR #12 hasn’t been merged.",
            "PR #12 isn't merged yet.",
            "Not yet proposed (PR #12 is a draft).",
            "Not yet proposed; PR #12 is a draft.",
            "If PR #12 is merged, drop this entry.",
            "Once proposed as PR #12, record the link.",
            "It would be proposed as PR #12.",
            "It will be merged with PR #12.",
            "PR #12 should be merged soon.",
            "PR #12 could be merged after review.",
            "PR #12 is yet to be merged.",
            "PR #12 is waiting to be merged.",
            "PR #12 is to be proposed.",
            "Neither proposed nor merged; PR #12 is only a placeholder.",
            "Nobody merged PR #12.",
            "PR #12 was rejected, never merged.",
            "PR #12 was merged and later reverted.",
            "Merged? Not yet (PR #12).",
            "Was PR #12 merged?",
            "Merged: no (PR #12).",
            "Merged - not yet, see PR #12.",
            "We plan to send PR #12.",
            "We hope PR #12 gets merged.",
            "PR #12 will probably be merged.",
            "PR #12 might be merged.",
            "Merged if PR #12 passes the fork's CI.",
            "Merged when PR #12 lands.",
            "Proposed unless PR #12 is closed.",
            "Sent as PR #12 only if the fork wants it.",
            "PR #12 failed to be merged.",
            "PR #12 cannot be merged.",
            "Without PR #12 merged the fix stays.",
            "Pending review, PR #12 is not merged.",
        ];
        for sentence in denied {
            let said = state(sentence, None);
            assert!(
                !matches!(said, Some(State::Merged | State::Proposed)),
                "{sentence}: {said:?}"
            );
            let linked = sentence.replace("PR #12", url);
            let said = state(&linked, None);
            assert!(
                !matches!(said, Some(State::Merged | State::Proposed)),
                "{linked}: {said:?}"
            );
        }
        let affirmed = [
            ("Sent upstream as PR #12.", State::Proposed),
            ("Proposed as PR #12; not merged yet.", State::Proposed),
            ("Proposed as PR #12, not yet merged.", State::Proposed),
            ("Not merged, but proposed as PR #12.", State::Proposed),
            ("PR #12 was merged.", State::Merged),
            ("Merged upstream as PR #12 in 1a2b3c4d.", State::Merged),
            ("Upstream status: merged as PR #12.", State::Merged),
            ("Proposed as PR #12 and merged in 1a2b3c4d.", State::Merged),
            (
                "Merged as PR #12; we no longer carry the old code.",
                State::Merged,
            ),
            ("Filed as PR #12.", State::Proposed),
            (
                "Proposed as PR #12 and will be merged next week.",
                State::Proposed,
            ),
        ];
        for (sentence, want) in affirmed {
            assert_eq!(state(sentence, None), Some(want), "{sentence}");
        }
        // A word inside an address is not a word of the sentence.
        assert_eq!(
            state("Merged as https://github.com/no/will/pull/3.", None),
            Some(State::Merged)
        );
        // "present" holds "sent", "consent" too: whole words only.
        assert_eq!(state("The fix is present in PR #12.", None), None);
    }

    /// Fails on main before this change: each read as this entry merged (`fixes list`:
    /// `[merged]`), though the pull request merged is the one that made the entry needed.
    #[test]
    fn a_merged_change_the_clause_calls_a_cause_is_not_this_entry_s() {
        let ours = "https://github.com/NripeshN/mlx/pull/101";
        let other = "https://github.com/NripeshN/mlx/pull/9";
        for sentence in [
            format!("Sent as {ours}; {other} got merged upstream and caused it."),
            format!("{other} (merged) caused it."),
            format!("{other} was merged in 1a2b3c4d and broke the kernel."),
            "PR #9 was merged, breaking our build.".to_string(),
            format!("Merged upstream in {other}, which introduced the leak."),
            format!("{other} got merged and required this adaptation."),
        ] {
            let said = state(&sentence, None);
            assert_ne!(said, Some(State::Merged), "{sentence}");
        }
        // This entry's own pull request was sent; the other one is what was merged.
        for sentence in [
            format!("Sent as {ours}; {other} got merged upstream and caused it."),
            format!("Sent as {ours}; {other} got merged upstream."),
            format!("Sent as {ours} after {other} was merged."),
        ] {
            assert_eq!(state(&sentence, None), Some(State::Proposed), "{sentence}");
        }
        for sentence in [
            format!("Merged as {ours} in 1a2b3c4d."),
            format!("{ours} was merged in 1a2b3c4d."),
            format!("Proposed as {ours} and merged in 1a2b3c4d."),
        ] {
            assert_eq!(state(&sentence, None), Some(State::Merged), "{sentence}");
        }
    }

    #[test]
    fn references_are_found_once_each() {
        let text = "See acme/app#12, https://x.org/a/b. and acme/app#12 (o/r#3); not a/b#c.";
        assert_eq!(issue_refs(text), ["acme/app#12", "o/r#3"]);
        let bare = "Tracked in #1876 (and acme/app#2); PR #12, pull request #13 and x#4 are not.";
        assert_eq!(issue_refs(bare), ["#1876", "acme/app#2"]);
        assert_eq!(urls(text), ["https://x.org/a/b"]);
    }
}
