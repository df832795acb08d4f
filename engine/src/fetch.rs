//! `forkbook fetch`: the recorded commits (or named revisions) into the object cache.

use crate::cache::{Cache, Remote};
use crate::error::Result;
use crate::overlay::Records;
use crate::project::Project;
use crate::records::keys;
use crate::report_value::{CommandReport, Verdict};
use serde::Serialize;

/// Every revision fetched, in order: fork first, then upstream. Its JSON is the list.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Fetched(pub Vec<FetchedRev>);

/// One revision and the commit it named.
#[derive(Debug, Clone, Serialize)]
pub struct FetchedRev {
    pub commit: String,
    pub remote: &'static str,
    pub rev: String,
    /// The commit's subject line, for people.
    #[serde(skip)]
    pub summary: String,
}

/// `forkbook fetch`: the named fork and upstream revisions; with neither named, the recorded
/// commits (when the records can be read) and the tips of both branches.
pub fn fetch(
    project: &Project,
    cache: &Cache,
    fork: &[String],
    upstream: &[String],
) -> Result<Fetched> {
    let (mut fork, mut upstream) = (fork.to_vec(), upstream.to_vec());
    if fork.is_empty() && upstream.is_empty() {
        if let Ok(records) = Records::read(project) {
            let u = &records.upstream;
            fork.extend(u.get(keys::COMMIT).map(str::to_string));
            upstream.extend(
                [keys::BASE, keys::PIN]
                    .iter()
                    .filter_map(|k| u.get(k).map(str::to_string)),
            );
        }
        fork.push(project.config.fork.branch.clone());
        upstream.push(project.config.upstream.branch.clone());
    }
    let mut fetched = Vec::new();
    for (remote, revs) in [(Remote::Fork, &fork), (Remote::Upstream, &upstream)] {
        let revs: Vec<&str> = revs.iter().map(String::as_str).collect();
        if revs.is_empty() {
            continue;
        }
        for (rev, oid) in revs.iter().zip(cache.fetch(remote, &revs)?) {
            // Fetched by its id, a commit is not yet shown to be upstream's: the refs that
            // reach it come too, for `pin-on-upstream` (which reads them offline). A commit
            // none reaches is that check's finding, not a failed fetch.
            if remote == Remote::Upstream {
                let _ = crate::pin::upstream_holder(cache, oid);
            }
            fetched.push(FetchedRev {
                commit: oid.to_string(),
                remote: remote.name(),
                rev: rev.to_string(),
                summary: cache.summary(oid),
            });
        }
    }
    Ok(Fetched(fetched))
}

impl CommandReport for Fetched {
    fn text(&self) -> String {
        self.0
            .iter()
            .map(|f| {
                format!(
                    "{:<9} {} -> {} {}\n",
                    f.remote,
                    f.rev,
                    crate::text::short_id(&f.commit),
                    f.summary
                )
            })
            .collect()
    }

    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}
