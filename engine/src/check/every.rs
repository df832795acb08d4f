//! Every finding of a `check` run, in the catalogue's order, for `--json`, `--verbose` and the
//! book's gate. A register of 600,000 short entries has two findings an entry: held, they took
//! 30 times the register, and their JSON is 46 times it. So each check holds its first
//! [`HELD`] findings and writes the rest to a temporary file of its own as they come, and the
//! output is written from there a finding at a time.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};

use serde::ser::{Error as _, SerializeSeq};
use serde::Serialize;

use super::{Finding, Severity};
use crate::error::{Error, Result};

/// How many findings of one check are held before the rest go to its temporary file: every
/// real register's findings are held, and a file is made only at scale.
const HELD: usize = 4096;

/// Every finding of a run, each check's in the order they were found, the checks in the
/// catalogue's order.
#[derive(Debug, Default)]
pub struct EveryFinding {
    checks: Vec<CheckFindings>,
}

#[derive(Debug, Default)]
struct CheckFindings {
    held: Vec<Finding>,
    /// The findings after the first [`HELD`], written as they come ([`write_finding`]).
    written: Option<Written>,
}

#[derive(Debug)]
enum Written {
    Open {
        id: &'static str,
        file: BufWriter<File>,
    },
    Closed {
        id: &'static str,
        file: File,
    },
}

impl EveryFinding {
    /// A store for the findings of `checks` checks.
    pub fn new(checks: usize) -> EveryFinding {
        let checks = (0..checks).map(|_| CheckFindings::default()).collect();
        EveryFinding { checks }
    }

    /// Keeps `finding` of the check at `at` in the catalogue.
    pub fn push(&mut self, at: usize, finding: Finding) -> Result<()> {
        let check = &mut self.checks[at];
        if check.held.len() < HELD {
            check.held.push(finding);
            return Ok(());
        }
        if check.written.is_none() {
            let file = tempfile::tempfile().map_err(spill_error)?;
            let (id, file) = (finding.check, BufWriter::new(file));
            check.written = Some(Written::Open { id, file });
        }
        match &mut check.written {
            Some(Written::Open { file, .. }) => write_finding(file, &finding).map_err(spill_error),
            _ => Err(Error::new(
                "a finding came after the check's findings were closed",
            )),
        }
    }

    /// Ends the writing: every finding written so far can be read back.
    pub fn close(&mut self) -> Result<()> {
        for check in &mut self.checks {
            if let Some(Written::Open { id, file }) = check.written.take() {
                let file = file.into_inner().map_err(|e| spill_error(e.into_error()))?;
                check.written = Some(Written::Closed { id, file });
            }
        }
        Ok(())
    }

    /// Hands each finding to `each`, in order, until `each` fails.
    pub fn each(
        &self,
        mut each: impl FnMut(&Finding) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        for check in &self.checks {
            check.held.iter().try_for_each(&mut each)?;
            match &check.written {
                None => {}
                Some(Written::Closed { id, file }) => {
                    let mut file = file.try_clone()?;
                    file.rewind()?;
                    let mut reader = BufReader::new(file);
                    while let Some(finding) = read_finding(&mut reader, id)? {
                        each(&finding)?;
                    }
                }
                Some(Written::Open { .. }) => {
                    return Err(std::io::Error::other("the findings were read before close"))
                }
            }
        }
        Ok(())
    }

    /// Every finding, held (the book's gate: a real register's few).
    pub fn to_vec(&self) -> Result<Vec<Finding>> {
        let mut all = Vec::new();
        self.each(|finding| {
            all.push(finding.clone());
            Ok(())
        })
        .map_err(spill_error)?;
        Ok(all)
    }
}

/// The findings' JSON: a list, written a finding at a time.
impl Serialize for EveryFinding {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        let mut failed = None;
        let read = self.each(|finding| {
            seq.serialize_element(finding).map_err(|e| {
                failed = Some(e);
                std::io::Error::other("the output failed")
            })
        });
        if let Some(e) = failed {
            return Err(e);
        }
        read.map_err(|e| S::Error::custom(format!("could not read the findings back: {e}")))?;
        seq.end()
    }
}

fn spill_error(e: std::io::Error) -> Error {
    Error::new(format!("could not keep the findings in a temporary file: {e}"))
        .with_note("`forkbook check` without --json and --verbose holds only what it prints; or free space where TMPDIR points")
}

/// One finding as bytes: its severity, its line (0 for none: lines are 1-based), then its file,
/// message and note as lengths and bytes (a note's length is one more than its bytes; 0 for
/// none). The check is the file's.
fn write_finding(out: &mut impl Write, finding: &Finding) -> std::io::Result<()> {
    let severity = match finding.severity {
        Severity::Warning => 0u8,
        Severity::Error => 1,
    };
    out.write_all(&[severity])?;
    out.write_all(&(finding.line.unwrap_or(0) as u64).to_le_bytes())?;
    write_text(out, &finding.file, 0)?;
    write_text(out, &finding.message, 0)?;
    match &finding.note {
        Some(note) => write_text(out, note, 1),
        None => out.write_all(&0u64.to_le_bytes()),
    }
}

fn write_text(out: &mut impl Write, text: &str, plus: u64) -> std::io::Result<()> {
    out.write_all(&(text.len() as u64 + plus).to_le_bytes())?;
    out.write_all(text.as_bytes())
}

/// The next finding [`write_finding`] wrote, or None at the end.
fn read_finding(input: &mut impl Read, check: &'static str) -> std::io::Result<Option<Finding>> {
    let mut severity = [0u8; 1];
    match input.read_exact(&mut severity) {
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        other => other?,
    }
    let severity = match severity[0] {
        0 => Severity::Warning,
        _ => Severity::Error,
    };
    let line = usize::try_from(read_u64(input)?).map_err(std::io::Error::other)?;
    let file = read_text(input)?;
    let message = read_text(input)?;
    let finding = Finding::new(check, severity, &file, (line > 0).then_some(line), message);
    Ok(Some(match read_u64(input)? {
        0 => finding,
        plus_one => finding.with_note(read_bytes(input, plus_one - 1)?),
    }))
}

fn read_u64(input: &mut impl Read) -> std::io::Result<u64> {
    let mut bytes = [0u8; 8];
    input.read_exact(&mut bytes)?;
    Ok(u64::from_le_bytes(bytes))
}

/// A length and that many bytes.
fn read_text(input: &mut impl Read) -> std::io::Result<String> {
    let len = read_u64(input)?;
    read_bytes(input, len)
}

fn read_bytes(input: &mut impl Read, len: u64) -> std::io::Result<String> {
    let mut text = String::new();
    input.take(len).read_to_string(&mut text)?;
    if text.len() as u64 != len {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(n: usize) -> Finding {
        let made = Finding::new(
            "fix-state-complete",
            if n.is_multiple_of(3) {
                Severity::Warning
            } else {
                Severity::Error
            },
            "patches-rocm/LOCAL_FIXES.md",
            (!n.is_multiple_of(5)).then_some(n),
            format!("entry {n} names no state: `ü` \"quoted\""),
        );
        match n % 2 {
            0 => made.with_note("say `state: …`"),
            _ => made,
        }
    }

    /// Past [`HELD`] a check's findings go to a temporary file and come back the same, in the
    /// same order, in JSON too; the checks stay in the catalogue's order.
    #[test]
    fn findings_past_the_held_ones_come_back_the_same_and_in_order() {
        let mut every = EveryFinding::new(3);
        let mut expected = vec![Vec::new(), Vec::new(), Vec::new()];
        for n in 0..(HELD * 2 + 7) {
            let at = [2, 0][n % 2];
            every.push(at, finding(n)).unwrap();
            expected[at].push(finding(n));
        }
        every.push(1, finding(1)).unwrap();
        expected[1].push(finding(1));
        every.close().unwrap();
        let expected: Vec<Finding> = expected.into_iter().flatten().collect();
        assert!(matches!(
            every.checks[0].written,
            Some(Written::Closed { .. })
        ));
        assert_eq!(every.to_vec().unwrap(), expected);
        assert_eq!(
            serde_json::to_string_pretty(&every).unwrap(),
            serde_json::to_string_pretty(&expected).unwrap()
        );
    }
}
