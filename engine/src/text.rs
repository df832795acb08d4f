//! Small helpers for the text forkbook writes: for people, and quoted for the files it generates.

/// A commit id as every report shows one: its first 8 characters (all of it when shorter).
pub fn short_id(id: &str) -> &str {
    id.char_indices().nth(8).map_or(id, |(at, _)| &id[..at])
}

/// `items` joined with `, ` and wrapped to lines of at most `width` characters, every line after
/// the first starting with `indent`: a line of 22 paths is unreadable in a terminal.
pub fn wrap_list(items: &[String], indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line_len = 0;
    for (i, item) in items.iter().enumerate() {
        let piece = if i + 1 < items.len() {
            format!("{item},")
        } else {
            item.clone()
        };
        if line_len > 0 && line_len + 1 + piece.chars().count() > width {
            out.push('\n');
            out.push_str(indent);
            line_len = indent.chars().count();
        } else if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        line_len += piece.chars().count();
        out.push_str(&piece);
    }
    out
}

/// A YAML double-quoted scalar that means exactly `text`: `"` and `\` escaped, and every
/// character outside printable ASCII written as `\uXXXX`, so no line break of any YAML version
/// (NEL, U+2028 and U+2029 included) or invisible character reaches the file.
pub fn yaml_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_id_is_eight_characters_whatever_the_text() {
        assert_eq!(
            short_id("0123456789abcdef0123456789abcdef01234567"),
            "01234567"
        );
        assert_eq!(short_id("abc"), "abc");
        // Characters, not bytes: a record's odd value never splits one (a byte slice panics).
        assert_eq!(short_id("éééééééééé"), "éééééééé");
    }

    #[test]
    fn long_lists_wrap_under_the_width_and_keep_every_item() {
        let items: Vec<String> = (1..=22)
            .map(|n| format!("mlx/backend/cuda/file{n}.cpp"))
            .collect();
        let text = wrap_list(&items, "  ", 80);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(text.lines().skip(1).all(|l| l.starts_with("  ")), "{text}");
        let back: Vec<&str> = text
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .collect();
        assert_eq!(back.len(), 22);
        assert_eq!(
            wrap_list(&items[..2], "  ", 80),
            "mlx/backend/cuda/file1.cpp, mlx/backend/cuda/file2.cpp"
        );
    }
}
