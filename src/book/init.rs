//! `forkbook book init`: a project's own copy of the executable book. The chapters are this
//! repository's (`SOURCES`, the same text the demo builds), `book.toml`'s variables filled in
//! from the project's `forkbook.toml`; the register, the checks and the report are directives,
//! so the register is read where it lives at every build, never copied. No file that exists is
//! written over.

use super::SOURCES;
use crate::engine::config::{Config, CONFIG_FILE};
use crate::engine::doc::{words, Doc};
use crate::engine::drift::build::BuildConfig;
use crate::engine::error::{Context, Error, Result};
use crate::engine::markdown::code_span;
use crate::engine::project::Project;
use crate::engine::records::FIXES_FILE;
use crate::engine::report_value::{CommandReport, Verdict};
use crate::engine::terminal::escape_controls;
use crate::engine::verify::VerifyConfig;
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// What `book init` wrote, what it found already there, and what the book will run.
#[derive(Debug, Clone, Serialize)]
pub struct BookInit {
    /// The book folder, relative to the project root where it lies below it.
    pub dir: String,
    /// Files written, relative to the book folder.
    pub wrote: Vec<String>,
    /// Files that existed and were left as they are.
    pub kept: Vec<String>,
    /// The register the book's register chapter reads in place.
    pub register: String,
    /// The `[[verify.steps]]` of forkbook.toml the verify steps run: `name: command`.
    pub verify_steps: Vec<String>,
}

/// The variables of `book.toml` that come from `project` (the rest keep this repository's
/// values): what the procedures move to, the compiler, and the names the introduction gives the
/// fork and upstream.
pub fn project_vars(project: &Project) -> Result<Vec<(&'static str, String)>> {
    let config = &project.config;
    let build: BuildConfig = Config::section(&config.build, "build")?;
    let remote_name = |url: &str, branch: &str| {
        let name = forkbook_records::remote::web_address(url)
            .map(|web| web.trim_start_matches("https://").to_string())
            .unwrap_or_else(|| url.to_string());
        let name = name
            .strip_prefix("github.com/")
            .unwrap_or(&name)
            .to_string();
        format!("{}, branch {}", code_span(&name), code_span(branch))
    };
    Ok(vec![
        ("candidate_pin", config.upstream.branch.clone()),
        ("candidate_fork", config.fork.branch.clone()),
        ("roll_to", config.upstream.branch.clone()),
        ("compiler", build.compiler),
        ("fork", remote_name(&config.fork.url, &config.fork.branch)),
        (
            "upstream",
            remote_name(&config.upstream.url, &config.upstream.branch),
        ),
        ("world_note", String::new()),
    ])
}

/// This repository's `book.toml` with each of `vars` set under `[preprocessor.forkbook.vars]`.
pub fn book_toml(vars: &[(&str, String)]) -> String {
    let (_, text) = SOURCES
        .iter()
        .find(|(path, _)| *path == "book.toml")
        .expect("the book's sources hold book.toml");
    let mut in_vars = false;
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        if line.starts_with('[') {
            in_vars = line.trim_end() == "[preprocessor.forkbook.vars]";
        }
        let set = in_vars
            .then(|| line.split_once(" = "))
            .flatten()
            .and_then(|(name, _)| vars.iter().find(|(n, _)| *n == name));
        match set {
            Some((name, value)) => {
                let quoted = toml::Value::String(value.clone()).to_string();
                out.push_str(&format!("{name} = {quoted}\n"));
            }
            None => out.push_str(line),
        }
    }
    out
}

/// Writes the book into `dir` (default: `book` in the project): every file of [`SOURCES`] that
/// is not there yet, `book.toml` with the project's variables. A file that exists is kept.
pub fn init(project: &Project, dir: Option<&Path>) -> Result<BookInit> {
    let dir = match dir {
        Some(dir) if dir.is_absolute() => dir.to_path_buf(),
        Some(dir) => std::env::current_dir()?.join(dir),
        None => project.root.join("book"),
    };
    if dir.is_file() {
        return Err(
            Error::new(format!("`{}` is a file, not a book folder", dir.display()))
                .with_note("name another folder with `--dir DIR`"),
        );
    }
    let toml = book_toml(&project_vars(project)?);
    let (mut wrote, mut kept) = (Vec::new(), Vec::new());
    for (path, text) in SOURCES {
        let text = if *path == "book.toml" { &toml } else { *text };
        if write_new(&dir.join(path), text.as_bytes())? {
            wrote.push(path.to_string());
        } else {
            kept.push(path.to_string());
        }
    }
    let verify: VerifyConfig = Config::section(&project.config.verify, "verify")?;
    let shown = dir.strip_prefix(&project.root).unwrap_or(&dir);
    Ok(BookInit {
        dir: shown.to_string_lossy().into_owned(),
        wrote,
        kept,
        register: project.record_name(FIXES_FILE),
        verify_steps: verify
            .steps
            .iter()
            .map(|s| format!("{}: {}", s.name, s.command))
            .collect(),
    })
}

/// Writes `bytes` to `path` only where nothing is there (not even a link): true when written.
fn write_new(path: &Path, bytes: &[u8]) -> Result<bool> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("failed to create `{}`", parent.display()))?;
    }
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => {
            return Err(Error::new(format!(
                "failed to write `{}`: {e}",
                path.display()
            )))
        }
    };
    file.write_all(bytes)
        .with_context(|| format!("failed to write `{}`", path.display()))?;
    Ok(true)
}

impl CommandReport for BookInit {
    fn text(&self) -> String {
        // The folder, the files and the steps are the user's: control characters shown escaped.
        let terminal = |t: &str| words(escape_controls(t));
        let listed = |files: &[String]| {
            let paths: Vec<String> = files.iter().map(|f| format!("{}/{f}", self.dir)).collect();
            terminal(&paths.join(", "))
        };
        let mut doc = Doc::default();
        match self.wrote.as_slice() {
            [] => doc.field("wrote", vec![words("nothing")]),
            wrote => doc.field("wrote", vec![listed(wrote)]),
        };
        if !self.kept.is_empty() {
            let kept = words(" (they exist; not written over)");
            doc.field("kept", vec![listed(&self.kept), kept]);
        }
        let read = words(" is read where it is at every build");
        doc.field("register", vec![terminal(&self.register), read]);
        if self.verify_steps.is_empty() {
            doc.field("verify", vec![words(format!(
                "no [[verify.steps]] in {CONFIG_FILE}: `forkbook verify` runs the checks, \
                 the residual and drift api; add your own build or test there, e.g.\n         \
                 [[verify.steps]]\n         name = \"ROCm build\"\n         command = \"make verify-rocm\""
            ))]);
        }
        for step in &self.verify_steps {
            doc.field("verify", vec![terminal(step)]);
        }
        let dir = escape_controls(&self.dir);
        doc.line(vec![words(format!(
            "link it from CONTRIBUTING.md, e.g.:\n  \
             The pin bump and the fork sync are chapters of the book in `{dir}/`: \
             `forkbook book build` writes it to `{dir}/book/index.html`, and \
             `forkbook book test` is the gate a pull request must pass."
        ))]);
        let (book_dir, ci_book) = if dir == "book" {
            (String::new(), String::new())
        } else {
            let word = shell_word(&self.dir);
            (format!(" --dir {word}"), format!(" --book {word}"))
        };
        doc.line(vec![words(format!(
            "next: forkbook book build{book_dir}    # every step run, the pages in {dir}/book/"
        ))])
        .line(vec![words(format!(
            "next: forkbook ci github{ci_book}    # the book as the pull requests' gate"
        ))]);
        doc.text()
    }

    fn verdict(&self) -> Verdict {
        Verdict::Clean
    }
}

/// `text` as one shell word.
fn shell_word(text: &str) -> String {
    shlex::try_quote(text).map_or(text.to_string(), |q| q.into_owned())
}
