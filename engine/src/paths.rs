//! Path hygiene for trees that come from other people.
//!
//! Fork trees, patches and overlay folders are untrusted: a path with `..`, an absolute path, a
//! `.git` component, a NUL or newline, or a link that leads out of the overlay could make
//! forkbook write outside its target, and a path longer than any file system takes comes from a
//! tree nested to wear out its reader. Every path from such a source passes [`check_relative`]
//! first.

use super::error::{Error, Result};

/// Accepts a `/`-separated relative path that stays below its root; refuses anything else.
pub fn check_relative(path: &str) -> Result<()> {
    match forkbook_records::path::refusal_message(path) {
        Some(message) => Err(Error::new(message).with_note(
            "trees from other people may not climb out of the overlay; fix or remove that entry",
        )),
        None => Ok(()),
    }
}

/// Resolves `.` and `..` in a `/`-separated relative path; `None` when it climbs above its root.
/// The one rule for such paths: includes, links, and the sources a build log names.
pub fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            _ => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// Whether a symbolic link at `link` (relative path) pointing at `target` stays inside the root.
pub fn link_stays_inside(link: &str, target: &str) -> bool {
    let dir = link.rsplit_once('/').map_or("", |(dir, _)| dir);
    !target.starts_with('/')
        && !target.is_empty()
        && !target.split('/').any(|p| p.eq_ignore_ascii_case(".git"))
        && normalize(&format!("{dir}/{target}")).is_some()
}

/// Checks every link of a tree as a whole: each one's target is followed through the other links
/// of `links` (path -> target, as they will be written) the way the OS will, and a link whose
/// resolution climbs above the root, or names a `.git` folder, or loops, is refused. Each link
/// alone can pass [`link_stays_inside`] while a chain leaves: `a/b/up -> ../..` and
/// `a/b/out -> up/../secret.txt` resolve `out` to `../secret.txt`, outside.
pub fn check_link_chains(links: &std::collections::BTreeMap<String, String>) -> Result<()> {
    for (link, target) in links {
        if let Err(why) = resolve_link(link, links) {
            return Err(Error::new(format!(
                "refusing link `{}` -> `{}`: {why}",
                link.escape_debug(),
                target.escape_debug()
            ))
            .with_note("a tree's links must resolve inside it, followed as a chain; fix or remove that link upstream or in the overlay"));
        }
    }
    Ok(())
}

fn resolve_link(
    link: &str,
    links: &std::collections::BTreeMap<String, String>,
) -> std::result::Result<(), &'static str> {
    let mut at: Vec<String> = link.split('/').map(String::from).collect();
    at.pop();
    let mut pending: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let start = &links[link];
    if start.starts_with('/') {
        return Err("it is absolute");
    }
    pending.extend(start.split('/').map(String::from));
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        match part.as_str() {
            "" | "." => {}
            ".." => {
                if at.pop().is_none() {
                    return Err(
                        "followed through the tree's other links, it leads outside the tree",
                    );
                }
            }
            other if other.eq_ignore_ascii_case(".git") => {
                return Err("it leads into a `.git` folder")
            }
            _ => {
                at.push(part);
                if let Some(next) = links.get(&at.join("/")) {
                    hops += 1;
                    if hops > 40 {
                        return Err("its chain of links does not end (a loop)");
                    }
                    if next.starts_with('/') {
                        return Err(
                            "followed through the tree's other links, it reaches an absolute link",
                        );
                    }
                    at.pop();
                    for piece in next.split('/').rev() {
                        pending.push_front(piece.to_string());
                    }
                }
            }
        }
    }
    Ok(())
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
    fn a_path_that_climbs_above_its_root_has_no_normal_form() {
        assert_eq!(
            normalize("mlx/./backend/../io.h").as_deref(),
            Some("mlx/io.h")
        );
        assert_eq!(normalize("/mlx//io.h").as_deref(), Some("mlx/io.h"));
        assert_eq!(normalize("mlx/../../io.h"), None);
    }

    #[test]
    fn links_that_escape_are_seen() {
        assert!(link_stays_inside("a/b/link", "../c"));
        assert!(link_stays_inside("a/link", "b/c"));
        assert!(!link_stays_inside("a/link", "../../c"));
        assert!(!link_stays_inside("link", "/etc/passwd"));
        assert!(!link_stays_inside("a/link", "../.git/config"));
    }

    #[test]
    fn a_chain_of_links_that_leaves_is_seen() {
        let links = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let escape = links(&[("a/b/up", "../.."), ("a/b/out", "up/../secret.txt")]);
        let err = check_link_chains(&escape).unwrap_err();
        assert!(err.message().contains("a/b/out"), "{err}");
        assert!(err.message().contains("outside the tree"), "{err}");
        check_link_chains(&links(&[("a/b/up", "../.."), ("a/b/in", "up/x.txt")])).unwrap();
        check_link_chains(&links(&[("CLAUDE.md", "AGENTS.md")])).unwrap();
        let looped = links(&[("a", "b"), ("b", "a")]);
        assert!(check_link_chains(&looped)
            .unwrap_err()
            .message()
            .contains("loop"));
        let deep = links(&[("x/y", ".."), ("x/z", "y/y/../..")]);
        assert!(check_link_chains(&deep).is_err());
    }
}
