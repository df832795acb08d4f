//! `fixes list`: the register as forkbook reads it, one record per entry, for people and for
//! scripts. The JSON form is stable: fields are added, never renamed or removed.

use serde::Serialize;

use super::{Entry, Problem, Register, State, STATES};
use forkbook_checks::facts::CitedPull;
use forkbook_records::names::Names;

/// Every entry of a register and what is wrong with its shape.
#[derive(Debug, Clone, Serialize)]
pub struct Listing {
    pub file: String,
    pub entries: Vec<Listed>,
    /// Entries per state, in the order of [`STATES`], and `none` for entries without one.
    pub states: Vec<StateCount>,
    /// Problems of the register's shape and of its entries' fields, and every entry with no
    /// state, each at its line.
    pub problems: Vec<Problem>,
}

/// How many entries are in one state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateCount {
    /// `None` for the entries with no state (`none` in JSON, as [`StateCount::name`] says).
    #[serde(serialize_with = "state_or_none")]
    pub state: Option<State>,
    pub entries: usize,
}

impl StateCount {
    /// The state's name, or `none`.
    pub fn name(&self) -> &'static str {
        self.state.map_or("none", State::as_str)
    }
}

fn state_or_none<S: serde::Serializer>(state: &Option<State>, to: S) -> Result<S::Ok, S::Error> {
    to.serialize_str(state.map_or("none", State::as_str))
}

/// One entry as read.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub number: u32,
    pub title: String,
    /// `null` when neither a `state` field nor the entry's words give one.
    pub state: Option<State>,
    /// `field` (a `state:` line), `words` (its prose, section or the register's policy), or
    /// `null`.
    pub state_source: Option<&'static str>,
    /// The field's value or the sentence the state was read from.
    pub state_text: Option<String>,
    /// The line of that field or sentence.
    pub state_line: Option<usize>,
    pub reason: Option<String>,
    pub links: Vec<String>,
    pub issues: Vec<String>,
    /// The files the entry names, each once, as paths (`Entry::named_files`).
    pub files: Vec<String>,
    pub section: Option<String>,
    pub line: usize,
    /// The pull requests and issues of the fork and upstream it cites, each with its state as
    /// the pull refs say (`fixes list` in a project fills them in; empty otherwise).
    pub pulls: Vec<CitedPull>,
}

/// The listing of a parsed register, each entry with its citations' states from `pulls` (and
/// its files as [`listing`] gives them).
pub fn listing_with(
    register: &Register,
    pulls: &[CitedPull],
    overlay: Option<&Names>,
    backend_prefix: &str,
) -> Listing {
    let mut listing = listing(register, overlay, backend_prefix);
    for entry in &mut listing.entries {
        entry.pulls = (pulls.iter())
            .filter(|p| p.entry == entry.number)
            .cloned()
            .collect();
    }
    listing
}

/// The listing of a parsed register; `overlay` (the overlay's files, when known) and
/// `backend_prefix` say which of an entry's spellings are files ([`Entry::named_files`]).
pub fn listing(register: &Register, overlay: Option<&Names>, backend_prefix: &str) -> Listing {
    let mut problems = register.problems.clone();
    let entries: Vec<Listed> = register
        .entries
        .iter()
        .map(|entry| listed(entry, &mut problems, overlay, backend_prefix))
        .collect();
    problems.sort_by_key(|p| p.line);
    // Every state in order, then `None` for the entries without one.
    let states = STATES.iter().copied().map(Some).chain([None]);
    let states = states
        .map(|state| StateCount {
            state,
            entries: entries.iter().filter(|e| e.state == state).count(),
        })
        .collect();
    Listing {
        file: register.file.clone(),
        entries,
        states,
        problems,
    }
}

/// One entry as listed; its problems go to `problems`, with one more when it has no state.
fn listed(
    entry: &Entry,
    problems: &mut Vec<Problem>,
    overlay: Option<&Names>,
    backend_prefix: &str,
) -> Listed {
    problems.extend(entry.problems.iter().cloned());
    let (state_source, state_text, state_line) = match (entry.field("state"), &entry.stated) {
        (Some(field), _) => (Some("field"), Some(field.value.clone()), Some(field.line)),
        (None, Some(stated)) => (Some("words"), Some(stated.from.clone()), Some(stated.line)),
        (None, None) => {
            problems.push(Problem {
                line: entry.line,
                message: format!(
                    "entry {}: no `state:` line, and nothing in its words gives a state",
                    entry.number
                ),
            });
            (None, None, None)
        }
    };
    Listed {
        number: entry.number,
        title: entry.title.clone(),
        state: entry.state(),
        state_source,
        state_text,
        state_line,
        reason: entry.reason().map(String::from),
        links: entry.links.to_vec(),
        issues: entry.issues.to_vec(),
        files: entry.named_files(overlay, backend_prefix),
        section: entry.section.as_deref().map(String::from),
        line: entry.line,
        pulls: Vec::new(),
    }
}
