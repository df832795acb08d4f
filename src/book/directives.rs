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
        // Each cited pull request's state, as the fork's and upstream's pull refs say.
        let pulls = match crate::engine::Cache::open(&project) {
            Ok(cache) => crate::engine::propose::pulls::states(&project, &cache, &register),
            Err(_) => Vec::new(),
        };
        Ok(render_register(&register, &label, &pulls))
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

/// A check's error as the gate shows it: its note followed by where the check's page is.
pub(super) fn gate_finding(finding: Finding) -> GateFinding {
    let explain = format!(
        "`forkbook check --explain {}` says what the check wants",
        finding.check
    );
    let help = match &finding.note {
        Some(note) => format!("{note}; {explain}"),
        None => explain,
    };
    // Each check declares the chapter that shows its subject.
    let shown_by = forkbook_checks::find(finding.check)
        .map_or(forkbook_checks::Chapter::Checks, |check| check.chapter)
        .as_str();
    GateFinding {
        finding: finding.with_note(help),
        shown_by: Some(shown_by.into()),
    }
}

/// The register as one card per entry: a heading (anchor `fix-N`, so other pages can link to
/// the entry), its state in words, then each field the entry holds (`link`, `package`,
/// `fork-commit`, `cause`, `reason`, `issue`, from its field list or its own words), a field
/// its state needs and it lacks marked missing, and the files it names. A five-column table hid
/// the state, link and package off the right edge of mdBook's column; a fixed `link` slot said
/// "no link yet" on entries that never get one. Each pull request it cites follows with its
/// state from `pulls` (open, merged at a commit, absent).
fn render_register(
    register: &crate::engine::register::Register,
    label: &str,
    pulls: &[crate::engine::propose::pulls::CitedPull],
) -> String {
    let mut text = format!(
        "{} in `{label}`.\n\n",
        crate::engine::report_value::plural(register.entries.len(), "entry", "entries")
    );
    for entry in &register.entries {
        let mut lines = vec![format!("**state** {}", state_words(entry))];
        let needs = entry.state().map_or(&[][..], |s| s.required_fields());
        for key in CARD_FIELDS {
            match entry.value(key) {
                Some(value) => lines.push(format!("**{key}** {}", field_markdown(key, value))),
                None if needs.contains(&key) => {
                    lines.push(format!("**{key}** *missing: its state needs one*"))
                }
                None => {}
            }
        }
        let files: Vec<String> = entry
            .files
            .iter()
            .map(|f| markdown::code_span(&f.name))
            .collect();
        lines.push(if files.is_empty() {
            "**files** *names no file*".to_string()
        } else {
            format!("**files** {}", files.join(", "))
        });
        let cited: Vec<String> = (pulls.iter())
            .filter(|p| p.entry == entry.number)
            .map(|p| {
                let number = markdown::text(&format!("{} #{}", p.repo, p.number));
                format!("{number} *{}*", p.state.describe())
            })
            .collect();
        if !cited.is_empty() {
            lines.push(format!("**pull requests** {}", cited.join(", ")));
        }
        text.push_str(&format!(
            "### {}. {} {{#fix-{}}}\n\n{}\n\n",
            entry.number,
            markdown::heading_text(&entry.title),
            entry.number,
            lines.join("\\\n"),
        ));
    }
    text
}

/// The fields a card shows when the entry holds them, in the register's own order.
const CARD_FIELDS: [&str; 6] = ["link", "package", "fork-commit", "cause", "reason", "issue"];

/// The state as the register says it (`to be proposed`, `kept local`), its id beside it, and
/// whether it was read from the entry's words. The same reading as `check` and `fixes list`.
fn state_words(entry: &crate::engine::register::Entry) -> String {
    use crate::engine::register::State;
    let Some(state) = entry.state() else {
        return "*no state*".to_string();
    };
    let words = match state {
        State::RetargetOnly => "an adaptation to the pin",
        State::ToPropose => "to be proposed",
        State::Proposed => "proposed",
        State::Merged => "merged",
        State::KeptLocal => "kept local",
    };
    let from_words = if entry.field("state").is_none() && entry.stated.is_some() {
        ", from its words"
    } else {
        ""
    };
    format!("{words} (`{}`{from_words})", state.as_str())
}

/// A field's value for the page: web addresses as links, a package as its file name (its folder
/// is the same for all), a commit as code, prose quoted.
fn field_markdown(key: &str, value: &str) -> String {
    let value = value.trim();
    if value.starts_with("https://") {
        return markdown::link(value);
    }
    match key {
        "package" => markdown::code_span(value.rsplit('/').next().unwrap_or(value)),
        "fork-commit" => markdown::code_span(value),
        _ => markdown::prose(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::check::Severity;

    #[test]
    fn findings_become_gate_findings_shown_by_their_chapter() {
        let finding = |check: &'static str| {
            Finding::new(check, Severity::Error, "p/LOCAL_FIXES.md", Some(4), "m")
                .with_note("add the link")
        };
        let gate = gate_finding(finding("fix-link-present"));
        assert_eq!(
            (gate.finding.place().as_str(), gate.shown_by.as_deref()),
            ("p/LOCAL_FIXES.md:4", Some("register"))
        );
        assert!(gate
            .finding
            .note
            .as_deref()
            .unwrap_or_default()
            .starts_with("add the link; `forkbook check --explain fix-link-present`"));
        assert_eq!(
            gate_finding(finding("overlay-matches-lock"))
                .shown_by
                .as_deref(),
            Some("checks")
        );
    }

    /// A card names each pull request its entry cites with the state the pull refs gave.
    #[test]
    fn a_card_shows_the_state_of_each_pull_request_it_cites() {
        use crate::engine::propose::pulls::{CitedPull, PullState};
        let text = "# Local fixes\n\n## 1. Free the buffers\n\nWhy.\n\n- state: proposed\n\
            - link: https://github.com/o/fork/pull/12\n- files: `mlx/c.cpp`\n\n\
            ## 2. Sync the stream\n\nWhy.\n\n- state: to-propose\n- files: `mlx/d.cpp`\n";
        let register = crate::engine::register::parse("p/LOCAL_FIXES.md", text);
        let pull = CitedPull {
            entry: 1,
            line: 8,
            cited: "https://github.com/o/fork/pull/12".into(),
            repo: "fork".into(),
            number: 12,
            is_link: true,
            state: PullState::Merged {
                commit: "ab".repeat(20),
                head: None,
            },
        };
        let page = render_register(&register, "p/LOCAL_FIXES.md", &[pull]);
        let cards: Vec<&str> = page.split("### ").skip(1).collect();
        assert!(
            cards[0].contains("**pull requests** fork \\#\u{200b}12 *merged at abababababab*"),
            "{}",
            cards[0]
        );
        assert!(!cards[1].contains("pull requests"), "{}", cards[1]);
    }

    /// Fails before issue 25: every card said "link no link yet", and none showed `cause`,
    /// `reason` or `issue`.
    #[test]
    fn a_card_shows_what_its_entry_holds_and_its_state_in_words() {
        let text = "# Local fixes\n\n\
            ## 1. Keep the guard\n\nWhy.\n\n- state: kept-local\n- reason: our build's own check\n\
            - issue: https://github.com/o/app/issues/7\n- files: `mlx/a.cpp`\n\n\
            ## 2. Take the new size\n\nWhy.\n\n- state: retarget-only\n- cause: upstream abc1234 (#12)\n\
            - files: `mlx/b.cpp`\n\n\
            ## 3. Free the buffers\n\nWhy.\n\n- state: to-propose\n- files: `mlx/c.cpp`\n\n\
            ## 4. Sync the stream\n\nWhy.\n\n- state: proposed\n- files: `mlx/d.cpp`\n";
        let register = crate::engine::register::parse("p/LOCAL_FIXES.md", text);
        let page = render_register(&register, "p/LOCAL_FIXES.md", &[]);
        assert!(!page.contains("no link yet"), "{page}");
        let cards: Vec<&str> = page.split("### ").skip(1).collect();
        assert_eq!(cards.len(), 4, "{page}");
        assert!(
            cards[0].contains("**state** kept local (`kept-local`)"),
            "{}",
            cards[0]
        );
        assert!(
            cards[0].contains("**reason** our build's own check"),
            "{}",
            cards[0]
        );
        assert!(
            cards[0].contains(
                "**issue** [https://github.com/o/app/issues/7](https://github.com/o/app/issues/7)"
            ),
            "{}",
            cards[0]
        );
        assert!(!cards[0].contains("**link**"), "{}", cards[0]);
        assert!(
            cards[1].contains("**cause** upstream abc1234 \\(\\#\u{200b}12\\)"),
            "{}",
            cards[1]
        );
        assert!(
            cards[2].contains("**state** to be proposed (`to-propose`)"),
            "{}",
            cards[2]
        );
        assert!(!cards[2].contains("**link**"), "{}", cards[2]);
        assert!(
            cards[3].contains("**link** *missing: its state needs one*"),
            "{}",
            cards[3]
        );
        assert!(cards[3].contains("**files** ` mlx/d.cpp `"), "{}", cards[3]);
    }
}
