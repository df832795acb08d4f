//! The step result cache: one sealed cache entry (`forkbook_records::cache_entry`) per result,
//! named by a hash of everything the result depends on (the step's text after substitution, its
//! kind and attributes, the runner's fingerprint with the tools it found, this crate's
//! version).
//!
//! A directive's text (`{{#forkbook report}}`) is cached the same way, keyed by its name, its
//! arguments and the fingerprint: a fully cached build runs nothing.
//!
//! Every result is stored but a failing gated step's, so a failing gate always reflects a fresh
//! run (the user may have fixed something no fingerprint sees), while previews that report
//! conflicts or breaks are not run again for nothing. A forced rerun ignores what is stored.
//! The folder sits in the book, which a pull request writes; an entry is believed only when its
//! seal matches the runner's secret ([`StepRunner::cache_secret`](crate::StepRunner)), kept
//! outside the project, and with no secret nothing is kept or believed.

use crate::{Fingerprint, Step, StepOutcome};
use forkbook_records::cache_entry::{Key, KeyBuilder, Secret, Store};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// A folder of cached results.
#[derive(Debug, Clone)]
pub struct StepCache {
    store: Store,
    rerun: bool,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    command: String,
    exit: i32,
    duration_ms: u64,
    output: String,
    #[serde(default)]
    view: Option<String>,
}

impl StepCache {
    /// `rerun` makes every lookup miss; without a `secret` nothing is kept or believed.
    pub fn new(
        dir: impl Into<std::path::PathBuf>,
        rerun: bool,
        secret: Option<Secret>,
    ) -> StepCache {
        StepCache {
            store: Store::new(dir, "book step", secret),
            rerun,
        }
    }

    pub fn dir(&self) -> &Path {
        self.store.dir()
    }

    /// The cache key of a step under a fingerprint.
    pub fn key(step: &Step, fingerprint: &Fingerprint) -> Key {
        let mut key = KeyBuilder::new("book step");
        key.part(env!("CARGO_PKG_VERSION"))
            .part(format!("{:?}", step.kind))
            .part(format!(
                "{:?}",
                (
                    &step.attrs.expect,
                    &step.attrs.timeout,
                    &step.attrs.requires
                )
            ))
            .part(&step.command);
        fingerprint.add_to(&mut key);
        key.finish()
    }

    /// The cache key of a directive's text under a fingerprint.
    pub fn directive_key(name: &str, args: &[String], fingerprint: &Fingerprint) -> Key {
        let mut key = KeyBuilder::new("book directive");
        key.part(env!("CARGO_PKG_VERSION")).part(name);
        key.part((args.len() as u64).to_le_bytes());
        for arg in args {
            key.part(arg);
        }
        fingerprint.add_to(&mut key);
        key.finish()
    }

    /// A stored directive text, unless a rerun is forced or none is stored.
    pub fn get_text(&self, key: &Key) -> Option<String> {
        match self.get(key)? {
            StepOutcome::Ran { output, .. } => Some(output),
            StepOutcome::Skipped { .. } => None,
        }
    }

    /// Stores a directive's text (`label` is what the entry says it holds).
    pub fn put_text(&self, key: &Key, label: &str, text: &str) -> std::io::Result<()> {
        self.write(
            key,
            &Entry {
                command: label.to_string(),
                exit: 0,
                duration_ms: 0,
                output: text.to_string(),
                view: None,
            },
        )
    }

    /// A stored result, unless a rerun is forced or none is stored (an unreadable, damaged or
    /// forged entry is a miss).
    pub fn get(&self, key: &Key) -> Option<StepOutcome> {
        if self.rerun {
            return None;
        }
        let entry: Entry = serde_json::from_slice(&self.store.load(key)?).ok()?;
        Some(StepOutcome::Ran {
            exit: entry.exit,
            duration: Duration::from_millis(entry.duration_ms),
            output: entry.output,
            view: entry.view,
        })
    }

    /// Stores a result, unless it is a failing gated step's. Failing to write only costs a rerun
    /// next time, so errors are returned for the caller to mention, not to fail the build.
    pub fn put(&self, key: &Key, step: &Step, outcome: &StepOutcome) -> std::io::Result<()> {
        let StepOutcome::Ran {
            exit,
            duration,
            output,
            view,
        } = outcome
        else {
            return Ok(());
        };
        if step.attrs.gate && *exit != step.attrs.expect {
            return Ok(());
        }
        let entry = Entry {
            command: step.display_command(),
            exit: *exit,
            duration_ms: duration.as_millis() as u64,
            output: output.clone(),
            view: view.clone(),
        };
        self.write(key, &entry)
    }

    fn write(&self, key: &Key, entry: &Entry) -> std::io::Result<()> {
        self.store.save(key, &serde_json::to_vec(entry)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Attrs, StepKind};

    fn step(command: &str, expect: i32) -> Step {
        Step {
            kind: StepKind::Forkbook,
            command: command.into(),
            attrs: Attrs {
                expect,
                gate: true,
                ..Default::default()
            },
            chapter: "src/a.md".into(),
            line: 1,
            book_root: ".".into(),
            renderer: "html".into(),
        }
    }

    fn ran(exit: i32) -> StepOutcome {
        StepOutcome::Ran {
            exit,
            duration: Duration::from_millis(5),
            output: "out".into(),
            view: None,
        }
    }

    fn secret() -> Option<Secret> {
        Some(Secret::from_bytes([3; 32]))
    }

    fn key(name: &str) -> Key {
        let mut key = KeyBuilder::new("test");
        key.part(name);
        key.finish()
    }

    #[test]
    fn key_changes_with_text_and_fingerprint() {
        let fp = Fingerprint {
            tool_version: "1".into(),
            ..Default::default()
        };
        let other = Fingerprint {
            tool_version: "2".into(),
            ..Default::default()
        };
        let a = StepCache::key(&step("status", 0), &fp);
        assert_eq!(a, StepCache::key(&step("status", 0), &fp));
        assert_ne!(a, StepCache::key(&step("status --json", 0), &fp));
        assert_ne!(a, StepCache::key(&step("status", 0), &other));
        assert_ne!(a, StepCache::key(&step("status", 1), &fp));
        let without_hipcc = Fingerprint {
            tools: vec![("hipcc".into(), "-".into())],
            ..fp.clone()
        };
        let with_hipcc = Fingerprint {
            tools: vec![("hipcc".into(), "/usr/bin/hipcc 10 20".into())],
            ..fp.clone()
        };
        assert_ne!(
            StepCache::key(&step("status", 0), &without_hipcc),
            StepCache::key(&step("status", 0), &with_hipcc),
            "the tools found are in the key"
        );
    }

    #[test]
    fn stores_all_but_failing_gates_and_rerun_misses() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        let cache = StepCache::new(&dir, false, secret());
        cache.put(&key("ok"), &step("a", 0), &ran(0)).unwrap();
        cache.put(&key("bad"), &step("a", 0), &ran(1)).unwrap();
        assert_eq!(cache.get(&key("ok")), Some(ran(0)));
        assert_eq!(cache.get(&key("bad")), None);
        let mut preview = step("a", 0);
        preview.attrs.gate = false;
        cache.put(&key("preview"), &preview, &ran(1)).unwrap();
        assert_eq!(cache.get(&key("preview")), Some(ran(1)));
        assert_eq!(StepCache::new(&dir, true, secret()).get(&key("ok")), None);
        let other_secret = StepCache::new(&dir, false, Some(Secret::from_bytes([4; 32])));
        assert_eq!(
            other_secret.get(&key("ok")),
            None,
            "sealed by another cache"
        );
        let no_secret = StepCache::new(&dir, false, None);
        assert_eq!(
            no_secret.get(&key("ok")),
            None,
            "no secret, nothing believed"
        );
    }

    #[test]
    fn directive_texts_are_kept_by_name_arguments_and_fingerprint() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = StepCache::new(tmp.path(), false, secret());
        let fp = Fingerprint {
            tool_version: "1".into(),
            ..Default::default()
        };
        let other = Fingerprint {
            extra: "records changed".into(),
            ..fp.clone()
        };
        let key = StepCache::directive_key("report", &[], &fp);
        assert_ne!(key, StepCache::directive_key("register", &[], &fp));
        assert_ne!(key, StepCache::directive_key("report", &["x".into()], &fp));
        assert_ne!(key, StepCache::directive_key("report", &[], &other));
        assert_ne!(key, StepCache::key(&step("report", 0), &fp));
        assert_eq!(cache.get_text(&key), None);
        cache
            .put_text(&key, "{{#forkbook report}}", "## ROCm overlay\n")
            .unwrap();
        assert_eq!(cache.get_text(&key).as_deref(), Some("## ROCm overlay\n"));
        assert_eq!(
            StepCache::new(tmp.path(), true, secret()).get_text(&key),
            None
        );
    }
}
