//! The step result cache: one JSON file per result, named by a hash of everything the result
//! depends on (the step's text after substitution, its kind and attributes, the runner's
//! fingerprint, this crate's version).
//!
//! A directive's text (`{{#forkbook report}}`) is cached the same way, keyed by its name, its
//! arguments and the fingerprint: a fully cached build runs nothing.
//!
//! Every result is stored but a failing gated step's, so a failing gate always reflects a fresh
//! run (the user may have fixed something no fingerprint sees), while previews that report
//! conflicts or breaks are not run again for nothing. A forced rerun ignores what is stored.

use crate::{Fingerprint, Step, StepOutcome};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A folder of cached results.
#[derive(Debug, Clone)]
pub struct StepCache {
    dir: PathBuf,
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
    /// `rerun` makes every lookup miss.
    pub fn new(dir: impl Into<PathBuf>, rerun: bool) -> StepCache {
        StepCache {
            dir: dir.into(),
            rerun,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cache key of a step under a fingerprint.
    pub fn key(step: &Step, fingerprint: &Fingerprint) -> String {
        let mut hash = Sha256::new();
        for part in [
            env!("CARGO_PKG_VERSION"),
            &format!("{:?}", step.kind),
            &format!(
                "{:?}",
                (
                    &step.attrs.expect,
                    &step.attrs.timeout,
                    &step.attrs.requires
                )
            ),
            &step.command,
            &fingerprint.key(),
        ] {
            hash.update(part.as_bytes());
            hash.update([0u8]);
        }
        hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The cache key of a directive's text under a fingerprint.
    pub fn directive_key(name: &str, args: &[String], fingerprint: &Fingerprint) -> String {
        let mut hash = Sha256::new();
        for part in [
            env!("CARGO_PKG_VERSION"),
            "directive",
            name,
            &format!("{args:?}"),
            &fingerprint.key(),
        ] {
            hash.update(part.as_bytes());
            hash.update([0u8]);
        }
        hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A stored directive text, unless a rerun is forced or none is stored.
    pub fn get_text(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            StepOutcome::Ran { output, .. } => Some(output),
            StepOutcome::Skipped { .. } => None,
        }
    }

    /// Stores a directive's text (`label` is what the entry says it holds).
    pub fn put_text(&self, key: &str, label: &str, text: &str) -> std::io::Result<()> {
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

    /// A stored result, unless a rerun is forced or none is stored (an unreadable entry is a miss).
    pub fn get(&self, key: &str) -> Option<StepOutcome> {
        if self.rerun {
            return None;
        }
        let text = std::fs::read_to_string(self.path(key)).ok()?;
        let entry: Entry = serde_json::from_str(&text).ok()?;
        Some(StepOutcome::Ran {
            exit: entry.exit,
            duration: Duration::from_millis(entry.duration_ms),
            output: entry.output,
            view: entry.view,
        })
    }

    /// Stores a result, unless it is a failing gated step's. Failing to write only costs a rerun
    /// next time, so errors are returned for the caller to mention, not to fail the build.
    pub fn put(&self, key: &str, step: &Step, outcome: &StepOutcome) -> std::io::Result<()> {
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

    fn write(&self, key: &str, entry: &Entry) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        // Write aside, then rename: a reader never sees half an entry.
        let tmp = self.dir.join(format!("{key}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, serde_json::to_vec(entry)?)?;
        std::fs::rename(&tmp, self.path(key))
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
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
    }

    #[test]
    fn stores_all_but_failing_gates_and_rerun_misses() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        let cache = StepCache::new(&dir, false);
        cache.put("ok", &step("a", 0), &ran(0)).unwrap();
        cache.put("bad", &step("a", 0), &ran(1)).unwrap();
        assert_eq!(cache.get("ok"), Some(ran(0)));
        assert_eq!(cache.get("bad"), None);
        let mut preview = step("a", 0);
        preview.attrs.gate = false;
        cache.put("preview", &preview, &ran(1)).unwrap();
        assert_eq!(cache.get("preview"), Some(ran(1)));
        assert_eq!(StepCache::new(&dir, true).get("ok"), None);
    }

    #[test]
    fn directive_texts_are_kept_by_name_arguments_and_fingerprint() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = StepCache::new(tmp.path(), false);
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
        assert_eq!(StepCache::new(tmp.path(), true).get_text(&key), None);
    }
}
