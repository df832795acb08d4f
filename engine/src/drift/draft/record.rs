//! Writing drafts as local fixes, and `forkbook fix confirm N`.
//!
//! Each draft becomes the next local fix through [`crate::record::add_fix`] (the patch, the
//! lock, the README counts), then its register entry is filled in: the draft's reasoning as
//! prose, `state: retarget-only`, `cause:` the introducing commit, and a `draft:` field, the mark
//! the `fix-draft-confirmed` check fails on. Confirming removes the mark and records a
//! `confirmed:` field in its place.

use super::{plan, CacheUpstream, Draft, NoDraft};
use crate::candidate;
use crate::doc::{text, words, Doc, Span};
use crate::drift::api::ApiReport;
use crate::error::{Error, Result};
use crate::overlay::{FixStep, OverlayState, Records};
use crate::project::Project;
use crate::record::plan_fix;
use crate::records;
use crate::register;
use crate::report_value::{plural, CommandReport, Verdict};
use crate::run::Run;
use git2::Oid;
use serde::Serialize;

/// The register field that marks a fix forkbook drafted and no person has confirmed yet.
pub const DRAFT_KEY: &str = "draft";
/// The field `fix confirm` leaves in its place.
pub const CONFIRMED_KEY: &str = "confirmed";

/// A draft written as fix `number`.
#[derive(Debug, Clone, Serialize)]
pub struct Written {
    pub number: usize,
    #[serde(flatten)]
    pub draft: Draft,
}

/// What `drift api --draft` did: the drift before, the fixes it wrote, the findings it could not
/// draft, and the drift left with the drafts applied.
#[derive(Debug, Clone, Serialize)]
pub struct Drafted {
    pub before: ApiReport,
    pub written: Vec<Written>,
    pub without: Vec<NoDraft>,
    pub after: Option<ApiReport>,
    /// The overlay as the drafts left it, made from the records folder they wrote; none when
    /// nothing was drafted.
    #[serde(skip)]
    pub state: Option<OverlayState>,
}

/// `forkbook drift api --draft`: a draft local fix for each finding with a mechanical remedy
/// between `from` and `to` (default: the recorded pin and upstream's branch), then the drift
/// again.
pub fn drift_api_drafts(
    run: &Run,
    state: &OverlayState,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Drafted> {
    let (from, to) = candidate::api_range(run.cache, state, from, to)?;
    write_drafts(run, state, from, to)
}

/// Writes each draft as the next local fix and runs the drift again over the result.
pub fn write_drafts(run: &Run, state: &OverlayState, from: Oid, to: Oid) -> Result<Drafted> {
    let (project, cache) = (run.project, run.cache);
    // Every draft is a read-modify-write of the records (`fix add`, then its entry filled in):
    // all of them under the one project lock, planned in memory one on the other and written in
    // one swap, so a failure at any point (a full disk, a size limit) leaves every record old.
    let _lock = project.lock_records()?;
    let before = run.drift_api(state, from, to)?;
    let backend = state.backend_files(&project.config.overlay.backend_prefix);
    let cfg = crate::drift::setup::api_config(project)?;
    let upstream = CacheUpstream {
        cache,
        commit: to,
        cfg: &cfg,
    };
    let planned = plan(&before, &backend, &upstream);
    let mut written = Vec::new();
    let mut drafted: Option<(OverlayState, crate::sync::Move)> = None;
    for draft in planned.drafts {
        let current = drafted.as_ref().map_or(state, |(state, _)| state);
        let mut edited = current.overlay.clone();
        edited.insert(draft.path.clone(), draft.content.clone().into());
        let mut recorded = plan_fix(project, cache, current, &draft.title, &edited)?;
        let register = recorded
            .planned
            .records
            .get(records::FIXES_FILE)
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .unwrap_or_default();
        let filled = fill_entry(project, &register, recorded.number, &draft)?;
        (recorded.planned.records).insert(records::FIXES_FILE.into(), filled.into_bytes().into());
        let files = recorded.planned.records.clone();
        let next =
            OverlayState::from_records(project, cache, Records::from_files(project, files)?)?;
        drafted = Some((next, recorded.planned));
        written.push(Written {
            number: recorded.number,
            draft,
        });
    }
    let (after, state) = match drafted {
        None => (None, None),
        Some((drafted, mut planned)) => {
            // Written only over the records this run read.
            planned.read_from = state.records.files.clone();
            crate::sync::write(project, &planned)?;
            (Some(run.drift_api(&drafted, from, to)?), Some(drafted))
        }
    };
    Ok(Drafted {
        before,
        written,
        without: planned.without,
        after,
        state,
    })
}

/// Fills in the register entry `fix add` left for fix `number` with the draft's reasoning, in
/// whichever form `fix add` wrote it (a `## N.` entry or a numbered list item).
fn fill_entry(project: &Project, text: &str, number: usize, draft: &Draft) -> Result<String> {
    let label = project.record_name(records::FIXES_FILE);
    let parsed = register::parse(&label, text);
    let entry = parsed.entry(number as u32).ok_or_else(|| {
        Error::new(format!(
            "`{label}` has no entry {number} after recording the draft"
        ))
    })?;
    let mut prose = draft.why.clone();
    if let Some(caveat) = &draft.caveat {
        prose.push_str(&format!(" Still to judge: {caveat}."));
    }
    let mut lines: Vec<String> = text.split_inclusive('\n').map(String::from).collect();
    let range = entry.line.saturating_sub(1)..entry.end_line.min(lines.len());
    let mut marked = false;
    for line in &mut lines[range] {
        if line.contains("TODO: why this fix exists.") {
            *line = line.replacen("TODO: why this fix exists.", &prose, 1);
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("- state: TODO") {
            let indent = &line[..line.len() - trimmed.len()];
            let mut fields = format!("{indent}- state: retarget-only\n");
            if let Some(cause) = &draft.cause {
                fields.push_str(&format!("{indent}- cause: {cause}\n"));
            }
            fields.push_str(&format!(
                "{indent}- {DRAFT_KEY}: {} drafted by forkbook from drift api ({} `{}`); review it, then `forkbook fix confirm {number}`\n",
                draft.remedy.as_str(),
                draft.kind.as_str(),
                draft.symbol
            ));
            *line = fields;
            marked = true;
        }
    }
    if !marked {
        return Err(Error::new(format!(
            "entry {number} of `{label}` (line {}) is not in the form `fix add` writes; the draft was recorded but not marked",
            entry.line
        ))
        .with_note(format!(
            "add `- {DRAFT_KEY}: ...` to entry {number} by hand, or remove the fix"
        )));
    }
    Ok(lines.concat())
}

impl CommandReport for Drafted {
    /// The analysis, then each draft written (its title, where, what it answers and what is
    /// still to judge), each finding left without one and why, and the drift left.
    fn text(&self) -> String {
        let mut doc = Doc::default();
        let written = plural(self.written.len(), "fix written", "fixes written");
        doc.gap().line(vec![words(format!("drafts: {written}"))]);
        for Written { number, draft } in &self.written {
            let at = format!("{}:{}", draft.path, draft.line);
            let title = [words(format!("fix {number}: ")), text(&draft.title)];
            doc.list(vec![
                [&title[..], &[words(" ("), text(at), words(")")]].concat()
            ]);
            let answers = [vec![words("answers ")], draft.kind.named(&draft.symbol)].concat();
            let caveat = draft
                .caveat
                .iter()
                .map(|caveat| vec![words("still to judge: "), Span::Prose(caveat.clone())]);
            doc.sublist([vec![answers], caveat.collect()].concat());
        }
        let without = self.without.iter().map(|n| {
            let reason = [words(": "), Span::Prose(n.reason.clone())];
            [n.kind.named(&n.symbol), reason.to_vec()].concat()
        });
        doc.list(without.collect());
        if let Some(after) = &self.after {
            let left = plural(after.breaks(), "break left", "breaks left");
            doc.gap()
                .line(vec![words(format!("with the drafts applied: {left}"))]);
            doc.list(after.live().map(|f| f.kind.named(&f.symbol)).collect());
        }
        if !self.written.is_empty() {
            doc.gap().say("note: each draft fails the gate (check `fix-draft-confirmed`) until a person reviews it and runs `forkbook fix confirm N`");
        }
        self.before.text() + &doc.text()
    }

    /// Drafts waiting for a person are problems, as are breaks left.
    fn verdict(&self) -> Verdict {
        let left = self.after.as_ref().unwrap_or(&self.before).breaks();
        Verdict::problems_if(left > 0 || !self.written.is_empty())
    }
}

/// What `fix confirm N` did.
#[derive(Debug, Clone, Serialize)]
pub struct Confirmed {
    pub number: u32,
    /// The draft mark that was removed.
    pub draft: String,
    pub confirmed: String,
}

impl CommandReport for Confirmed {
    fn text(&self) -> String {
        format!(
            "confirmed fix {}: the draft mark is gone; the register records `{CONFIRMED_KEY}: {}`\n",
            self.number, self.confirmed
        )
    }

    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}

/// `forkbook fix confirm N`: a person has reviewed draft fix N; its mark becomes a record.
pub fn confirm(project: &Project, number: u32) -> Result<Confirmed> {
    let _lock = project.lock_records()?;
    let path = project.records_dir().join(records::FIXES_FILE);
    let label = project.record_name(records::FIXES_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::new(format!("failed to read `{label}`: {e}")))?;
    let parsed = register::parse(&label, &text);
    let Some(entry) = parsed.entry(number) else {
        return Err(Error::new(format!("`{label}` has no entry {number}"))
            .with_note("`forkbook status` lists the fixes"));
    };
    let Some(field) = entry.field(DRAFT_KEY) else {
        return Err(Error::new(format!(
            "entry {number} of `{label}` (line {}) is not a draft: it has no `{DRAFT_KEY}:` field",
            entry.line
        ))
        .with_note("only fixes `drift api --draft` wrote need confirming"));
    };
    let draft = field.value.clone();
    // What was drafted for which finding stays; the instruction to confirm goes.
    let what = draft.split(';').next().unwrap_or(&draft).trim();
    let confirmed = format!("{what}, reviewed and kept on {}", today());
    let mut lines: Vec<String> = text.split_inclusive('\n').map(String::from).collect();
    let end = field.end_line.min(lines.len());
    lines.splice(
        field.line - 1..end,
        [format!("- {CONFIRMED_KEY}: {confirmed}\n")],
    );
    crate::fsutil::replace_file(&path, lines.concat().as_bytes())?;
    Ok(Confirmed {
        number,
        draft,
        confirmed,
    })
}

/// Today's date (UTC) as `YYYY-MM-DD`.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let days = secs.div_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// How a fix answers a drift finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer {
    /// Drafted by forkbook and not confirmed yet.
    Drafted,
    /// Drafted by forkbook and confirmed by a person.
    Confirmed,
    /// Written by a person.
    HandWritten,
}

/// The fixes that answer `finding`, each with how: a draft names its finding; otherwise the
/// fixes after the first `earlier` (those that were there before the move cannot answer its
/// drift) that change the finding's backend file and are no draft of another finding, narrowed
/// to those whose `cause` is the finding's introducing commit when any is.
pub fn answers(
    state: &OverlayState,
    finding: &crate::drift::api::Finding,
    earlier: usize,
) -> Vec<(usize, String, Answer)> {
    let text = crate::text_of(&state.records.files, records::FIXES_FILE);
    let parsed = register::parse(records::FIXES_FILE, &text);
    let symbol = format!("`{}`", finding.symbol);
    let names = |e: &register::Entry| {
        let mark = |k: &&str| e.field(k).is_some_and(|f| f.value.contains(&symbol));
        [DRAFT_KEY, CONFIRMED_KEY].iter().any(mark)
    };
    // A draft (confirmed or not) names the finding it answers.
    let named: Vec<&FixStep> = state
        .steps
        .iter()
        .filter(|s| parsed.entry(s.number() as u32).is_some_and(names))
        .collect();
    let chosen = if named.is_empty() {
        touching_answers(state, &parsed, finding, earlier)
    } else {
        named
    };
    let answer = |s: &FixStep| (s.number(), s.patch.title(), answer_of(&parsed, s.number()));
    chosen.into_iter().map(answer).collect()
}

/// How fix `n` of the register came to be: a draft, a confirmed draft, or by hand.
fn answer_of(parsed: &register::Register, n: usize) -> Answer {
    match parsed.entry(n as u32) {
        Some(e) if e.field(DRAFT_KEY).is_some() => Answer::Drafted,
        Some(e) if e.field(CONFIRMED_KEY).is_some() => Answer::Confirmed,
        _ => Answer::HandWritten,
    }
}

/// The answers of a finding no draft names: the hand-written fixes after the first `earlier`
/// that change its backend file, those whose `cause` is its introducing commit when any is.
fn touching_answers<'s>(
    state: &'s OverlayState,
    parsed: &register::Register,
    finding: &crate::drift::api::Finding,
    earlier: usize,
) -> Vec<&'s FixStep> {
    let Some(loc) = &finding.backend else {
        return Vec::new();
    };
    let touching: Vec<&FixStep> = state
        .steps
        .iter()
        .filter(|s| s.changed_paths().contains(&loc.path.as_str()))
        .filter(|s| s.number() > earlier && answer_of(parsed, s.number()) == Answer::HandWritten)
        .collect();
    let cause = finding.introduced_by.as_ref().map(|c| c.sha.as_str());
    let caused = |s: &&&FixStep| {
        let entry = parsed.entry(s.number() as u32);
        entry
            .and_then(|e| e.value("cause"))
            .is_some_and(|c| Some(c) == cause)
    };
    let by_cause: Vec<&FixStep> = touching.iter().filter(caused).copied().collect();
    if by_cause.is_empty() {
        touching
    } else {
        by_cause
    }
}
