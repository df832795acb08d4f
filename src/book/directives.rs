//! The book's directives: `{{#forkbook register}}` (the register as one card per entry),
//! `{{#forkbook report}}` (the PR section from live results), `{{#forkbook checks}}` (the
//! catalogue), and how a check's finding becomes a gate finding.

use super::steps::run_in_process;
use super::BookRunner;
use crate::engine::check::Finding;
use crate::engine::markdown;
use crate::engine::records;
use forkbook_preprocessor::GateFinding;

impl BookRunner {
    pub(super) fn register_table(&self) -> Result<String, String> {
        let project = self.project().map_err(|e| e.message())?;
        let path = project.records_dir().join(records::FIXES_FILE);
        let label = project.record_name(records::FIXES_FILE);
        if !path.exists() {
            return Ok(format!(
                "*There is no `{label}`: the overlay has no local fixes yet.*\n"
            ));
        }
        let register = crate::engine::register::load(&path, &label).map_err(|e| e.message())?;
        Ok(render_register(&register, &label))
    }

    pub(super) fn report(&self) -> String {
        let args = self.argv(["report", "--pr-body"]);
        let (ran, output) = run_in_process(self.command, args, None);
        if ran.exit == crate::invoke::FAILED {
            let reason = output
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no output");
            return format!(
                "> The report could not be made here: {}\n",
                reason.trim_start_matches("error: ")
            );
        }
        output
    }
}

pub(super) fn gate_finding(finding: Finding) -> GateFinding {
    let location = match finding.line {
        Some(line) => format!("{}:{line}", finding.file),
        None => finding.file.clone(),
    };
    let explain = format!(
        "`forkbook check --explain {}` says what the check wants",
        finding.check
    );
    let help = finding
        .note
        .map_or(explain.clone(), |note| format!("{note}; {explain}"));
    // Each check declares the chapter that shows its subject.
    let shown_by = forkbook_checks::find(&finding.check)
        .map_or(forkbook_checks::Chapter::Checks, |check| check.chapter)
        .as_str();
    GateFinding {
        check: finding.check,
        location,
        message: finding.message,
        help,
        shown_by: Some(shown_by.into()),
    }
}

/// The register as one card per entry: a heading (anchor `fix-N`, so other pages can link to
/// the entry), its state, link and package on one line, and the files it names. A five-column
/// table hid the state, link and package off the right edge of mdBook's column.
fn render_register(register: &crate::engine::register::Register, label: &str) -> String {
    let mut text = format!(
        "{} in `{label}`.\n\n",
        crate::engine::report_value::plural(register.entries.len(), "entry", "entries")
    );
    for entry in &register.entries {
        let files: Vec<String> = entry
            .files
            .iter()
            .map(|f| markdown::code_span(&f.name))
            .collect();
        // The same reading as `check` and `fixes list`: a state the words give is marked so.
        let said = entry.field("state").is_none() && entry.stated.is_some();
        let state = entry.state().map_or("*no state*".to_string(), |s| {
            let from_words = if said { " (from its words)" } else { "" };
            format!("`{}`{from_words}", s.as_str())
        });
        let link = entry
            .value("link")
            .map_or("no link yet".to_string(), markdown::link);
        // The package's file name: its folder is the same for all.
        let package = entry.value("package").map_or(String::new(), |p| {
            format!(
                " · package {}",
                markdown::code_span(p.rsplit('/').next().unwrap_or(p))
            )
        });
        let files = if files.is_empty() {
            "*names no file*".to_string()
        } else {
            files.join(", ")
        };
        text.push_str(&format!(
            "### {}. {} {{#fix-{}}}\n\n**state** {state} · **link** {link}{package}\\\n**files** {files}\n\n",
            entry.number,
            markdown::heading_text(&entry.title),
            entry.number,
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::check::Severity;

    #[test]
    fn findings_become_gate_findings_shown_by_their_chapter() {
        let finding = |check: &str| Finding {
            check: check.into(),
            severity: Severity::Error,
            file: "p/LOCAL_FIXES.md".into(),
            line: Some(4),
            message: "m".into(),
            note: Some("add the link".into()),
        };
        let gate = gate_finding(finding("fix-link-present"));
        assert_eq!(
            (gate.location.as_str(), gate.shown_by.as_deref()),
            ("p/LOCAL_FIXES.md:4", Some("register"))
        );
        assert!(gate
            .help
            .starts_with("add the link; `forkbook check --explain fix-link-present`"));
        assert_eq!(
            gate_finding(finding("overlay-matches-lock"))
                .shown_by
                .as_deref(),
            Some("checks")
        );
    }
}
