//! Shared helpers for the integration tests: a fresh demo project per test, and forkbook run in
//! process the way a user runs it.
#![allow(dead_code)]

use forkbook::demo::project::{generate, DemoProject};
use forkbook::engine::config::Layout;
use std::path::{Path, PathBuf};

pub struct Demo {
    pub tmp: tempfile::TempDir,
    pub demo: DemoProject,
}

impl Demo {
    pub fn new(layout: Layout) -> Demo {
        let tmp = tempfile::tempdir().unwrap();
        let demo = generate(tmp.path(), layout).expect("demo project");
        Demo { tmp, demo }
    }

    pub fn root(&self) -> &Path {
        &self.demo.root
    }

    pub fn records(&self) -> PathBuf {
        self.demo.root.join("patches-rocm")
    }

    /// Runs `forkbook ARGS` in process against this project; returns (exit status, output).
    pub fn run(&self, args: &[&str]) -> (i32, String) {
        let overrides = forkbook::engine::project::Overrides {
            cache: Some(self.demo.cache.clone()),
            ..Default::default()
        };
        let full = forkbook::cli::argv(&self.demo.root, &overrides, args.iter().copied());
        let mut out = Vec::new();
        let code = forkbook::cli::run(full, &mut out);
        (code, String::from_utf8_lossy(&out).into_owned())
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.records().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// The materialized overlay file `path` after the last command.
    pub fn materialized(&self, path: &str) -> String {
        let out = self.tmp.path().join("mat");
        let (code, text) = self.run(&["materialize", "--out", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{text}");
        std::fs::read_to_string(out.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    pub fn fork(&self, n: usize) -> &str {
        &self.demo.world.fork_commits[n - 1]
    }
}
