//! The patch layout's series (`patches/NNNN-title.patch`, one per register entry) and the build's
//! pin (the upstream commit the project's build uses, where it records one).

use serde::Serialize;

/// One patch of the series as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchFile {
    /// File name inside `patches/`, such as `0003-keep-fast-path.patch`.
    pub name: String,
    pub text: String,
}

impl PatchFile {
    /// The fix number, from the file name's leading digits.
    pub fn number(&self) -> Option<usize> {
        fix_number(&self.name)
    }

    /// Everything before the first `diff --git` line: the header we keep across rewrites.
    pub fn header(&self) -> &str {
        match self.text.find("diff --git ") {
            Some(at) => &self.text[..at],
            None => &self.text,
        }
    }

    /// The `Subject:` of the header without its `[PATCH]` tag.
    pub fn title(&self) -> String {
        let subject = self
            .header()
            .lines()
            .find_map(|l| l.strip_prefix("Subject:"))
            .unwrap_or("")
            .trim();
        match subject.strip_prefix('[').and_then(|s| s.split_once(']')) {
            Some((_, rest)) => rest.trim().to_string(),
            None => subject.to_string(),
        }
    }
}

/// The fix a series patch belongs to: the number its file name starts with (`0003-…` is 3).
fn fix_number(name: &str) -> Option<usize> {
    name.split('-').next()?.parse().ok()
}

/// The file name of the series patch at `path` (relative to the records folder): a `.patch`
/// file right in the series folder. One in a folder below it (`patches/dropped/`, where a
/// maintainer keeps what left the series) is not in the series: neither applied nor checked.
pub fn series_name(path: &str) -> Option<&str> {
    let name = path.strip_prefix(crate::PATCHES_DIR)?.strip_prefix('/')?;
    (name.ends_with(".patch") && !name.contains('/')).then_some(name)
}

/// One patch of the series.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SeriesPatch {
    /// The register entry the patch belongs to (the number its name starts with; 0 when none).
    pub number: u32,
    /// The patch file, relative to the project root.
    pub file: String,
    /// It holds no change: the fork or the pin came to hold the fix, and a move left its patch
    /// empty.
    pub empty: bool,
}

impl SeriesPatch {
    /// The patch named `name` in the series folder, `file` as the user names it.
    pub fn of(name: &str, file: String, text: &str) -> SeriesPatch {
        SeriesPatch {
            number: fix_number(name)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            file,
            empty: is_empty_patch(text),
        }
    }
}

/// Whether a patch holds no change at all (no `diff --git`, `---` or `@@` line): the one rule for
/// a droppable fix's empty patch.
pub fn is_empty_patch(patch: &str) -> bool {
    !patch
        .lines()
        .any(|l| l.starts_with("diff --git ") || l.starts_with("--- ") || l.starts_with("@@ "))
}

/// Where the build records the upstream pin it uses, and what it says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BuildPin {
    pub file: String,
    /// The line of the commit; 0 when the file names none.
    pub line: usize,
    /// The commit as written there (full or abbreviated SHA); empty when the file names none.
    pub value: String,
}

impl BuildPin {
    /// The first 40-hex word of the file.
    pub fn read(file: &str, text: &str) -> BuildPin {
        let found = text.lines().enumerate().find_map(|(index, line)| {
            line.split(|c: char| !c.is_ascii_hexdigit())
                .find(|word| word.len() == 40)
                .map(|sha| (index + 1, sha.to_ascii_lowercase()))
        });
        let (line, value) = found.unwrap_or((0, String::new()));
        BuildPin {
            file: file.to_string(),
            line,
            value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_patch_is_numbered_by_its_name_and_empty_without_a_diff() {
        let patch = SeriesPatch::of("0012-free-buffers.patch", "p/0012".into(), "From x\n\n");
        assert_eq!((patch.number, patch.empty), (12, true));
        let patch = SeriesPatch::of("x.patch", "p/x".into(), "--- a/f\n+++ b/f\n@@ -1 +1 @@\n");
        assert_eq!((patch.number, patch.empty), (0, false));
    }

    #[test]
    fn the_build_pin_is_the_first_full_sha() {
        let sha = "ab".repeat(20);
        let pin = BuildPin::read("cmake/pin.cmake", &format!("# pin\nset(PIN {sha} abc)\n"));
        assert_eq!((pin.line, pin.value.as_str()), (2, sha.as_str()));
        assert_eq!(BuildPin::read("f", "none\n").line, 0);
    }
}
