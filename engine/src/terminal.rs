//! Text from other people (file names from a fork, compiler messages, register titles) made safe
//! to print on a terminal.
//!
//! A name holding ESC or BEL could retitle the terminal, erase a line or forge a line of
//! forkbook's own output. Every control character is shown the way git shows it in a quoted path
//! (`\t`, `\r`, `\033`), never emitted: [`escape_controls`] is the one rule, used for whole
//! outputs by [`SafeWriter`] (every human-readable output of the command line goes through one)
//! and for single paths by [`quote_path`].

use std::borrow::Cow;
use std::io::Write;

/// Whether `c` must not reach a terminal as itself: C0 controls but the line break, DEL, the C1
/// controls (U+0080..U+009F: `U+009B` is CSI on some terminals), and the Unicode bidirectional
/// overrides and isolates, which reorder what a line appears to say.
fn is_hostile(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Whether `c` must not reach a terminal inside text (output lines, diffs, compiler messages):
/// as [`is_hostile`], but a tab passes. It only moves to the next tab stop on its line, and code
/// and diffs indented with tabs must stay readable. A path still shows its tabs (`quote_path`).
fn is_hostile_in_text(c: char) -> bool {
    c != '\t' && is_hostile(c)
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        '\u{c}' => out.push_str("\\f"),
        '\r' => out.push_str("\\r"),
        c => {
            let mut bytes = [0; 4];
            for b in c.encode_utf8(&mut bytes).bytes() {
                out.push_str(&format!("\\{b:03o}"));
            }
        }
    }
}

/// `text` with every control character (but the line break and the tab) shown as git shows it
/// in a quoted path: `\r`, `\a`, and octal escapes such as `\033` for ESC. Text without any
/// comes back as it is.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hostile_in_text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hostile_in_text(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One field of a one-line listing (a register title, a folder named in the records): as
/// [`escape_controls`], and a line break in it shown as `\n`, so it cannot start a line of its
/// own that looks like forkbook's.
pub fn escape_field(text: &str) -> Cow<'_, str> {
    match escape_controls(text) {
        Cow::Borrowed(text) if !text.contains('\n') => Cow::Borrowed(text),
        escaped => Cow::Owned(escaped.replace('\n', "\\n")),
    }
}

/// A path as git prints it (`core.quotePath=false`): as it is, or, when it holds a control
/// character, a line break, a double quote or a backslash, in double quotes with those escaped.
pub fn quote_path(path: &str) -> Cow<'_, str> {
    let needs = |c: char| is_hostile(c) || matches!(c, '\n' | '"' | '\\');
    if !path.chars().any(needs) {
        return Cow::Borrowed(path);
    }
    let mut out = String::from("\"");
    for c in path.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if is_hostile(c) => push_escaped(&mut out, c),
            c => out.push(c),
        }
    }
    out.push('"');
    Cow::Owned(out)
}

/// `bytes` written to `out` with the bytes that are not UTF-8 shown as octal escapes and the rest
/// through [`escape_controls`], a run at a time: clean text is written as it is, never copied.
fn write_escaped(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    for chunk in bytes.utf8_chunks() {
        out.write_all(escape_controls(chunk.valid()).as_bytes())?;
        for b in chunk.invalid() {
            write!(out, "\\{b:03o}")?;
        }
    }
    Ok(())
}

/// A writer that passes every line through [`escape_controls`] (bytes that are not UTF-8 become
/// octal escapes). Line-buffered, so a character split across two writes is judged whole (a
/// line break never splits one); call `flush` (or drop it) to write the last partial line. The
/// lines a write completes are escaped from the caller's bytes, so a long output is not copied.
pub struct SafeWriter<W: Write> {
    inner: W,
    pending: Vec<u8>,
}

impl<W: Write> SafeWriter<W> {
    pub fn new(inner: W) -> SafeWriter<W> {
        SafeWriter {
            inner,
            pending: Vec::new(),
        }
    }

    /// Writes what is pending and then `lines`, which end a line.
    fn write_lines(&mut self, lines: &[u8]) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            self.pending.extend_from_slice(lines);
            let pending = std::mem::take(&mut self.pending);
            return write_escaped(&mut self.inner, &pending);
        }
        write_escaped(&mut self.inner, lines)
    }
}

impl<W: Write> Write for SafeWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match buf.iter().rposition(|b| *b == b'\n') {
            Some(at) => {
                let (lines, rest) = buf.split_at(at + 1);
                self.write_lines(lines)?;
                self.pending.extend_from_slice(rest);
            }
            None => self.pending.extend_from_slice(buf),
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let pending = std::mem::take(&mut self.pending);
        write_escaped(&mut self.inner, &pending)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for SafeWriter<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_shows_its_line_breaks_and_controls() {
        assert_eq!(escape_field("plain title"), "plain title");
        assert_eq!(
            escape_field("title\n  fix 9: applies as before\u{1b}[2K"),
            "title\\n  fix 9: applies as before\\033[2K"
        );
    }

    #[test]
    fn controls_are_shown_never_emitted() {
        assert_eq!(escape_controls("plain/path.cpp"), "plain/path.cpp");
        assert_eq!(
            escape_controls("a\u{1b}]0;owned\u{7}b\u{1b}[2K\rc\n"),
            "a\\033]0;owned\\ab\\033[2K\\rc\n"
        );
        assert_eq!(
            escape_controls("x\u{9b}y\u{202e}z"),
            "x\\302\\233y\\342\\200\\256z"
        );
        assert_eq!(
            escape_controls("\tint x;\n"),
            "\tint x;\n",
            "tabs indent code"
        );
        assert_eq!(escape_controls("\t\u{1b}[2K"), "\t\\033[2K");
        assert_eq!(
            quote_path("a\tb.cpp"),
            "\"a\\tb.cpp\"",
            "a path shows its tab"
        );
        assert_eq!(quote_path("a b.cpp"), "a b.cpp");
        assert_eq!(quote_path("a\u{1b}b\"\\.cpp"), "\"a\\033b\\\"\\\\.cpp\"");
    }

    #[test]
    fn the_writer_escapes_across_writes_and_non_utf8_bytes() {
        let mut out = Vec::new();
        {
            let mut safe = SafeWriter::new(&mut out);
            safe.write_all(b"one \xc2").unwrap();
            safe.write_all(b"\x9b two\n\x1b[31mred\xff").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "one \\302\\233 two\n\\033[31mred\\377"
        );
    }
}
