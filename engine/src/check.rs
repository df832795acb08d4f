//! `forkbook check`: gathers the [`Facts`] the check catalogue reads, and runs it.
//!
//! Gathering is split in two so a broken record is a finding, not a crash: the records alone
//! (UPSTREAM read leniently, the register, the README, the build's pin) need no cache; the
//! base tree, the overlay, the lock, the residual and the fork hooks come from the overlay state.

use std::collections::BTreeSet;

use forkbook_checks::facts::{
    BuildPin, CountFact, KeyValueLine, LockFacts, LockMismatch, MarkedFile, MismatchKind,
    ProseSection, ReadmeFacts, RecordedValue, Repos, ResidualHunk, ResidualNote,
    ResidualRecordFacts, SeriesPatch, TreeFacts, UnreadCount, UpstreamRecord,
};
use forkbook_checks::names::Names;
use forkbook_checks::register::{Problem, Register};
pub use forkbook_checks::{Facts, Finding, Severity};

use super::cache::Cache;
use super::config::{Config, Layout, CONFIG_FILE};
use super::error::{Context, Result};
use super::overlay::{OverlayState, PATCHES_DIR};
use super::project::Project;
use super::records::{self, Counts, Lock, UpstreamLineKind};
use super::residual_record::{self, Flavor, ResidualRecord};
use super::{counts, register, residual};

mod run;
pub use run::{catalogue, explain, render_findings, run, Catalogue, CheckRun, Listed, Skipped};

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
    let dir = project.records_dir();
    // Each record is read by name below: a FIFO among them would block the read forever.
    crate::fsutil::refuse_special_files(&dir)?;
    let read = |name: &str| -> Result<Option<String>> {
        let path = dir.join(name);
        if !path.is_file() {
            return Ok(None);
        }
        let bytes = std::fs::read(&path)
            .with_context(|| format!("failed to read `{}`", project.record_name(name)))?;
        Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
    };
    let register_name = project.record_name(records::FIXES_FILE);
    let register_text = read(records::FIXES_FILE)?;
    Ok(Facts {
        dropped: register_text
            .as_deref()
            .map_or(Vec::new(), |t| dropped_sections(&register_name, t)),
        records_dir: project.config.overlay.dir.trim_end_matches('/').to_string(),
        backend_prefix: project.config.overlay.backend_prefix.clone(),
        upstream: read(records::UPSTREAM_FILE)?
            .map(|t| upstream_record(&project.record_name(records::UPSTREAM_FILE), &t)),
        build_pin: build_pin(project)?,
        register: register_text.map(|t| register::parse(&register_name, &t)),
        readme: read(records::README_FILE)?.map(|t| readme_facts(project, t)),
        repos: web_repos(project),
        residual_record: residual_record_facts(project, &read)?,
        patch_series: record_series(project),
        lock: Some(record_lock(project, read(records::LOCK_FILE)?.as_deref())),
        record_markers: record_markers(project, &read)?,
        ..Facts::default()
    })
}

/// The records that hold conflict markers: each record forkbook reads, and every patch of the
/// series (message and diff; a diff's own lines start with ` `, `+` or `-`, never a marker).
/// In Markdown a lone `=======` is a heading's underline, so only its region markers count.
fn record_markers(
    project: &Project,
    read: &dyn Fn(&str) -> Result<Option<String>>,
) -> Result<Vec<MarkedFile>> {
    let mut names: Vec<String> = [
        records::FIXES_FILE,
        records::README_FILE,
        records::UPSTREAM_FILE,
        records::LOCK_FILE,
        records::RESIDUAL_FILE,
        records::CORE_RESIDUAL_FILE,
    ]
    .map(String::from)
    .to_vec();
    if project.config.overlay.layout == Layout::Patch {
        let dir = project.records_dir().join(PATCHES_DIR);
        let mut patches: Vec<String> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".patch"))
                    .map(|name| format!("{PATCHES_DIR}/{name}"))
                    .collect()
            })
            .unwrap_or_default();
        patches.sort();
        names.extend(patches);
    }
    let mut out = Vec::new();
    for name in names {
        let Some(text) = read(&name)? else {
            continue;
        };
        let (regions, mut stray) = forkbook_checks::markers::regions(text.as_bytes());
        if name.ends_with(".md") {
            stray.retain(|m| m.kind != forkbook_checks::markers::MarkerKind::Separator);
        }
        if !regions.is_empty() || !stray.is_empty() {
            out.push(MarkedFile {
                file: project.record_name(&name),
                regions,
                stray,
            });
        }
    }
    Ok(out)
}

/// The sections of the register that say what is left out of the vendored set ("Dropped from
/// the vendored set", "Not carried"): what `fork-hooks-explained` accepts as an explanation in
/// words. A section runs to the next heading of its level or above.
fn dropped_sections(file: &str, text: &str) -> Vec<ProseSection> {
    const SAY_LEFT_OUT: &[&str] = &[
        "dropped",
        "not carried",
        "left out",
        "not vendored",
        "excluded",
        "omitted",
        "not copied",
    ];
    let mut sections: Vec<(usize, ProseSection)> = Vec::new();
    let mut open: Option<(usize, ProseSection)> = None;
    let mut fenced = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let level = line.bytes().take_while(|b| *b == b'#').count();
        let heading = !fenced && (1..=6).contains(&level) && line[level..].starts_with(' ');
        if heading {
            if open.as_ref().is_some_and(|(l, _)| level <= *l) {
                sections.extend(open.take());
            }
            let title = line[level..].trim().to_string();
            let lower = title.to_ascii_lowercase();
            if open.is_none() && SAY_LEFT_OUT.iter().any(|w| lower.contains(w)) {
                open = Some((
                    level,
                    ProseSection {
                        file: file.to_string(),
                        line: index + 1,
                        title,
                        text: String::new(),
                    },
                ));
                continue;
            }
        }
        if let Some((_, section)) = open.as_mut() {
            section.text.push_str(line);
            section.text.push('\n');
        }
    }
    sections.extend(open);
    sections.into_iter().map(|(_, s)| s).collect()
}

/// The patch layout's series as the records folder lists it (`patches/NNNN-title.patch`).
fn record_series(project: &Project) -> Option<Vec<SeriesPatch>> {
    if project.config.overlay.layout != Layout::Patch {
        return None;
    }
    let dir = project.records_dir().join(PATCHES_DIR);
    // No folder at all is a layout problem, which loading the overlay names; not an empty series.
    if !dir.is_dir() {
        return None;
    }
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".patch"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let series = names
        .into_iter()
        .map(|name| SeriesPatch {
            number: name
                .split('-')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
            empty: std::fs::read_to_string(dir.join(&name))
                .is_ok_and(|text| crate::patch::is_empty(&text)),
            file: project.record_name(&format!("{PATCHES_DIR}/{name}")),
        })
        .collect();
    Some(series)
}

/// The lock as the records hold it: present or not, and well-formed or not. What it locks is
/// compared with the overlay once the overlay is built.
fn record_lock(project: &Project, text: Option<&str>) -> LockFacts {
    let file = project.record_name(records::LOCK_FILE);
    let problems = match text.map(|t| Lock::parse(t, &file)) {
        Some(Err(e)) => {
            let message = e.message();
            // The parser's messages start with `file:line: `; the finding carries the line.
            let rest = message
                .strip_prefix(&format!("{file}:"))
                .unwrap_or(&message);
            let (line, what) = rest
                .split_once(": ")
                .and_then(|(n, what)| Some((n.parse().ok()?, what.to_string())))
                .unwrap_or((1, message.clone()));
            vec![Problem {
                line,
                message: what,
            }]
        }
        _ => Vec::new(),
    };
    LockFacts {
        file,
        present: text.is_some(),
        mismatches: Vec::new(),
        problems,
    }
}

/// Adds what the overlay state knows: trees, series, lock, residual, hooks, true counts.
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
    facts.tree = Some(TreeFacts {
        files: files.into_iter().cloned().collect(),
        differing: state
            .differences()
            .into_iter()
            .map(|(path, _, _)| path)
            .collect(),
    });
    if state.layout == Layout::Patch {
        facts.patch_series = Some(series(project, state));
    }
    facts.lock = Some(lock_facts(project, state));
    facts.markers = Some(marked_files(project, state));
    facts.residual = residual_hunks(
        state,
        facts.register.as_ref(),
        facts.residual_record.as_ref(),
        facts.tree.as_ref(),
        &facts.backend_prefix,
    );
    let prefix = &project.config.overlay.backend_prefix;
    let mut hooks = cache.changed_paths(state.commits.base, state.commits.fork, prefix)?;
    hooks.retain(|p| !state.core_files.contains(p));
    facts.fork_hooks = hooks;
    if let Some(record) = facts.residual_record.as_mut() {
        let core = residual::core_of(&state.core_files, &state.overlay);
        record.core_hashes = Some(
            core.iter()
                .map(|(path, bytes)| (path.clone(), records::sha256_hex(bytes)))
                .collect(),
        );
        let mut files: Vec<String> = facts.residual.iter().map(|h| h.file.clone()).collect();
        files.dedup();
        record.residual_files = Some(files);
    }
    let entries = facts.register.as_ref().map_or(0, |r| r.entries.len());
    if let Some(counts) = facts.readme.as_mut().and_then(|r| r.counts.as_mut()) {
        fill_actual_counts(counts, state, prefix, entries);
    }
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

/// `UPSTREAM` read leniently: every `key: value` line, and a problem for each other line.
fn upstream_record(file: &str, text: &str) -> UpstreamRecord {
    let mut record = UpstreamRecord {
        file: file.to_string(),
        ..UpstreamRecord::default()
    };
    for (index, line) in text.lines().enumerate() {
        match UpstreamLineKind::of(line) {
            UpstreamLineKind::Verbatim => {}
            UpstreamLineKind::Pair { key, value } => record.lines.push(KeyValueLine {
                key: key.to_string(),
                value: value.to_string(),
                line: index + 1,
            }),
            UpstreamLineKind::Bad(message) => record.problems.push(Problem {
                line: index + 1,
                message,
            }),
        }
    }
    record
}

/// The build's pin: the first 40-hex word of the configured `pin_file`.
fn build_pin(project: &Project) -> Result<Option<BuildPin>> {
    let Some(name) = &project.config.overlay.pin_file else {
        return Ok(None);
    };
    super::paths::check_relative(name).context("`overlay.pin_file`")?;
    let bytes = super::fsutil::read_regular_file(&project.root.join(name), "`overlay.pin_file`")?;
    let text = String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned();
    let found = text.lines().enumerate().find_map(|(index, line)| {
        line.split(|c: char| !c.is_ascii_hexdigit())
            .find(|word| word.len() == 40)
            .map(|sha| (index + 1, sha.to_ascii_lowercase()))
    });
    let (line, value) = found.unwrap_or((0, String::new()));
    Ok(Some(BuildPin {
        file: name.clone(),
        line,
        value,
    }))
}

/// The README's counts as stated, in its counts block and in its prose; the actual figures are
/// filled in from the overlay. Until then each is taken as stated, so records read without their
/// objects (offline, nothing fetched) give no false mismatch: the steps that need the objects say
/// so themselves.
fn readme_facts(project: &Project, text: String) -> ReadmeFacts {
    let prefix = &project.config.overlay.backend_prefix;
    let block = Counts::stated(&text);
    let prose = counts::prose(&text, prefix);
    let mut stated: Vec<CountFact> = block
        .iter()
        .flatten()
        .filter_map(|(line, name, value)| {
            let value = (*value)? as u64;
            Some(CountFact {
                name: name.clone(),
                stated: value,
                actual: value,
                line: *line,
            })
        })
        .collect();
    let mut unread = Vec::new();
    for count in prose {
        match count.name {
            Some(name) => stated.push(CountFact {
                name,
                stated: count.value as u64,
                actual: count.value as u64,
                line: count.line,
            }),
            None => unread.push(UnreadCount {
                line: count.line,
                sentence: count.sentence,
            }),
        }
    }
    let has_counts = block.is_some() || !stated.is_empty();
    ReadmeFacts {
        file: project.record_name(records::README_FILE),
        counts: has_counts.then_some(stated),
        unread,
        text,
    }
}

/// The residual record the folder keeps (`CORE_RESIDUAL.diff`, else `residual.diff`), as read.
fn residual_record_facts(
    project: &Project,
    read: &dyn Fn(&str) -> Result<Option<String>>,
) -> Result<Option<ResidualRecordFacts>> {
    let found = [Flavor::Core, Flavor::Own]
        .into_iter()
        .map(|flavor| Ok((flavor, read(flavor.file())?)))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .find_map(|(flavor, text)| Some((flavor, text?)));
    let Some((flavor, text)) = found else {
        return Ok(None);
    };
    let record = ResidualRecord::parse(&text, flavor);
    let value = |r: &residual_record::Recorded| RecordedValue {
        key: r.key.clone(),
        value: r.value.clone(),
        line: r.line,
    };
    Ok(Some(ResidualRecordFacts {
        file: project.record_name(flavor.file()),
        core_header: flavor == Flavor::Core,
        commits: record.commits.iter().map(value).collect(),
        hashes: record.hashes.iter().map(value).collect(),
        notes: record
            .notes
            .iter()
            .map(|n| ResidualNote {
                path: n.path.clone(),
                item: n.item,
                reason: n.reason.clone(),
                line: n.line,
            })
            .collect(),
        reviews: record.reviews.iter().map(value).collect(),
        problems: record
            .problems
            .iter()
            .map(|p| Problem {
                line: p.line,
                message: p.message.clone(),
            })
            .collect(),
        core_hashes: None,
        residual_files: None,
    }))
}

/// The true figure for each stated count, the way `sync` writes them; unknown names are kept true.
fn fill_actual_counts(
    counts: &mut [CountFact],
    state: &OverlayState,
    prefix: &str,
    entries: usize,
) {
    let actual = counts::actual(&state.overlay, prefix, entries);
    for count in counts {
        count.actual = counts::figure(&actual, &count.name).map_or(count.stated, |n| n as u64);
    }
}

fn series(project: &Project, state: &OverlayState) -> Vec<SeriesPatch> {
    state
        .records
        .patches
        .iter()
        .map(|p| SeriesPatch {
            number: p.number().unwrap_or(0) as u32,
            file: project.record_name(&format!("{PATCHES_DIR}/{}", p.name)),
            empty: crate::patch::is_empty(&p.text),
        })
        .collect()
}

/// The materialized overlay against `overlay.lock`, each mismatch with its line in the lock.
fn lock_facts(project: &Project, state: &OverlayState) -> LockFacts {
    let file = project.record_name(records::LOCK_FILE);
    let Some(lock) = &state.records.lock else {
        return LockFacts {
            file,
            present: false,
            mismatches: Vec::new(),
            problems: Vec::new(),
        };
    };
    let text = super::text_of(&state.records.files, records::LOCK_FILE);
    let line_of = |path: &str| {
        text.lines()
            .position(|l| l.split_once("  ").is_some_and(|(_, p)| p == path))
            .map(|i| i + 1)
    };
    let mismatches = lock
        .mismatches(&Lock::of(&state.overlay))
        .into_iter()
        .map(|(path, locked, actual)| {
            let kind = match (locked, actual) {
                (Some(_), None) => MismatchKind::Missing,
                (None, _) => MismatchKind::NotLocked,
                _ => MismatchKind::Changed,
            };
            LockMismatch {
                line: line_of(&path),
                path,
                kind,
            }
        })
        .collect();
    LockFacts {
        file,
        present: true,
        mismatches,
        problems: Vec::new(),
    }
}

/// Residual hunks with their fixes: the patches that change the file, or (files layout, where
/// there are no patches) what the residual record's notes tie to the file, or, without a
/// `CORE_RESIDUAL.diff`, the entries that name it. Where the project keeps a record, its notes are what it
/// says explains a hunk: an entry that mentions a core file in passing explains nothing.
fn residual_hunks(
    state: &OverlayState,
    register: Option<&Register>,
    record: Option<&ResidualRecordFacts>,
    tree: Option<&TreeFacts>,
    prefix: &str,
) -> Vec<ResidualHunk> {
    let files = tree.map_or(&[][..], |t| &t.files[..]);
    let names = Names::new(files, prefix);
    residual::compute(state)
        .hunks
        .into_iter()
        .map(|hunk| {
            let fixes = match state.layout {
                Layout::Patch => hunk.fixes.iter().map(|n| *n as u32).collect(),
                Layout::Files => match record.filter(|r| r.core_header) {
                    Some(record) => noted_items(record, &hunk.file),
                    None => naming_entries(register, &names, &hunk.file),
                },
            };
            ResidualHunk {
                file: hunk.file,
                line: hunk.line,
                fixes,
            }
        })
        .collect()
}

/// The register items the record's notes for `path` name.
fn noted_items(record: &ResidualRecordFacts, path: &str) -> Vec<u32> {
    let mut items: Vec<u32> = record
        .notes
        .iter()
        .filter(|n| n.path == path)
        .filter_map(|n| n.item)
        .collect();
    items.dedup();
    items
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

    #[test]
    fn upstream_is_read_leniently_with_lines() {
        let record = upstream_record("UPSTREAM", "source: x\n# note\nnot a pair\ncommit: abc\n");
        assert_eq!(
            record
                .lines
                .iter()
                .map(|l| (l.key.as_str(), l.line))
                .collect::<Vec<_>>(),
            [("source", 1), ("commit", 4)]
        );
        assert_eq!(record.problems[0].line, 3);
    }
}
