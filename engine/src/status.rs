//! `forkbook status`: one screen with the records, the counts and the lock state.

use super::base::CoreOutcome;
use super::merge::count_conflicts;
use super::overlay::OverlayState;
use super::project::Project;
use super::records::Lock;
use super::report_value::{CommandReport, Verdict};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub layout: String,
    pub fork: String,
    pub base: String,
    pub pin: String,
    pub backend_files: usize,
    pub core_files: usize,
    pub core_conflicts: Vec<String>,
    pub local_fixes: Vec<String>,
    pub differing_files: usize,
    /// `matches`, `differs (N files)` or `missing`.
    pub lock: String,
    /// Where conflict markers are left in the overlay, `file:line` for each file.
    pub markers: Vec<String>,
}

/// `forkbook status`: the entry point (nothing to fetch, nothing written).
pub fn status(project: &Project, state: &OverlayState) -> Status {
    let prefix = &project.config.overlay.backend_prefix;
    let lock = match &state.records.lock {
        None => "missing".to_string(),
        Some(lock) => match lock.mismatches(&Lock::of(&state.overlay)).len() {
            0 => "matches".to_string(),
            n => format!(
                "differs ({})",
                super::report_value::plural(n, "file", "files")
            ),
        },
    };
    Status {
        layout: state.layout.name().into(),
        fork: state.commits.fork.to_string(),
        base: state.commits.base.to_string(),
        pin: state.commits.pin.to_string(),
        backend_files: state.backend_count(prefix),
        core_files: state.overlay.len() - state.backend_count(prefix),
        core_conflicts: state
            .base
            .core
            .iter()
            .filter(|(_, o)| matches!(o, CoreOutcome::Conflict(_)))
            .map(|(path, _)| {
                let markers = state.overlay.get(path).map_or(0, |b| count_conflicts(b));
                let how = if markers > 0 {
                    "unresolved".to_string()
                } else {
                    resolved_by(state, path)
                };
                format!("{path} ({how})")
            })
            .collect(),
        local_fixes: state.steps.iter().map(|s| s.patch.name.clone()).collect(),
        differing_files: state.differences().len(),
        lock,
        markers: super::check::marker_places(&super::check::marked_files(project, state)),
    }
}

/// "resolved by fix N, M": the fixes whose patches change `path`.
fn resolved_by(state: &OverlayState, path: &str) -> String {
    let fixes: Vec<String> = state
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.changed_paths().contains(&path))
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    if fixes.is_empty() {
        "resolved locally".to_string()
    } else {
        format!("resolved by fix {}", fixes.join(", "))
    }
}

impl CommandReport for Status {
    fn text(&self) -> String {
        let sha = |s: &str| s[..8.min(s.len())].to_string();
        let mut out = format!(
            "layout   {}\nfork     {}\nbase     {}\npin      {}\nfiles    {} backend, {} core\nlock     {}\ndiffers  {} files from the base tree\n",
            self.layout,
            sha(&self.fork),
            sha(&self.base),
            sha(&self.pin),
            self.backend_files,
            self.core_files,
            self.lock,
            self.differing_files
        );
        if !self.core_conflicts.is_empty() {
            out.push_str(&format!(
                "pin/fork conflicts in core files: {}\n",
                self.core_conflicts.join(", ")
            ));
        }
        for fix in &self.local_fixes {
            out.push_str(&format!("fix      {fix}\n"));
        }
        if !self.markers.is_empty() {
            out.push_str(&format!(
                "CONFLICT markers left in {} files: {}\nnote: resolve them and record each resolution as a local fix; `forkbook check` lists every region\n",
                self.markers.len(),
                self.markers.join(", ")
            ));
        }
        out
    }

    /// Markers left in the overlay are a problem whatever else is right.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(!self.markers.is_empty())
    }
}
