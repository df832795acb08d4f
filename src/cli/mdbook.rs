//! `forkbook mdbook`: the preprocessor protocol, so the stock `mdbook build` and `mdbook test`
//! run the book's steps through this binary (book.toml: `[preprocessor.forkbook]`
//! `command = "forkbook mdbook"`).
//!
//! mdBook first asks `forkbook mdbook supports RENDERER` (exit 0: yes), then pipes
//! `[context, book]` as JSON on stdin and reads the processed book from stdout.

use super::{Ctx, OK, PROBLEMS};
use crate::book::BookRunner;
use crate::engine::{Error, Result};
use forkbook_preprocessor::{handle_stdio, supports_renderer, ForkbookPreprocessor, GateFailure};

/// The mdBook preprocessor protocol (for book.toml's `command = "forkbook mdbook"`)
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<MdbookCommand>,
}

#[derive(Debug, clap::Subcommand)]
pub enum MdbookCommand {
    /// Exit 0 when the book's steps run for RENDERER (html, test), 1 otherwise
    Supports {
        /// The renderer mdBook asks about
        renderer: String,
    },
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    if let Some(MdbookCommand::Supports { renderer }) = &args.command {
        return Ok(if supports_renderer(renderer) {
            OK
        } else {
            PROBLEMS
        });
    }
    // mdBook runs this in the book's folder: the project is found above it.
    let project = ctx.project()?;
    let runner = BookRunner::new(project.root.clone(), ctx.overrides(), super::run_for_book);
    let pre = ForkbookPreprocessor::new(runner);
    match handle_stdio(&pre, std::io::stdin().lock(), &mut *ctx.out) {
        Ok(()) => Ok(OK),
        Err(e) => match e.downcast_ref::<GateFailure>() {
            // mdBook shows our stderr, then says the preprocessor failed.
            Some(gate) => {
                eprintln!("error: {gate}");
                Ok(PROBLEMS)
            }
            None if e.to_string().contains("parse the input") => {
                let cause = e.root_cause().to_string();
                Err(Error::new(format!("failed to read mdbook's input on stdin: {cause}")).with_note(
                    "`forkbook mdbook` is run by mdbook with the book on stdin; build with `forkbook book build`",
                ))
            }
            None => Err(Error::new(format!("{e:#}")).context("the forkbook preprocessor failed")),
        },
    }
}
