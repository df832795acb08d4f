//! The one rule for a path read from a record or a tree other people wrote.

/// The longest path taken, Linux's `PATH_MAX`: no file system takes a longer one, and a tree
/// nested that deep is made to wear out whoever reads it.
pub const MAX_PATH_BYTES: usize = 4096;

/// Why a `/`-separated path does not stay below its root, or `None` when it does.
pub fn refusal(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("it is empty");
    }
    if path.len() > MAX_PATH_BYTES {
        return Some("it is longer than 4,096 bytes, more than a file system takes");
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

/// ``refusing path `PATH`: why``, the path escaped and, past 120 characters, cut short.
pub fn refusal_message(path: &str) -> Option<String> {
    let why = refusal(path)?;
    let shown = match path.char_indices().nth(120) {
        Some((end, _)) => format!("{}… ({} bytes)", path[..end].escape_debug(), path.len()),
        None => path.escape_debug().to_string(),
    };
    Some(format!("refusing path `{shown}`: {why}"))
}
