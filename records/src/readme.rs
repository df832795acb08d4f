//! The overlay's README counts: the one place they are computed, read and written, in a counts
//! block between two HTML comments or in prose ("the backend has 106 files", "15 core files").
//!
//! A README written by people states its counts in sentences. Each number followed within a few
//! words by `files`, `fixes` or `entries` is read as a count when its words say which one; when
//! they do not, it is kept as a sentence that could not be read, so the check can name it rather
//! than pass over it in silence.

use regex::Regex;
use serde::Serialize;
use std::sync::LazyLock;

/// The counts block of the overlay's README, between two HTML comments, so people read it as a
/// list and the checker can verify every number.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Counts {
    pub backend_files: usize,
    pub core_files: usize,
    pub local_fixes: usize,
}

pub const COUNTS_BEGIN: &str = "<!-- forkbook:counts -->";
pub const COUNTS_END: &str = "<!-- /forkbook:counts -->";

impl Counts {
    pub fn render_block(&self) -> String {
        format!(
            "{COUNTS_BEGIN}\n- backend files: {}\n- core files: {}\n- local fixes: {}\n{COUNTS_END}",
            self.backend_files, self.core_files, self.local_fixes
        )
    }

    /// The numbers the README states, each with its 1-based line; `None` when there is no block.
    pub fn stated(readme: &str) -> Option<Vec<(usize, String, Option<usize>)>> {
        let (begin, end) = block_lines(readme)?;
        let mut out = Vec::new();
        for (i, line) in readme.lines().enumerate().take(end).skip(begin + 1) {
            if let Some((name, value)) = line.trim().trim_start_matches("- ").split_once(':') {
                out.push((i + 1, name.trim().to_string(), value.trim().parse().ok()));
            }
        }
        Some(out)
    }

    /// The README with its counts block replaced (or appended when there is none).
    pub fn write_into(&self, readme: &str) -> String {
        let block = self.render_block();
        if let Some((begin, end)) = block_lines(readme) {
            let starts: Vec<usize> = line_starts(readme);
            let from = starts[begin];
            // The END line's text, without its line break, is replaced: the break stays.
            let line = &readme[starts[end]..];
            let to = starts[end] + line.lines().next().map_or(0, str::len);
            return format!("{}{}{}", &readme[..from], block, &readme[to..]);
        }
        let sep = if readme.is_empty() || readme.ends_with("\n\n") {
            ""
        } else if readme.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        };
        format!("{readme}{sep}{block}\n")
    }
}

/// The counts block as 0-based line indexes of its two marker lines: the first END line that has
/// a BEGIN line before it, opened by the last such BEGIN. Markers inside a line of prose are not
/// a block, and a BEGIN without its END is none: `stated` and `write_into` share this, so what
/// one writes the other reads back.
fn block_lines(readme: &str) -> Option<(usize, usize)> {
    let mut begin = None;
    for (i, line) in readme.lines().enumerate() {
        match line.trim() {
            COUNTS_BEGIN => begin = Some(i),
            COUNTS_END if begin.is_some() => return begin.map(|b| (b, i)),
            _ => {}
        }
    }
    None
}

/// Byte offset of the start of each line, as `str::lines` counts them.
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    starts
}

/// The README as read: its text, and the counts it states (its counts block, then its prose).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Readme {
    /// The README, relative to the project root.
    pub file: String,
    /// Its text as a reader of the rendered page has it (every HTML comment blanked), so a fork
    /// hook can be explained there in prose.
    pub text: String,
    /// The counts it states, or `None` when it states none.
    pub counts: Option<Vec<StatedCount>>,
    /// Sentences of its prose that state a number of files or fixes without saying which count.
    pub unread: Vec<UnreadCount>,
}

/// One count the README states.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StatedCount {
    /// What is counted (e.g. `backend files`).
    pub name: String,
    pub stated: u64,
    pub line: usize,
}

/// A sentence of the README that states a number of files or fixes without saying which count.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UnreadCount {
    pub line: usize,
    pub sentence: String,
}

impl Readme {
    /// Reads the counts block and the prose counts (`prefix` is the backend folder, which a
    /// sentence may name instead of the word "backend").
    pub fn read(file: &str, text: String, prefix: &str) -> Readme {
        let block = Counts::stated(&text);
        let mut counts: Vec<StatedCount> = block
            .iter()
            .flatten()
            .filter_map(|(line, name, value)| {
                Some(StatedCount {
                    name: name.clone(),
                    stated: (*value)? as u64,
                    line: *line,
                })
            })
            .collect();
        let mut unread = Vec::new();
        for count in prose(&text, prefix) {
            match count.name {
                Some(name) => counts.push(StatedCount {
                    name,
                    stated: count.value as u64,
                    line: count.line,
                }),
                None => unread.push(UnreadCount {
                    line: count.line,
                    sentence: count.sentence,
                }),
            }
        }
        let has_counts = block.is_some() || !counts.is_empty();
        Readme {
            file: file.to_string(),
            counts: has_counts.then_some(counts),
            unread,
            text: without_comments(&text),
        }
    }
}

/// `markdown` as a reader of the rendered page has it: each HTML comment blanked, every one of
/// its bytes but its line breaks a space, so every line and offset stays where it was. A comment
/// written as code (in backticks or a code block) is text a reader sees, and stays.
pub fn without_comments(markdown: &str) -> String {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut out = markdown.as_bytes().to_vec();
    let mut in_comment = false;
    for (event, range) in Parser::new(markdown).into_offset_iter() {
        let hidden = match event {
            Event::Start(Tag::HtmlBlock) => {
                in_comment = markdown[range.clone()].trim_start().starts_with("<!--");
                in_comment
            }
            Event::End(TagEnd::HtmlBlock) => std::mem::take(&mut in_comment),
            Event::Html(_) => in_comment,
            Event::InlineHtml(html) => html.starts_with("<!--"),
            _ => false,
        };
        if hidden {
            out[range]
                .iter_mut()
                .filter(|b| !matches!(b, b'\n' | b'\r'))
                .for_each(|b| *b = b' ');
        }
    }
    // Only whole characters were blanked: every byte of each became a space.
    String::from_utf8(out).unwrap_or_default()
}

/// A line that ends with this comment states no count: its numbers count something else.
pub const NOT_A_COUNT: &str = "<!-- forkbook:not-a-count -->";

/// Whether `line` ends with [`NOT_A_COUNT`]. Only at the end: the comment written as code
/// (`` `<!-- forkbook:not-a-count -->` ``) is text a reader sees, not a mark, and a line that
/// goes on after it may state its count there.
fn marked_not_a_count(line: &str) -> bool {
    line.trim_end().ends_with(NOT_A_COUNT)
}

/// The counts `sync` writes and the checks compare with: backend files (under `prefix`), core
/// files (the overlay's other files), and local fixes (the register's entries).
pub fn actual<'a>(
    overlay_paths: impl IntoIterator<Item = &'a String>,
    prefix: &str,
    local_fixes: usize,
) -> Counts {
    let (mut backend, mut all) = (0, 0);
    for path in overlay_paths {
        all += 1;
        backend += usize::from(path.starts_with(prefix));
    }
    Counts {
        backend_files: backend,
        core_files: all - backend,
        local_fixes,
    }
}

/// The figure of the count named `name` (`backend files`, `core files`, `local fixes`).
pub fn figure(counts: &Counts, name: &str) -> Option<usize> {
    match name {
        "backend files" => Some(counts.backend_files),
        "core files" => Some(counts.core_files),
        "local fixes" => Some(counts.local_fixes),
        _ => None,
    }
}

/// A number the README's prose states before `files`, `fixes` or `entries`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProseCount {
    /// 1-based line.
    pub line: usize,
    /// Which count its words name; `None` when they do not say.
    pub name: Option<String>,
    pub value: usize,
    /// The sentence it stands in, for messages.
    pub sentence: String,
    /// Byte range of the number in the README, so a sync can write the true figure in place.
    pub span: std::ops::Range<usize>,
}

static PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(\d+)((?:\s+[a-z][\w-]*){0,3}?)\s+(files|fixes|entries|overlays)\b").unwrap()
});

/// Every count stated in prose: outside fenced code, outside the counts block, and outside lines
/// that end with [`NOT_A_COUNT`].
pub fn prose(readme: &str, prefix: &str) -> Vec<ProseCount> {
    let mut out = Vec::new();
    let mut in_fence = false;
    let mut in_block = false;
    let mut offset = 0;
    for (index, line) in readme.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        match trimmed {
            COUNTS_BEGIN => in_block = true,
            COUNTS_END => in_block = false,
            _ => {}
        }
        // A count is ASCII digits (a number in other digits does not parse): a line without
        // one states none, and the pattern is compiled only for a README that has such a line.
        let has_digit = line.bytes().any(|b| b.is_ascii_digit());
        if in_fence || in_block || !has_digit || marked_not_a_count(line) {
            continue;
        }
        for found in PATTERN.captures_iter(line) {
            let number = found.get(1).unwrap();
            let Ok(value) = number.as_str().parse() else {
                continue;
            };
            let words = found[2].to_ascii_lowercase();
            let noun = found[3].to_ascii_lowercase();
            let sentence = sentence_at(line, number.start());
            let name = match noun.as_str() {
                "fixes" | "entries" => Some("local fixes"),
                _ if words.split_whitespace().any(|w| w == "core") => Some("core files"),
                _ if names_backend(&sentence, prefix) => Some("backend files"),
                _ => None,
            };
            out.push(ProseCount {
                line: index + 1,
                name: name.map(str::to_string),
                value,
                sentence,
                span: start + number.start()..start + number.end(),
            });
        }
    }
    out
}

fn names_backend(sentence: &str, prefix: &str) -> bool {
    let lower = sentence.to_ascii_lowercase();
    lower.contains("backend") || lower.contains(prefix.trim_end_matches('/'))
}

/// The sentence of `line` around byte `at`: from the previous `. ` to the next one.
fn sentence_at(line: &str, at: usize) -> String {
    let from = line[..at].rfind(". ").map_or(0, |i| i + 2);
    let to = line[at..].find(". ").map_or(line.len(), |i| at + i + 1);
    let text = line[from..to].trim();
    let text: String = text.chars().take(160).collect();
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The README with each readable prose count set to its true figure; `None` when it states none.
pub fn write_prose(readme: &str, prefix: &str, counts: &Counts) -> Option<String> {
    let stated = prose(readme, prefix);
    let readable: Vec<&ProseCount> = stated.iter().filter(|c| c.name.is_some()).collect();
    if readable.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(readme.len());
    let mut at = 0;
    for count in readable {
        let figure =
            figure(counts, count.name.as_deref().unwrap_or_default()).unwrap_or(count.value);
        out.push_str(&readme[at..count.span.start]);
        out.push_str(&figure.to_string());
        at = count.span.end;
    }
    out.push_str(&readme[at..]);
    Some(out)
}

/// The README after a move: its counts block rewritten; without one, its prose counts set true;
/// with neither, a counts block appended.
pub fn write_readme(readme: &str, prefix: &str, counts: &Counts) -> String {
    if Counts::stated(readme).is_some() {
        return counts.write_into(readme);
    }
    write_prose(readme, prefix, counts).unwrap_or_else(|| counts.write_into(readme))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_is_blanked_and_a_comment_written_as_code_is_kept() {
        let text = "Seen.\n\n<!--\n- `mlx/a.cpp`: hidden\n-->\n\nAlso <!-- `mlx/b.cpp` --> seen, \
                    and `<!-- mlx/c.cpp -->`.\n\n```\n<!-- mlx/d.cpp -->\n```\n";
        let visible = without_comments(text);
        assert_eq!(visible.len(), text.len());
        assert_eq!(visible.lines().count(), text.lines().count());
        for hidden in ["mlx/a.cpp", "mlx/b.cpp"] {
            assert!(!visible.contains(hidden), "{visible}");
        }
        for seen in ["Seen.", "Also", "mlx/c.cpp", "mlx/d.cpp"] {
            assert!(visible.contains(seen), "{visible}");
        }
    }

    const README: &str = "# Overlay\n\n- `mlx/backend/rocm/**`: the ROCm backend (106 files). Upstream has none.\n- 15 upstream core files (`CMakeLists.txt`, `mlx/ops.cpp`): the pin's file plus the hooks.\n\nThe backend has 106 files and the register 9 entries.\n\nCopy the 3 files listed below. Then run it.\n\n```\n12 files in a code block\n```\n\nWe ship 4 files per release. <!-- forkbook:not-a-count -->\n";

    #[test]
    fn counts_written_are_the_counts_read_whatever_the_readme_held() {
        // Found by the `counts` fuzz target: `write_into` found the markers anywhere in the text
        // while `stated` read marker lines, so a README that mentions the markers in prose, or
        // lost its end marker, kept stale numbers after every sync.
        let counts = Counts {
            backend_files: 106,
            core_files: 15,
            local_fixes: 9,
        };
        let readmes = [
            "Numbers live between `<!-- forkbook:counts -->` and `<!-- /forkbook:counts -->`.\n\n<!-- forkbook:counts -->\n- backend files: 1\n<!-- /forkbook:counts -->\n",
            "<!-- forkbook:counts -->\n- backend files: 1\n",
            "<!-- /forkbook:counts -->\n<!-- forkbook:counts -->\n",
            "x <!-- forkbook:counts --> y <!-- /forkbook:counts -->",
            "<!-- forkbook:counts -->\r\n- core files: 3\r\n<!-- /forkbook:counts -->\r\nafter\r\n",
        ];
        for readme in readmes {
            let written = counts.write_into(readme);
            let stated: Vec<(String, Option<usize>)> = Counts::stated(&written)
                .unwrap()
                .into_iter()
                .map(|(_, n, v)| (n, v))
                .collect();
            let want = [
                ("backend files", 106),
                ("core files", 15),
                ("local fixes", 9),
            ]
            .map(|(n, v)| (n.to_string(), Some(v)));
            assert_eq!(stated, want, "{readme:?} became {written:?}");
            assert_eq!(counts.write_into(&written), written, "{readme:?}");
        }
        let prose = counts.write_into(readmes[0]);
        assert!(prose.starts_with("Numbers live between `<!-- forkbook:counts -->` and `<!-- /forkbook:counts -->`.\n"), "prose kept: {prose}");
        assert!(counts
            .write_into(readmes[4])
            .ends_with("<!-- /forkbook:counts -->\r\nafter\r\n"));
    }

    #[test]
    fn counts_block_is_replaced_in_place() {
        let readme = "# Overlay\n\nIntro.\n\n<!-- forkbook:counts -->\n- backend files: 1\n<!-- /forkbook:counts -->\n\nMore.\n";
        let counts = Counts {
            backend_files: 106,
            core_files: 15,
            local_fixes: 9,
        };
        let new = counts.write_into(readme);
        assert!(new.starts_with(
            "# Overlay\n\nIntro.\n\n<!-- forkbook:counts -->\n- backend files: 106\n"
        ));
        assert!(new.ends_with("<!-- /forkbook:counts -->\n\nMore.\n"));
        let stated = Counts::stated(&new).unwrap();
        assert_eq!(stated[1], (7, "core files".to_string(), Some(15)));
    }

    #[test]
    fn prose_counts_are_read_and_the_unreadable_one_is_kept() {
        let found = prose(README, "mlx/backend/rocm/");
        let got: Vec<(usize, Option<&str>, usize)> = found
            .iter()
            .map(|c| (c.line, c.name.as_deref(), c.value))
            .collect();
        assert_eq!(
            got,
            [
                (3, Some("backend files"), 106),
                (4, Some("core files"), 15),
                (6, Some("backend files"), 106),
                (6, Some("local fixes"), 9),
                (8, None, 3),
            ]
        );
        assert_eq!(found[4].sentence, "Copy the 3 files listed below.");
    }

    /// Found by a probe: a line holding the mark anywhere was skipped, so the mark quoted as code
    /// (what a reader sees as text) silenced a false count.
    #[test]
    fn only_a_line_that_ends_with_the_mark_states_no_count() {
        let text = "We carry 99 backend files. `<!-- forkbook:not-a-count -->`\n\
                    We carry 98 backend files. <!-- forkbook:not-a-count --> and 7 core files\n\
                    We ship 4 files per release. <!-- forkbook:not-a-count -->  \n";
        let found = prose(text, "mlx/backend/rocm/");
        let got: Vec<(usize, usize)> = found.iter().map(|c| (c.line, c.value)).collect();
        assert_eq!(got, [(1, 99), (2, 98), (2, 7)]);
    }

    #[test]
    fn core_overlays_are_a_count_of_core_files() {
        let found = prose(
            "Dropping one of the 15 core overlays needs a clean build.\n",
            "mlx/backend/rocm/",
        );
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].name.as_deref(), found[0].value),
            (Some("core files"), 15)
        );
    }

    #[test]
    fn true_figures_are_written_in_place_and_nothing_else_changes() {
        let counts = Counts {
            backend_files: 110,
            core_files: 15,
            local_fixes: 10,
        };
        let written = write_readme(README, "mlx/backend/rocm/", &counts);
        let want = README
            .replacen("(106 files)", "(110 files)", 1)
            .replacen("has 106 files", "has 110 files", 1)
            .replacen("9 entries", "10 entries", 1);
        assert_eq!(written, want);
        assert_eq!(
            write_readme(&written, "mlx/backend/rocm/", &counts),
            written
        );
        let plain = "# Overlay\n\nNo numbers here.\n";
        assert!(write_readme(plain, "mlx/backend/rocm/", &counts).contains(super::COUNTS_BEGIN));
    }
}
