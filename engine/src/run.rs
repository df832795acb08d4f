//! One run of a command: the project and its cache, and the analyses the run has made, each
//! computed once and handed to every part that asks for it.
//!
//! `roll` composes a retarget, the drafts, `verify` and `report`; each of them asks for the
//! static drift of the overlay it holds. The run keeps every drift report by its range and by
//! the records folder it was made from, so the second ask of the same overlay and range is the
//! first one's answer, not a second analysis.

use super::cache::Cache;
use super::candidate;
use super::drift::api::ApiReport;
use super::error::Result;
use super::overlay::OverlayState;
use super::project::Project;
use super::FileMap;
use git2::Oid;
use std::cell::RefCell;

/// What one command works on, and what it has computed so far.
pub struct Run<'a> {
    pub project: &'a Project,
    pub cache: &'a Cache,
    drift: RefCell<Vec<Analysed>>,
}

/// A drift report and what it was computed from.
struct Analysed {
    from: Oid,
    to: Oid,
    /// An overlay state is made from its records folder alone (with the project and the cache,
    /// which a run does not change), so the same files mean the same state.
    records: FileMap,
    report: ApiReport,
}

impl<'a> Run<'a> {
    pub fn new(project: &'a Project, cache: &'a Cache) -> Run<'a> {
        Run {
            project,
            cache,
            drift: RefCell::new(Vec::new()),
        }
    }

    /// The static drift of `state`'s backend from `from` to `to` ([`candidate::drift_api`]),
    /// analysed the first time this run asks for it.
    pub fn drift_api(&self, state: &OverlayState, from: Oid, to: Oid) -> Result<ApiReport> {
        let records = &state.records.files;
        let same = |a: &Analysed| a.from == from && a.to == to && a.records == *records;
        if let Some(done) = self.drift.borrow().iter().find(|a| same(a)) {
            return Ok(done.report.clone());
        }
        let report = candidate::drift_api(self.project, self.cache, state, from, to)?;
        self.drift.borrow_mut().push(Analysed {
            from,
            to,
            records: records.clone(),
            report: report.clone(),
        });
        Ok(report)
    }

    /// The drift analyses this run made, in order: (from, to) of each.
    pub fn analyses(&self) -> Vec<(Oid, Oid)> {
        self.drift.borrow().iter().map(|a| (a.from, a.to)).collect()
    }
}
