//! The one rule for a path read from a record or a tree other people wrote.

/// Why a `/`-separated path does not stay below its root, or `None` when it does.
pub fn refusal(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("it is empty");
    }
    if path.starts_with('/') || path.starts_with('\\') || path.as_bytes().get(1) == Some(&b':') {
        return Some("it is absolute");
    }
    if path.contains('\0') || path.contains('\n') || path.contains('\r') {
        return Some("it contains a NUL or line break");
    }
    if path.contains('\\') {
        return Some("it contains a backslash");
    }
    for part in path.split('/') {
        match part {
            "" | "." => return Some("it has an empty or `.` component"),
            ".." => return Some("it has a `..` component"),
            _ if part.eq_ignore_ascii_case(".git") => return Some("it has a `.git` component"),
            _ => {}
        }
    }
    None
}
