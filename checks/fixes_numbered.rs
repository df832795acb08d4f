//! `fixes-numbered`: register entries are numbered 1 to N, each number once, without gaps (in
//! whatever order the register's sections put them), and in the patch layout each has exactly
//! one patch in the series.

use std::collections::{HashMap, HashSet};

use crate::facts::{Facts, SeriesPatch, Summary};
use crate::{pages::fixes_numbered as CHECK, Findings};

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let Some(register) = &facts.records.register else {
        findings.push(
            CHECK
                .finding(
                    &facts.register_file(),
                    None,
                    "the `LOCAL_FIXES.md` register is missing",
                )
                .with_note(
                    "write one entry `## N. Title` per local fix, even when there are none yet",
                ),
        );
        return;
    };
    findings.extend(
        (register.problems.iter()).map(|p| CHECK.finding(&register.file, Some(p.line), &p.message)),
    );
    let summary = facts.summary();
    numbering(&summary, &register.file, findings);
    if let Some(series) = &facts.records.patch_series {
        series_matches(&summary, &register.file, series, findings);
    }
}

/// Each number once, and every number from 1 to the count of entries. Sections may order
/// entries as they like (a build fix listed after the kernel fixes keeps its number).
///
/// Linear in the entries: one pass records where each number is first seen (a register of
/// 300,000 entries is checked in well under a second; a search per entry took minutes), the
/// numbers 1 to the count in a list of lines (a map of 600,000 numbers to their lines took 18 MB).
fn numbering(summary: &Summary, file: &str, findings: &mut Findings) {
    let note = "number the entries 1 to N, each number once, without gaps";
    let count = summary.len() as u32;
    // The first line of each number up to the count (0: not seen), then of any beyond it.
    let mut first_line: Vec<u32> = vec![0; count as usize + 1];
    let mut beyond_count: HashMap<u32, u32> = HashMap::new();
    for entry in summary.entries() {
        let first = match first_line.get_mut(entry.number as usize) {
            Some(line) => line,
            None => beyond_count.entry(entry.number).or_default(),
        };
        if *first == 0 {
            *first = entry.line as u32;
            continue;
        }
        let message = format!(
            "entry {} is numbered again (first at line {})",
            entry.number, first
        );
        findings.push(
            CHECK
                .finding(file, Some(entry.line), message)
                .with_note(note),
        );
    }
    // Name the first entry whose number is past the count: the likely misnumbered one.
    let beyond = summary.entries().find(|e| e.number > count);
    for number in 1..=count {
        if first_line[number as usize] != 0 {
            continue;
        }
        let message = match beyond {
            Some(entry) => format!(
                "no entry is numbered {number}, but entry {} is (the register has {count} entries)",
                entry.number
            ),
            None => format!("no entry is numbered {number}"),
        };
        let line = beyond.map(|e| e.line);
        findings.push(CHECK.finding(file, line, message).with_note(note));
    }
}

fn series_matches(summary: &Summary, file: &str, series: &[SeriesPatch], findings: &mut Findings) {
    let numbers: HashSet<u32> = summary.entries().map(|e| e.number).collect();
    for patch in series {
        if !numbers.contains(&patch.number) {
            let message = format!(
                "patch `{}` belongs to entry {}, which the register does not have",
                patch.file, patch.number
            );
            findings.push(CHECK.finding(file, None, message));
        }
    }
    let mut patches_of: HashMap<u32, usize> = HashMap::new();
    for patch in series {
        *patches_of.entry(patch.number).or_default() += 1;
    }
    for entry in summary.entries() {
        let patches = patches_of.get(&entry.number).copied().unwrap_or(0);
        // An entry the fork merged has no patch left: its change is in the base tree now.
        if patches != 1 && !(patches == 0 && entry.merged) {
            let message = format!(
                "entry {} has {patches} patches in the series, expected 1",
                entry.number
            );
            findings.push(CHECK.finding(file, Some(entry.line), message));
        }
    }
}
