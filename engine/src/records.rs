//! The records kept in the overlay folder: `UPSTREAM`, `overlay.lock` and the README counts.
//!
//! Each parser keeps what it needs to write the file back unchanged: `UPSTREAM` keeps unknown
//! keys and line order, so an update changes only the values it means to change.

use super::error::{Error, Result};
use super::FileMap;
use sha2::{Digest, Sha256};

pub const UPSTREAM_FILE: &str = "UPSTREAM";
pub const LOCK_FILE: &str = "overlay.lock";
pub const README_FILE: &str = "README.md";
pub const FIXES_FILE: &str = "LOCAL_FIXES.md";
/// The residual record written by `residual --write`, inside the records folder.
pub const RESIDUAL_FILE: &str = "residual.diff";
/// The residual record the first user keeps, read and kept in its own format.
pub const CORE_RESIDUAL_FILE: &str = "CORE_RESIDUAL.diff";

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

/// One line of `UPSTREAM`: a `key: value` pair, or a line kept as it is (blank or `#` comment).
#[derive(Debug, Clone, PartialEq, Eq)]
enum UpstreamLine {
    Pair { key: String, value: String },
    Verbatim(String),
}

/// What one line of `UPSTREAM` is: the one reading of the format, used strictly by
/// [`Upstream::parse`] (the first bad line is an error) and leniently by the checks (every bad
/// line is a finding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamLineKind<'a> {
    /// Blank, or a `#` comment: kept as written.
    Verbatim,
    Pair {
        key: &'a str,
        value: &'a str,
    },
    /// Not a `key: value` line; the message says what is wrong.
    Bad(String),
}

impl<'a> UpstreamLineKind<'a> {
    pub fn of(line: &'a str) -> UpstreamLineKind<'a> {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            return UpstreamLineKind::Verbatim;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            return UpstreamLineKind::Bad(format!(
                "expected `key: value`, found `{}`",
                trimmed.escape_debug()
            ));
        };
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return UpstreamLineKind::Bad(format!("`{}` is not a key", key.escape_debug()));
        }
        UpstreamLineKind::Pair {
            key,
            value: value.trim(),
        }
    }
}

/// The `UPSTREAM` record: which fork commit the overlay vendors and which pin it sits on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Upstream {
    lines: Vec<UpstreamLine>,
}

impl Upstream {
    /// Parses `key: value` lines; `file` names the record in errors.
    pub fn parse(text: &str, file: &str) -> Result<Upstream> {
        let mut lines = Vec::new();
        for (n, line) in text.lines().enumerate() {
            match UpstreamLineKind::of(line) {
                // `render` ends every line with `\n`: a stray `\r` kept here would come back as a
                // line break on the next read, so an update would not be stable.
                UpstreamLineKind::Verbatim => lines.push(UpstreamLine::Verbatim(
                    line.trim_end_matches('\r').to_string(),
                )),
                UpstreamLineKind::Pair { key, value } => lines.push(UpstreamLine::Pair {
                    key: key.to_string(),
                    value: value.to_string(),
                }),
                UpstreamLineKind::Bad(message) => {
                    return Err(
                        Error::new(format!("{file}:{}: {message}", n + 1)).with_note(
                            "each line of UPSTREAM is `key: value`, a blank line or a `#` comment",
                        ),
                    )
                }
            }
        }
        Ok(Upstream { lines })
    }

    /// The pairs in file order, with 1-based line numbers.
    pub fn pairs(&self) -> Vec<(usize, &str, &str)> {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| match l {
                UpstreamLine::Pair { key, value } => Some((i + 1, key.as_str(), value.as_str())),
                UpstreamLine::Verbatim(_) => None,
            })
            .collect()
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs()
            .into_iter()
            .find(|(_, k, _)| *k == key)
            .map(|(_, _, v)| v)
    }

    /// The 1-based line of `key`, for messages.
    pub fn line_of(&self, key: &str) -> Option<usize> {
        self.pairs()
            .into_iter()
            .find(|(_, k, _)| *k == key)
            .map(|(l, _, _)| l)
    }

    /// Sets `key` in place, or appends it after the last pair.
    pub fn set(&mut self, key: &str, value: &str) {
        for line in &mut self.lines {
            if let UpstreamLine::Pair { key: k, value: v } = line {
                if k == key {
                    *v = value.to_string();
                    return;
                }
            }
        }
        let at = self
            .lines
            .iter()
            .rposition(|l| matches!(l, UpstreamLine::Pair { .. }))
            .map_or(self.lines.len(), |i| i + 1);
        self.lines.insert(
            at,
            UpstreamLine::Pair {
                key: key.to_string(),
                value: value.to_string(),
            },
        );
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            match line {
                UpstreamLine::Pair { key, value } => out.push_str(&format!("{key}: {value}\n")),
                UpstreamLine::Verbatim(text) => {
                    out.push_str(text);
                    out.push('\n');
                }
            }
        }
        out
    }

    /// A full 40-hex SHA under `key`, or an error naming the line and what to write.
    pub fn sha(&self, key: &str, file: &str) -> Result<String> {
        let Some(value) = self.get(key) else {
            return Err(Error::new(format!("{file}: no `{key}:` line"))
                .with_note(format!("add `{key}: <40-hex commit>` to {file}")));
        };
        let line = self.line_of(key).unwrap_or(0);
        if value.len() != 40 || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::new(format!(
                "{file}:{line}: `{key}` must be a full 40-hex SHA, found `{}`",
                value.escape_debug()
            )));
        }
        Ok(value.to_ascii_lowercase())
    }
}

/// The SHA-256 of a file's bytes, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `overlay.lock`: the SHA-256 of every materialized file, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lock {
    /// path -> sha256 hex
    pub files: std::collections::BTreeMap<String, String>,
}

impl Lock {
    pub fn of(files: &FileMap) -> Lock {
        Lock {
            files: files
                .iter()
                .map(|(p, b)| (p.clone(), sha256_hex(b)))
                .collect(),
        }
    }

    pub fn parse(text: &str, file: &str) -> Result<Lock> {
        let mut files = std::collections::BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((hash, path)) = line.split_once("  ") else {
                return Err(
                    Error::new(format!("{file}:{}: expected `<sha256>  <path>`", n + 1)).with_note(
                        "regenerate the lock with `forkbook sync` at the recorded commits",
                    ),
                );
            };
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(Error::new(format!(
                    "{file}:{}: `{}` is not a SHA-256",
                    n + 1,
                    hash.escape_debug()
                )));
            }
            super::paths::check_relative(path)
                .map_err(|e| e.context(format!("{file}:{}", n + 1)))?;
            if files
                .insert(path.to_string(), hash.to_ascii_lowercase())
                .is_some()
            {
                return Err(Error::new(format!(
                    "{file}:{}: `{path}` is listed twice",
                    n + 1
                )));
            }
        }
        Ok(Lock { files })
    }

    pub fn render(&self) -> String {
        let mut out = String::from("# SHA-256 of every materialized overlay file; written by forkbook, checked by `forkbook sync --check`\n");
        for (path, hash) in &self.files {
            out.push_str(&format!("{hash}  {path}\n"));
        }
        out
    }

    /// Paths whose hash differs, or that only one side has: (path, locked, actual).
    pub fn mismatches(&self, actual: &Lock) -> Vec<(String, Option<String>, Option<String>)> {
        let mut out = Vec::new();
        let paths: std::collections::BTreeSet<&String> =
            self.files.keys().chain(actual.files.keys()).collect();
        for path in paths {
            let (a, b) = (self.files.get(path), actual.files.get(path));
            if a != b {
                out.push((path.clone(), a.cloned(), b.cloned()));
            }
        }
        out
    }
}

/// The counts block of the overlay's README, between two HTML comments, so people read it as a
/// list and the checker can verify every number.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
            let to = starts[end]
                + line.find('\n').map_or(line.len(), |i| {
                    if line[..i].ends_with('\r') {
                        i - 1
                    } else {
                        i
                    }
                });
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

#[cfg(test)]
mod tests {
    use super::*;

    const REAL_STYLE: &str = "source: https://github.com/NripeshN/mlx\nbranch: rocm-support\ncommit: 75915908dfe5028335d318b10340313744fd3a8d\n# a comment\nfork_upstream_merge_base: 39886de461d4f014cd60a3a68ad42fd8d776754a\nlicense: MIT\nextra_key: kept\n";

    #[test]
    fn upstream_round_trips_byte_for_byte() {
        let u = Upstream::parse(REAL_STYLE, "UPSTREAM").unwrap();
        assert_eq!(u.render(), REAL_STYLE);
        assert_eq!(u.get("branch"), Some("rocm-support"));
        assert_eq!(u.line_of("license"), Some(6));
    }

    #[test]
    fn upstream_update_keeps_unknown_keys_and_order() {
        let mut u = Upstream::parse(REAL_STYLE, "UPSTREAM").unwrap();
        u.set(keys::COMMIT, &"a".repeat(40));
        u.set(keys::PIN, &"b".repeat(40));
        let text = u.render();
        let order: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_once(':').map(|p| p.0))
            .collect();
        assert_eq!(
            order,
            [
                "source",
                "branch",
                "commit",
                "# a comment",
                "fork_upstream_merge_base",
                "license",
                "extra_key",
                "retargeted_to_mlx_pin"
            ]
            .iter()
            .filter(|k| !k.starts_with('#'))
            .copied()
            .collect::<Vec<_>>()
        );
        assert!(text.contains("extra_key: kept\nretargeted_to_mlx_pin: bbbb"));
    }

    #[test]
    fn malformed_upstream_names_file_and_line() {
        let err = Upstream::parse(
            "source: x\nthis line has no colon\n",
            "patches-rocm/UPSTREAM",
        )
        .unwrap_err();
        assert!(
            err.message().starts_with("patches-rocm/UPSTREAM:2:"),
            "{err}"
        );
        let u = Upstream::parse("commit: 1234\n", "UPSTREAM").unwrap();
        let err = u.sha("commit", "UPSTREAM").unwrap_err();
        assert!(err.message().contains("UPSTREAM:1"), "{err}");
    }

    #[test]
    fn lock_round_trips_and_finds_mismatches() {
        let mut files = FileMap::new();
        files.insert("a.cpp".into(), b"int a;\n".to_vec().into());
        files.insert("b/c.h".into(), b"#pragma once\n".to_vec().into());
        let lock = Lock::of(&files);
        let parsed = Lock::parse(&lock.render(), LOCK_FILE).unwrap();
        assert_eq!(parsed, lock);
        files.insert("a.cpp".into(), b"int b;\n".to_vec().into());
        files.remove("b/c.h");
        let mism = lock.mismatches(&Lock::of(&files));
        assert_eq!(
            mism.iter().map(|m| m.0.as_str()).collect::<Vec<_>>(),
            ["a.cpp", "b/c.h"]
        );
    }

    #[test]
    fn lock_refuses_hostile_paths() {
        let text = format!("{}  ../../etc/passwd\n", "0".repeat(64));
        assert!(Lock::parse(&text, LOCK_FILE).is_err());
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
}
