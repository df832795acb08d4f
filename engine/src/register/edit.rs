//! Edits to one entry's fields that leave every other byte of the register as it was.
//!
//! A field that exists has its value replaced on its line; a new field goes after the entry's
//! last field, or, when the entry has none, as a new list at the entry's end: after a blank
//! line for a heading entry, nested in the item (indented, no blank line, so the list stays
//! tight) for a list entry. Nothing else moves: the diff of an edit is the lines it adds and
//! the values it replaces.

use crate::bail;
use crate::error::Result;

use super::{parse, Entry, Form};

/// Moves entry `number` to `proposed` with the pull request `url` (what `propose --record` does).
pub fn record_link(text: &str, number: u32, url: &str) -> Result<String> {
    record_proposal(text, number, url, None)
}

/// Like [`record_link`], and records the package that was sent when the entry has none yet.
pub fn record_proposal(
    text: &str,
    number: u32,
    url: &str,
    package: Option<&str>,
) -> Result<String> {
    if url.trim().is_empty() || url.contains(char::is_whitespace) {
        bail!("`{url}` is not a link");
    }
    let mut fields = vec![("state", "proposed"), ("link", url)];
    let register = parse("LOCAL_FIXES.md", text);
    let has_package = register
        .entry(number)
        .is_some_and(|e| e.value("package").is_some());
    if let (Some(package), false) = (package, has_package) {
        fields.push(("package", package));
    }
    set_fields(text, number, &fields)
}

/// Sets `key: value` fields of entry `number`, replacing existing values and adding the rest.
pub fn set_fields(text: &str, number: u32, fields: &[(&str, &str)]) -> Result<String> {
    let register = parse("LOCAL_FIXES.md", text);
    let Some(entry) = register.entry(number) else {
        bail!("the register has no entry {number}");
    };
    // A value is one line of the entry's list: a line break would write a field of its own.
    if let Some((key, value)) = fields.iter().find(|(_, v)| v.contains(char::is_control)) {
        bail!(
            "the `{key}` to write holds a line break or another control character: `{}`",
            value.escape_debug()
        );
    }
    let mut lines: Vec<String> = text.split_inclusive('\n').map(String::from).collect();
    let mut replaced = Vec::new();
    let mut added = Vec::new();
    let indent = match entry.form {
        Form::ListItem { indent } => " ".repeat(indent),
        Form::Heading => String::new(),
    };
    for (key, value) in fields {
        match entry.field(key) {
            Some(field) => replaced.push((field, *value)),
            None => added.push(format!("{indent}- {key}: {value}\n")),
        }
    }
    // Bottom up, so earlier line numbers stay true: the insertion after the last field first.
    insert_fields(&mut lines, entry, added);
    replaced.sort_by_key(|(field, _)| std::cmp::Reverse(field.line));
    for (field, value) in replaced {
        let end = field.end_line.min(lines.len());
        let mut new = vec![replace_value(&lines[field.line - 1], value)];
        new.extend(kept_continuation(
            &lines[field.line - 1],
            &lines[field.line..end],
        ));
        lines.splice(field.line - 1..end, new);
    }
    Ok(lines.concat())
}

/// The continuation lines of a field whose value is replaced, kept: after a blank line and
/// indented into the field's item, they are a paragraph of that item, which is not its value
/// (the value is the item's first paragraph), so no word of them is lost and the new value
/// reads alone.
fn kept_continuation(first: &str, rest: &[String]) -> Vec<String> {
    if rest.is_empty() {
        return Vec::new();
    }
    let lead = first.len() - first.trim_start().len();
    let marker = first[lead..].find(|c: char| c.is_whitespace()).unwrap_or(1);
    let content = lead + marker + 1;
    let ending = if first.ends_with("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let mut out = vec![ending.to_string()];
    for line in rest {
        let spaces = line.len() - line.trim_start_matches(' ').len();
        let pad = " ".repeat(content.saturating_sub(spaces));
        let mut line = format!("{pad}{line}");
        if !line.ends_with('\n') {
            line.push('\n');
        }
        out.push(line);
    }
    out
}

/// The line with everything after the key's colon replaced by ` value`.
fn replace_value(line: &str, value: &str) -> String {
    let ending = if line.ends_with("\r\n") {
        "\r\n"
    } else if line.ends_with('\n') {
        "\n"
    } else {
        ""
    };
    let head = line
        .split_once(':')
        .map_or(line.trim_end(), |(head, _)| head);
    format!("{head}: {value}{ending}")
}

/// Inserts new field lines after the entry's last field, or as a new list at its end.
fn insert_fields(lines: &mut Vec<String>, entry: &Entry, added: Vec<String>) {
    if added.is_empty() {
        return;
    }
    let last_field = entry.fields.iter().map(|f| f.end_line).max();
    let at = last_field.unwrap_or(entry.end_line).min(lines.len());
    if let Some(line) = lines.get_mut(at.wrapping_sub(1)) {
        if !line.ends_with('\n') {
            line.push('\n');
        }
    }
    let mut block = added;
    if let Form::ListItem { .. } = entry.form {
        // Nested in the item: the next item or what follows the list needs no blank line.
        lines.splice(at..at, block);
        return;
    }
    if last_field.is_none() {
        block.insert(0, "\n".to_string());
    }
    // Text right after the new lines would run on into the last new item: keep it apart.
    let next = lines.get(at).map(|l| l.trim_start());
    if next.is_some_and(|l| !l.is_empty() && !l.starts_with(['-', '*', '+'])) {
        block.push("\n".to_string());
    }
    lines.splice(at..at, block);
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# Local fixes\n\n## 1. One\n\nProse of `a.cpp`.\n\n- state: kept-local\n- reason: ours\n\n## 2. Two\n\nProse.\n";

    #[test]
    fn record_link_replaces_the_state_and_adds_the_link_after_the_last_field() {
        let text = record_link(TEXT, 1, "https://github.com/o/r/pull/3").unwrap();
        assert!(
            text.contains(
                "- state: proposed\n- reason: ours\n- link: https://github.com/o/r/pull/3\n\n## 2."
            ),
            "{text}"
        );
        let entry = parse("f", &text).entries[0].clone();
        assert_eq!(entry.value("link"), Some("https://github.com/o/r/pull/3"));
    }

    #[test]
    fn record_proposal_gives_an_entry_without_fields_a_list_at_its_end() {
        let text = record_proposal(
            TEXT,
            2,
            "https://github.com/o/r/pull/4",
            Some("propose/0002-two.patch"),
        )
        .unwrap();
        assert!(text.ends_with("Prose.\n\n- state: proposed\n- link: https://github.com/o/r/pull/4\n- package: propose/0002-two.patch\n"), "{text}");
        assert_eq!(&text[..TEXT.len() - 1], &TEXT[..TEXT.len() - 1]);
    }

    #[test]
    fn a_replaced_value_keeps_its_continuation_lines_as_a_paragraph_of_the_field() {
        let text = "## 1. One\n\nProse.\n\n- state: to-propose, held until\n  the root cause is known\n  (see the notes)\n- reason: ours\n";
        let new = record_link(text, 1, "https://github.com/o/r/pull/3").unwrap();
        assert!(
            new.contains("- state: proposed\n\n  the root cause is known\n  (see the notes)\n- reason: ours\n"),
            "{new}"
        );
        let entry = parse("f", &new).entries[0].clone();
        assert_eq!(entry.value("state"), Some("proposed"));
        assert_eq!(entry.value("reason"), Some("ours"));
        assert_eq!(entry.value("link"), Some("https://github.com/o/r/pull/3"));
    }

    #[test]
    fn a_missing_entry_or_a_bad_link_is_an_error() {
        assert!(record_link(TEXT, 9, "https://x/pull/1")
            .unwrap_err()
            .message()
            .contains("no entry 9"));
        assert!(record_link(TEXT, 1, "not a link").is_err());
    }

    /// Before, a package path from `propose --out $'x\n- link: …'` wrote a `link` of its own.
    #[test]
    fn a_value_with_a_line_break_is_refused_and_nothing_is_written() {
        let package = "x\n- link: https://github.com/o/r/pull/7\n- y/0002-two.patch";
        let err = record_proposal(TEXT, 2, "https://github.com/o/r/pull/4", Some(package));
        let message = err.unwrap_err().message().to_string();
        assert!(
            message.contains("`package` to write holds a line break"),
            "{message}"
        );
        let err = record_proposal(TEXT, 2, "https://github.com/o/r/pull/4\u{1b}[2J", None);
        assert!(err.is_err());
    }
}
