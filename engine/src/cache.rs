//! The object cache: one bare git repository holding the fork's and upstream's objects.
//!
//! Every read of a recorded commit goes through here, in process. The cache has two remotes,
//! `fork` and `upstream`, whose URLs come from the configuration (a URL or a local mirror path);
//! `forkbook fetch` fills it, and `--offline` makes a missing object an error that names the
//! command that fetches it.

use super::config::RemoteConfig;
use super::digests::KnownBlobs;
use super::error::{Context, Error, ErrorKind, Result};
use super::fsutil::RunLock;
use super::paths::{check_relative, link_stays_inside};
use super::project::Project;
use super::trust;
use super::FileMap;
use forkbook_records::cache_entry::{Secret, Store};
use git2::{ObjectType, Oid, Repository};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which upstream a revision belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remote {
    // The discriminants index `Cache::remotes`, which `Remote::ALL` builds in this order.
    Fork = 0,
    Upstream = 1,
}

impl Remote {
    /// Every remote, in discriminant order.
    pub const ALL: [Remote; 2] = [Remote::Fork, Remote::Upstream];

    pub fn name(self) -> &'static str {
        match self {
            Remote::Fork => "fork",
            Remote::Upstream => "upstream",
        }
    }
}

pub struct Cache {
    repo: Repository,
    dir: PathBuf,
    /// The cache's path as messages name it: `dir`, or the missing `--cache` path when `dir`
    /// is a scratch repository (see [`Cache::open`]).
    named: PathBuf,
    /// The scratch folder a read-only run uses instead of making a cache where there is none.
    _scratch: Option<tempfile::TempDir>,
    /// Each remote's URL and branch, and where the URL came from (for notes), by [`Remote`].
    remotes: [(RemoteConfig, String); 2],
    offline: bool,
    /// Shared while the run only reads, exclusive once it writes ([`Cache::lock_for_writing`]),
    /// `None` once released ([`Cache::release_lock`]).
    lock: std::cell::RefCell<Option<RunLock>>,
    /// The project folder and its records folder, for [`results_secret`].
    project_root: PathBuf,
    records_dir: PathBuf,
    /// [`results_secret`], found once.
    secret: std::cell::OnceCell<Option<Secret>>,
}

impl Cache {
    /// Opens (creating if needed) the project's object cache and points its remotes at the
    /// configured URLs. Holds the cache's run lock until dropped: shared, so read-only commands
    /// of any number of projects sharing the cache run together; anything that writes objects
    /// or refs first makes it exclusive ([`Cache::lock_for_writing`]).
    ///
    /// Where there is no cache yet and neither URL is a mirror on this machine, nothing could be
    /// read from it: the run gets an empty scratch repository in a temporary folder instead, so
    /// a read-only command says which objects are missing without leaving an empty cache at
    /// the `--cache` path. [`Cache::create`] makes the cache (`fetch`, `init`, `propose`).
    pub fn open(project: &Project) -> Result<Cache> {
        let dir = project.cache_dir();
        let config = &project.config;
        let mirror = local_mirror(&config.fork.url).is_some()
            || local_mirror(&config.upstream.url).is_some();
        if dir.exists() || mirror {
            return Cache::create(project);
        }
        let scratch = tempfile::tempdir()
            .context("failed to make a scratch folder for the missing object cache")?;
        let mut cache = Cache::open_at(project, scratch.path().join("objects.git"))?;
        cache.named = dir;
        cache._scratch = Some(scratch);
        Ok(cache)
    }

    /// Opens the project's object cache, creating it if needed, for the commands that fill it.
    pub fn create(project: &Project) -> Result<Cache> {
        Cache::open_at(project, project.cache_dir())
    }

    fn open_at(project: &Project, dir: PathBuf) -> Result<Cache> {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("failed to create the object cache `{}`", dir.display()))?;
        let mut lock = RunLock::acquire_shared(&dir, "object cache")?;
        // Like git itself, trust an object store of this machine's on reads (git verifies hashes
        // on fetch and in fsck, not on every read; libgit2's per-read SHA-1 check was a third of
        // `sync --check`), but not one a pull request could have written. The setting is the
        // process's, not the cache's: once one cache of this process reads the checkout's
        // objects, every read checks them (another thread's cache must not turn it off).
        static CHECKOUT_OBJECTS: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
        let from_checkout = objects_from_checkout(project, &dir);
        let mut seen = CHECKOUT_OBJECTS.lock().unwrap_or_else(|e| e.into_inner());
        *seen |= from_checkout;
        git2::opts::strict_hash_verification(*seen);
        drop(seen);
        let repo = match Repository::open_bare(&dir) {
            Ok(repo) => repo,
            Err(_) => {
                lock.make_exclusive()?;
                // Another run may have made it while this one waited for the lock.
                Repository::open_bare(&dir)
                    .or_else(|_| Repository::init_bare(&dir))
                    .with_context(|| {
                        format!("failed to create the object cache `{}`", dir.display())
                    })?
            }
        };
        let config = &project.config;
        let cache = Cache {
            repo,
            named: dir.clone(),
            _scratch: None,
            dir,
            remotes: Remote::ALL.map(|remote| {
                let config = match remote {
                    Remote::Fork => &config.fork,
                    Remote::Upstream => &config.upstream,
                };
                (config.clone(), url_origin(project, remote))
            }),
            offline: project.overrides.offline,
            lock: std::cell::RefCell::new(Some(lock)),
            project_root: project.root.clone(),
            records_dir: project.records_dir(),
            secret: std::cell::OnceCell::new(),
        };
        for remote in Remote::ALL {
            cache.point_remote(remote)?;
        }
        Ok(cache)
    }

    /// The cache's repository. Reading it needs nothing more; call [`Cache::lock_for_writing`]
    /// before writing an object or a ref through it.
    pub fn repo(&self) -> &Repository {
        &self.repo
    }

    /// Makes this run's hold on the cache exclusive (taking the lock again if it was released),
    /// before anything writes objects, refs or the configuration: refused while another run
    /// reads or writes it, unless `FORKBOOK_LOCK_WAIT=1` queues it.
    pub fn lock_for_writing(&self) -> Result<()> {
        let mut lock = self.lock.borrow_mut();
        match lock.as_mut() {
            Some(held) => held.make_exclusive(),
            None => {
                *lock = Some(RunLock::acquire(&self.dir, "object cache")?);
                Ok(())
            }
        }
    }

    /// Lets go of the cache's lock while this run goes on with something long that needs no
    /// more of it (`drift build`'s build, after the export): other runs, writers included, may
    /// use the cache meanwhile. Objects are never removed, so what was read stays valid; a
    /// later write takes the lock again.
    pub fn release_lock(&self) {
        self.lock.borrow_mut().take();
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The drift cache, beside the object cache: finished `drift api` analyses by the hash of
    /// their inputs (see `drift::api::store`). Outside the object cache, so read-only commands
    /// still write nothing into it.
    pub fn drift_store(&self) -> Store {
        self.results_store("forkbook-drift-api", "drift api")
    }

    /// The drift parse cache, beside the object cache: each file's parse by its blob id and the
    /// macros it spells (see `drift::api::parses`), so an analysis at a new pin parses only the
    /// files that changed.
    pub fn drift_parse_store(&self) -> Store {
        self.results_store("forkbook-drift-parse", "drift parse")
    }

    /// The merge cache, beside the object cache: the core files' 3-way merges of a base tree by
    /// the hash of their inputs (see `base::merge_store`). Outside the object cache, like the
    /// drift cache.
    pub fn merge_store(&self) -> Store {
        self.results_store("forkbook-merges", "core merges")
    }

    /// The blob digest cache, beside the object cache: the SHA-256 of each blob a base tree
    /// takes whole, one entry per base tree (see `digests`), so telling a held copy from the
    /// blob needs neither the blob nor git's hash of the copy.
    pub fn blob_digest_store(&self) -> Store {
        self.results_store("forkbook-blob-digests", "blob digests")
    }

    /// The drift build cache, beside the object cache: each tree's build outcome (logs and
    /// symbols, failures included) by every input it read (see `drift::build::results`).
    pub fn drift_build_store(&self) -> Store {
        self.results_store("forkbook-drift-build-results", "drift build")
    }

    /// The first-parent line cache, beside the object cache: the commits between two commits
    /// of upstream's first-parent line, each with its tree and its parent's (see
    /// `trace::kept_line`), so tracing conflicts again parses no commit of the line.
    pub fn first_parent_store(&self) -> Store {
        self.results_store("forkbook-first-parents", "first-parent line")
    }

    /// The drift build's failed compiles, beside the object cache: each translation unit's
    /// failure by its preprocessed text, arguments and compiler (see
    /// `drift::build::failures`).
    pub fn compile_failure_store(&self) -> Store {
        self.results_store(
            "forkbook-drift-build-failures",
            "drift build compile failure",
        )
    }

    /// A results cache beside the object cache, sealed with [`results_secret`] (none where it
    /// is not to be trusted: then it keeps and believes nothing).
    fn results_store(&self, folder: &str, kind: &'static str) -> Store {
        let secret = self
            .secret
            .get_or_init(|| secret_for(&self.project_root, &self.records_dir, &self.dir))
            .clone();
        Store::new(self.dir.with_file_name(folder), kind, secret)
    }

    /// The folder `remote`'s URL names when it is a mirror on this machine (read in place).
    pub fn mirror(&self, remote: Remote) -> Option<PathBuf> {
        local_mirror(&self.remote_config(remote).url)
    }

    /// `remote`'s configured branch and URL.
    pub fn branch_and_url(&self, remote: Remote) -> (&str, &str) {
        let config = self.remote_config(remote);
        (&config.branch, &config.url)
    }

    /// Whether this run may not touch the network (`--offline`).
    pub fn is_offline(&self) -> bool {
        self.offline
    }

    fn remote_config(&self, remote: Remote) -> &RemoteConfig {
        &self.remotes[remote as usize].0
    }

    fn url_origin(&self, remote: Remote) -> &str {
        &self.remotes[remote as usize].1
    }

    /// `` `rev` is not in the fork `url` ``, a missing object, with a note saying where the URL
    /// came from so the user knows what to change.
    fn not_in_remote(&self, rev: &str, remote: Remote, url: &str) -> Error {
        Error::new(format!(
            "`{rev}` is not in the {} `{url}` (looked for on its branches, by its id and under \
             its pull request refs)",
            remote.name()
        ))
        .with_note(format!(
            "check the revision, or the URL: it is {}",
            self.url_origin(remote)
        ))
        .with_kind(ErrorKind::MissingObject)
    }

    fn point_remote(&self, remote: Remote) -> Result<()> {
        let url = absolute_url(&self.remote_config(remote).url);
        match self.repo.find_remote(remote.name()) {
            Ok(existing) if existing.url().ok() == Some(url.as_str()) => Ok(()),
            Ok(_) => {
                self.lock_for_writing()?;
                Ok(self.repo.remote_set_url(remote.name(), &url)?)
            }
            Err(_) => {
                self.lock_for_writing()?;
                self.repo.remote_with_fetch(
                    remote.name(),
                    &url,
                    &format!("+refs/heads/*:refs/remotes/{}/*", remote.name()),
                )?;
                Ok(())
            }
        }
    }

    /// Fetches the configured branch of `remote`, plus `revs` where it can name them; when a
    /// revision is still missing, fetches every branch and tag of that remote.
    pub fn fetch(&self, remote: Remote, revs: &[&str]) -> Result<Vec<Oid>> {
        if self.offline {
            return Err(Error::new(format!(
                "refusing to fetch `{}` in offline mode",
                remote.name()
            ))
            .with_note("drop `--offline` (or FORKBOOK_OFFLINE) to let forkbook fetch"));
        }
        for rev in revs {
            refuse_option_like(rev)?;
        }
        let RemoteConfig { url, branch, .. } = self.remote_config(remote).clone();
        // Loading the configuration refused such a branch already: the last guard before git.
        super::config::refuse_bad_branch(remote.name(), &branch)?;
        self.lock_for_writing()?;
        let name = remote.name();
        if let Some(mirror) = local_mirror(&url) {
            return self.link_mirror(remote, &mirror, &branch, revs);
        }
        let mut specs = vec![format!("+refs/heads/{branch}:refs/remotes/{name}/{branch}")];
        for rev in revs.iter().filter(|r| !is_hex(r)) {
            specs.push(format!("+refs/heads/{rev}:refs/remotes/{name}/{rev}"));
        }
        let fetched = self.git_fetch(remote, &specs);
        let missing = || revs.iter().filter(|r| self.find(r).is_none()).count();
        if fetched.is_err() || missing() > 0 {
            let all = [format!("+refs/heads/*:refs/remotes/{name}/*")];
            self.git_fetch(remote, &all)
                .map_err(|e| self.network_error(remote, &url, e))?;
        }
        if missing() > 0 {
            self.fetch_off_branch(remote, revs);
        }
        let mut found = Vec::new();
        for rev in revs {
            let oid = self
                .find(rev)
                .ok_or_else(|| self.not_in_remote(rev, remote, &url))?;
            self.keep(oid)?;
            found.push(oid);
        }
        Ok(found)
    }

    /// Commits on no branch (a pull request's head, a commit a branch no longer holds): each
    /// full SHA by its id (hosts serve any reachable commit so), then every pull request head
    /// (`refs/pull/*/head`). Failures are not errors here: the caller names what is still
    /// missing.
    fn fetch_off_branch(&self, remote: Remote, revs: &[&str]) {
        let name = remote.name();
        for rev in revs.iter().filter(|r| r.len() == 40 && is_hex(r)) {
            if self.find(rev).is_none() {
                let _ = self.git_fetch(remote, &[format!("+{rev}:refs/forkbook/fetched/{rev}")]);
            }
        }
        if revs.iter().any(|r| self.find(r).is_none()) {
            let _ = self.git_fetch(
                remote,
                &[format!("+refs/pull/*/head:refs/remotes/{name}/pull/*")],
            );
        }
    }

    /// A mirror on this machine is not copied: its object folder becomes an alternate of the
    /// cache (read in place, in process) and its refs are mirrored as remote-tracking refs. This
    /// is instant, and tolerates mirrors that lack objects no wanted commit needs.
    fn link_mirror(
        &self,
        remote: Remote,
        mirror: &Path,
        branch: &str,
        revs: &[&str],
    ) -> Result<Vec<Oid>> {
        let name = remote.name();
        let source = Repository::open_bare(mirror)
            .or_else(|_| Repository::open(mirror))
            .with_context(|| {
                format!(
                    "`{}` (the {name} URL) is not a git repository",
                    mirror.display()
                )
            })?;
        self.add_alternate(&source)?;
        let resolve = |rev: &str| commit_in(&source, rev);
        let mut found = Vec::new();
        // The configured branch first, which may be missing (nothing then names it), then each
        // revision asked for, which must be there: one `found` entry each.
        let wanted = revs.iter().map(|rev| (*rev, true));
        for (rev, needed) in std::iter::once((branch, false)).chain(wanted) {
            let Some(oid) = resolve(rev) else {
                if !needed {
                    continue;
                }
                return Err(self.not_in_remote(rev, remote, &mirror.display().to_string()));
            };
            if !is_hex(rev) {
                self.repo.reference(
                    &format!("refs/remotes/{name}/{rev}"),
                    oid,
                    true,
                    "forkbook: mirror",
                )?;
            }
            self.keep(oid)?;
            found.push(oid);
        }
        if resolve(branch).is_some() {
            found.remove(0);
        }
        Ok(found)
    }

    /// `source`'s object folder as an alternate of the cache, once.
    fn add_alternate(&self, source: &Repository) -> Result<()> {
        let objects = source.path().join("objects");
        let alternates = self.repo.path().join("objects/info/alternates");
        let line = objects.to_string_lossy().into_owned();
        // Bytes, not text: a line that is not UTF-8 is kept, not the whole file lost with it.
        let mut existing = std::fs::read(&alternates).unwrap_or_default();
        if !existing
            .split(|b| *b == b'\n')
            .any(|l| l == line.as_bytes())
        {
            if !existing.is_empty() && !existing.ends_with(b"\n") {
                existing.push(b'\n');
            }
            existing.extend_from_slice(format!("{line}\n").as_bytes());
            super::fsutil::replace_file(&alternates, &existing)?;
            self.repo.odb()?.add_disk_alternate(&line)?;
        }
        Ok(())
    }

    /// A fetch that failed on the network: what to do without it.
    fn network_error(&self, remote: Remote, url: &str, e: Error) -> Error {
        let name = remote.name();
        // What git said (its note) is the cause; the note becomes what to do without the network.
        let mut chain = vec![format!("failed to fetch from the {name} `{url}`")];
        chain.extend(e.chain);
        if let Some(said) = e.note.filter(|s| !s.is_empty()) {
            chain.push(said.lines().collect::<Vec<_>>().join("; "));
        }
        Error {
            chain,
            ..Error::new("")
        }
        .with_note(format!(
            "the URL is {}; point it at a clone or mirror on this machine with \
                 `--{name}-url DIR` or `FORKBOOK_{}_URL=DIR` (its objects are read in place), \
                 or run with `--offline` to use only what the cache holds",
            self.url_origin(remote),
            name.to_ascii_uppercase()
        ))
        .with_kind(ErrorKind::Network)
    }

    /// Pins a commit with a ref, so that it stays in the cache whatever the remotes do.
    fn keep(&self, oid: Oid) -> Result<()> {
        self.lock_for_writing()?;
        self.repo.reference(
            &format!("refs/forkbook/keep/{oid}"),
            oid,
            true,
            "forkbook: recorded commit",
        )?;
        Ok(())
    }

    /// Resolves a revision already in the cache: a SHA (full or abbreviated), `fork/BRANCH`,
    /// `upstream/BRANCH`, a branch of either remote, or any git revision expression.
    pub fn find(&self, rev: &str) -> Option<Oid> {
        if rev.starts_with('-') {
            return None;
        }
        first_commit(
            &self.repo,
            &[
                rev.to_string(),
                format!("refs/remotes/fork/{rev}"),
                format!("refs/remotes/upstream/{rev}"),
                format!("refs/remotes/{rev}"),
            ],
        )
    }

    /// A commit that must be in the cache; fetched from `remote` when missing and online.
    pub fn commit(&self, rev: &str, remote: Remote) -> Result<Oid> {
        refuse_option_like(rev)?;
        if let Some(oid) = self.find(rev) {
            return Ok(oid);
        }
        if self.offline {
            let args = format!(" --{} {rev}", remote.name());
            return Err(self.not_cached(rev, remote, &args, "online, or with a mirror as the URL"));
        }
        self.fetch_one(remote, rev)
    }

    /// [`Cache::fetch`] of one revision, its commit.
    pub fn fetch_one(&self, remote: Remote, rev: &str) -> Result<Oid> {
        let url = self.remote_config(remote).url.clone();
        let found = self.fetch(remote, &[rev])?.first().copied();
        found.ok_or_else(|| self.not_in_remote(rev, remote, &url))
    }

    /// A recorded commit (one the records name, not the user): taken from the cache, or from a
    /// mirror on this machine, never over the network. Only `forkbook fetch` and revisions the
    /// user names on the command line fetch, so `status` and `check` work offline as they are.
    pub fn recorded(&self, rev: &str, remote: Remote) -> Result<Oid> {
        refuse_option_like(rev)?;
        if let Some(oid) = self.find(rev) {
            return Ok(oid);
        }
        let url = &self.remote_config(remote).url;
        if !self.offline && local_mirror(url).is_some() {
            return self.fetch_one(remote, rev);
        }
        let how = format!(
            "online, or with `--{}-url` naming a mirror on this machine",
            remote.name()
        );
        Err(self.not_cached(rev, remote, "", &how))
    }

    /// `rev` is not in the cache: run `forkbook fetch` with `args`, `how`.
    fn not_cached(&self, rev: &str, remote: Remote, args: &str, how: &str) -> Error {
        Error::new(format!(
            "commit `{rev}` of the {} is not in the object cache `{}`",
            remote.name(),
            self.named.display()
        ))
        .with_note(format!("run `forkbook fetch{args}` ({how})"))
        .with_kind(ErrorKind::MissingObject)
    }

    /// The tip of `remote`'s configured branch: fetched when missing and online, else `None`.
    pub fn branch_tip(&self, remote: Remote) -> Option<Oid> {
        let branch = &self.remote_config(remote).branch;
        let name = format!("refs/remotes/{}/{branch}", remote.name());
        if let Ok(reference) = self.repo.find_reference(&name) {
            return reference.target();
        }
        if self.offline {
            return None;
        }
        self.fetch_one(remote, branch).ok()
    }

    /// `remote`'s pull request heads by number and its branch tip, read where they are: a mirror
    /// on this machine in place (`refs/pull/N/head`, `refs/heads/BRANCH`; a GitHub mirror has
    /// them), else what the cache holds from a fetch (`refs/remotes/NAME/pull/N`, the branch as
    /// last fetched). Nothing is fetched: pull refs are read, not asked of the network. Where
    /// there are none at all, nothing can be said of any number: an error saying so.
    pub fn pull_heads(&self, remote: Remote) -> Result<(BTreeMap<u32, Oid>, Option<Oid>)> {
        let config = self.remote_config(remote);
        let name = remote.name();
        let mirror = local_mirror(&config.url).and_then(|dir| {
            Repository::open_bare(&dir)
                .or_else(|_| Repository::open(&dir))
                .ok()
        });
        let (repo, pulls, branch) = match &mirror {
            Some(mirror) => (
                mirror,
                "refs/pull/".to_string(),
                format!("refs/heads/{}", config.branch),
            ),
            None => (
                &self.repo,
                format!("refs/remotes/{name}/pull/"),
                format!("refs/remotes/{name}/{}", config.branch),
            ),
        };
        let mut heads = BTreeMap::new();
        for reference in repo.references_glob(&format!("{pulls}*"))? {
            let reference = reference?;
            let Some(rest) = reference
                .name()
                .ok()
                .and_then(|n| n.strip_prefix(pulls.as_str()))
            else {
                continue;
            };
            // `N/head` in a mirror, `N` as a fetch maps them into the cache.
            let number = rest.strip_suffix("/head").unwrap_or(rest);
            if let (Ok(number), Ok(commit)) = (number.parse(), reference.peel_to_commit()) {
                heads.insert(number, commit.id());
            }
        }
        if heads.is_empty() {
            let held = match &mirror {
                Some(_) => "the mirror holds no `refs/pull/*` (a GitHub mirror made with `git clone --mirror` has them)",
                None => "the cache holds no pull refs of it (a fetch of a pull request's head brings them)",
            };
            return Err(Error::new(format!(
                "no pull refs of the {name} to read: {held}"
            )));
        }
        let tip = repo.refname_to_id(&branch).ok().or_else(|| {
            let cached = format!("refs/remotes/{name}/{}", config.branch);
            self.repo.refname_to_id(&cached).ok()
        });
        Ok((heads, tip))
    }

    /// The file at `path` in `commit`, or `None` when the commit has no such file.
    pub fn read(&self, commit: Oid, path: &str) -> Result<Option<Vec<u8>>> {
        let tree = self.repo.find_commit(commit)?.tree()?;
        self.blob_at(&tree, commit, path)?
            .map(|id| self.blob(id))
            .transpose()
    }

    /// The blob id of the file `path` in `tree` (of `commit`), without reading the file: `None`
    /// where it is absent or not a file; a link is refused as [`Cache::read`] refuses it.
    pub fn blob_at(&self, tree: &git2::Tree, commit: Oid, path: &str) -> Result<Option<Oid>> {
        let Some(entry) = entry_at(tree, path)?.filter(|e| e.kind() == Some(ObjectType::Blob))
        else {
            return Ok(None);
        };
        if entry.filemode() == 0o120000 {
            return Err(link_error(commit, path, &self.blob(entry.id())?));
        }
        Ok(Some(entry.id()))
    }

    /// The bytes of blob `id`.
    pub fn blob(&self, id: Oid) -> Result<Vec<u8>> {
        Ok(self.repo.find_blob(id)?.content().to_vec())
    }

    /// Every file below `prefix` (`a/b/`) in `commit`, with full paths. Paths are checked, and
    /// links, submodules and odd entries are refused: the tree comes from other people.
    pub fn files_under(&self, commit: Oid, prefix: &str) -> Result<FileMap> {
        self.files_under_known(commit, prefix, &mut KnownBlobs::none())
    }

    /// [`Cache::files_under`], taking a file's bytes from the copy `known` holds where it holds
    /// the tree's blob ([`KnownBlobs::blob`]): the blob is then never read or inflated, and the
    /// tree shares the caller's bytes.
    pub fn files_under_known(
        &self,
        commit: Oid,
        prefix: &str,
        known: &mut KnownBlobs,
    ) -> Result<FileMap> {
        let tree = self.repo.find_commit(commit)?.tree()?;
        let dir = prefix.trim_end_matches('/');
        let folder = match dir {
            "" => Some((tree, String::new())),
            _ => match entry_at(&tree, dir)?.filter(|e| e.kind() == Some(ObjectType::Tree)) {
                Some(entry) => Some((self.repo.find_tree(entry.id())?, format!("{dir}/"))),
                None => None,
            },
        };
        let mut files = FileMap::new();
        if let Some((folder, prefix)) = folder {
            self.add_tree_files(commit, folder, prefix, known, &mut files)?;
        }
        Ok(files)
    }

    /// Adds every file of `tree` (at `prefix`) to `files`. Folders wait in a list rather than
    /// on the call stack: a tree from other people may be nested deeper than any stack goes.
    fn add_tree_files(
        &self,
        commit: Oid,
        tree: git2::Tree,
        prefix: String,
        known: &mut KnownBlobs,
        files: &mut FileMap,
    ) -> Result<()> {
        let mut folders = vec![(tree, prefix)];
        while let Some((tree, prefix)) = folders.pop() {
            for entry in tree.iter() {
                let path = entry_path(commit, &prefix, &entry)?;
                match (entry.kind(), entry.filemode()) {
                    (Some(ObjectType::Tree), _) => {
                        folders.push((self.repo.find_tree(entry.id())?, format!("{path}/")));
                    }
                    (Some(ObjectType::Blob), 0o120000) => {
                        return Err(link_error(commit, &path, &self.blob(entry.id())?));
                    }
                    (Some(ObjectType::Blob), _) => {
                        let bytes = known.blob(entry.id(), &path, |id| self.blob(id))?;
                        files.insert(path, bytes);
                    }
                    _ => {
                        return Err(Error::new(format!(
                            "commit `{}` has a submodule at `{path}`",
                            short(commit)
                        ))
                        .with_note(
                            "submodules cannot be vendored; remove it from the backend folder",
                        ))
                    }
                }
            }
        }
        Ok(())
    }

    /// The whole tree of `commit` for an export: regular files, plus links that stay inside
    /// the tree (path -> target). Links that leave it are refused; submodules are skipped.
    pub fn export_entries(&self, commit: Oid) -> Result<(FileMap, BTreeMap<String, String>)> {
        let tree = self.repo.find_commit(commit)?.tree()?;
        let mut files = FileMap::new();
        let mut links = BTreeMap::new();
        let mut visit = |dir: &str, entry: &git2::TreeEntry| -> Result<()> {
            let path = entry_path(commit, dir, entry)?;
            if entry.kind() != Some(ObjectType::Blob) {
                return Ok(());
            }
            let bytes = self.blob(entry.id())?;
            if entry.filemode() != 0o120000 {
                files.insert(path, bytes.into());
                return Ok(());
            }
            let target = String::from_utf8_lossy(&bytes).into_owned();
            if !link_stays_inside(&path, &target) {
                return Err(link_error(commit, &path, target.as_bytes()));
            }
            links.insert(path, target);
            Ok(())
        };
        let mut failure = None;
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            match visit(dir, entry) {
                Ok(()) => git2::TreeWalkResult::Ok,
                Err(e) => {
                    failure = Some(e);
                    git2::TreeWalkResult::Abort
                }
            }
        })
        .or_else(|e| if failure.is_some() { Ok(()) } else { Err(e) })?;
        failure.map_or(Ok((files, links)), Err)
    }

    /// Paths changed between two commits (added, modified or deleted), outside `exclude_prefix`.
    pub fn changed_paths(&self, from: Oid, to: Oid, exclude_prefix: &str) -> Result<Vec<String>> {
        let a = self.repo.find_commit(from)?.tree()?;
        let b = self.repo.find_commit(to)?.tree()?;
        let paths = diff_paths(&self.repo, &a, &b)?.into_iter();
        Ok(paths.filter(|p| !p.starts_with(exclude_prefix)).collect())
    }

    pub fn merge_base(&self, a: Oid, b: Oid) -> Result<Oid> {
        self.repo.merge_base(a, b).with_context(|| {
            format!(
                "no common history between `{}` and `{}`",
                short(a),
                short(b)
            )
        })
    }

    /// Whether `ancestor` is reachable from `descendant`.
    pub fn is_ancestor(&self, ancestor: Oid, descendant: Oid) -> Result<bool> {
        Ok(ancestor == descendant || self.repo.graph_descendant_of(descendant, ancestor)?)
    }

    pub fn summary(&self, commit: Oid) -> String {
        self.repo
            .find_commit(commit)
            .ok()
            .and_then(|c| c.summary().ok().flatten().map(str::to_string))
            .unwrap_or_default()
    }
}

impl Cache {
    /// A network fetch goes through the system `git`, which brings its own TLS, proxies and
    /// credential helpers. libgit2 is built without TLS on purpose: its OpenSSL init reads the
    /// system CA bundle in every process (26 ms, a third of `sync --check`), although local
    /// mirrors, the common case, never touch the network.
    fn git_fetch(&self, remote: Remote, specs: &[String]) -> Result<()> {
        // Tags are not needed and a mirror may hold tags whose objects it lacks: never follow them.
        let mut args = vec![
            "fetch",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            remote.name(),
        ];
        args.extend(specs.iter().map(String::as_str));
        system_git(&self.dir, &args)?;
        // The refs were written behind libgit2's back; it rereads them on the next lookup.
        Ok(())
    }
}

/// The secret that seals the results caches of `project` (the core merges, the drift
/// analyses, the book's step results; see `forkbook_records::cache_entry`), kept in
/// `forkbook-cache.key` beside its object cache. `None`, so that no results cache is read or
/// written, where that folder is the checkout's to write ([`trust::untrusted_cache_folder`]):
/// a pull request controls it, a secret kept there included, so a cache there could say
/// anything; every result is then made from the recorded commits and the records, as with no
/// cache at all. `None` too, with a note saying why, where the secret is not this user's alone
/// ([`trust::secret_in`]): whoever else can read it can seal a forged entry.
pub fn results_secret(project: &Project) -> Option<Secret> {
    secret_for(&project.root, &project.records_dir(), &project.cache_dir())
}

fn secret_for(project_root: &Path, records: &Path, cache_dir: &Path) -> Option<Secret> {
    let home = cache_home(cache_dir);
    std::fs::create_dir_all(&home).ok()?;
    let home = std::fs::canonicalize(&home).ok()?;
    if trust::untrusted_cache_folder(project_root, records, &home).is_some() {
        return None;
    }
    match trust::secret_in(&home) {
        Ok(secret) => Some(secret),
        Err(why) => {
            super::notice::leave(format!(
                "no results cache is used: its secret {why}; make the file yours alone \
                 (`chmod 600`) in a folder only you may write in, or remove it to have a new one made"
            ));
            None
        }
    }
}

/// The folder holding the object cache and the results caches beside it.
fn cache_home(cache_dir: &Path) -> PathBuf {
    match cache_dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether the objects this run reads could be the checkout's own: the object cache, a local
/// mirror of the fork or upstream, or an object store the cache links as an alternate, inside
/// the checkout ([`trust::untrusted_cache_folder`]). A pull request could commit loose
/// objects there whose content is not what their names hash to; every read then checks the
/// hash, so such an object is an error, never a base tree.
fn objects_from_checkout(project: &Project, cache_dir: &Path) -> bool {
    let records = project.records_dir();
    let inside = |path: &Path| {
        path.exists() && trust::untrusted_cache_folder(&project.root, &records, path).is_some()
    };
    let config = &project.config;
    // The cache's alternates too: a mirror linked by an earlier run (another pull request's
    // checkout at the same path, on a runner that keeps its cache) is read through them.
    // Bytes, not text: one line that is not UTF-8 must not hide the others.
    let alternates = std::fs::read(cache_dir.join("objects/info/alternates")).unwrap_or_default();
    let linked = |line: &[u8]| {
        use std::os::unix::ffi::OsStrExt;
        let line = line.trim_ascii();
        !line.starts_with(b"#") && inside(Path::new(std::ffi::OsStr::from_bytes(line)))
    };
    inside(cache_dir)
        || [&config.fork.url, &config.upstream.url]
            .into_iter()
            .filter_map(|url| local_mirror(url))
            .any(|mirror| inside(&mirror))
        || alternates.split(|b| *b == b'\n').any(linked)
}

/// Writes a blob into `repo` unless some object store of it already holds it.
///
/// libgit2's own write "freshens" an object it already has: it sets the mtime of the pack (or
/// loose file) holding it, which may be a mirror read through alternates, not ours to touch.
pub fn write_blob(repo: &Repository, bytes: &[u8]) -> Result<Oid> {
    let id = Oid::hash_object(ObjectType::Blob, bytes)?;
    if repo.odb()?.exists(id) {
        return Ok(id);
    }
    Ok(repo.blob(bytes)?)
}

/// Text from another program, its control characters shown escaped as git does (`\033`), line
/// breaks kept, quotes as they were: `escape_debug` showed git's `'origin'` as `\'origin\'`.
fn escape_lines(text: &str) -> String {
    text.lines()
        .map(|l| super::terminal::escape_controls(l).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// How long a network transfer (`git fetch`, `git push`) may take before it is stopped: a
/// generous 30 minutes, or `FORKBOOK_NETWORK_TIMEOUT` seconds. A server that stops answering
/// must not hold the run, and the cache's lock, for ever.
pub fn network_timeout() -> Result<std::time::Duration> {
    const VAR: &str = "FORKBOOK_NETWORK_TIMEOUT";
    let Some(given) = std::env::var_os(VAR) else {
        return Ok(std::time::Duration::from_secs(30 * 60));
    };
    match given.to_str().and_then(|s| s.trim().parse::<u64>().ok()) {
        Some(seconds) if seconds > 0 => Ok(std::time::Duration::from_secs(seconds)),
        _ => Err(Error::new(format!(
            "`{VAR}` is `{}`, not a number of seconds",
            given.to_string_lossy().escape_debug()
        ))
        .with_note(format!(
            "set `{VAR}` to a whole number of seconds above 0, or unset it"
        ))),
    }
}

/// Runs the system `git` with `args` on the bare repository `git_dir`, through the one process
/// runner with [`network_timeout`]; what it printed becomes the error's note when it fails.
pub fn system_git(git_dir: &Path, args: &[&str]) -> Result<()> {
    use super::process::{run, Ended, Spec};
    let timeout = network_timeout()?;
    let spec = Spec::new("git", git_dir)
        .arg("--git-dir")
        .arg(git_dir)
        .args(args.iter().copied())
        .timeout(Some(timeout));
    let subcommand = args.first().copied().unwrap_or("");
    let done = run(&spec).map_err(|e| {
        Error::new(format!("failed to run `git` for a network transfer: {}", e.message()))
            .with_note("install git: forkbook reads local mirrors itself, and talks to remote URLs through git")
    })?;
    let why = match done.ended {
        Ended::Exited(0) => return Ok(()),
        Ended::Exited(code) => format!("exit status: {code}"),
        Ended::Signaled(signal) => format!("signal {signal}"),
        Ended::TimedOut(after) => format!(
            "timed out after {} s; set FORKBOOK_NETWORK_TIMEOUT to allow longer",
            after.as_secs()
        ),
    };
    Err(Error::new(format!("`git {subcommand}` failed ({why})"))
        .with_note(escape_lines(done.output.trim())))
}

/// The commit `rev` names in `source`: a branch of that name first, else any revision.
fn commit_in(source: &Repository, rev: &str) -> Option<Oid> {
    first_commit(source, &[format!("refs/heads/{rev}"), rev.to_string()])
}

/// The commit named by the first of `revs` that names one in `repo`.
fn first_commit(repo: &Repository, revs: &[String]) -> Option<Oid> {
    revs.iter()
        .find_map(|rev| Some(repo.revparse_single(rev).ok()?.peel_to_commit().ok()?.id()))
}

/// Every path added, modified or deleted from tree `a` to tree `b`.
pub fn diff_paths(repo: &Repository, a: &git2::Tree, b: &git2::Tree) -> Result<BTreeSet<String>> {
    let diff = repo.diff_tree_to_tree(Some(a), Some(b), None)?;
    let files = diff.deltas().flat_map(|d| [d.old_file(), d.new_file()]);
    Ok(files
        .filter_map(|f| Some(f.path()?.to_str()?.to_string()))
        .collect())
}

/// The entry at `path` in `tree`, `None` where there is none.
pub fn entry_at(tree: &git2::Tree, path: &str) -> Result<Option<git2::TreeEntry<'static>>> {
    match tree.get_path(Path::new(path)) {
        Ok(entry) => Ok(Some(entry)),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The full path of `entry` in the folder `dir` (`a/b/`) of `commit`'s tree, checked: the
/// tree comes from other people.
fn entry_path(commit: Oid, dir: &str, entry: &git2::TreeEntry) -> Result<String> {
    let name = std::str::from_utf8(entry.name_bytes()).map_err(|_| {
        Error::new(format!(
            "commit `{}` has a non-UTF-8 file name under `{dir}`",
            short(commit)
        ))
    })?;
    let path = format!("{dir}{name}");
    check_relative(&path).map_err(|e| e.context(format!("in commit `{}`", short(commit))))?;
    Ok(path)
}

fn link_error(commit: Oid, path: &str, target: &[u8]) -> Error {
    let target = String::from_utf8_lossy(target);
    let why = super::fsutil::link_refusal(path, &target);
    Error::new(format!(
        "refusing link `{path}` -> `{}` in commit `{}`: {why}",
        target.escape_debug(),
        short(commit)
    ))
    .with_note("ask the fork to replace the link by the file it names")
}

/// A revision starting with `-` would be read as an option by tools downstream: refuse it.
pub fn refuse_option_like(rev: &str) -> Result<()> {
    if rev.starts_with('-') || rev.is_empty() || rev.contains(char::is_whitespace) {
        return Err(
            Error::new(format!("`{}` is not a revision", rev.escape_debug()))
                .with_note("give a commit SHA, a branch, or `fork/BRANCH` / `upstream/BRANCH`"),
        );
    }
    Ok(())
}

fn is_hex(rev: &str) -> bool {
    rev.len() >= 7 && rev.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The first 8 hex digits of a commit, for labels and messages.
pub fn short(oid: Oid) -> String {
    crate::text::short_id(&oid.to_string()).to_string()
}

/// The folder a URL names when it is a local path to an existing folder.
fn local_mirror(url: &str) -> Option<PathBuf> {
    let path = url.strip_prefix("file://").unwrap_or(url);
    if url.contains("://") && !url.starts_with("file://") {
        return None;
    }
    let path = Path::new(path);
    path.is_dir().then(|| path.to_path_buf())
}

/// Local paths become absolute, so the cache (elsewhere) finds them.
fn absolute_url(url: &str) -> String {
    if url.contains("://") || url.contains('@') {
        return url.to_string();
    }
    std::fs::canonicalize(url)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| url.to_string())
}

/// Where a remote's URL came from, as a note says it: the environment, the command line, or
/// `forkbook.toml` (the built-in MLX ROCm default when there is none).
fn url_origin(project: &Project, remote: Remote) -> String {
    let (flag, var, given) = match remote {
        Remote::Fork => (
            "--fork-url",
            "FORKBOOK_FORK_URL",
            &project.overrides.fork_url,
        ),
        Remote::Upstream => (
            "--upstream-url",
            "FORKBOOK_UPSTREAM_URL",
            &project.overrides.upstream_url,
        ),
    };
    match given {
        Some(url) if std::env::var(var).ok().as_ref() == Some(url) => {
            format!("from `{var}` in the environment")
        }
        Some(_) => format!("from `{flag}`"),
        None if project.root.join(super::config::CONFIG_FILE).is_file() => {
            format!("the `[{}] url` in forkbook.toml", remote.name())
        }
        None => format!(
            "the built-in default (there is no forkbook.toml; set `[{}] url` in one)",
            remote.name()
        ),
    }
}

#[cfg(test)]
mod escape_tests {
    /// Fails before issue 25: git's quotes came out as `\'`.
    #[test]
    fn git_errors_keep_their_quotes_and_lose_their_control_characters() {
        assert_eq!(
            super::escape_lines("fatal: repository 'https://x/y' not found\u{1b}[31m\nhint: \"a\""),
            "fatal: repository 'https://x/y' not found\\033[31m\nhint: \"a\""
        );
    }
}
