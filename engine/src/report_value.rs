//! What every command's engine entry point returns: a value that renders itself as text for
//! people and as JSON for machines, and says whether it found problems. The command line prints
//! it and turns [`Verdict`] into the exit status in one place.

use serde::Serialize;

/// Whether a command's result is clean or found problems (conflicts, mismatches, drift).
/// Failing to do the job at all is an [`Error`](crate::Error), not a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Clean,
    Problems,
}

impl Verdict {
    pub fn problems_if(found: bool) -> Verdict {
        if found {
            Verdict::Problems
        } else {
            Verdict::Clean
        }
    }
}

/// A command's result.
pub trait CommandReport: Serialize {
    /// The text a person reads, every line ending in `\n`.
    fn text(&self) -> String;
    fn verdict(&self) -> Verdict;

    /// Writes [`CommandReport::text`] to `out`. A report whose text grows with its records
    /// (`status`, a line a fix) writes it a piece at a time instead of making it whole first.
    fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        out.write_all(self.text().as_bytes())
    }

    /// The result as Markdown for the book's page, where Markdown says more than the text: a
    /// residual's hunks as diffs linked to their fixes, conflicts and drift findings as tables
    /// linking upstream. `None` (the default) shows the text alone.
    fn markdown(&self, _links: &crate::markdown::PageLinks) -> Option<String> {
        None
    }
}

/// `1 thing` or `N things`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}
