//! The model of the `LOCAL_FIXES.md` register: numbered entries, the files each names, and the
//! upstream state with its fields.
//!
//! The parser ([`super::parse`]) produces these types directly, so the checks read the register
//! the same way every command does. An entry is a `## N. Title` heading or a numbered list item
//! `N. **Title.** prose…`, in whatever sections the register has. Its state is the `state:`
//! field when it has one, otherwise what its own words say (see [`Stated`]). The machine-read
//! part of an entry is a short `key: value` list:
//!
//! ```markdown
//! ## 2. Free the allocator's cached buffers on exit
//!
//! Prose for people.
//!
//! - state: proposed
//! - link: https://github.com/NripeshN/mlx/pull/12
//! - package: propose/0002-free-the-allocator-s-cached-buffers-on-exit.patch
//! - files: `mlx/backend/rocm/allocator.cpp`
//! ```

use serde::Serialize;

/// The keys an entry's list may hold, in the order `fixes migrate` and `propose --record` write them.
pub const KNOWN_KEYS: &[&str] = &[
    "state",
    "link",
    "package",
    "fork-commit",
    "cause",
    "reason",
    "issue",
    "files",
    "reproduction",
    "draft",
    "confirmed",
];

/// The known key `key` is (the catalogue's own text, which a field keeps rather than a copy).
pub fn known_key(key: &str) -> Option<&'static str> {
    KNOWN_KEYS.iter().copied().find(|known| *known == key)
}

/// The register as read.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Register {
    /// Path of the register, relative to the project root.
    pub file: String,
    pub entries: Vec<Entry>,
    /// Problems with the register's shape: headings that look like entries but are not, an
    /// older-style register, entries out of order.
    pub problems: Vec<Problem>,
    /// The sections that say what the overlay leaves out of the vendored set ("Dropped from the
    /// vendored set", "Not carried"), in their own words.
    pub left_out: Vec<Section>,
}

/// A section of the register's prose: its heading's line and title, and its text as a reader
/// sees it (no HTML comment).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Section {
    pub line: usize,
    pub title: String,
    pub text: String,
}

impl Register {
    pub fn entry(&self, number: u32) -> Option<&Entry> {
        self.entries.iter().find(|e| e.number == number)
    }
}

/// A problem at a line: the one shape every record's problems take.
pub use crate::Problem;

/// One numbered entry: `## N. Title` or `N. **Title.**`, its prose, and its fields.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Entry {
    pub number: u32,
    pub title: String,
    /// Line of the heading or of the list item's first line.
    pub line: usize,
    /// How the entry is written, which decides how a field is added to it.
    pub form: Form,
    /// The section heading the entry sits under (`Fixes to the fork's kernels`), if any.
    pub section: Option<Box<str>>,
    /// Web addresses the entry's text names, in order, each once.
    pub links: Box<[String]>,
    /// Issue and pull request references the entry's text names (`owner/repo#N`), each once.
    pub issues: Box<[String]>,
    /// The state the entry's own words give, when it has no `state` field (boxed: most entries
    /// have a `state` field, and each of a register's entries holds room for this).
    pub stated: Option<Box<Stated>>,
    /// Last line of the entry (the line before the next heading of its level, or the end).
    pub end_line: usize,
    /// The entry's Markdown without its heading and its field list, trimmed.
    pub prose: Box<str>,
    /// The files the entry names: the `files:` field when it has one, otherwise every code
    /// span of the prose that looks like a path.
    pub files: Box<[NamedFile]>,
    /// The `key: value` fields, keys normalized (lowercase, `-` for spaces and `_`).
    pub fields: Vec<Field>,
    /// Problems with the fields (unknown keys, a field given twice).
    pub problems: Box<[Problem]>,
}

impl Entry {
    /// The field with this (normalized) key.
    pub fn field(&self, key: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.key == key)
    }

    /// The value of the field, when present and not empty; without the field, what the
    /// entry's words give for it (a kept-local entry's reason read from its prose).
    pub fn value(&self, key: &str) -> Option<&str> {
        match self.field(key) {
            Some(field) => Some(field.value.as_str()).filter(|v| !v.is_empty()),
            None => self
                .stated
                .as_ref()
                .filter(|_| self.field("state").is_none())
                .and_then(|s| s.fields.iter().find(|(k, _)| k == key))
                .map(|(_, v)| v.as_str()),
        }
    }

    /// The upstream state: the `state` field's when it has one (none when its value is
    /// unknown), otherwise the one its words give, otherwise none.
    pub fn state(&self) -> Option<State> {
        match self.field("state") {
            Some(field) => State::parse(&field.value),
            None => self.stated.as_ref().map(|s| s.state),
        }
    }

    /// Why the entry is in its state: the `reason` field, or the reason its words give.
    pub fn reason(&self) -> Option<&str> {
        self.value("reason")
    }

    /// The issue the entry's own text cites (`owner/repo#N`, a bare `#N` of the project, an
    /// issue's address), which is its issue when it has no `issue` field.
    pub fn cited_issue(&self) -> Option<&str> {
        self.issues
            .first()
            .or_else(|| self.links.iter().find(|l| l.contains("/issues/")))
            .map(String::as_str)
    }

    /// What the entry still lacks for its state, in the order of [`KNOWN_KEYS`]: `state` when it
    /// has none; else each field the state requires that no field, none of its words and (for
    /// `issue`) no issue its text cites gives, and the `link` of an entry that is still to be
    /// proposed. The one rule for it: `check` asks for these and `fixes migrate` says "still
    /// needs" them.
    pub fn still_needs(&self) -> Vec<&'static str> {
        let Some(state) = self.state() else {
            return vec!["state"];
        };
        let mut needed: Vec<&'static str> = state.required_fields().to_vec();
        if state == State::ToPropose {
            needed.push("link");
        }
        needed.retain(|key| {
            self.value(key).is_none() && !(*key == "issue" && self.cited_issue().is_some())
        });
        needed.sort_by_key(|key| KNOWN_KEYS.iter().position(|k| k == key));
        needed
    }

    /// Whether the fix is meant for the fork (and so needs a package and a link): every entry
    /// that is not a retarget-only adaptation or deliberately kept local.
    pub fn applies_to_fork(&self) -> bool {
        !matches!(self.state(), Some(State::RetargetOnly | State::KeptLocal))
    }
}

/// How an entry is written in the register.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    /// `## N. Title`, its prose below, its fields a list at its end.
    #[default]
    Heading,
    /// `N. **Title.** prose…`, an item of a numbered list; its fields are a list nested in the
    /// item, indented by `indent` spaces.
    ListItem { indent: usize },
}

/// A state read from an entry's own words, with the sentence that says it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stated {
    pub state: State,
    /// The sentence (or the section, or the register's policy) the state was read from.
    pub from: String,
    /// The line of that sentence.
    pub line: usize,
    /// The fields the words give too (`reason`, `issue`, `cause`), as `(key, value)`.
    pub fields: Vec<(String, String)>,
}

/// One `key: value` field of an entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Field {
    /// One of [`KNOWN_KEYS`].
    pub key: &'static str,
    pub value: String,
    pub line: usize,
    /// Last line of the list item (a value may run on over several lines).
    pub end_line: usize,
}

/// A file an entry names, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NamedFile {
    pub name: String,
    pub line: usize,
}

/// Where an entry's fix stands with respect to upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// An adaptation to the new pin, which the fork will make itself when it merges newer
    /// upstream; needs the upstream commit or PR that caused it.
    RetargetOnly,
    /// Applies to the fork and is to be proposed there, not sent yet: the gate fails until its
    /// pull request's link is recorded. A hold ("after a root cause") is its reason.
    ToPropose,
    /// Sent to the fork (or upstream); needs the pull request's link and the package sent.
    Proposed,
    /// Proposed and merged; needs the link and the fork commit that contains it.
    Merged,
    /// Deliberately not proposed; needs the reason and an issue reference.
    KeptLocal,
}

pub const STATES: &[State] = &[
    State::RetargetOnly,
    State::ToPropose,
    State::Proposed,
    State::Merged,
    State::KeptLocal,
];

impl State {
    pub fn parse(text: &str) -> Option<State> {
        STATES
            .iter()
            .copied()
            .find(|s| s.as_str() == normalize_key(text))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            State::RetargetOnly => "retarget-only",
            State::ToPropose => "to-propose",
            State::Proposed => "proposed",
            State::Merged => "merged",
            State::KeptLocal => "kept-local",
        }
    }

    /// The fields an entry in this state must have.
    pub fn required_fields(self) -> &'static [&'static str] {
        match self {
            State::RetargetOnly => &["cause"],
            // Not sent yet: what it lacks is the link, which `fix-link-present` asks for.
            State::ToPropose => &[],
            State::Proposed => &["link", "package"],
            State::Merged => &["link", "fork-commit"],
            State::KeptLocal => &["reason", "issue"],
        }
    }
}

/// Normalizes a field key or state as written: trimmed, lowercase, `-` for spaces and `_`.
pub fn normalize_key(key: &str) -> String {
    key.trim()
        .to_ascii_lowercase()
        .split([' ', '_', '-'])
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}
