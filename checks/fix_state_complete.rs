//! `fix-state-complete`: every entry has a known upstream state and the fields that state needs.
//!
//! The state is the entry's `state` field, or, without one, what its words say (the parser
//! reads them; see `Entry::stated`). A field the state needs may come from the words too: a
//! kept-local entry's reason is the sentence that keeps it local.

use crate::facts::Facts;
use crate::upstream_well_formed::is_full_sha;
use crate::{pages::fix_state_complete as CHECK, Findings, OneEntry};
use forkbook_records::register::{Entry, Form, State, STATES};
use std::sync::Arc;

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    one_entry(facts).over_held_entries(facts, findings)
}

pub(crate) fn one_entry(facts: &Facts) -> OneEntry<'_> {
    let Some(register) = &facts.records.register else {
        return OneEntry::nothing(); // fixes-numbered reports the missing register
    };
    let file = &register.file;
    // The same note for every entry without a state: written once, not once an entry.
    let state_note: Arc<str> = state_note().into();
    OneEntry::new(move |entry, findings| {
        for problem in &entry.problems {
            findings.push(CHECK.finding(file, Some(problem.line), &problem.message));
        }
        entry_state(entry, file, &state_note, findings);
    })
}

fn entry_state(entry: &Entry, file: &str, state_note: &Arc<str>, findings: &mut Findings) {
    let Some(written) = entry.field("state") else {
        match &entry.stated {
            Some(stated) => required_fields(
                entry,
                stated.state,
                stated.line,
                Some(&stated.from),
                file,
                findings,
            ),
            None => {
                let message = format!(
                    "entry {} has no upstream state: no `state:` line, and nothing in its words says one",
                    entry.number
                );
                findings.push(
                    CHECK
                        .finding(file, Some(entry.line), message)
                        .with_shared_note(state_note),
                );
            }
        }
        return;
    };
    let Some(state) = State::parse(&written.value) else {
        let message = format!(
            "entry {} has unknown state `{}`",
            entry.number, written.value
        );
        findings.push(
            CHECK
                .finding(file, Some(written.line), message)
                .with_shared_note(state_note),
        );
        return;
    };
    required_fields(entry, state, written.line, None, file, findings);
    if let (State::Merged, Some(commit)) = (state, entry.field("fork-commit")) {
        if !commit.value.is_empty() && !is_full_sha(&commit.value) {
            let message = format!(
                "entry {} names fork commit `{}`, not a full SHA",
                entry.number, commit.value
            );
            findings.push(CHECK.finding(file, Some(commit.line), message));
        }
    }
}

/// The fields `state` needs, from the entry's list or its words; `from` names the words the
/// state was read from, when it was.
fn required_fields(
    entry: &Entry,
    state: State,
    line: usize,
    from: Option<&str>,
    file: &str,
    findings: &mut Findings,
) {
    // A missing link is `fix-link-present`'s finding, so it is reported once.
    let needs = entry.still_needs().into_iter();
    for key in needs.filter(|k| !matches!(*k, "link" | "state")) {
        let read = from.map_or(String::new(), |from| format!(" (read from {from})"));
        let message = format!(
            "entry {} is `{}`{read} but has no `{key}`",
            entry.number,
            state.as_str()
        );
        findings.push(
            CHECK
                .finding(file, Some(line), message)
                .with_note(field_note(entry, key)),
        );
    }
}

/// How to add `key` in the entry's own form: a field list where it has one (or is a heading
/// entry), a sentence of its words where it is a list item written in prose alone.
fn field_note(entry: &Entry, key: &str) -> String {
    let prose_item = matches!(entry.form, Form::ListItem { .. }) && entry.fields.is_empty();
    if prose_item {
        format!("say it in the entry's words: {}", words_help(key))
    } else {
        format!("add `- {key}: …` to the entry's list ({})", field_help(key))
    }
}

/// What a sentence must carry for each field, for entries written in prose alone.
fn words_help(key: &str) -> &'static str {
    match key {
        "cause" => "name the upstream commit or pull request that made it necessary (`owner/repo#N` or a SHA)",
        "package" => "name the patch that was sent",
        "fork-commit" => "name the full SHA of the fork commit that contains the fix",
        "reason" => "a sentence saying why the fix stays local",
        "issue" => "cite the issue that tracks it (`owner/repo#N` or its address)",
        _ => "see `forkbook check --explain fix-state-complete`",
    }
}

fn state_note() -> String {
    format!(
        "add `- state: …` with one of {}, or a sentence that says it \
         (`forkbook fixes list` shows how each entry was read)",
        states_and_fields()
    )
}

/// Every state with the field lines it needs, as this check requires them
/// (`State::required_fields`): `retarget-only (with - cause:), to-propose, …`. The check's note
/// and the entry `forkbook fix add` writes both say it so, so a new entry shows what it will be
/// asked for.
pub fn states_and_fields() -> String {
    let said: Vec<String> = STATES
        .iter()
        .map(|state| match state.required_fields() {
            [] => state.as_str().to_string(),
            fields => {
                let lines: Vec<String> = fields.iter().map(|f| format!("- {f}:")).collect();
                format!("{} (with {})", state.as_str(), lines.join(" and "))
            }
        })
        .collect();
    said.join(", ")
}

fn field_help(key: &str) -> &'static str {
    match key {
        "cause" => "the upstream commit or pull request that made the adaptation necessary",
        "link" => "the pull request against the fork or upstream",
        "package" => "the patch `forkbook propose` wrote and that was sent",
        "fork-commit" => "the full SHA of the fork commit that contains the fix",
        "reason" => "why the fix stays local",
        "issue" => "the issue that tracks it",
        _ => "see `forkbook check --explain fix-state-complete`",
    }
}
