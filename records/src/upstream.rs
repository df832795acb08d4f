//! `UPSTREAM`: which fork commit the overlay vendors and which pin it sits on, as `key: value`
//! lines.
//!
//! The record keeps what it needs to be written back unchanged: unknown keys, comments and line
//! order, so an update changes only the values it means to change. It is read once, leniently:
//! every line that is not `key: value` is a [`Problem`] (what the checks report); a command that
//! cannot go on with such a record asks [`Upstream::parse`], which stops at the first.

use serde::Serialize;

use crate::problem::{Problem, RecordError};

/// Keys of `UPSTREAM` that forkbook reads and writes.
pub mod keys {
    pub const SOURCE: &str = "source";
    pub const BRANCH: &str = "branch";
    pub const COMMIT: &str = "commit";
    pub const BASE: &str = "fork_upstream_merge_base";
    pub const PIN: &str = "retargeted_to_mlx_pin";
    pub const LICENSE: &str = "license";
    pub const LOCAL_FIXES: &str = "local_fixes";
}

/// One `key: value` line, with its 1-based line in the record as read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KeyValueLine {
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// One line of `UPSTREAM`: a pair, or a line kept as written (blank, `#` comment, or a line that
/// is neither, which is also a problem).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    Pair(KeyValueLine),
    Verbatim(String),
}

/// The `UPSTREAM` record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Upstream {
    /// The record, relative to the project root (`patches-rocm/UPSTREAM`).
    pub file: String,
    #[serde(rename = "lines", serialize_with = "serialize_pairs")]
    lines: Vec<Line>,
    /// Lines that are not `key: value`, a blank line or a `#` comment.
    pub problems: Vec<Problem>,
}

fn serialize_pairs<S: serde::Serializer>(lines: &[Line], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(lines.iter().filter_map(|l| match l {
        Line::Pair(pair) => Some(pair),
        Line::Verbatim(_) => None,
    }))
}

/// What one line is: blank or a comment, a pair, or a message saying what is wrong.
fn classify(line: &str) -> Result<Option<(&str, &str)>, String> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(None);
    }
    let Some((key, value)) = trimmed.split_once(':') else {
        return Err(format!(
            "expected `key: value`, found `{}`",
            trimmed.escape_debug()
        ));
    };
    let key = key.trim();
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(format!("`{}` is not a key", key.escape_debug()));
    }
    Ok(Some((key, value.trim())))
}

impl Upstream {
    /// Reads every line; each line that is not `key: value` is kept as written and named in
    /// [`Upstream::problems`].
    pub fn read(file: &str, text: &str) -> Upstream {
        let mut record = Upstream {
            file: file.to_string(),
            ..Upstream::default()
        };
        for (index, line) in text.lines().enumerate() {
            // `render` ends every line with `\n`: a stray `\r` kept here would come back as a
            // line break on the next read, so an update would not be stable.
            let verbatim = || Line::Verbatim(line.trim_end_matches('\r').to_string());
            match classify(line) {
                Ok(Some((key, value))) => record.lines.push(Line::Pair(KeyValueLine {
                    key: key.to_string(),
                    value: value.to_string(),
                    line: index + 1,
                })),
                Ok(None) => record.lines.push(verbatim()),
                Err(message) => {
                    record.problems.push(Problem {
                        line: index + 1,
                        message,
                    });
                    record.lines.push(verbatim());
                }
            }
        }
        record
    }

    /// Reads the record for a command that cannot go on with a malformed one: the first line
    /// that is not `key: value` is the error.
    pub fn parse(text: &str, file: &str) -> Result<Upstream, RecordError> {
        Upstream::read(file, text).checked()
    }

    /// The record as read, or its first problem as an error naming its file and line: what a
    /// move needs before it rewrites the record.
    pub fn checked(self) -> Result<Upstream, RecordError> {
        match self.problems.first() {
            Some(problem) => Err(
                RecordError::at(&self.file, Some(problem.line), &problem.message).with_note(
                    "each line of UPSTREAM is `key: value`, a blank line or a `#` comment",
                ),
            ),
            None => Ok(self),
        }
    }

    /// The pairs in file order.
    pub fn pairs(&self) -> Vec<&KeyValueLine> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Pair(pair) => Some(pair),
                Line::Verbatim(_) => None,
            })
            .collect()
    }

    /// The first line with this key.
    pub fn pair(&self, key: &str) -> Option<&KeyValueLine> {
        self.pairs().into_iter().find(|p| p.key == key)
    }

    /// The value of the first line with this key.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pair(key).map(|p| p.value.as_str())
    }

    /// The 1-based line of `key`, for messages.
    pub fn line_of(&self, key: &str) -> Option<usize> {
        self.pair(key).map(|p| p.line)
    }

    /// Sets `key` in place, or appends it after the last pair.
    pub fn set(&mut self, key: &str, value: &str) {
        for line in &mut self.lines {
            if let Line::Pair(pair) = line {
                if pair.key == key {
                    pair.value = value.to_string();
                    return;
                }
            }
        }
        let at = self
            .lines
            .iter()
            .rposition(|l| matches!(l, Line::Pair(_)))
            .map_or(self.lines.len(), |i| i + 1);
        self.lines.insert(
            at,
            Line::Pair(KeyValueLine {
                key: key.to_string(),
                value: value.to_string(),
                line: at + 1,
            }),
        );
    }

    /// This record after a move to the fork commit `commit` on the merge base `base` and the
    /// pin `pin`, its objects from the fork at `source` on `branch`: the new commits (a pin only
    /// where it is not the base or the record already names one), and the fork, where the record
    /// names another (its own spelling of the same repository stays).
    pub fn moved(&self, [commit, base, pin]: [&str; 3], source: &str, branch: &str) -> Upstream {
        let mut upstream = self.clone();
        upstream.set(keys::COMMIT, commit);
        upstream.set(keys::BASE, base);
        if pin != base || upstream.get(keys::PIN).is_some() {
            upstream.set(keys::PIN, pin);
        }
        let named = upstream.get(keys::SOURCE);
        if !named.is_some_and(|named| crate::remote::same_repository(named, source)) {
            upstream.set(keys::SOURCE, source);
        }
        if upstream.get(keys::BRANCH).map(str::trim) != Some(branch) {
            upstream.set(keys::BRANCH, branch);
        }
        upstream
    }

    /// The record as `sync` writes it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            match line {
                Line::Pair(pair) => out.push_str(&format!("{}: {}\n", pair.key, pair.value)),
                Line::Verbatim(text) => {
                    out.push_str(text);
                    out.push('\n');
                }
            }
        }
        out
    }

    /// A full 40-hex SHA under `key`, or an error naming the line and what to write.
    pub fn sha(&self, key: &str, file: &str) -> Result<String, RecordError> {
        let Some(pair) = self.pair(key) else {
            return Err(RecordError::at(file, None, format!("no `{key}:` line"))
                .with_note(format!("add `{key}: <40-hex commit>` to {file}")));
        };
        let value = &pair.value;
        if value.len() != 40 || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(RecordError::at(
                file,
                Some(pair.line),
                format!(
                    "`{key}` must be a full 40-hex SHA, found `{}`",
                    value.escape_debug()
                ),
            ));
        }
        Ok(value.to_ascii_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAL_STYLE: &str = "source: https://example.org/fork\nbranch: rocm-support\ncommit: 75915908dfe5028335d318b10340313744fd3a8d\n# a comment\nfork_upstream_merge_base: 39886de461d4f014cd60a3a68ad42fd8d776754a\nlicense: MIT\nextra_key: kept\n";

    #[test]
    fn upstream_round_trips_byte_for_byte() {
        let u = Upstream::parse(REAL_STYLE, "UPSTREAM").unwrap();
        assert_eq!(u.render(), REAL_STYLE);
        assert_eq!(u.get("branch"), Some("rocm-support"));
        assert_eq!(u.line_of("license"), Some(6));
    }

    #[test]
    fn a_move_writes_the_commits_and_keeps_the_record_s_spelling_of_its_fork() {
        let u = Upstream::parse(REAL_STYLE, "UPSTREAM").unwrap();
        let (fork, base) = ("a".repeat(40), "b".repeat(40));
        // The same fork spelled with `.git`: the record's spelling stays; no pin besides the base.
        let moved = u.moved(
            [&fork, &base, &base],
            "https://example.org/fork.git",
            "rocm-support",
        );
        let expected = REAL_STYLE
            .replace("75915908dfe5028335d318b10340313744fd3a8d", &fork)
            .replace("39886de461d4f014cd60a3a68ad42fd8d776754a", &base);
        assert_eq!(moved.render(), expected);
        // Another fork and branch are written, and a pin apart from the base is recorded.
        let pin = "c".repeat(40);
        let moved = u.moved([&fork, &base, &pin], "https://example.org/other", "next");
        assert_eq!(moved.get(keys::SOURCE), Some("https://example.org/other"));
        assert_eq!(moved.get(keys::BRANCH), Some("next"));
        assert_eq!(moved.get(keys::PIN), Some(pin.as_str()));
    }

    #[test]
    fn upstream_update_keeps_unknown_keys_and_order() {
        let mut u = Upstream::parse(REAL_STYLE, "UPSTREAM").unwrap();
        u.set(keys::COMMIT, &"a".repeat(40));
        u.set(keys::PIN, &"b".repeat(40));
        let text = u.render();
        let keys: Vec<&str> = u.pairs().iter().map(|p| p.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "source",
                "branch",
                "commit",
                "fork_upstream_merge_base",
                "license",
                "extra_key",
                "retargeted_to_mlx_pin"
            ]
        );
        assert!(text.contains("# a comment\nfork_upstream_merge_base"));
        assert!(text.contains("extra_key: kept\nretargeted_to_mlx_pin: bbbb"));
    }

    #[test]
    fn malformed_upstream_names_file_and_line() {
        let err = Upstream::parse(
            "source: x\nthis line has no colon\n",
            "patches-rocm/UPSTREAM",
        )
        .unwrap_err();
        assert_eq!(err.line, Some(2));
        assert!(
            err.to_string().starts_with("patches-rocm/UPSTREAM:2:"),
            "{err}"
        );
        let u = Upstream::parse("commit: 1234\n", "UPSTREAM").unwrap();
        let err = u.sha("commit", "UPSTREAM").unwrap_err();
        assert!(err.to_string().contains("UPSTREAM:1"), "{err}");
    }

    #[test]
    fn a_lenient_read_keeps_every_pair_and_names_every_bad_line() {
        let text = "source: x\n# note\nnot a pair\ncommit: abc\n: no key\n";
        let record = Upstream::read("UPSTREAM", text);
        let pairs: Vec<(&str, usize)> = record
            .pairs()
            .iter()
            .map(|p| (p.key.as_str(), p.line))
            .collect();
        assert_eq!(pairs, [("source", 1), ("commit", 4)]);
        let lines: Vec<usize> = record.problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [3, 5]);
        assert_eq!(
            record.render(),
            text,
            "a bad line is written back as it was"
        );
    }

    #[test]
    fn upstream_with_stray_carriage_returns_renders_stably() {
        // Found by the `upstream` fuzz target: a lone `\r` line came back as an extra line break.
        for text in ["\r", "source: x\n\r", "# c\r\r\n", "\r\r\nbranch: b\n"] {
            let rendered = Upstream::parse(text, "UPSTREAM").unwrap().render();
            assert_eq!(
                Upstream::parse(&rendered, "UPSTREAM").unwrap().render(),
                rendered,
                "{text:?}"
            );
        }
    }
}
