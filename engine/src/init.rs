//! `forkbook init`: a new overlay with no local fixes, B(fork, base, pin) as it stands.

use super::base::Commits;
use super::cache::{Cache, Remote};
use super::config::Layout;
use super::doc::{text, words, Doc};
use super::error::{Error, Result};
use super::fsutil::{write_tree_synced, StagedDir};
use super::overlay::{OverlayState, Records};
use super::project::Project;
use super::records::{self, keys, Upstream};
use super::report_value::{CommandReport, Verdict};
use super::sync::{self, Move};
use super::FileMap;

/// What a new overlay starts from.
#[derive(Debug, Clone, Default)]
pub struct InitRequest {
    pub fork: String,
    /// The pin; the fork's merge base with upstream when left out.
    pub pin: Option<String>,
    /// Core files (overrides the configuration's list).
    pub core_files: Vec<String>,
}

/// What `forkbook init` made: the move to the new records. Its JSON is the move.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(transparent)]
pub struct Initialized {
    pub planned: Move,
    /// The records folder's name, for people.
    #[serde(skip)]
    pub records: String,
}

/// `forkbook init`: [`init`], reported.
pub fn run(project: &Project, cache: &Cache, request: &InitRequest) -> Result<Initialized> {
    Ok(Initialized {
        planned: init(project, cache, request)?,
        records: project.record_name(""),
    })
}

impl CommandReport for Initialized {
    fn text(&self) -> String {
        let mut doc = Doc::default();
        let at = format!(" at {}", self.planned.new.describe());
        doc.line(vec![words("initialized "), text(&self.records), text(at)]);
        self.planned.core_doc(&mut doc, &Default::default());
        doc.text()
    }

    /// A core file the fork's change and the pin conflict on is left marked: a problem.
    fn verdict(&self) -> Verdict {
        Verdict::problems_if(self.planned.conflicts() > 0)
    }
}

/// Builds the records of a new overlay and writes them; refuses to overwrite existing records.
pub fn init(project: &Project, cache: &Cache, request: &InitRequest) -> Result<Move> {
    let dir = project.records_dir();
    refuse_existing(project)?;
    let fork = cache.commit(&request.fork, Remote::Fork)?;
    let pin = match &request.pin {
        Some(rev) => super::pin::upstream_commit(cache, rev)?,
        None => {
            let tip = match cache.branch_tip(Remote::Upstream) {
                Some(tip) => tip,
                None => cache.fetch_one(Remote::Upstream, &project.config.upstream.branch)?,
            };
            cache.merge_base(fork, tip)?
        }
    };
    let base = cache.merge_base(fork, pin)?;
    let commits = Commits { fork, base, pin };
    let core_files = if request.core_files.is_empty() {
        project.config.overlay.core_files.clone()
    } else {
        request.core_files.clone()
    };
    let state = empty_state(project, cache, commits, core_files)?;
    let planned = sync::plan(project, cache, &state, commits)?;
    let _lock = project.lock_records()?;
    // Again under the lock: another init may have written the records since the first look.
    refuse_existing(project)?;
    super::overlay::refuse_linked_records(&dir)?;
    let staged = StagedDir::new(&dir)?;
    write_tree_synced(staged.path(), &planned.records)?;
    staged.commit()?;
    Ok(planned)
}

/// Refuses to write over records that exist.
fn refuse_existing(project: &Project) -> Result<()> {
    if !project.records_dir().join(records::UPSTREAM_FILE).exists() {
        return Ok(());
    }
    Err(Error::new(format!(
        "`{}` already exists",
        project.record_name(records::UPSTREAM_FILE)
    ))
    .with_note("use `forkbook sync` or `forkbook retarget` to move an existing overlay"))
}

/// The state of an overlay that has only its first records: B with no fixes.
fn empty_state(
    project: &Project,
    cache: &Cache,
    commits: Commits,
    core_files: Vec<String>,
) -> Result<OverlayState> {
    let base = super::base::build(
        cache,
        commits,
        &core_files,
        &project.config.overlay.backend_prefix,
    )?;
    let upstream = first_upstream(project, commits);
    let files: FileMap = [
        (records::UPSTREAM_FILE, upstream.render()),
        (records::FIXES_FILE, FIXES_TEMPLATE.to_string()),
        (records::README_FILE, readme(project)),
    ]
    .into_iter()
    .map(|(name, text)| (name.to_string(), text.into_bytes().into()))
    .collect();
    let layout = project.config.overlay.layout;
    let tree = if layout == Layout::Files {
        base.files.clone()
    } else {
        FileMap::new()
    };
    let records = Records {
        upstream,
        patches: Vec::new(),
        tree,
        tree_prefix: project.config.overlay.tree_prefix(),
        dir: project.records_name().to_string(),
        model: records::model(project, &files)?,
        files,
    };
    Ok(OverlayState {
        layout,
        commits,
        records,
        core_files,
        overlay: base.files.clone(),
        digests: crate::digests::FileDigests::of(&base.files),
        base,
        steps: Vec::new(),
    })
}

/// The first `UPSTREAM`: the fork, its branch and the three commits.
fn first_upstream(project: &Project, commits: Commits) -> Upstream {
    let mut upstream = Upstream::default();
    upstream.set(keys::SOURCE, &project.canonical_urls.0);
    upstream.set(keys::BRANCH, &project.config.fork.branch);
    upstream.set(keys::COMMIT, &commits.fork.to_string());
    upstream.set(keys::BASE, &commits.base.to_string());
    upstream.set(keys::PIN, &commits.pin.to_string());
    upstream.set(keys::LICENSE, "MIT (upstream's LICENSE)");
    upstream.set(keys::LOCAL_FIXES, records::FIXES_FILE);
    upstream
}

const FIXES_TEMPLATE: &str = "# Local fixes\n\nEvery difference between the overlay and the base tree (the pin plus the fork's change) is one numbered entry here, with its upstream state.\n";

fn readme(project: &Project) -> String {
    format!(
        "# {} overlay\n\nThe backend `{}` of {} (branch `{}`) laid over a pinned {} commit; see `UPSTREAM` for the commits and `LOCAL_FIXES.md` for every local change. Kept by forkbook.\n\n",
        project.config.overlay.dir, project.config.overlay.backend_prefix, project.canonical_urls.0, project.config.fork.branch, project.canonical_urls.1
    )
}
