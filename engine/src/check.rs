//! `forkbook check`: the records as the bottom crate reads them, one view of the overlay filled
//! from the overlay state, and the check catalogue run over both.
//!
//! The two halves are apart so a broken record is a finding, not a crash: the records need no
//! cache ([`gather_record_facts`]); the base tree, the overlay, the lock's mismatches, the
//! residual, the fork hooks and the true counts come from the overlay state
//! ([`add_overlay_facts`]).

use std::collections::BTreeSet;

use forkbook_checks::facts::{MarkedFile, OverlayView, Repos, ResidualHunk, TreeFacts};
use forkbook_checks::names::Names;
use forkbook_checks::register::Register;
pub use forkbook_checks::{Facts, Finding, Severity};

use super::cache::Cache;
use super::config::{Config, Layout, CONFIG_FILE};
use super::error::Result;
use super::overlay::OverlayState;
use super::project::Project;
use super::records;
use super::{counts, register, residual};

mod run;
pub use run::{catalogue, explain, run, Catalogue, CheckRun, Listed, Skipped};

/// Every fact: the records, then the overlay state's.
pub fn gather_facts(project: &Project, cache: &Cache, state: &OverlayState) -> Result<Facts> {
    let mut facts = gather_record_facts(project)?;
    add_overlay_facts(&mut facts, project, cache, state)?;
    Ok(facts)
}

/// Runs the whole catalogue.
pub fn run_checks(facts: &Facts) -> Vec<Finding> {
    forkbook_checks::run_all(facts)
}

/// The facts that need only the records folder and the project's files.
pub fn gather_record_facts(project: &Project) -> Result<Facts> {
    let records = records::read(project)?;
    let register_name = project.record_name(records::FIXES_FILE);
    let register = records
        .register_text
        .as_deref()
        .map(|text| register::parse(&register_name, text));
    Ok(Facts {
        records,
        backend_prefix: project.config.overlay.backend_prefix.clone(),
        register,
        repos: web_repos(project),
        overlay: None,
    })
}

/// Fills the view of the overlay: trees, lock mismatches, markers, residual, hooks, true counts.
pub fn add_overlay_facts(
    facts: &mut Facts,
    project: &Project,
    cache: &Cache,
    state: &OverlayState,
) -> Result<()> {
    let files: BTreeSet<&String> = state
        .base
        .files
        .keys()
        .chain(state.overlay.keys())
        .collect();
    let tree = TreeFacts {
        files: files.into_iter().cloned().collect(),
        differing: state
            .differences()
            .into_iter()
            .map(|(path, _, _)| path)
            .collect(),
    };
    let prefix = &project.config.overlay.backend_prefix;
    let mut fork_hooks = cache.changed_paths(state.commits.base, state.commits.fork, prefix)?;
    fork_hooks.retain(|p| !state.core_files.contains(p));
    let entries = facts.register.as_ref().map_or(0, |r| r.entries.len());
    let core = residual::core_of(&state.core_files, &state.overlay);
    facts.overlay = Some(OverlayView {
        residual: residual_hunks(state, facts.register.as_ref(), &tree.files, prefix),
        tree,
        markers: marked_files(project, state),
        lock_mismatches: state.records.lock.as_ref().map_or(Vec::new(), |lock| {
            lock.disagreements(&records::lock_of(&state.overlay))
        }),
        fork_hooks,
        counts: counts::actual(&state.overlay, prefix, entries),
        core_hashes: core
            .iter()
            .map(|(path, bytes)| (path.clone(), records::sha256_hex(bytes)))
            .collect(),
    });
    Ok(())
}

/// The materialized overlay files that still hold conflict markers, each named as the user
/// opens it (the records' copy in the files layout, the overlay path in the patch layout).
pub fn marked_files(project: &Project, state: &OverlayState) -> Vec<MarkedFile> {
    state
        .overlay
        .iter()
        .filter_map(|(path, bytes)| {
            let (regions, stray) = forkbook_checks::markers::regions(bytes);
            if regions.is_empty() && stray.is_empty() {
                return None;
            }
            let file = match state.layout {
                Layout::Files => {
                    project.record_name(&format!("{}{path}", project.config.overlay.tree_prefix()))
                }
                Layout::Patch => path.clone(),
            };
            Some(MarkedFile {
                file,
                regions,
                stray,
            })
        })
        .collect()
}

/// Each marked file with its first marker line, `mlx/device.cpp:12`, for one-line messages.
pub fn marker_places(marked: &[MarkedFile]) -> Vec<String> {
    marked
        .iter()
        .map(|m| {
            let first = m
                .regions
                .iter()
                .map(|r| r.start)
                .chain(m.stray.iter().map(|s| s.line))
                .min()
                .unwrap_or(1);
            format!("{}:{first}", m.file)
        })
        .collect()
}

/// Residual hunks with their fixes: the patches that change the file, or (files layout, where
/// there are no patches) the entries that name it.
fn residual_hunks(
    state: &OverlayState,
    register: Option<&Register>,
    files: &[String],
    prefix: &str,
) -> Vec<ResidualHunk> {
    let names = Names::new(files, prefix);
    residual::compute(state)
        .hunks
        .into_iter()
        .map(|hunk| {
            let fixes = match state.layout {
                Layout::Patch => hunk.fixes.iter().map(|n| *n as u32).collect(),
                Layout::Files => naming_entries(register, &names, &hunk.file),
            };
            ResidualHunk {
                file: hunk.file,
                line: hunk.line,
                fixes,
            }
        })
        .collect()
}

fn naming_entries(register: Option<&Register>, names: &Names, path: &str) -> Vec<u32> {
    register.map_or(Vec::new(), |r| r.entries_naming(names, path))
}

/// The web addresses of the fork and upstream as `forkbook.toml` names them (before any
/// `--fork-url` mirror override), for link validation.
fn web_repos(project: &Project) -> Repos {
    let path = project.root.join(CONFIG_FILE);
    let config = if path.is_file() {
        Config::load(&path).unwrap_or_else(|_| project.config.clone())
    } else {
        Config::mlx_rocm()
    };
    Repos {
        fork: web_address(&config.fork.url),
        upstream: web_address(&config.upstream.url),
    }
}

/// `https://host/owner/repo` for an http(s), `ssh://` or `git@host:` URL; `None` for a local path.
pub fn web_address(url: &str) -> Option<String> {
    let url = url.trim().trim_end_matches('/');
    let url = url.strip_suffix(".git").unwrap_or(url);
    if let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    {
        return Some(format!("https://{rest}"));
    }
    if let Some(rest) = url.strip_prefix("ssh://") {
        let rest = rest.split_once('@').map_or(rest, |(_, r)| r);
        return Some(format!("https://{}", rest.replacen(':', "/", 1)));
    }
    let (user_host, path) = url.split_once(':')?;
    let host = user_host.split_once('@')?.1;
    (!path.starts_with('/') && !host.is_empty()).then(|| format!("https://{host}/{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_addresses_come_from_remote_urls_not_local_paths() {
        assert_eq!(
            web_address("https://github.com/NripeshN/mlx.git").as_deref(),
            Some("https://github.com/NripeshN/mlx")
        );
        assert_eq!(
            web_address("git@github.com:ml-explore/mlx.git").as_deref(),
            Some("https://github.com/ml-explore/mlx")
        );
        assert_eq!(
            web_address("ssh://git@github.com/o/r").as_deref(),
            Some("https://github.com/o/r")
        );
        assert_eq!(web_address("/tmp/world/fork.git"), None);
        assert_eq!(web_address("C:/mirrors/fork"), None);
    }
}
