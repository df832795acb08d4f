//! The `LOCAL_FIXES.md` register: parsing it into entries, and the edits forkbook makes to
//! it (`propose --record` and `fixes migrate`).
//!
//! The register stays prose for people, written the way they write it. An entry is either a
//! level-2 heading `## N. Title` with any Markdown below it, or an item of a numbered list
//! `N. **Title.** prose…`; either may sit in sections (`## Fixes to the fork's kernels`).
//! Its machine-read part is a short list of `key: value` fields, usually at its end (nested
//! in the item for a list entry):
//!
//! ```markdown
//! ## 3. Keep the event's stream alive while it waits
//!
//! Why the fix exists, for people.
//!
//! - state: proposed
//! - link: https://github.com/NripeshN/mlx/pull/12
//! - package: propose/0003-keep-the-event-s-stream-alive-while-it-waits.patch
//! - files: `mlx/backend/rocm/event.cpp`
//! ```
//!
//! Without a `state` field, the state is what the entry's words say
//! (`forkbook_records::register::words`). A list counts as the field list when one of its items
//! starts with a known key. The files an entry names are its `files:` field (or a `Files:`
//! line), otherwise every code span of its prose that looks like a path. Parsing never fails and never rewrites: what is malformed becomes a
//! [`Problem`] with its line, which the checks report.

mod edit;
mod listing;
mod migrate;

pub use edit::{record_link, record_proposal, set_fields};
pub use forkbook_records::register::{
    list_item_head, normalize_key, numbered_title, parse, Entry, Field, Form, NamedFile, Problem,
    Register, State, Stated, KNOWN_KEYS, STATES,
};
pub use listing::{listing, listing_with, Listed, Listing, StateCount};
pub use migrate::{migrate, Migration, Proposal};

use std::path::Path;

use crate::error::{Context, Error, Result};

/// Reads and parses the register at `path`; `label` is the path shown in findings.
pub fn load(path: &Path, label: &str) -> Result<Register> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("failed to read `{label}`"))?;
    Ok(parse(label, &text))
}

/// The entry with this number, or an error naming the register.
pub fn entry(register: &Register, number: u32) -> Result<&Entry> {
    (register.entry(number))
        .ok_or_else(|| Error::new(format!("`{}` has no entry {number}", register.file)))
}
