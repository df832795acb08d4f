//! `forkbook fetch`: fill the object cache with the recorded commits or named revisions.

use super::{Ctx, OK};
use crate::engine::cache::{short, Remote};
use crate::engine::overlay::Records;
use crate::engine::records::keys;
use crate::engine::{Cache, Result};

/// Fetch the recorded commits (or the named revisions) into the object cache
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A fork revision to fetch (repeatable); default: the recorded fork commit
    #[arg(long = "fork", value_name = "REV")]
    pub fork: Vec<String>,
    /// An upstream revision to fetch (repeatable); default: the recorded base and pin
    #[arg(long = "upstream", value_name = "REV")]
    pub upstream: Vec<String>,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let project = ctx.project()?;
    let cache = Cache::open(&project)?;
    let (mut fork, mut upstream) = (args.fork.clone(), args.upstream.clone());
    if fork.is_empty() && upstream.is_empty() {
        if let Ok(records) = Records::read(&project) {
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
            fetched.push(serde_json::json!({ "remote": remote.name(), "rev": rev, "commit": oid.to_string() }));
            if !ctx.json {
                writeln!(
                    ctx.out,
                    "{:<9} {rev} -> {} {}",
                    remote.name(),
                    short(oid),
                    cache.summary(oid)
                )?;
            }
        }
    }
    if ctx.json {
        ctx.print_json(&fetched)?;
    }
    Ok(OK)
}
