//! The `LOCAL_FIXES.md` register: its model (`register/model.rs`, re-exported here) and its
//! parser, which never fails and never rewrites (the edits forkbook makes to it are the
//! engine's).
//!
//! The register stays prose for people, written the way they write it. An entry is either a
//! level-2 heading `## N. Title` with any Markdown below it, or an item of a numbered list
//! `N. **Title.** prose…`; either may sit in sections (`## Fixes to the fork's kernels`).
//! Its machine-read part is a short list of `key: value` fields, usually at its end (nested
//! in the item for a list entry):
//!
//! ```markdown
//! ## 3. Keep the event's stream alive while it waits
//!
//! Why the fix exists, for people.
//!
//! - state: proposed
//! - link: https://github.com/NripeshN/mlx/pull/12
//! - package: propose/0003-keep-the-event-s-stream-alive-while-it-waits.patch
//! - files: `mlx/backend/rocm/event.cpp`
//! ```
//!
//! Without a `state` field, the state is what the entry's words say ([`words`]). Only what a
//! reader of the rendered page sees counts: the words are read from one view of the text
//! ([`visible`]: no HTML, no code block, no link title, no image description, code spans
//! claiming nothing), and a field is a list item as the page shows it. A list counts as the
//! field list when one of its items starts with a known key. The files an entry names
//! are its `files:` field (or a `Files:` line), otherwise every code span of its prose that
//! looks like a path. Parsing never fails and never rewrites: what is malformed becomes a
//! [`Problem`] with its line, which the checks report.

pub mod blocks;
mod model;
pub mod summary;
pub mod visible;
pub mod words;

pub use model::*;

use std::ops::Range;

use blocks::{Block, Item, Kind, Lines};
use visible::{without_code, Visible};

/// Parses a register's text. `file` is the path findings name.
pub fn parse(file: &str, text: &str) -> Register {
    let lines = Lines::new(text);
    let (mut entries, mut sources, mut outside) = (Vec::new(), Vec::new(), Vec::new());
    let mut register = walk(file, text, &lines, |walked| match walked {
        Walked::Entry(entry, source) => {
            entries.push(entry);
            sources.push(source);
        }
        Walked::Outside(range) => outside.push(range),
    });
    let policy = outside
        .iter()
        .find_map(|range| policy_in(text, &lines, range));
    for (entry, source) in entries.iter_mut().zip(&sources) {
        read_words(entry, text, &lines, source, policy.as_ref());
    }
    register.entries = entries;
    register
}

/// Reads a register's text as [`parse`] does, handing each entry to `each` as soon as it is
/// read, in order, and returns the register without its entries (its problems and left-out
/// sections): a command that looks at one entry at a time holds one, not a register of them.
/// The entries are [`parse`]'s (`register::tests` holds it to that).
///
/// An entry's words are read under the register's policy, which the text may state after the
/// entries: the text is read twice, the first time for the policy alone.
pub fn each_entry(file: &str, text: &str, each: impl FnMut(Entry)) -> Register {
    Reading::new(file, text).each_entry(each)
}

/// A register's text made ready to be read an entry at a time, as often as a command needs:
/// its lines and its policy (a first reading of the whole text) are found once.
pub struct Reading<'t> {
    file: &'t str,
    text: &'t str,
    lines: Lines,
    policy: Option<words::Policy>,
    /// The entries, by their place in the text, whose words the first reading found to say
    /// nothing (no link, no issue reference, no state), when [`Reading::first`] read them: one
    /// bit an entry, so the readings after it do not read those words again.
    silent: Option<Vec<u64>>,
}

impl<'t> Reading<'t> {
    pub fn new(file: &'t str, text: &'t str) -> Reading<'t> {
        let lines = Lines::new(text);
        let mut policy = None;
        walk(file, text, &lines, |walked| match walked {
            Walked::Outside(range) if policy.is_none() => policy = policy_in(text, &lines, &range),
            _ => {}
        });
        Reading {
            file,
            text,
            lines,
            policy,
            silent: None,
        }
    }

    /// The first reading and [`Reading::each_entry`] in one walk over the text: each entry goes
    /// to `each` with `sums`, what the caller makes of the entries, and the reading is returned
    /// for the readings after it, with the register without its entries. The policy is read as
    /// the text comes; where the text states it only after entries were read without it, `sums`
    /// starts again from its default and every entry is handed again under the policy (the
    /// entries `each` sees last are [`parse`]'s). The readings after it skip the words of the
    /// entries whose words said nothing.
    pub fn first<S: Default>(
        file: &'t str,
        text: &'t str,
        sums: &mut S,
        mut each: impl FnMut(&mut S, Entry),
    ) -> (Reading<'t>, Register) {
        let lines = Lines::new(text);
        let (mut policy, mut read_any, mut read_without) = (None, false, false);
        let mut silent = Silent::default();
        let register = walk(file, text, &lines, |walked| match walked {
            Walked::Entry(mut entry, source) => {
                read_words(&mut entry, text, &lines, &source, policy.as_ref());
                silent.note(&entry);
                read_any = true;
                each(sums, entry);
            }
            Walked::Outside(range) if policy.is_none() => {
                policy = policy_in(text, &lines, &range);
                read_without |= read_any && policy.is_some();
            }
            Walked::Outside(_) => {}
        });
        let mut reading = Reading {
            file,
            text,
            lines,
            policy,
            silent: None,
        };
        if read_without {
            *sums = S::default();
            let mut silent = Silent::default();
            let register = reading.each_entry(|entry| {
                silent.note(&entry);
                each(sums, entry)
            });
            reading.silent = Some(silent.bits);
            return (reading, register);
        }
        reading.silent = Some(silent.bits);
        (reading, register)
    }

    /// [`each_entry`] over this text.
    pub fn each_entry(&self, mut each: impl FnMut(Entry)) -> Register {
        let (text, lines) = (self.text, &self.lines);
        let mut at = 0usize;
        walk(self.file, text, lines, |walked| {
            if let Walked::Entry(mut entry, source) = walked {
                let silent = (self.silent.as_ref())
                    .and_then(|bits| bits.get(at / 64))
                    .is_some_and(|word| word & (1 << (at % 64)) != 0);
                if !silent {
                    read_words(&mut entry, text, lines, &source, self.policy.as_ref());
                }
                at += 1;
                each(entry);
            }
        })
    }
}

/// Which entries' words said nothing, an entry at a time ([`Reading::silent`]).
#[derive(Default)]
struct Silent {
    bits: Vec<u64>,
    entries: usize,
}

impl Silent {
    /// Notes the next entry, its words read: an entry whose words said nothing has what it
    /// would have without them read (the default), so it is not read again.
    fn note(&mut self, entry: &Entry) {
        let (word, bit) = (self.entries / 64, self.entries % 64);
        if bit == 0 {
            self.bits.push(0);
        }
        if entry.links.is_empty() && entry.issues.is_empty() && entry.stated.is_none() {
            self.bits[word] |= 1 << bit;
        }
        self.entries += 1;
    }
}

/// What the walk over a register's blocks hands on, in the text's order.
enum Walked {
    /// An entry with its byte range, as it closes, its words not read yet.
    Entry(Entry, Range<usize>),
    /// The byte range of a block outside entries, where the register states its policies.
    Outside(Range<usize>),
}

/// The one reading of a register's blocks: each entry and each block outside entries goes to
/// `each` as it is read ([`Walked`]); returns the register without its entries.
fn walk(file: &str, text: &str, lines: &Lines, mut each: impl FnMut(Walked)) -> Register {
    let mut register = Register {
        file: file.to_string(),
        ..Register::default()
    };
    let mut current: Option<Draft> = None;
    let mut section: Option<String> = None;
    // The entries a block closed and their byte ranges, handed on after the block.
    let mut sources: Vec<Range<usize>> = Vec::new();
    let mut any_entry = false;
    let mut left_out = LeftOut::default();
    for block in blocks::each_block(text) {
        let block = &block;
        if let Kind::Heading(level) = block.kind {
            left_out.heading(level, &block.range, text, lines);
        }
        match block.kind {
            Kind::Heading(level) if level <= 2 || current.is_none() => {
                let start = block.range.start;
                sources.extend(finish(&mut register, current.take(), start, text, lines));
                current = heading(&mut register, block, level, text, lines, &section);
                if current.is_none() {
                    // A heading that is no entry names the section below it (the document's
                    // title, level 1, names none).
                    section = (level >= 2).then(|| heading_text(block, text).to_string());
                }
            }
            Kind::List if block.ordered && current.is_none() => {
                let before = register.entries.len();
                list_entries(&mut register, block, text, lines, &section, &mut sources);
                if register.entries.len() == before {
                    each(Walked::Outside(block.range.clone()));
                }
            }
            _ => match current.as_mut() {
                Some(draft) => draft.take_block(block, text, lines),
                None => {
                    older_style_title(&mut register, block, lines);
                    each(Walked::Outside(block.range.clone()));
                }
            },
        }
        any_entry |= hand_on(&mut register, &mut sources, &mut each);
    }
    sources.extend(finish(&mut register, current, text.len(), text, lines));
    any_entry |= hand_on(&mut register, &mut sources, &mut each);
    tidy_problems(&mut register, any_entry, text);
    register.left_out = left_out.end(text.len(), text);
    register
}

/// Hands the entries read so far to `each`; whether there were any.
fn hand_on(
    register: &mut Register,
    sources: &mut Vec<Range<usize>>,
    each: &mut impl FnMut(Walked),
) -> bool {
    let any = !register.entries.is_empty();
    for (entry, source) in register.entries.drain(..).zip(sources.drain(..)) {
        each(Walked::Entry(entry, source));
    }
    any
}

/// The register's policy for entries that apply to the fork, when the block outside entries at
/// `range` states it, as the page shows it (the register's is the first stated).
fn policy_in(text: &str, lines: &Lines, range: &Range<usize>) -> Option<words::Policy> {
    let view = Visible::of(&text[range.clone()]);
    words::policy(view.text(), |at| {
        lines.line(range.start + view.source_at(at))
    })
}

/// The sections whose heading says what is left out of the vendored set: what
/// `fork-hooks-explained` accepts as an explanation in words. A section runs to the next heading
/// of its level or above; a heading in a comment or a code block is none. Read heading by
/// heading as the blocks come, so a register's headings are never held together.
#[derive(Default)]
struct LeftOut {
    sections: Vec<Section>,
    /// The section open: its heading's level, the section, and where its text starts.
    open: Option<(u8, Section, usize)>,
}

impl LeftOut {
    const SAY_LEFT_OUT: &'static [&'static str] = &[
        "dropped",
        "not carried",
        "left out",
        "not vendored",
        "excluded",
        "omitted",
        "not copied",
    ];

    fn heading(&mut self, level: u8, range: &Range<usize>, text: &str, lines: &Lines) {
        if self.open.as_ref().is_some_and(|(l, _, _)| level <= *l) {
            self.close(range.start, text);
        }
        let title = heading_source(range, text)
            .lines()
            .next()
            .unwrap_or("")
            .trim();
        let lower = title.to_ascii_lowercase();
        if self.open.is_none() && Self::SAY_LEFT_OUT.iter().any(|w| lower.contains(w)) {
            let section = Section {
                line: lines.line(range.start),
                title: title.to_string(),
                text: String::new(),
            };
            self.open = Some((level, section, range.end));
        }
    }

    fn close(&mut self, end: usize, text: &str) {
        if let Some((_, mut section, start)) = self.open.take() {
            section.text = crate::readme::without_comments(&text[start..end]);
            self.sections.push(section);
        }
    }

    fn end(mut self, end: usize, text: &str) -> Vec<Section> {
        self.close(end, text);
        self.sections
    }
}

/// The register's problems in line order, with the entry numbers too large to read, and
/// without the older-style hint once the register has entries of the new style.
fn tidy_problems(register: &mut Register, any_entry: bool, text: &str) {
    if any_entry {
        register
            .problems
            .retain(|p| !p.message.contains("older style"));
    }
    register.problems.extend(too_large_numbers(text));
    register.problems.sort_by_key(|p| p.line);
}

/// What an entry's words say, as the page shows them: its links, issue references and,
/// without a `state` field, its state, read under the register's policy (stated outside the
/// entries). The entry's view is made from its own text (`source`) and dropped after it: a long
/// register is never held twice.
fn read_words(
    entry: &mut Entry,
    text: &str,
    lines: &Lines,
    source: &Range<usize>,
    policy: Option<&words::Policy>,
) {
    let view = Visible::of(&text[source.clone()]);
    let plain = without_code(view.text());
    entry.links = words::urls(&plain).into();
    entry.issues = words::issue_refs(&plain).into();
    if entry.field("state").is_none() {
        entry.stated = words::stated(
            view.text(),
            |at| lines.line(source.start + view.source_at(at)),
            entry.line,
            entry.section.as_deref(),
            policy,
        )
        .map(Box::new);
    }
}

/// A heading's text as written (code spans and emphasis included), without its `#` marks.
fn heading_text<'t>(block: &Block, text: &'t str) -> &'t str {
    heading_source(&block.range, text)
}

fn heading_source<'t>(range: &Range<usize>, text: &'t str) -> &'t str {
    text[range.clone()]
        .trim()
        .trim_start_matches('#')
        .trim_end_matches('#')
        .trim()
}

/// The entries of a numbered list: its items that open with a bold title, `N. **Title.**`.
fn list_entries(
    register: &mut Register,
    block: &Block,
    text: &str,
    lines: &Lines,
    section: &Option<String>,
    sources: &mut Vec<Range<usize>>,
) {
    for item in &block.items {
        let source = &text[item.range.clone()];
        let Some(head) = list_item_head(source) else {
            continue;
        };
        let line = lines.line(item.range.start);
        let body = source.trim_end();
        let end_line = lines
            .line(item.range.start + body.len().saturating_sub(1))
            .max(line);
        let mut entry = Entry {
            number: head.number,
            title: head.title.clone(),
            line,
            end_line,
            form: Form::ListItem {
                indent: head.indent,
            },
            section: section.as_deref().map(Box::from),
            ..Entry::default()
        };
        let declared = read_item_lines(&mut entry, &head, block, item, body, lines);
        let files = declared.unwrap_or_else(|| {
            code_files(block, lines, |code, at| {
                item.range.contains(&at) && looks_like_path(code)
            })
        });
        entry.files = files.into();
        register.entries.push(entry);
        sources.push(item.range.start..item.range.start + body.len());
    }
}

/// Reads a list entry's lines after its head into `entry`: the fields of the list nested in
/// it (as the page shows them: a field in a comment or a code block is none) into its fields,
/// the rest into its prose. Returns the files its `files:` fields name, if it has one.
fn read_item_lines(
    entry: &mut Entry,
    head: &ItemHead,
    block: &Block,
    item: &Item,
    body: &str,
    lines: &Lines,
) -> Option<Vec<NamedFile>> {
    let start = item.range.start;
    let fields: Vec<(Range<usize>, (&'static str, String))> = (item.nested.iter())
        .filter_map(|nested| {
            let (key, value) = split_field(nested.field.as_deref()?)?;
            let range = nested.range.start..nested.field_end.max(nested.range.start);
            Some((range, (known_key(&key)?, value)))
        })
        .collect();
    let mut declared: Option<Vec<NamedFile>> = None;
    for (range, (key, value)) in &fields {
        if *key == "files" {
            let files = code_files(block, lines, |_, at| range.contains(&at));
            declared.get_or_insert_with(Vec::new).extend(files);
        }
        if entry.field(key).is_none() {
            entry.fields.push(Field {
                key,
                value: value.clone(),
                line: lines.line(range.start),
                end_line: lines.line(range.end.saturating_sub(1).max(range.start)),
            });
        }
    }
    let field_lines: Vec<Range<usize>> = fields
        .iter()
        .map(|(range, _)| {
            lines.line(range.start)..lines.line(range.end.saturating_sub(1).max(range.start)) + 1
        })
        .collect();
    let mut prose = String::new();
    let mut at = start;
    for (index, raw) in body.split_inclusive('\n').enumerate() {
        let line = lines.line(at);
        // Where this line starts within the item: a bold title may run onto later lines, so
        // the body can start past the first line.
        let offset = at - start;
        at += raw.len();
        if index > 0 && field_lines.iter().any(|l| l.contains(&line)) {
            continue;
        }
        if head.body_start >= offset + raw.len() {
        } else if head.body_start > offset {
            prose.push_str(raw.get(head.body_start - offset..).unwrap_or(""));
        } else if index == 0 {
            prose.push_str(raw);
        } else {
            prose.push_str(strip_indent(raw, head.indent));
        }
    }
    entry.prose = prose.trim().into();
    declared
}

/// What opens a list entry: `N. **Title.**`.
pub struct ItemHead {
    pub number: u32,
    pub title: String,
    /// The column where the item's content starts (continuation lines are indented so).
    pub indent: usize,
    /// Byte offset in the item's first line where the prose after the title starts.
    pub body_start: usize,
}

/// Reads `N. **Title.** rest` (or `N) __Title__ rest`) at the start of a list item's source.
pub fn list_item_head(source: &str) -> Option<ItemHead> {
    let lead = source.len() - source.trim_start_matches(' ').len();
    let rest = &source[lead..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let number: u32 = rest[..digits].parse().ok()?;
    let rest = &rest[digits..];
    let rest = rest.strip_prefix(['.', ')'])?;
    let spaces = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    if spaces == 0 {
        return None;
    }
    let indent = lead + digits + 1 + spaces;
    let content = &source[indent..];
    let mark = ["**", "__"].into_iter().find(|m| content.starts_with(m))?;
    let close = content[2..].find(mark)? + 2;
    let title = content[2..close]
        .trim()
        .trim_end_matches(['.', ':'])
        .trim()
        .to_string();
    if title.is_empty() || title.contains('\n') {
        return None;
    }
    let title_end = indent + close + 2;
    Some(ItemHead {
        number,
        title,
        indent,
        body_start: title_end,
    })
}

/// A continuation line without the item's indentation (what is less indented stays as is).
fn strip_indent(line: &str, indent: usize) -> &str {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    &line[spaces.min(indent)..]
}

/// An entry being read: its heading and what its blocks said so far.
struct Draft {
    entry: Entry,
    heading_start: usize,
    body_start: usize,
    /// Byte ranges of the field lists, left out of the prose.
    field_ranges: Vec<Range<usize>>,
    /// Files from a `files:` field or `Files:` line (these win over prose code spans).
    declared_files: Option<Vec<NamedFile>>,
    prose_files: Vec<NamedFile>,
    /// The entry's problems so far (the entry keeps them as a boxed slice, 8 bytes less a
    /// register's entry).
    problems: Vec<Problem>,
}

/// A level-1 or level-2 heading: starts an entry when it reads `N. Title`.
fn heading(
    register: &mut Register,
    block: &Block,
    level: u8,
    text: &str,
    lines: &Lines,
    section: &Option<String>,
) -> Option<Draft> {
    let line = lines.line(block.range.start);
    if level != 2 {
        return None;
    }
    // The title as written, code spans and emphasis included (it becomes the PR title).
    let source = heading_text(block, text);
    let Some((number, title)) = numbered_title(source) else {
        // A number too large for an entry is its own problem (see `too_large_numbers`).
        if looks_numbered(source) && too_large_number(source).is_none() {
            let message =
                format!("heading `{source}` looks like an entry but is not `## N. Title`");
            register.problems.push(Problem { line, message });
        }
        return None;
    };
    let entry = Entry {
        number,
        title,
        line,
        section: section.as_deref().map(Box::from),
        ..Entry::default()
    };
    let mut problems = Vec::new();
    // A title is shown on terminals and pages and becomes a pull request's title: a control
    // character in it is a fault of the record, not something to carry on.
    if let Some(c) = control_in_title(&entry.title) {
        let message = format!(
            "entry {number}: the title holds the control character {}: write it without one",
            c.escape_unicode()
        );
        problems.push(Problem { line, message });
    }
    let prose_files = path_codes(block, lines);
    Some(Draft {
        entry,
        heading_start: block.range.start,
        body_start: block.range.end,
        field_ranges: Vec::new(),
        declared_files: None,
        prose_files,
        problems,
    })
}

/// Every line that opens an entry (`## N. Title`, `N. **Title.**`, `**N. Title.**`) with a
/// number no entry can have (entries are numbered up to 4294967295): an error at its line,
/// never an entry silently dropped (Markdown itself stops reading a list number after nine
/// digits, so such an item is not even a list item).
fn too_large_numbers(text: &str) -> Vec<Problem> {
    text.lines()
        .enumerate()
        .filter_map(|(index, line)| {
            let digits = too_large_number(line)?;
            Some(Problem {
                line: index + 1,
                message: format!(
                    "entry number {digits} is too large: entries are numbered 1 to N, at most {}",
                    u32::MAX
                ),
            })
        })
        .collect()
}

/// The digits of an entry number that does not fit, when `line` opens an entry with one.
fn too_large_number(line: &str) -> Option<&str> {
    let rest = line.trim_start();
    let rest = match rest.strip_prefix("##") {
        Some(after) if after.starts_with([' ', '\t']) => after.trim_start(),
        _ => rest,
    };
    let rest = rest
        .strip_prefix("**")
        .or_else(|| rest.strip_prefix("__"))
        .unwrap_or(rest);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let after = rest[digits..].strip_prefix(['.', ')'])?;
    let number = &rest[..digits];
    let opens = after.is_empty() || after.starts_with([' ', '\t', '*', '_']);
    (digits > 0 && opens && number.parse::<u32>().is_err()).then_some(number)
}

/// The first control character in `title` that is not a tab: a title is shown on terminals and
/// pages, heads a patch and becomes a pull request's title, so it holds none.
pub fn control_in_title(title: &str) -> Option<char> {
    title.chars().find(|&c| c.is_control() && c != '\t')
}

/// `N. Title` as a number and a title.
pub fn numbered_title(text: &str) -> Option<(u32, String)> {
    let text = text.trim();
    let (number, title) = text.split_once(". ")?;
    let number = number.parse().ok()?;
    let title = title.trim();
    (!title.is_empty()).then(|| (number, title.to_string()))
}

/// Whether a heading starts like an entry (`3 Title`, `Fix 3`, `#3`) without being one.
fn looks_numbered(text: &str) -> bool {
    let text = text.trim().to_ascii_lowercase();
    let text = text.strip_prefix("fix").unwrap_or(&text).trim_start();
    let text = text.strip_prefix('#').unwrap_or(text);
    text.starts_with(|c: char| c.is_ascii_digit())
}

/// A register with bold numbered titles and no `##` entries is in the older style.
fn older_style_title(register: &mut Register, block: &Block, lines: &Lines) {
    let is_title = block
        .strong_lead
        .as_ref()
        .is_some_and(|(lead, _)| numbered_title(lead).is_some());
    let reported = register
        .problems
        .iter()
        .any(|p| p.message.contains("older style"));
    if is_title && !reported {
        let message = "the register is in the older style (bold numbered titles): \
                       run `forkbook fixes migrate`"
            .to_string();
        register.problems.push(Problem {
            line: lines.line(block.range.start),
            message,
        });
    }
}

impl Draft {
    fn take_block(&mut self, block: &Block, text: &str, lines: &Lines) {
        match block.kind {
            Kind::List if is_field_list(block) => {
                self.field_ranges.push(block.range.clone());
                for item in &block.items {
                    self.field_item(item, block, text, lines);
                }
            }
            Kind::Paragraph
                if block
                    .opening
                    .trim_start()
                    .to_ascii_lowercase()
                    .starts_with("files:") =>
            {
                let files = item_files(block, block.range.clone(), text, lines);
                self.declared_files
                    .get_or_insert_with(Vec::new)
                    .extend(files);
            }
            _ => self.prose_files.extend(path_codes(block, lines)),
        }
    }

    fn field_item(&mut self, item: &Item, block: &Block, text: &str, lines: &Lines) {
        let line = lines.line(item.range.start);
        let number = self.entry.number;
        // The field is the item's first paragraph as the page shows it; blocks nested below it
        // are not its value.
        let end_line = lines
            .line(item.field_end.saturating_sub(1).max(item.range.start))
            .max(line);
        let Some((key, value)) = item.field.as_deref().and_then(split_field) else {
            let message = format!("entry {number}: list item is not a `key: value` field");
            self.problems.push(Problem { line, message });
            return;
        };
        let Some(key) = known_key(&key) else {
            let message = format!(
                "entry {number}: unknown field `{key}` (known: {})",
                KNOWN_KEYS.join(", ")
            );
            self.problems.push(Problem { line, message });
            return;
        };
        if let Some(first) = self.entry.field(key) {
            let message = format!(
                "entry {number}: field `{key}` given again (first at line {})",
                first.line
            );
            self.problems.push(Problem { line, message });
            return;
        }
        if key == "files" {
            let files = item_files(block, item.range.clone(), text, lines);
            self.declared_files
                .get_or_insert_with(Vec::new)
                .extend(files);
        }
        self.entry.fields.push(Field {
            key,
            value,
            line,
            end_line,
        });
    }
}

/// Closes the entry being read at byte `end`; returns the entry's byte range.
fn finish(
    register: &mut Register,
    draft: Option<Draft>,
    end: usize,
    text: &str,
    lines: &Lines,
) -> Option<Range<usize>> {
    let mut draft = draft?;
    let start = draft.heading_start;
    let body = &text[draft.body_start..end];
    draft.entry.end_line = lines
        .line(draft.body_start + body.trim_end().len())
        .max(draft.entry.line);
    draft.entry.prose = prose(text, draft.body_start..end, &draft.field_ranges).into();
    draft.entry.files = draft.declared_files.unwrap_or(draft.prose_files).into();
    draft.entry.problems = draft.problems.into();
    register.entries.push(draft.entry);
    Some(start..draft.body_start + body.trim_end().len())
}

/// The body's text without its field lists, trimmed.
fn prose(text: &str, body: Range<usize>, left_out: &[Range<usize>]) -> String {
    let mut prose = String::new();
    let mut at = body.start;
    for range in left_out {
        prose.push_str(&text[at..range.start]);
        at = range.end;
    }
    prose.push_str(&text[at..body.end]);
    prose.trim().to_string()
}

/// A list is the field list when one of its items starts with a known key.
fn is_field_list(block: &Block) -> bool {
    block.items.iter().any(|item| {
        (item.field.as_deref().and_then(split_field))
            .is_some_and(|(key, _)| KNOWN_KEYS.contains(&key.as_str()))
    })
}

/// `- key: value` (one item's source) as a normalized key and a cleaned value.
pub fn split_field(item: &str) -> Option<(String, String)> {
    let item = strip_marker(item.trim());
    let (key, value) = item.split_once(':')?;
    let key_ok = !key.trim().is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " _-".contains(c));
    if !key_ok || value.starts_with("//") {
        return None;
    }
    let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
    Some((normalize_key(key), clean_value(&value)))
}

fn strip_marker(item: &str) -> &str {
    let rest = item.trim_start_matches(|c: char| c.is_ascii_digit());
    let rest = if rest.len() < item.len() {
        rest.trim_start_matches(['.', ')'])
    } else {
        item
    };
    rest.trim_start_matches(['-', '*', '+']).trim_start()
}

/// A value as written, without link markup: `<url>` and `[text](url)` become `url`.
fn clean_value(value: &str) -> String {
    let value = value.trim();
    if let Some(inner) = value.strip_prefix('<').and_then(|v| v.strip_suffix('>')) {
        return inner.to_string();
    }
    if let (true, Some(open)) = (
        value.starts_with('[') && value.ends_with(')'),
        value.find("]("),
    ) {
        return value[open + 2..value.len() - 1].to_string();
    }
    value.to_string()
}

/// The files a `files:` item or `Files:` line names: its code spans, else its comma-separated words.
fn item_files(block: &Block, range: Range<usize>, text: &str, lines: &Lines) -> Vec<NamedFile> {
    let line = lines.line(range.start);
    let codes = code_files(block, lines, |_, at| range.contains(&at));
    if !codes.is_empty() {
        return codes;
    }
    let source = strip_marker(text[range].trim());
    let value = source.split_once(':').map_or("", |(_, v)| v);
    value
        .split([',', ' ', '\n'])
        .map(|w| w.trim().trim_end_matches('.'))
        .filter(|w| !w.is_empty() && *w != "and")
        .map(|name| NamedFile {
            name: name.to_string(),
            line,
        })
        .collect()
}

/// The code spans of a block that look like paths.
fn path_codes(block: &Block, lines: &Lines) -> Vec<NamedFile> {
    code_files(block, lines, |code, _| looks_like_path(code))
}

/// The code spans of a block that `keep` (given each one's text and byte offset), as files.
fn code_files(block: &Block, lines: &Lines, keep: impl Fn(&str, usize) -> bool) -> Vec<NamedFile> {
    block
        .codes
        .iter()
        .filter(|(code, at)| keep(code, *at))
        .map(|(code, at)| NamedFile {
            name: code.trim().to_string(),
            line: lines.line(*at),
        })
        .collect()
}

/// Source-file extensions a code span must end with to count as a file name.
const EXTENSIONS: &[&str] = &[
    "c", "cc", "cpp", "cxx", "h", "hh", "hpp", "hxx", "hip", "cu", "cuh", "inc", "txt", "cmake",
    "py", "metal", "in", "sh", "toml", "json", "yml", "yaml",
];

/// `mlx/device.cpp`, `CMakeLists.txt`, `device/utils.hpp`: no spaces, no `::`, a known extension.
pub fn looks_like_path(code: &str) -> bool {
    let code = code.trim();
    let allowed = code
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-/+".contains(c));
    let name = code.rsplit('/').next().unwrap_or(code);
    let extension_ok = name
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && EXTENSIONS.contains(&ext));
    allowed && extension_ok && !code.starts_with(['/', '-', '.']) && !code.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_items_split_into_normalized_keys_and_clean_values() {
        assert_eq!(
            split_field("- Fork commit: abc\n"),
            Some(("fork-commit".into(), "abc".into()))
        );
        assert_eq!(
            split_field("* link: <https://x/pull/1>"),
            Some(("link".into(), "https://x/pull/1".into()))
        );
        assert_eq!(
            split_field("- link: [#1](https://x/pull/1)").unwrap().1,
            "https://x/pull/1"
        );
        assert_eq!(split_field("- https://x/pull/1"), None);
        assert_eq!(split_field("- just prose"), None);
    }

    #[test]
    fn only_path_like_code_spans_name_files() {
        for path in [
            "mlx/device.cpp",
            "CMakeLists.txt",
            "device/utils.hpp",
            "unary.hip",
        ] {
            assert!(looks_like_path(path), "{path}");
        }
        for code in [
            "std::pair",
            "ceil_div(n, 256u)",
            "0.5",
            "<hip/hip_runtime.h>",
            "../x.cpp",
            "-o x.o",
        ] {
            assert!(!looks_like_path(code), "{code}");
        }
    }

    #[test]
    fn entries_read_one_at_a_time_are_the_entries_of_the_whole_reading() {
        let texts = [
            // Headings with fields, a section, a policy stated after the entries it governs.
            "# Local fixes\n\n## Fixes to the fork's kernels\n\n## 1. Keep the stream\n\n\
             Prose `mlx/event.cpp`, see https://example.org/a and acme/app#3.\n\n\
             - state: proposed\n- link: https://x/pull/1\n- link: again\n- colour: red\n\n\
             ## 2. Applies to the fork\n\nIt applies to the fork.\n\n\
             Entries that apply to the fork are not proposed while the fork is frozen.\n",
            // A list register in the older style and the new, numbers out of order and too
            // large, a heading that only looks like an entry.
            "**1. Old.** bold title\n\n1. **One.** text in `a.cpp`\n\n   - state: merged\n   \
             - fork-commit: abc\n\n2. **Two.** kept local: the fork rewrites it.\n\n\
             ## 3 Not an entry\n\n## 99999999999. Too large\n\n## 7. Seven\n\n\
             Retargeted onto the new pin.\n",
            // A left-out section, setext headings, a code block, a comment and a definition.
            "## 1. A\n\nsee [the trace][t]\n\n## Dropped from the vendored set\n\n\
             `python/` stays out.\n<!-- ## 4. hidden -->\n\n2. B\n-----\n\n\
             ```text\n## 5. fenced\n```\n\nFiles: `x.cpp`, `y.cpp`\n\n\
             [t]: https://example.org/t\n",
            // The policy stated before the entries it governs, and an entry with no words of it.
            "# Local fixes\n\nEntries that apply to the fork are not proposed while it is frozen.\n\n\
             ## 1. Applies to the fork\n\nIt applies to the fork.\n\n## 2. Plain\n\nProse.\n",
            "",
        ];
        for text in texts {
            let whole = parse("LOCAL_FIXES.md", text);
            let mut streamed = Vec::new();
            let rest = each_entry("LOCAL_FIXES.md", text, |entry| streamed.push(entry));
            assert!(!whole.entries.is_empty() || text.is_empty(), "{text:?}");
            assert_eq!(format!("{streamed:?}"), format!("{:?}", whole.entries));
            let without_entries = Register {
                entries: Vec::new(),
                ..whole
            };
            assert_eq!(format!("{rest:?}"), format!("{without_entries:?}"));
            // The first reading in one walk, and the readings after it, hand the same entries
            // (where the policy comes after entries, what they summed up starts again).
            let mut summed: Vec<Entry> = Vec::new();
            let (reading, first_rest) = Reading::first("LOCAL_FIXES.md", text, &mut summed, {
                |summed, entry| summed.push(entry)
            });
            assert_eq!(format!("{summed:?}"), format!("{streamed:?}"), "{text:?}");
            assert_eq!(format!("{first_rest:?}"), format!("{rest:?}"));
            let mut again = Vec::new();
            let second_rest = reading.each_entry(|entry| again.push(entry));
            assert_eq!(format!("{again:?}"), format!("{streamed:?}"));
            assert_eq!(format!("{second_rest:?}"), format!("{rest:?}"));
        }
        // The policy stated first governs the entry below it.
        let stated = parse("f", texts[3]).entries[0].stated.clone();
        assert!(
            stated
                .as_ref()
                .is_some_and(|s| s.from.contains("policy at line 3")),
            "{stated:?}"
        );
        // A policy read after the entries reaches the entries before it.
        let stated = parse("f", texts[0]).entries[1].stated.clone();
        assert!(
            stated
                .as_ref()
                .is_some_and(|s| s.from.contains("not proposed")),
            "{stated:?}"
        );
    }

    #[test]
    fn a_left_out_section_runs_to_the_next_heading_of_its_level_and_hides_nothing_else() {
        let text = "# Local fixes\n\n## 1. A fix\n\nProse.\n\n\
                    ## Dropped from the vendored set\n\n`python/` is not vendored.\n\n\
                    ### Details\n\nThe docs too.\n<!-- and `benchmarks/`, hidden -->\n\n\
                    ## Notes\n\n```text\n## Not carried: a heading in a code block\n```\n\n\
                    <!--\n## Omitted: a heading in a comment\n-->\n\n\
                    Not copied either\n-----------------\n\n`examples/` stays upstream.\n";
        let register = parse("LOCAL_FIXES.md", text);
        let sections: Vec<(usize, &str)> = (register.left_out.iter())
            .map(|s| (s.line, s.title.as_str()))
            .collect();
        assert_eq!(
            sections,
            [
                (7, "Dropped from the vendored set"),
                (26, "Not copied either")
            ]
        );
        let dropped = &register.left_out[0].text;
        assert!(dropped.contains("`python/`") && dropped.contains("The docs too."));
        assert!(!dropped.contains("benchmarks") && !dropped.contains("Notes"));
        assert!(register.left_out[1].text.contains("`examples/`"));
        assert_eq!(register.entries.len(), 1);
    }
}
