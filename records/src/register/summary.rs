//! What the checks that read a register's entries together need of each entry, held in about
//! twelve bytes an entry: its number, line, whether it is merged, and the files it names as ids
//! into one list of the names the register writes. A register of 600,000 entries held as
//! [`Entry`]s took 115 MB before their text; summed up, `check` holds it in under 10 MB and
//! reads the entries themselves one at a time ([`super::each_entry`]).

use std::collections::HashMap;

use serde::Serialize;

use super::{Entry, State};

/// The register's entries summed up, in the register's order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    entries: Vec<Summed>,
    /// Every file name the entries write, once each, as written.
    names: Vec<Box<str>>,
    /// Each entry's files as ids into `names`, entry after entry (an entry's `files_end` says
    /// where its own end).
    files: Vec<u32>,
    /// The values of the entries' `fork-commit` fields, trimmed, in order.
    fork_commits: Vec<Box<str>>,
    #[serde(skip)]
    ids: HashMap<Box<str>, u32>,
}

/// Twelve bytes: whether the entry is merged is the top bit of its line (a bool beside three
/// `u32`s took four more).
#[derive(Debug, Clone, Copy, Serialize)]
struct Summed {
    number: u32,
    line_and_merged: u32,
    files_end: u32,
}

const MERGED: u32 = 1 << 31;

/// One entry as the summary holds it.
#[derive(Debug, Clone, Copy)]
pub struct SummedEntry<'s> {
    pub number: u32,
    /// The line of its heading or of its list item's first line.
    pub line: usize,
    /// Whether its state is `merged`.
    pub merged: bool,
    files: &'s [u32],
    names: &'s [Box<str>],
}

impl<'s> SummedEntry<'s> {
    /// The files the entry names, as written, in its order.
    pub fn files(&self) -> impl Iterator<Item = &'s str> + 's {
        let names = self.names;
        self.files.iter().map(move |id| &*names[*id as usize])
    }
}

impl Summary {
    /// The summary of these entries.
    pub fn of<'e>(entries: impl IntoIterator<Item = &'e Entry>) -> Summary {
        let mut summary = Summary::default();
        entries.into_iter().for_each(|entry| summary.add(entry));
        summary
    }

    /// Adds the next entry of the register.
    pub fn add(&mut self, entry: &Entry) {
        for named in &entry.files {
            let next = self.names.len() as u32;
            let id = *self.ids.entry(named.name.as_str().into()).or_insert(next);
            if id == next {
                self.names.push(named.name.as_str().into());
            }
            self.files.push(id);
        }
        if let Some(field) = entry.field("fork-commit") {
            self.fork_commits.push(field.value.trim().into());
        }
        let line = u32::try_from(entry.line)
            .unwrap_or(u32::MAX)
            .min(MERGED - 1);
        let merged = if entry.state() == Some(State::Merged) {
            MERGED
        } else {
            0
        };
        self.entries.push(Summed {
            number: entry.number,
            line_and_merged: line | merged,
            files_end: self.files.len() as u32,
        });
    }

    /// Gives back the room held for entries still to come, once the last is added.
    pub fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
        self.files.shrink_to_fit();
        self.ids = HashMap::new();
    }

    /// How many entries the register has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, in the register's order.
    pub fn entries(&self) -> impl Iterator<Item = SummedEntry<'_>> + '_ {
        (0..self.entries.len()).map(|at| self.at(at))
    }

    /// The first entry numbered `number`.
    pub fn entry(&self, number: u32) -> Option<SummedEntry<'_>> {
        let at = self.entries.iter().position(|e| e.number == number)?;
        Some(self.at(at))
    }

    /// Every file name the entries write, each once, in the order first written.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|name| &**name)
    }

    /// The values of the entries' `fork-commit` fields, trimmed, in the register's order.
    pub fn fork_commits(&self) -> impl Iterator<Item = &str> {
        self.fork_commits.iter().map(|sha| &**sha)
    }

    fn at(&self, at: usize) -> SummedEntry<'_> {
        let summed = self.entries[at];
        let start = match at {
            0 => 0,
            _ => self.entries[at - 1].files_end as usize,
        };
        SummedEntry {
            number: summed.number,
            line: (summed.line_and_merged & !MERGED) as usize,
            merged: summed.line_and_merged & MERGED != 0,
            files: &self.files[start..summed.files_end as usize],
            names: &self.names,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_summed_up_keeps_its_number_line_state_and_files() {
        let text = "# Local fixes\n\n## 1. One\n\nTouches `a.cpp`.\n\n- state: merged\n- link: https://github.com/o/r/pull/1\n- fork-commit:  abc \n- files: `a.cpp`, `b.cpp`\n\n## 1. Again\n\n- state: proposed\n- files: `b.cpp`\n\n## 3. None\n\nNo file.\n";
        let register = super::super::parse("LOCAL_FIXES.md", text);
        let summary = Summary::of(&register.entries);
        assert_eq!(summary.len(), register.entries.len());
        for (summed, entry) in summary.entries().zip(&register.entries) {
            assert_eq!(
                (summed.number, summed.line, summed.merged),
                (
                    entry.number,
                    entry.line,
                    entry.state() == Some(State::Merged)
                )
            );
            let files: Vec<&str> = entry.files.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(summed.files().collect::<Vec<_>>(), files);
        }
        assert_eq!(summary.names().collect::<Vec<_>>(), ["a.cpp", "b.cpp"]);
        assert_eq!(summary.fork_commits().collect::<Vec<_>>(), ["abc"]);
        assert_eq!(summary.entry(1).map(|e| e.line), Some(3));
        assert!(summary.entry(2).is_none());
    }
}
