//! `forkbook ci github`: the GitHub Actions workflow that makes the book the project's gate and
//! its contributors' site. On a pull request that touches the overlay (its records, the
//! configuration, the book) it runs `forkbook book test`; on the main branch it builds the book
//! and publishes it to GitHub Pages.

use super::ci_actions::{CACHE, CHECKOUT, CONFIGURE_PAGES, DEPLOY_PAGES, UPLOAD_PAGES_ARTIFACT};
use super::ci_template::{fill, Fill};
use super::error::{Error, Result};
use super::project::Project;
use super::report_value::{CommandReport, Verdict};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Where the workflow goes, relative to the project root.
pub const WORKFLOW_FILE: &str = ".github/workflows/book.yml";

/// `words` as one shell command line, each word quoted where it needs it.
fn shell_line(words: &[&str]) -> String {
    shlex::try_join(words.iter().copied()).unwrap_or_default()
}

/// `forkbook ci github --print`: the workflow's text, the records folder checked like the book's.
/// Every value in it was checked by [`GithubRequest::new`] and [`check_folder`]: each is
/// YAML-quoted, shell-quoted where a shell reads it, and holds no `${{`, so GitHub Actions
/// evaluates only the expressions written here. On a pull request the book's gate runs, on a
/// push the book is built and published to GitHub Pages; then the ROCm and roll jobs where
/// asked.
pub fn github_text(project: &Project, request: &GithubRequest) -> Result<String> {
    check_folder(
        &project.config.overlay.dir,
        "forkbook.toml's records folder (`[overlay] dir`)",
    )?;
    let records = project.config.overlay.dir.trim_end_matches('/');
    let book = request.book_dir.trim_end_matches('/');
    let setup = setup_steps(records, &request.install(project));
    let book_step = |verb: &str| shell_line(&["forkbook", "book", verb, "--rerun", "--dir", book]);
    let mut extra_jobs = String::new();
    if request.rocm {
        extra_jobs.push_str(&super::ci_rocm::rocm_drift_job(records, &setup));
    }
    let schedule = request
        .roll
        .as_deref()
        .map(super::roll_ci::schedule_trigger);
    if request.roll.is_some() {
        extra_jobs.push_str(&super::roll_ci::roll_job(&setup, records));
    }
    use Fill::{Ours, Value};
    Ok(fill(
        include_str!("../workflow/book.yml"),
        &[
            ("records_files", Value(&format!("{records}/**"))),
            ("config_file", Value(super::config::CONFIG_FILE)),
            ("book_files", Value(&format!("{book}/**"))),
            ("workflow_file", Value(WORKFLOW_FILE)),
            ("branch", Value(&request.branch)),
            ("schedule", Ours(&schedule.unwrap_or_default())),
            ("setup", Ours(&setup)),
            ("test", Value(&book_step("test"))),
            ("build", Value(&book_step("build"))),
            ("configure_pages", Ours(&CONFIGURE_PAGES.uses())),
            ("upload_pages_artifact", Ours(&UPLOAD_PAGES_ARTIFACT.uses())),
            ("site", Value(&format!("{book}/book"))),
            ("deploy_pages", Ours(&DEPLOY_PAGES.uses())),
            ("extra_jobs", Ours(&extra_jobs)),
        ],
    ))
}

/// The steps every job starts with: the checkout, the object cache, forkbook, the commits. Every
/// cache forkbook keeps (the objects and the results beside them) is in the runner's temporary
/// folder, outside the checkout, so no pull request can bring one; the book's step cache is not
/// read (`--rerun`).
fn setup_steps(records: &str, install: &str) -> String {
    // An expression's string literal is single-quoted, with `''` for a quote. The key is the
    // recorded commits: a new pin or fork commit starts a new entry.
    let upstream = format!("'{}'", format!("{records}/UPSTREAM").replace('\'', "''"));
    let cache_key = format!("forkbook-objects-${{{{ hashFiles({upstream}) }}}}");
    use Fill::{Ours, Value};
    fill(
        include_str!("../workflow/setup_steps.yml"),
        &[
            ("checkout", Ours(&CHECKOUT.uses())),
            ("cache", Ours(&CACHE.uses())),
            ("cache_key", Value(&cache_key)),
            ("install", Value(install)),
        ],
    )
}

/// A folder the workflow names (the book, the records folder): relative, inside the project, and
/// of plain characters only (`A-Z a-z 0-9 . _ - /`), so it means the same to the shell, to
/// GitHub's path filters (where `*`, `?`, `[`, `!` and `+` are patterns) and to Actions
/// expressions (`${{`). `what` names it in the error.
pub fn check_folder(folder: &str, what: &str) -> Result<()> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-/".contains(c);
    if folder.trim_matches('/').is_empty()
        || !folder.chars().all(plain)
        || !relative_inside(Path::new(folder))
    {
        return Err(Error::new(format!(
            "{what} `{}` cannot go into the workflow",
            super::terminal::escape_field(folder)
        ))
        .with_note(
            "name a folder inside the project, relative to it, with only letters, digits, `.`, `_`, `-` and `/` (no `..`)",
        ));
    }
    Ok(())
}

/// What `forkbook ci github` is asked for, each value checked: what the workflow is made of.
#[derive(Debug, Clone)]
pub struct GithubRequest {
    /// The branch whose pushes publish the book.
    pub branch: String,
    /// The book folder, relative to the project root.
    pub book_dir: String,
    /// The shell command that puts `forkbook` on PATH in the runner; the project's default
    /// (`GithubRequest::install`) when left out.
    pub install: Option<String>,
    /// Add the optional ROCm job ([`super::ci_rocm`]).
    pub rocm: bool,
    /// The cron schedule of the roll job (`--roll`), checked; none without it (see
    /// [`super::roll_ci`]).
    pub roll: Option<String>,
}

impl GithubRequest {
    /// Checks every value before it can reach the workflow: the branch is a branch name with no
    /// character GitHub's branch filters read as a pattern (`* ? [ ] ! +`) or that starts an
    /// expression (`$ { }`); the book folder passes [`check_folder`]; the install command (a
    /// shell command by design) holds no `${{` and no control character but line breaks and tabs.
    pub fn new(branch: &str, book_dir: &str, install: Option<&str>) -> Result<GithubRequest> {
        let pattern = |c: char| "*?[]!+${}".contains(c);
        if !git2::Reference::is_valid_name(&format!("refs/heads/{branch}"))
            || branch.contains(pattern)
        {
            return Err(Error::new(format!(
                "`{}` is not a branch name the workflow can filter on",
                branch.escape_debug()
            ))
            .with_note(
                "give the branch whose pushes publish the book, e.g. `--branch main` (no `* ? [ ] ! + $ { }`)",
            ));
        }
        check_folder(book_dir, "the book folder")?;
        if let Some(install) = install {
            let control = |c: char| c.is_control() && c != '\n' && c != '\t';
            if install.contains("${{") || install.contains(control) {
                return Err(Error::new(format!(
                    "the install command `{}` cannot go into the workflow",
                    super::terminal::escape_field(install)
                ))
                .with_note(
                    "GitHub Actions would evaluate its `${{ }}` before the shell runs it; give a plain shell command, with no control characters",
                ));
            }
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

    /// The install command: the one asked for, else the project's own build of forkbook when
    /// the project is forkbook's repository, else `cargo install --locked forkbook`.
    fn install(&self, project: &Project) -> String {
        if let Some(install) = &self.install {
            return install.clone();
        }
        let own = std::fs::read_to_string(project.root.join("Cargo.toml"))
            .is_ok_and(|t| t.lines().any(|l| l.trim() == "name = \"forkbook\""));
        let what = if own { "--path ." } else { "forkbook" };
        format!("cargo install --locked {what}")
    }
}

/// Whether `path` is relative and every part of it a name (no root, no `..`, no leading `.`).
fn relative_inside(path: &Path) -> bool {
    (path.components()).all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// Where `--out` may write: a `.yml` or `.yaml` file inside the project (relative, no `..`, no
/// link on the way), never a record: not in the records folder, not `forkbook.toml`, not the
/// pin file, not in `.git`.
fn check_out(project: &Project, file: &Path) -> Result<()> {
    let refuse = |why: &str| {
        Err(Error::new(format!(
            "`--out {}`: {why}",
            super::terminal::quote_path(&file.to_string_lossy())
        ))
        .with_note(format!(
            "write the workflow to a new `.yml` file inside the project, e.g. the default `{WORKFLOW_FILE}`"
        )))
    };
    if file.as_os_str().is_empty() || !relative_inside(file) {
        return refuse("not a path inside the project (relative, without `..`)");
    }
    if !file.extension().is_some_and(|e| e == "yml" || e == "yaml") {
        return refuse("a workflow is a `.yml` or `.yaml` file");
    }
    let config = &project.config;
    let records = Path::new(config.overlay.dir.trim_end_matches('/'));
    let is_record = file.starts_with(records)
        || file == Path::new(super::config::CONFIG_FILE)
        || config
            .overlay
            .pin_file
            .as_deref()
            .is_some_and(|pin| file == Path::new(pin))
        || file.starts_with(".git");
    if is_record {
        return refuse(
            "that is one of the project's records, which only forkbook's record writers change",
        );
    }
    let mut at = project.root.clone();
    for part in file.components() {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return refuse(&format!(
                "`{}` is a link, which could lead outside the project",
                super::terminal::quote_path(&at.to_string_lossy())
            ));
        }
    }
    Ok(())
}

/// The first line of every workflow forkbook writes: what tells its own file from a project's.
const WORKFLOW_HEADER: &str = "# Written by `forkbook ci github`";

/// Refuses to write over a workflow that forkbook did not write (its first line is not
/// [`WORKFLOW_HEADER`]): it is the project's own.
fn refuse_foreign_workflow(path: &Path, file: &Path) -> Result<()> {
    let Some(bytes) = super::fsutil::read_regular_file(path, "the workflow")? else {
        return Ok(());
    };
    if bytes.starts_with(WORKFLOW_HEADER.as_bytes()) {
        return Ok(());
    }
    Err(Error::new(format!(
        "`{}` exists, and forkbook did not write it: its first line is not forkbook's header",
        super::terminal::quote_path(&file.to_string_lossy())
    ))
    .with_note("write forkbook's workflow beside it with `--out .github/workflows/forkbook.yml`, or move that file away first"))
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
        request: GithubRequest,
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
    let text = github_text(project, request)?;
    let file = out.map_or_else(|| PathBuf::from(WORKFLOW_FILE), Path::to_path_buf);
    check_out(project, &file)?;
    let path = project.root.join(&file);
    if check {
        // Bytes: a file there that is not UTF-8 differs; it is not missing.
        let current = std::fs::read(&path).ok();
        return Ok(Github::Checked {
            up_to_date: current.as_deref() == Some(text.as_bytes()),
            present: current.is_some(),
            file,
        });
    }
    refuse_foreign_workflow(&path, &file)?;
    super::fsutil::replace_file(&path, text.as_bytes())?;
    Ok(Github::Wrote {
        file,
        install: request.install(project),
        records_dir: project.config.overlay.dir.clone(),
        request: request.clone(),
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
                install,
                records_dir,
                request,
            } => {
                let mut text = format!(
                    "wrote {}\n  pull requests touching `{records_dir}`, forkbook.toml or `{}`: \
                 `forkbook book test`\n  pushes to `{}`: the book built and published to GitHub \
                 Pages (Settings > Pages > Source: GitHub Actions)\n  the runner gets forkbook \
                 with `{}` (`--install COMMAND` changes it)\n",
                    file.display(),
                    request.book_dir,
                    request.branch,
                    install
                );
                if let Some(cron) = &request.roll {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// [`refuse_foreign_workflow`] knows forkbook's file by its first line.
    #[test]
    fn the_workflow_template_starts_with_forkbook_s_header() {
        assert!(include_str!("../workflow/book.yml").starts_with(WORKFLOW_HEADER));
    }
}
