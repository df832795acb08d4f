//! `forkbook book init|build|test|serve`: the executable book. `init` writes a project's book
//! (`src/book/init.rs`). `build` and `test` run in process with mdbook-driver and the forkbook
//! preprocessor registered, so the gate needs no `mdbook` binary; `serve` is the stock `mdbook serve` (a well-kept server with live reload) with this forkbook
//! as its preprocessor.
//!
//! Exit status 1 when the book's gate fails (a gated step, a check error), 2 when the book
//! cannot be loaded or rendered, or reaches outside its folder.

use super::{Ctx, OK, PROBLEMS};
use crate::book::BookRunner;
use crate::engine::project::Overrides;
use crate::engine::{Error, Result};
use forkbook_preprocessor::{ForkbookPreprocessor, GateFailure, Tally};
use mdbook_driver::MDBook;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Build, test or serve the executable book (the procedures, with every step run)
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: BookCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum BookCommand {
    /// Write the project's book: book.toml (forkbook as its preprocessor, the variables from
    /// forkbook.toml) and the procedure chapters; no file that exists is written over
    Init {
        /// The book folder to write [default: `book` in the project]
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Run every step and render the HTML book
    Build(BookArgs),
    /// Run every step and apply the gate (what CI runs); the pages are written, failures marked
    Test(BookArgs),
    /// Serve the HTML book on localhost with `mdbook serve` (rebuilt on every change), this
    /// forkbook running its steps
    Serve {
        #[command(flatten)]
        book: BookArgs,
        /// The port to listen on (127.0.0.1 only)
        #[arg(long, default_value_t = 3000)]
        port: u16,
    },
}

/// What every book command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct BookArgs {
    /// The book folder (holding book.toml); default: `book` in the project
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Set a variable of the procedures, over book.toml's (repeatable)
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
    pub vars: Vec<(String, String)>,
    /// Run every step again instead of reusing cached results
    #[arg(long)]
    pub rerun: bool,
}

fn parse_var(text: &str) -> std::result::Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("expected `NAME=VALUE`, found `{text}`")),
    }
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    match &args.command {
        BookCommand::Init { dir } => {
            let project = ctx.project()?;
            let init = crate::book::init::init(&project, dir.as_deref())?;
            ctx.emit(&init)
        }
        BookCommand::Build(book) => build(book, ctx).map(|(code, _)| code),
        BookCommand::Test(book) => test(book, ctx),
        BookCommand::Serve { book, port } => serve(book, *port, ctx),
    }
}

/// Loads the book with the forkbook preprocessor registered over book.toml's command; the
/// handle holds what the steps did once the book is built.
fn load(args: &BookArgs, ctx: &Ctx, run_for: Option<&str>) -> Result<Loaded> {
    let project = ctx.project()?;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| project.root.join("book"));
    let mut book = MDBook::load(&dir).map_err(|e| {
        Error::new(format!(
            "failed to load the book `{}`: {e:#}",
            dir.display()
        ))
    })?;
    let vars: BTreeMap<String, String> = args.vars.iter().cloned().collect();
    let runner = BookRunner::new(project.root.clone(), ctx.overrides(), super::run_for_book);
    let mut preprocessor = ForkbookPreprocessor::new(runner)
        .with_vars(vars)
        .with_rerun(args.rerun);
    if let Some(renderer) = run_for {
        preprocessor = preprocessor.with_steps_run_for(renderer);
    }
    let tally = preprocessor.tally_handle();
    let (preprocessor, gate) = preprocessor.with_pages_on_failure();
    // Same name as `[preprocessor.forkbook]`, so this replaces the `forkbook mdbook` command.
    book.with_preprocessor(preprocessor);
    Ok(Loaded { book, tally, gate })
}

/// A book ready to build: what its steps did, and the gate's failure once it has run.
struct Loaded {
    book: MDBook,
    tally: Arc<Mutex<Tally>>,
    gate: Arc<Mutex<Option<GateFailure>>>,
}

fn build(args: &BookArgs, ctx: &mut Ctx) -> Result<(i32, Option<PathBuf>)> {
    let loaded = load(args, ctx, None)?;
    let html = loaded.book.build_dir_for("html");
    let passed = format!("built the book into `{}`", html.display());
    let code = build_gated(&loaded, &html, &passed, ctx)?;
    Ok((code, (code == OK).then_some(html)))
}

/// The gate with `mdbook test`'s strictness (its steps run as for the renderer `test`: missing
/// objects fail rather than skip), and the HTML pages written all the same, so a failing gate
/// leaves pages to open with the failures marked.
fn test(args: &BookArgs, ctx: &mut Ctx) -> Result<i32> {
    let loaded = load(args, ctx, Some("test"))?;
    let html = loaded.book.build_dir_for("html");
    build_gated(&loaded, &html, "the book's gate passed", ctx)
}

/// Builds the loaded book into `html` and says `passed` when its gate passes; exit 1 with the
/// gate's problems when it fails (anything else failing the build is the tool failing).
fn build_gated(loaded: &Loaded, html: &Path, passed: &str, ctx: &mut Ctx) -> Result<i32> {
    let built = loaded.book.build();
    // The summary line every build and test ends with, so a book whose steps were all skipped
    // does not read as a book whose steps all passed.
    let tally = loaded.tally.lock().map(|t| t.clone()).unwrap_or_default();
    writeln!(ctx.out, "{tally}")?;
    if let Err(e) = built {
        let Some(gate) = e.downcast_ref::<GateFailure>() else {
            return Err(Error::new(format!("{e:#}")));
        };
        writeln!(ctx.out, "error: {gate}")?;
        return Ok(PROBLEMS);
    }
    let Some(gate) = loaded.gate.lock().ok().and_then(|mut slot| slot.take()) else {
        writeln!(ctx.out, "{passed}")?;
        return Ok(OK);
    };
    // Say where the pages that show the gate's problems are.
    writeln!(
        ctx.out,
        "wrote the book into `{}`, each failure marked on its page",
        html.display()
    )?;
    writeln!(ctx.out, "error: {gate}")?;
    Ok(PROBLEMS)
}

/// `mdbook serve` on the book, on 127.0.0.1, with this forkbook (and this project, its cache and
/// remotes, the `--var`s and `--rerun`) as its `forkbook` preprocessor. mdBook's server (axum)
/// answers any number of clients, idle ones included; the preprocessor refuses a book that
/// reaches outside its folder on every rebuild, as in `build` and `test`. On Unix this process
/// becomes mdbook, so stopping it stops the server.
fn serve(args: &BookArgs, port: u16, ctx: &mut Ctx) -> Result<i32> {
    let Loaded { book, .. } = load(args, ctx, None)?;
    let overrides: std::collections::BTreeMap<String, String> = args.vars.iter().cloned().collect();
    let vars = forkbook_preprocessor::adapter::vars(&book.config, &overrides)
        .map_err(|e| Error::new(format!("book.toml: {e}")))?;
    forkbook_preprocessor::bounds::check(&book.root, &book.config, &book.book, &vars)
        .map_err(Error::new)?;
    let mdbook = crate::book::find_on_path("mdbook").ok_or_else(|| {
        Error::new("`forkbook book serve` runs `mdbook serve`, and `mdbook` is not on PATH")
            .with_note(
                "install it with `cargo install mdbook --version 0.5.4 --locked`, or build with \
                 `forkbook book build` and open the book's `book/index.html`",
            )
    })?;
    let preprocessor = preprocessor_command(&ctx.project()?.root)?;
    let mut command = std::process::Command::new(&mdbook);
    command
        .args([
            "serve",
            "--hostname",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .arg(&book.root)
        // mdBook reads `MDBOOK_<key>` over book.toml: this binary, whatever PATH finds.
        .env("MDBOOK_PREPROCESSOR__FORKBOOK__COMMAND", preprocessor)
        .envs(preprocessor_settings(args, &ctx.overrides()));
    writeln!(
        ctx.out,
        "serving `{}` with `{}` on http://127.0.0.1:{port}/ (stop with Ctrl-C)",
        book.root.display(),
        mdbook.display()
    )?;
    ctx.out.flush()?;
    let failed =
        |e: std::io::Error| Error::new(format!("failed to run `{}`: {e}", mdbook.display()));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        Err(failed(command.exec()))
    }
    #[cfg(not(unix))]
    {
        let status = command.status().map_err(failed)?;
        Ok(if status.success() { OK } else { super::FAILED })
    }
}

/// This forkbook, on this project, as the shell command mdBook runs as its preprocessor.
fn preprocessor_command(project_root: &Path) -> Result<String> {
    let this = std::env::current_exe()
        .map_err(|e| Error::new(format!("failed to find this forkbook executable: {e}")))?;
    let words = [
        this.to_string_lossy().into_owned(),
        "--root".into(),
        project_root.to_string_lossy().into_owned(),
        "mdbook".into(),
    ];
    shlex::try_join(words.iter().map(String::as_str))
        .map_err(|e| Error::new(format!("failed to name this forkbook to mdbook: {e}")))
}

/// The `--var`s, `--rerun` and the global options of this run, as the `FORKBOOK_*` environment
/// the preprocessor reads: mdBook starts it anew on every rebuild, with no command line of ours.
fn preprocessor_settings(args: &BookArgs, overrides: &Overrides) -> Vec<(String, OsString)> {
    let flag = |on: bool| on.then(|| OsString::from("1"));
    let settings = [
        ("FORKBOOK_RERUN", flag(args.rerun)),
        ("FORKBOOK_CACHE", overrides.cache.clone().map(Into::into)),
        (
            "FORKBOOK_FORK_URL",
            overrides.fork_url.clone().map(Into::into),
        ),
        (
            "FORKBOOK_UPSTREAM_URL",
            overrides.upstream_url.clone().map(Into::into),
        ),
        ("FORKBOOK_OFFLINE", flag(overrides.offline)),
    ];
    let vars = args
        .vars
        .iter()
        .map(|(name, value)| (format!("FORKBOOK_VAR_{name}"), value.into()));
    let named = settings
        .into_iter()
        .filter_map(|(name, value)| Some((name.to_string(), value?)));
    vars.chain(named).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vars_are_name_equals_value() {
        assert_eq!(parse_var("pin=abc=d"), Ok(("pin".into(), "abc=d".into())));
        assert!(parse_var("=x").is_err());
        assert!(parse_var("novalue").is_err());
    }
}
