//! The drift report: findings, their JSON form, and the text a person reads.

pub use super::kind::Kind;
use super::model::Loc;
use super::suppress::Suppression;
use crate::doc::{code, commit, text, words, Described, Doc, Row, Span};
use crate::markdown::PageLinks;
use crate::report_value::plural;
use crate::text::short_id;
use serde::{Deserialize, Serialize};

/// An upstream commit: full SHA and the first line of its message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitRef {
    pub sha: String,
    pub summary: String,
}

/// The upstream declaration text a finding is about, for finding the commit that changed it
/// and for drafting its fix.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileErrors {
    pub side: Side,
    pub path: String,
    pub error_nodes: usize,
}

/// Which files a [`FileErrors`] is of: upstream at either commit, or the backend. In the order
/// of their names, which is how the files are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Backend,
    From,
    To,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ApiReport {
    pub from: String,
    pub to: String,
    pub findings: Vec<Finding>,
    /// Suppressions that matched no finding: stale entries to delete.
    pub unused_suppressions: Vec<Suppression>,
    pub parse: ParseStats,
    /// Whether one end is a stand-in pin: every finding compares upstream's headers there, so
    /// each is marked (`engine::pin`). Never stored with the analysis.
    #[serde(skip)]
    pub stand_in: bool,
}

impl ApiReport {
    /// The findings that break the backend: those no suppression answers.
    pub fn live(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.suppressed.is_none())
    }

    /// How many findings break the backend.
    pub fn breaks(&self) -> usize {
        self.live().count()
    }

    /// One finding's row: what it is, where upstream declares it at both commits and where the
    /// backend uses it, and the upstream commit that changed it.
    fn row(&self, f: &Finding, links: &PageLinks) -> Row {
        let at = |sha: &str, loc: &Option<Loc>| match loc {
            Some(l) => Span::Link {
                text: l.to_string(),
                markdown: links.upstream_file(sha, &l.path, l.line),
            },
            None => words("—"),
        };
        let mut what = f.kind.named(&f.symbol);
        what.extend([words(": "), Span::Prose(f.message.clone())]);
        if let Some(reason) = &f.suppressed {
            what.extend([words(" (suppressed: "), text(reason), words(")")]);
        }
        if self.stand_in {
            what.push(words(format!(" {}", crate::pin::STAND_IN_MARK)));
        }
        let mut place = vec![words("upstream "), at(&self.from, &f.from)];
        place.extend([words(" → "), at(&self.to, &f.to)]);
        if let Some(l) = &f.backend {
            place.extend([words("; backend "), code(l.to_string())]);
        }
        let commit = (f.introduced_by.iter()).map(|c| commit(links, &c.sha, &c.summary));
        vec![what, place, commit.collect()]
    }
}

impl Described for ApiReport {
    /// The report: the count, each finding with where upstream declares it at both commits
    /// (linked to upstream's file), where the backend uses it and the upstream commit and pull
    /// request that changed it (linked), the stale suppressions, and what the parser skipped.
    fn doc(&self, links: &PageLinks) -> Doc {
        let mut doc = Doc::default();
        doc.say(format!(
            "drift api from upstream `{}` to `{}`: {}, {} suppressed",
            short_id(&self.from),
            short_id(&self.to),
            plural(self.breaks(), "break", "breaks"),
            self.findings.len() - self.breaks()
        ))
        .records(
            &["finding", "where", "changed by"],
            self.findings.iter().map(|f| self.row(f, links)).collect(),
        );
        for stale in &self.unused_suppressions {
            let (kind, reason) = (
                text(format!("{} ", stale.kind.as_str())),
                text(&stale.reason),
            );
            let symbol = code(&stale.symbol);
            doc.line(vec![
                words("unused suppression: "),
                kind,
                symbol,
                words(" ("),
                reason,
                words(")"),
            ]);
        }
        let errors = self.parse.from_error_nodes
            + self.parse.to_error_nodes
            + self.parse.backend_error_nodes;
        doc.line(vec![words(format!(
            "parsed {} + {} headers and {} backend files; {} (syntax the parser could not read \
             and skipped, where a declaration may be missed)",
            self.parse.from_headers,
            self.parse.to_headers,
            self.parse.backend_files,
            plural(errors, "error node", "error nodes"),
        ))]);
        doc
    }

    /// An unsuppressed finding breaks the backend.
    fn found_problems(&self) -> bool {
        self.breaks() > 0
    }
}

/// Marks the findings each suppression covers and lists the suppressions that covered none.
pub fn apply_suppressions(report: &mut ApiReport, suppressions: &[Suppression]) {
    let mut used = vec![false; suppressions.len()];
    for finding in &mut report.findings {
        let hit = suppressions
            .iter()
            .position(|s| s.kind == finding.kind && s.symbol == finding.symbol);
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
