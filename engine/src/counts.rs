//! The overlay's counts: the one place they are computed, and the README's statement of them,
//! in a counts block or in prose ("the backend has 106 files", "15 core files").
//!
//! A README written by people states its counts in sentences. Each number followed within a few
//! words by `files`, `fixes` or `entries` is read as a count when its words say which one; when
//! they do not, it is kept as a sentence that could not be read, so the check can name it rather
//! than pass over it in silence.

use super::records::Counts;
use super::FileMap;
use regex::Regex;
use std::sync::OnceLock;

/// A line holding this comment states no count: its numbers count something else.
pub const NOT_A_COUNT: &str = "<!-- forkbook:not-a-count -->";

/// The counts `sync` writes and the checks compare with: backend files (under `prefix`), core
/// files (the overlay's other files), and local fixes (the register's entries).
pub fn actual(overlay: &FileMap, prefix: &str, local_fixes: usize) -> Counts {
    let backend = overlay.keys().filter(|p| p.starts_with(prefix)).count();
    Counts {
        backend_files: backend,
        core_files: overlay.len() - backend,
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

fn pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        Regex::new(r"(?i)\b(\d+)((?:\s+[a-z][\w-]*){0,3}?)\s+(files|fixes|entries|overlays)\b")
            .unwrap()
    })
}

/// Every count stated in prose: outside fenced code, outside the counts block, and outside lines
/// marked [`NOT_A_COUNT`].
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
            super::records::COUNTS_BEGIN => in_block = true,
            super::records::COUNTS_END => in_block = false,
            _ => {}
        }
        if in_fence || in_block || line.contains(NOT_A_COUNT) {
            continue;
        }
        for found in pattern().captures_iter(line) {
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

    const README: &str = "# Overlay\n\n- `mlx/backend/rocm/**`: the ROCm backend (106 files). Upstream has none.\n- 15 upstream core files (`CMakeLists.txt`, `mlx/ops.cpp`): the pin's file plus the hooks.\n\nThe backend has 106 files and the register 9 entries.\n\nCopy the 3 files listed below. Then run it.\n\n```\n12 files in a code block\n```\n\nWe ship 4 files per release. <!-- forkbook:not-a-count -->\n";

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
        assert!(write_readme(plain, "mlx/backend/rocm/", &counts)
            .contains(super::super::records::COUNTS_BEGIN));
    }
}
