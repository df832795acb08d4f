//! The drift report: findings, their JSON form, and the text a person reads.

pub use super::kind::{Kind, ALL_KINDS};
use super::model::Loc;
use super::suppress::Suppression;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// An upstream commit: full SHA and the first line of its message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitRef {
    pub sha: String,
    pub summary: String,
}

/// The upstream declaration text a finding is about, for finding the commit that changed it.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// Path and text of the declaration at the new commit.
    pub to_text: Option<(String, String)>,
    /// Path and text of the declaration at the old commit.
    pub from_text: Option<(String, String)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    pub kind: Kind,
    pub symbol: String,
    pub message: String,
    pub from: Option<Loc>,
    pub to: Option<Loc>,
    pub backend: Option<Loc>,
    pub introduced_by: Option<CommitRef>,
    /// The reason from the suppressions file, when one covers this finding.
    pub suppressed: Option<String>,
    #[serde(skip)]
    pub evidence: Evidence,
}

/// How much of the input tree-sitter could not parse (after blanking).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ParseStats {
    pub from_headers: usize,
    pub from_error_nodes: usize,
    pub to_headers: usize,
    pub to_error_nodes: usize,
    pub backend_files: usize,
    pub backend_error_nodes: usize,
    /// Every file that kept ERROR nodes: where a finding may have been missed.
    pub error_files: Vec<FileErrors>,
}

/// A file tree-sitter could not fully parse, even after blanking.
#[derive(Debug, Clone, Serialize)]
pub struct FileErrors {
    /// `from`, `to` (upstream at either commit) or `backend`.
    pub side: &'static str,
    pub path: String,
    pub error_nodes: usize,
}

/// [`FileErrors`] as read back from the drift cache, its side still a string.
#[derive(Deserialize)]
struct StoredFileErrors {
    side: String,
    path: String,
    error_nodes: usize,
}

impl<'de> Deserialize<'de> for FileErrors {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FileErrors, D::Error> {
        let stored = StoredFileErrors::deserialize(d)?;
        let side = ["from", "to", "backend"]
            .into_iter()
            .find(|s| *s == stored.side)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown side `{}`", stored.side)))?;
        Ok(FileErrors {
            side,
            path: stored.path,
            error_nodes: stored.error_nodes,
        })
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ApiReport {
    pub from: String,
    pub to: String,
    pub findings: Vec<Finding>,
    /// Suppressions that matched no finding: stale entries to delete.
    pub unused_suppressions: Vec<Suppression>,
    pub parse: ParseStats,
}

impl ApiReport {
    /// Findings that break the backend and are not suppressed.
    pub fn breaks(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.suppressed.is_none())
            .count()
    }

    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let short = |sha: &str| sha.chars().take(10).collect::<String>();
        let _ = writeln!(out, "drift api {}..{}", short(&self.from), short(&self.to));
        for finding in &self.findings {
            render_finding(&mut out, finding);
        }
        for stale in &self.unused_suppressions {
            let _ = writeln!(
                out,
                "\nunused suppression: {} `{}` ({})",
                stale.kind, stale.symbol, stale.reason
            );
        }
        let suppressed = self.findings.len() - self.breaks();
        let _ = writeln!(
            out,
            "\n{}, {} suppressed; parsed {} + {} headers and {} backend files ({} error nodes: \
             syntax the parser could not read and skipped, where a declaration may be missed)",
            crate::report_value::plural(self.breaks(), "break", "breaks"),
            suppressed,
            self.parse.from_headers,
            self.parse.to_headers,
            self.parse.backend_files,
            self.parse.from_error_nodes
                + self.parse.to_error_nodes
                + self.parse.backend_error_nodes,
        );
        out
    }
}

impl ApiReport {
    /// The findings as a table for the book: each break with where upstream's declaration is
    /// (linked to upstream's file at both commits), where the backend uses it, and the upstream
    /// commit and pull request that changed it (linked).
    pub fn markdown(&self, links: &crate::markdown::PageLinks) -> String {
        use crate::markdown;
        let short = |sha: &str| sha.chars().take(8).collect::<String>();
        let mut out = format!(
            "Drift from upstream `{}` to `{}`: {}, {} suppressed.\n\n",
            markdown::text(&short(&self.from)),
            markdown::text(&short(&self.to)),
            crate::report_value::plural(self.breaks(), "break", "breaks"),
            self.findings.len() - self.breaks()
        );
        if !self.findings.is_empty() {
            let rows: Vec<Vec<String>> = self.findings.iter().map(|f| self.row(f, links)).collect();
            out.push_str(&markdown::table(&["finding", "where", "changed by"], &rows));
        }
        for stale in &self.unused_suppressions {
            out.push_str(&format!(
                "\nUnused suppression: `{}` {} ({}).\n",
                markdown::text(&stale.kind),
                markdown::code_span(&stale.symbol),
                markdown::text(&stale.reason)
            ));
        }
        let errors = self.parse.from_error_nodes
            + self.parse.to_error_nodes
            + self.parse.backend_error_nodes;
        out.push_str(&format!(
            "\nParsed {} + {} headers and {} backend files; {} (syntax the parser could not read \
             and skipped, where a declaration may be missed).\n",
            self.parse.from_headers,
            self.parse.to_headers,
            self.parse.backend_files,
            crate::report_value::plural(errors, "error node", "error nodes"),
        ));
        out
    }
}

impl ApiReport {
    /// One finding's row: what it is, where upstream declares it at both commits and where the
    /// backend uses it, and the upstream commit that changed it.
    fn row(&self, f: &Finding, links: &crate::markdown::PageLinks) -> Vec<String> {
        use crate::markdown;
        let at = |sha: &str, loc: &Option<Loc>| {
            loc.as_ref().map_or("—".to_string(), |l| {
                links.upstream_file(sha, &l.path, l.line)
            })
        };
        let mut what = format!("`{}` {}", f.kind.as_str(), markdown::code_span(&f.symbol));
        if let Some(reason) = &f.suppressed {
            let reason = markdown::cell(&markdown::text(reason));
            what.push_str(&format!(" (suppressed: {reason})"));
        }
        let mut place = format!(
            "upstream {} → {}",
            at(&self.from, &f.from),
            at(&self.to, &f.to)
        );
        if let Some(l) = &f.backend {
            place.push_str(&format!(
                "; backend {}",
                markdown::code_span(&l.to_string())
            ));
        }
        vec![
            format!("{what}: {}", markdown::prose(&f.message)),
            place,
            f.introduced_by.as_ref().map_or("—".to_string(), |c| {
                markdown::cell(&links.upstream_commit(&c.sha, &c.summary))
            }),
        ]
    }
}

fn render_finding(out: &mut String, finding: &Finding) {
    let status = if finding.suppressed.is_some() {
        " (suppressed)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "\n{}: `{}`{status}",
        finding.kind.as_str(),
        finding.symbol
    );
    let _ = writeln!(out, "  {}", finding.message);
    let place = |label: &str, loc: &Option<Loc>, out: &mut String| {
        if let Some(loc) = loc {
            let _ = writeln!(out, "  {label:<8} {loc}");
        }
    };
    place("from", &finding.from, out);
    place("to", &finding.to, out);
    place("backend", &finding.backend, out);
    if let Some(commit) = &finding.introduced_by {
        let _ = writeln!(
            out,
            "  commit   {} {}",
            &commit.sha[..commit.sha.len().min(10)],
            commit.summary
        );
    }
    if let Some(reason) = &finding.suppressed {
        let _ = writeln!(out, "  reason   {reason}");
    }
}

/// Marks the findings each suppression covers and lists the suppressions that covered none.
pub fn apply_suppressions(report: &mut ApiReport, suppressions: &[Suppression]) {
    let mut used = vec![false; suppressions.len()];
    for finding in &mut report.findings {
        let hit = suppressions
            .iter()
            .position(|s| s.kind == finding.kind.as_str() && s.symbol == finding.symbol);
        if let Some(index) = hit {
            used[index] = true;
            finding.suppressed = Some(suppressions[index].reason.clone());
        }
    }
    report.unused_suppressions = suppressions
        .iter()
        .zip(used)
        .filter(|(_, used)| !used)
        .map(|(s, _)| s.clone())
        .collect();
}
