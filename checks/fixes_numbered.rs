//! `fixes-numbered`: register entries are `## N. Title`, numbered 1, 2, 3… without gaps, and in
//! the patch layout each has exactly one patch in the series.

use crate::facts::{Facts, SeriesPatch};
use crate::register::Register;
use crate::{Chapter, Check, Finding, Severity};

pub(crate) const CHECK: Check = Check {
    id: "fixes-numbered",
    name: "LOCAL_FIXES entries numbered without gaps",
    severity: Severity::Error,
    chapter: Chapter::Register,
    doc: include_str!("fixes-numbered.md"),
    source: file!(),
    run,
};

fn run(facts: &Facts) -> Vec<Finding> {
    let Some(register) = &facts.register else {
        return vec![CHECK
            .finding(
                facts.register_file(),
                None,
                "the `LOCAL_FIXES.md` register is missing",
            )
            .with_note(
                "write one entry `## N. Title` per local fix, even when there are none yet",
            )];
    };
    let mut findings: Vec<Finding> = register
        .problems
        .iter()
        .map(|p| CHECK.finding(&register.file, Some(p.line), &p.message))
        .collect();
    numbering(register, &mut findings);
    if let Some(series) = &facts.patch_series {
        series_matches(register, series, &mut findings);
    }
    findings
}

fn numbering(register: &Register, findings: &mut Vec<Finding>) {
    for (index, entry) in register.entries.iter().enumerate() {
        let expected = index as u32 + 1;
        if entry.number != expected {
            let message = format!("entry {} is number {expected} in order", entry.number);
            findings.push(
                CHECK
                    .finding(&register.file, Some(entry.line), message)
                    .with_note("number the entries 1, 2, 3… in order, without gaps or repeats"),
            );
        }
    }
}

fn series_matches(register: &Register, series: &[SeriesPatch], findings: &mut Vec<Finding>) {
    for patch in series {
        if register.entry(patch.number).is_none() {
            let message = format!(
                "patch `{}` belongs to entry {}, which the register does not have",
                patch.file, patch.number
            );
            findings.push(CHECK.finding(&register.file, None, message));
        }
    }
    for entry in &register.entries {
        let patches = series.iter().filter(|p| p.number == entry.number).count();
        if patches != 1 {
            let message = format!(
                "entry {} has {patches} patches in the series, expected 1",
                entry.number
            );
            findings.push(CHECK.finding(&register.file, Some(entry.line), message));
        }
    }
}
