//! One run of a command: the project and its cache, and the analyses the run has made, each
//! computed once and handed to every part that asks for it.
//!
//! `roll` plans a move, writes it, and asks for the drift, the check facts and the sync check
//! of the state it wrote; `verify` and `report` ask for the same of the state they are given.
//! The run keeps each answer by what it was computed from (the records folder a state is made
//! of, the commits, the range), so the second ask is the first one's answer: the move `roll`
//! plans is the one the report's drift goes through, not a second plan.

use super::base::Commits;
use super::cache::Cache;
use super::check::{self, Facts};
use super::drift::api::ApiReport;
use super::drift::setup::DriftSetup;
use super::error::Result;
use super::overlay::OverlayState;
use super::project::Project;
use super::sync::{self, Move};
use super::FileMap;
use forkbook_records::finding::Finding;
use git2::Oid;
use std::cell::RefCell;
use std::rc::Rc;

/// What one command works on, and what it has computed so far.
pub struct Run<'a> {
    pub project: &'a Project,
    pub cache: &'a Cache,
    /// Each key holds the records folder its state was made from: an overlay state is made from
    /// its records alone (with the project and the cache, which a run does not change), so the
    /// same files mean the same state.
    drift: Memo<(FileMap, Oid, Oid), ApiReport>,
    plans: Memo<(FileMap, Commits), Move>,
    facts: Memo<FileMap, Facts>,
    sync_checks: Memo<FileMap, Vec<Finding>>,
}

/// Answers by what they were computed from, in the order they were first asked for.
struct Memo<K, V>(RefCell<Vec<(K, Rc<V>)>>);

impl<K: PartialEq + Clone, V> Memo<K, V> {
    fn new() -> Self {
        Memo(RefCell::new(Vec::new()))
    }

    fn get_or(&self, key: K, compute: impl FnOnce() -> Result<V>) -> Result<Rc<V>> {
        if let Some((_, done)) = self.0.borrow().iter().find(|(k, _)| *k == key) {
            return Ok(done.clone());
        }
        // Not borrowed while computing: an analysis may ask this run for another one.
        let answer = Rc::new(compute()?);
        self.0.borrow_mut().push((key, answer.clone()));
        Ok(answer)
    }

    fn keys(&self) -> Vec<K> {
        self.0.borrow().iter().map(|(k, _)| k.clone()).collect()
    }
}

impl<'a> Run<'a> {
    pub fn new(project: &'a Project, cache: &'a Cache) -> Run<'a> {
        Run {
            project,
            cache,
            drift: Memo::new(),
            plans: Memo::new(),
            facts: Memo::new(),
            sync_checks: Memo::new(),
        }
    }

    /// The static drift of `state`'s backend from `from` to `to`, at the overlay a move of
    /// `state` to `to` makes ([`Run::plan`]); analysed the first time this run asks for it.
    pub fn drift_api(&self, state: &OverlayState, from: Oid, to: Oid) -> Result<ApiReport> {
        let key = (state.records.files.clone(), from, to);
        let report = self.drift.get_or(key, || {
            let setup = DriftSetup::new(self.project, self.cache, state, from)?;
            setup.run(self.cache, from, to, &self.overlay_at(state, to)?)
        })?;
        Ok(ApiReport::clone(&report))
    }

    /// The overlay files a move of `state` to `pin` makes ([`Run::plan`]); the overlay itself
    /// at its own pin.
    pub fn overlay_at(&self, state: &OverlayState, pin: Oid) -> Result<FileMap> {
        if pin == state.commits.pin {
            return Ok(state.overlay.clone());
        }
        let target = Commits {
            pin,
            ..state.commits
        };
        Ok(self.plan(state, target)?.overlay.clone())
    }

    /// The move of `state` to the commits `new`, before anything is written ([`sync::plan`]).
    pub fn plan(&self, state: &OverlayState, new: Commits) -> Result<Rc<Move>> {
        let key = (state.records.files.clone(), new);
        self.plans
            .get_or(key, || sync::plan(self.project, self.cache, state, new))
    }

    /// The facts the check catalogue runs over ([`check::gather_facts`]).
    pub fn facts(&self, state: &OverlayState) -> Result<Rc<Facts>> {
        self.facts.get_or(state.records.files.clone(), || {
            check::gather_facts(self.project, self.cache, state)
        })
    }

    /// What `sync --check` finds the records do not reproduce ([`sync::check`]).
    pub fn sync_check(&self, state: &OverlayState) -> Result<Rc<Vec<Finding>>> {
        self.sync_checks.get_or(state.records.files.clone(), || {
            sync::check(self.project, self.cache, state)
        })
    }

    /// The drift analyses this run made, in order: (from, to) of each.
    pub fn analyses(&self) -> Vec<(Oid, Oid)> {
        let ranges = self.drift.keys().into_iter();
        ranges.map(|(_, from, to)| (from, to)).collect()
    }

    /// The moves this run planned, in order: the commits each went to.
    pub fn plans(&self) -> Vec<Commits> {
        self.plans.keys().into_iter().map(|(_, to)| to).collect()
    }

    /// How many states this run gathered the check facts of, and how many it sync-checked.
    pub fn facts_and_sync_checks(&self) -> (usize, usize) {
        (self.facts.keys().len(), self.sync_checks.keys().len())
    }
}
