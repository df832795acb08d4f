//! `forkbook ci github`: the GitHub Actions workflow that makes the book the project's gate and
//! its contributors' site. On a pull request that touches the overlay (its records, the
//! configuration, the book) it runs `forkbook book test`; on the main branch it builds the book
//! and publishes it to GitHub Pages.

use super::error::{Error, Result};
use super::project::Project;
use super::report_value::{CommandReport, Verdict};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Where the workflow goes, relative to the project root.
pub const WORKFLOW_FILE: &str = ".github/workflows/book.yml";

/// What the workflow is made of.
#[derive(Debug, Clone)]
pub struct GithubOptions {
    /// The branch whose pushes publish the book.
    pub branch: String,
    /// The book folder, relative to the project root.
    pub book_dir: String,
    /// The shell command that puts `forkbook` on PATH in the runner.
    pub install: String,
    /// Add the optional ROCm job ([`super::ci_rocm`]).
    pub rocm: bool,
    /// The cron schedule of the roll job (`--roll`), none without it (see [`super::roll_ci`]).
    pub roll: Option<String>,
}

impl GithubOptions {
    /// The defaults for `project`: its own build of forkbook when the project is forkbook's
    /// repository, else `cargo install --locked forkbook`.
    pub fn defaults(project: &Project) -> GithubOptions {
        let own = std::fs::read_to_string(project.root.join("Cargo.toml"))
            .is_ok_and(|t| t.lines().any(|l| l.trim() == "name = \"forkbook\""));
        GithubOptions {
            branch: "main".into(),
            book_dir: "book".into(),
            install: if own {
                "cargo install --locked --path .".into()
            } else {
                "cargo install --locked forkbook".into()
            },
            rocm: false,
            roll: None,
        }
    }
}

/// A YAML scalar that means exactly `text`: JSON strings are YAML double-quoted scalars.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// The workflow's text.
pub fn github_workflow(project: &Project, options: &GithubOptions) -> String {
    let records = project.config.overlay.dir.trim_end_matches('/');
    let book = options.book_dir.trim_end_matches('/');
    let paths = [
        format!("{records}/**"),
        super::config::CONFIG_FILE.to_string(),
        format!("{book}/**"),
        WORKFLOW_FILE.to_string(),
    ];
    let paths: String = paths
        .iter()
        .map(|p| format!("      - {}\n", quoted(p)))
        .collect();
    // An expression's string literal is single-quoted, with `''` for a quote.
    let upstream = format!("'{}'", format!("{records}/UPSTREAM").replace('\'', "''"));
    let cache_key = quoted(&format!(
        "forkbook-objects-${{{{ hashFiles({upstream}) }}}}"
    ));
    let branch = quoted(&options.branch);
    let install = quoted(&options.install);
    let book_arg = quoted(book);
    let site = quoted(&format!("{book}/book"));
    // Both jobs start the same way: the checkout, the object cache, forkbook, the commits.
    let setup = format!(
        "      - uses: actions/checkout@v4
      - uses: actions/cache@v4
        with:
          path: .forkbook-objects
          key: {cache_key}
          restore-keys: forkbook-objects-
      - name: Install forkbook
        run: {install}
      - name: Fetch the recorded commits
        run: forkbook fetch
"
    );
    let rocm_job = if options.rocm {
        super::ci_rocm::rocm_drift_job(records, &setup)
    } else {
        String::new()
    };
    let text = format!(
        "\
# Written by `forkbook ci github`: the executable book is this project's gate and its site.
# Pull requests that touch the overlay run `forkbook book test`; pushes to the branch below
# build the book and publish it to GitHub Pages (Settings > Pages > Source: GitHub Actions).
name: book

on:
  pull_request:
    paths:
{paths}  push:
    branches: [{branch}]
  workflow_dispatch:

permissions:
  contents: read

env:
  # The recorded commits are fetched once and kept between runs.
  FORKBOOK_CACHE: ${{{{ github.workspace }}}}/.forkbook-objects

jobs:
  test:
    if: github.event_name == 'pull_request'
    runs-on: ubuntu-latest
    steps:
{setup}      - name: The book's gate
        run: forkbook book test --dir {book_arg}

  publish:
    if: github.event_name != 'pull_request'
    runs-on: ubuntu-latest
    permissions:
      contents: read
      pages: write
      id-token: write
    concurrency:
      group: pages
      cancel-in-progress: false
    environment:
      name: github-pages
      url: ${{{{ steps.deployment.outputs.page_url }}}}
    steps:
{setup}      - name: Build the book
        run: forkbook book build --dir {book_arg}
      - uses: actions/configure-pages@v5
      - uses: actions/upload-pages-artifact@v3
        with:
          path: {site}
      - id: deployment
        uses: actions/deploy-pages@v4
{rocm_job}"
    );
    match &options.roll {
        Some(cron) => super::roll_ci::with_roll(text, cron, &setup, records),
        None => text,
    }
}

/// What `forkbook ci github` is asked for, its branch checked.
#[derive(Debug, Clone)]
pub struct GithubRequest {
    pub branch: String,
    pub book_dir: String,
    /// The install command; the project's default when left out.
    pub install: Option<String>,
    /// Add the optional ROCm job.
    pub rocm: bool,
    /// The roll job's schedule, checked (`--roll`).
    pub roll: Option<String>,
}

impl GithubRequest {
    pub fn new(branch: &str, book_dir: &str, install: Option<&str>) -> Result<GithubRequest> {
        if !git2::Reference::is_valid_name(&format!("refs/heads/{branch}")) {
            return Err(
                Error::new(format!("`{}` is not a branch name", branch.escape_debug())).with_note(
                    "give the branch whose pushes publish the book, e.g. `--branch main`",
                ),
            );
        }
        Ok(GithubRequest {
            branch: branch.to_string(),
            book_dir: book_dir.to_string(),
            install: install.map(str::to_string),
            rocm: false,
            roll: None,
        })
    }

    /// Adds the scheduled roll job (see [`super::roll_ci`]) on `cron` (default: daily).
    pub fn with_roll(mut self, cron: Option<&str>) -> Result<GithubRequest> {
        let cron = cron.unwrap_or(super::roll_ci::DEFAULT_SCHEDULE);
        self.roll = Some(super::roll_ci::check_schedule(cron)?);
        Ok(self)
    }

    fn options(&self, project: &Project) -> GithubOptions {
        let mut options = GithubOptions::defaults(project);
        options.branch = self.branch.clone();
        options.book_dir = self.book_dir.clone();
        if let Some(install) = &self.install {
            options.install = install.clone();
        }
        options.rocm = self.rocm;
        options.roll = self.roll.clone();
        options
    }
}

/// `forkbook ci github --print`: the workflow's text.
pub fn github_text(project: &Project, request: &GithubRequest) -> String {
    github_workflow(project, &request.options(project))
}

/// What `forkbook ci github` did: checked the file (`--check`) or wrote it.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Github {
    /// `{"file": …, "up_to_date": …}`
    Checked {
        file: PathBuf,
        up_to_date: bool,
        #[serde(skip)]
        present: bool,
    },
    /// `{"file": …, "install": …}`
    Wrote {
        file: PathBuf,
        install: String,
        #[serde(skip)]
        records_dir: String,
        #[serde(skip)]
        options: GithubOptions,
    },
}

/// `forkbook ci github`: the workflow written to `out` (default: [`WORKFLOW_FILE`]), relative to
/// the project; with `check`, nothing written, only compared with what is there.
pub fn github(
    project: &Project,
    request: &GithubRequest,
    out: Option<&Path>,
    check: bool,
) -> Result<Github> {
    let options = request.options(project);
    let text = github_workflow(project, &options);
    let file = out.map_or_else(|| PathBuf::from(WORKFLOW_FILE), Path::to_path_buf);
    let path = project.root.join(&file);
    if check {
        let current = std::fs::read_to_string(&path).ok();
        return Ok(Github::Checked {
            up_to_date: current.as_deref() == Some(text.as_str()),
            present: current.is_some(),
            file,
        });
    }
    super::fsutil::replace_file(&path, text.as_bytes())?;
    Ok(Github::Wrote {
        file,
        install: options.install.clone(),
        records_dir: project.config.overlay.dir.clone(),
        options,
    })
}

impl CommandReport for Github {
    fn text(&self) -> String {
        match self {
            Github::Checked {
                file,
                up_to_date: true,
                ..
            } => format!("{}: up to date\n", file.display()),
            Github::Checked { file, present, .. } => {
                let what = if *present {
                    "differs from"
                } else {
                    "is missing; expected"
                };
                format!(
                    "{}: {what} what `forkbook ci github` writes; run it to update\n",
                    file.display()
                )
            }
            Github::Wrote {
                file,
                records_dir,
                options,
                ..
            } => {
                let mut text = format!(
                    "wrote {}\n  pull requests touching `{records_dir}`, forkbook.toml or `{}`: \
                 `forkbook book test`\n  pushes to `{}`: the book built and published to GitHub \
                 Pages (Settings > Pages > Source: GitHub Actions)\n  the runner gets forkbook \
                 with `{}` (`--install COMMAND` changes it)\n",
                    file.display(),
                    options.book_dir,
                    options.branch,
                    options.install
                );
                if let Some(cron) = &options.roll {
                    text.push_str(&super::roll_ci::describe(cron));
                }
                text
            }
        }
    }

    /// A workflow that is missing or differs from what would be written is a problem.
    fn verdict(&self) -> Verdict {
        match self {
            Github::Checked { up_to_date, .. } => Verdict::problems_if(!up_to_date),
            Github::Wrote { .. } => Verdict::Clean,
        }
    }
}
