//! Path hygiene for trees that come from other people.
//!
//! Fork trees, patches and overlay folders are untrusted: a path with `..`, an absolute path, a
//! `.git` component, a NUL or newline, or a link that leads out of the overlay could make forkbook
//! write outside its target. Every path from such a source passes [`check_relative`] first.

use super::error::{Error, Result};

/// Accepts a `/`-separated relative path that stays below its root; refuses anything else.
pub fn check_relative(path: &str) -> Result<()> {
    let refuse = |why: &str| {
        Err(Error::new(format!("refusing path `{}`: {why}", path.escape_debug()))
            .with_note("trees from other people may not climb out of the overlay; fix or remove that entry"))
    };
    if path.is_empty() {
        return refuse("it is empty");
    }
    if path.starts_with('/') || path.starts_with('\\') || path.as_bytes().get(1) == Some(&b':') {
        return refuse("it is absolute");
    }
    if path.contains('\0') || path.contains('\n') || path.contains('\r') {
        return refuse("it contains a NUL or line break");
    }
    if path.contains('\\') {
        return refuse("it contains a backslash");
    }
    for part in path.split('/') {
        match part {
            "" | "." => return refuse("it has an empty or `.` component"),
            ".." => return refuse("it has a `..` component"),
            _ if part.eq_ignore_ascii_case(".git") => return refuse("it has a `.git` component"),
            _ => {}
        }
    }
    Ok(())
}

/// Whether a symbolic link at `link` (relative path) pointing at `target` stays inside the root.
pub fn link_stays_inside(link: &str, target: &str) -> bool {
    if target.starts_with('/') || target.is_empty() {
        return false;
    }
    let mut depth: Vec<&str> = link.split('/').collect();
    depth.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            other if other.eq_ignore_ascii_case(".git") => return false,
            other => depth.push(other),
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_paths_pass() {
        check_relative("mlx/backend/rocm/eval.cpp").unwrap();
        check_relative("CMakeLists.txt").unwrap();
        check_relative("a/.github/x").unwrap();
    }

    #[test]
    fn hostile_paths_are_refused() {
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a/.git/config",
            ".GIT/hooks/x",
            "a//b",
            "a/./b",
            "a\nb",
            "a\0b",
            "C:/x",
            "a\\..\\b",
            "",
        ] {
            assert!(check_relative(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn links_that_escape_are_seen() {
        assert!(link_stays_inside("a/b/link", "../c"));
        assert!(link_stays_inside("a/link", "b/c"));
        assert!(!link_stays_inside("a/link", "../../c"));
        assert!(!link_stays_inside("link", "/etc/passwd"));
        assert!(!link_stays_inside("a/link", "../.git/config"));
    }
}
