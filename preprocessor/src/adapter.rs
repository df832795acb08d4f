//! The mdBook side: [`ForkbookPreprocessor`] runs every chapter's steps and directives through a
//! [`StepRunner`], splices the results, and fails the build when the gate does.
//!
//! Settings come from book.toml:
//!
//! ```toml
//! [preprocessor.forkbook]
//! command = "forkbook mdbook"   # for the stock mdbook binary
//! allow-shell = true            # run `sh,run` blocks (off by default)
//! cache-dir = ".step-cache"     # relative to the book's root
//! rerun = false                 # ignore cached results
//! [preprocessor.forkbook.vars]
//! candidate_pin = "846d176"
//! ```
//!
//! Variables are overridden by `FORKBOOK_VAR_<name>` in the environment, then by
//! [`ForkbookPreprocessor::with_vars`]; `FORKBOOK_RERUN=1` forces a rerun.

use crate::blocks::{self, Block, Directive};
use crate::cache::StepCache;
use crate::render::{self, Shown};
use crate::{GateFinding, Step, StepKind, StepOutcome, StepRunner};
use forkbook_records::finding::Layout;
use mdbook_preprocessor::book::{Book, Chapter};
use mdbook_preprocessor::config::Config;
use mdbook_preprocessor::errors::{Error, Result};
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The preprocessor's name, the `forkbook` of `[preprocessor.forkbook]`.
pub const NAME: &str = "forkbook";

/// Lines of a failing step's output repeated in the build's error message: this many that
/// mention errors or conflicts, and this many from its end.
const SUMMARY_LINES: usize = 6;

/// Renderers whose books get the steps run: the HTML book and `mdbook test`.
pub fn supports_renderer(renderer: &str) -> bool {
    matches!(renderer, "html" | "test")
}

/// `[preprocessor.forkbook]` in book.toml.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
struct Settings {
    allow_shell: bool,
    vars: BTreeMap<String, serde_json::Value>,
    cache_dir: Option<PathBuf>,
    rerun: bool,
}

/// An mdBook preprocessor for any [`StepRunner`].
pub struct ForkbookPreprocessor<R> {
    runner: R,
    vars: BTreeMap<String, String>,
    rerun: bool,
    tally: Arc<Mutex<Tally>>,
    /// Hand a failed gate to [`ForkbookPreprocessor::gate_handle`] and give mdBook the book with
    /// the failures marked, so the pages are written (`None`: fail the run, as `mdbook` needs).
    failed_gate: Option<Arc<Mutex<Option<GateFailure>>>>,
    /// The renderer the steps are run for, when it is not the one mdBook renders (`test`: the
    /// gate's strictness, with the HTML pages written all the same).
    run_for: Option<String>,
}

/// What the last run did with the book's steps, for the summary line a build ends with. Every
/// step is counted once, in the one word its box shows: passed, failed, skipped (the reason is
/// in the box) or not run (the block could not be read; the build fails naming it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
    /// Failed steps that are gated: these fail the build.
    pub gated_failed: usize,
    pub skipped: usize,
    pub not_run: usize,
    /// Results taken from the step cache (counted in the words above too).
    pub cached: usize,
}

impl Tally {
    pub fn steps(&self) -> usize {
        self.passed + self.failed + self.skipped + self.not_run
    }

    fn count(&mut self, step: &Step, outcome: &StepOutcome, cached: bool) {
        match outcome {
            StepOutcome::Ran { exit, .. } if *exit == step.attrs.expect => self.passed += 1,
            StepOutcome::Ran { .. } => {
                self.failed += 1;
                self.gated_failed += usize::from(step.attrs.gate);
            }
            StepOutcome::Skipped { .. } => self.skipped += 1,
        }
        self.cached += usize::from(cached);
    }
}

impl std::fmt::Display for Tally {
    /// `12 steps: 8 ran (7 passed, 1 failed), 4 skipped, 0 not run; 3 results from the cache`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} ran ({} passed, {} failed), {} skipped, {} not run; {} from the cache",
            render::plural(self.steps(), "step", "steps"),
            self.passed + self.failed,
            self.passed,
            self.failed,
            self.skipped,
            self.not_run,
            render::plural(self.cached, "result", "results")
        )
    }
}

impl<R: StepRunner> ForkbookPreprocessor<R> {
    pub fn new(runner: R) -> Self {
        ForkbookPreprocessor {
            runner,
            vars: BTreeMap::new(),
            rerun: false,
            tally: Arc::default(),
            failed_gate: None,
            run_for: None,
        }
    }

    /// A failed gate no longer fails mdBook's run: the chapters get the failures marked (a box
    /// at the top of each chapter with a problem, and all of them on the first chapter), mdBook
    /// writes the pages, and the failure waits in the returned handle for the caller to report
    /// and fail on. So a failing gate leaves pages to open.
    pub fn with_pages_on_failure(mut self) -> (Self, Arc<Mutex<Option<GateFailure>>>) {
        let handle = Arc::new(Mutex::new(None));
        self.failed_gate = Some(Arc::clone(&handle));
        (self, handle)
    }

    /// Run the steps as for `renderer` (`test`) whichever renderer mdBook runs.
    pub fn with_steps_run_for(mut self, renderer: &str) -> Self {
        self.run_for = Some(renderer.to_string());
        self
    }

    /// Where each run leaves its [`Tally`]; read it after mdBook has run the preprocessor.
    pub fn tally_handle(&self) -> Arc<Mutex<Tally>> {
        Arc::clone(&self.tally)
    }

    /// Variables that override book.toml's (the command line's `--var k=v`).
    pub fn with_vars(mut self, vars: BTreeMap<String, String>) -> Self {
        self.vars = vars;
        self
    }

    /// Ignore cached results and run every step.
    pub fn with_rerun(mut self, rerun: bool) -> Self {
        self.rerun = rerun;
        self
    }

    pub fn runner(&self) -> &R {
        &self.runner
    }

    fn session(&self, ctx: &PreprocessorContext) -> Result<Session<'_, R>> {
        let settings: Settings = ctx
            .config
            .get(&format!("preprocessor.{NAME}"))?
            .unwrap_or_default();
        let vars = filled_vars(&settings.vars, &self.vars);
        let rerun = self.rerun || settings.rerun || env_flag("FORKBOOK_RERUN");
        let cache_dir = ctx.root.join(
            settings
                .cache_dir
                .as_deref()
                .unwrap_or(Path::new(".step-cache")),
        );
        Ok(Session {
            runner: &self.runner,
            vars,
            allow_shell: settings.allow_shell,
            cache: StepCache::new(cache_dir, rerun, self.runner.cache_secret()),
            root: ctx.root.clone(),
            src: ctx.config.book.src.clone(),
            renderer: self.run_for.clone().unwrap_or_else(|| ctx.renderer.clone()),
            problems: Vec::new(),
            directive_sites: BTreeMap::new(),
            tally: Tally::default(),
        })
    }
}

impl<R: StepRunner> Preprocessor for ForkbookPreprocessor<R> {
    fn name(&self) -> &str {
        NAME
    }

    fn run(&self, ctx: &PreprocessorContext, mut book: Book) -> Result<Book> {
        let mut session = self.session(ctx)?;
        // Before anything is run or rendered: the site must hold the book and nothing else.
        crate::bounds::check(&ctx.root, &ctx.config, &book, &session.vars).map_err(Error::msg)?;
        book.for_each_chapter_mut(|chapter| session.chapter(chapter));
        let findings = self.runner.gate_findings(&session.renderer);
        if let Ok(mut tally) = self.tally.lock() {
            *tally = session.tally.clone();
        }
        let src = session.src.clone();
        let problems = session.problems_with(&findings);
        if problems.is_empty() {
            return Ok(book);
        }
        let failure = GateFailure {
            problems: problems.iter().map(|(_, text)| text.clone()).collect(),
        };
        let Some(handle) = &self.failed_gate else {
            return Err(Error::new(failure));
        };
        mark_failures(&mut book, &src, &problems);
        if let Ok(mut slot) = handle.lock() {
            *slot = Some(failure);
        }
        Ok(book)
    }

    fn supports_renderer(&self, renderer: &str) -> Result<bool> {
        Ok(supports_renderer(renderer))
    }
}

/// Answers mdBook's preprocessor protocol on stdin and stdout: reads `[context, book]`, writes
/// the processed book. (`supports RENDERER` is the caller's: exit 0 when
/// [`supports_renderer`] says so.)
pub fn handle_stdio(pre: &dyn Preprocessor, input: impl Read, output: impl Write) -> Result<()> {
    let (ctx, book) = mdbook_preprocessor::parse_input(input)?;
    if ctx.mdbook_version != mdbook_preprocessor::MDBOOK_VERSION {
        eprintln!(
            "warning: the `{NAME}` preprocessor was built against mdbook {} and is called by mdbook {}",
            mdbook_preprocessor::MDBOOK_VERSION,
            ctx.mdbook_version
        );
    }
    let book = pre.run(&ctx, book)?;
    serde_json::to_writer(output, &book)?;
    Ok(())
}

/// One run over a book: the settings in force and the problems found so far.
struct Session<'a, R> {
    runner: &'a R,
    vars: BTreeMap<String, String>,
    allow_shell: bool,
    cache: StepCache,
    root: PathBuf,
    src: PathBuf,
    renderer: String,
    /// Each problem with the chapter file it is in.
    problems: Vec<(PathBuf, String)>,
    /// Where each directive name was first used (`register` -> `src/register.md:5`).
    directive_sites: BTreeMap<String, String>,
    tally: Tally,
}

impl<R: StepRunner> Session<'_, R> {
    fn chapter(&mut self, chapter: &mut Chapter) {
        let Some(source) = &chapter.source_path else {
            return;
        };
        let file = self.src.join(source);
        let content = std::mem::take(&mut chapter.content);
        let scan = blocks::scan(&content, &self.vars);
        for error in &scan.errors {
            self.problem(&file, error.line, &error.message);
        }
        let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for block in &scan.blocks {
            let text = self
                .step(&file, block)
                .unwrap_or_else(|| content[block.range.clone()].to_string());
            edits.push((block.range.clone(), text));
        }
        for directive in &scan.directives {
            edits.push((directive.range.clone(), self.directive(&file, directive)));
        }
        edits.sort_by_key(|(range, _)| range.start);
        chapter.content = splice(&content, &edits, &self.vars);
    }

    /// The replacement for one block, or `None` (keep the block) when it cannot run.
    fn step(&mut self, file: &Path, block: &Block) -> Option<String> {
        let step = match self.build_step(file, block) {
            Ok(step) => step,
            Err(message) => {
                self.problem(file, block.line, &message);
                self.tally.not_run += 1;
                return None;
            }
        };
        let fingerprint = self.runner.fingerprint();
        let (outcome, cached) = self.outcome(&step, &fingerprint);
        self.tally.count(&step, &outcome, cached);
        self.check_gate(&step, &outcome);
        let html = render::step_html(&Shown {
            step: &step,
            outcome: &outcome,
            fingerprint: &fingerprint,
            cached,
        });
        let shown_block = if step.attrs.hide {
            String::new()
        } else {
            code_block(&step)
        };
        Some(indent(&format!("{shown_block}\n{html}\n\n"), &block.indent))
    }

    fn build_step(&self, file: &Path, block: &Block) -> Result<Step, String> {
        let mut missing = Vec::new();
        let text = blocks::substitute(&block.body, &self.vars, &mut missing);
        if let Some(name) = missing.first() {
            return Err(format!(
                "undefined variable `{name}`\n  note: define it under `[preprocessor.{NAME}.vars]` in book.toml \
                 or pass `--var {name}=VALUE`"
            ));
        }
        let command = match block.kind {
            StepKind::Forkbook => forkbook_command(&text)?,
            StepKind::Shell => text.trim_end().to_string(),
        };
        Ok(Step {
            kind: block.kind,
            command,
            attrs: block.attrs.clone(),
            chapter: file.to_path_buf(),
            line: block.line,
            book_root: self.root.clone(),
            renderer: self.renderer.clone(),
        })
    }

    fn outcome(&self, step: &Step, fingerprint: &crate::Fingerprint) -> (StepOutcome, bool) {
        if step.kind == StepKind::Shell && !self.allow_shell {
            let reason = format!(
                "shell steps are off in this book; set `allow-shell = true` under `[preprocessor.{NAME}]` \
                 in book.toml to run them"
            );
            return (StepOutcome::Skipped { reason }, false);
        }
        let key = StepCache::key(step, fingerprint);
        if let Some(outcome) = self.cache.get(&key) {
            return (outcome, true);
        }
        let outcome = self.runner.run(step);
        if let Err(e) = self.cache.put(&key, step, &outcome) {
            eprintln!(
                "warning: could not cache the result in `{}`: {e}",
                self.cache.dir().display()
            );
        }
        (outcome, false)
    }

    fn check_gate(&mut self, step: &Step, outcome: &StepOutcome) {
        let StepOutcome::Ran { exit, output, .. } = outcome else {
            return;
        };
        if !step.attrs.gate || *exit == step.attrs.expect {
            return;
        }
        let mut message = format!(
            "gated step `{}` exited {exit}, expected {}",
            step.display_command().trim_end(),
            step.attrs.expect
        );
        for line in render::summary(output, SUMMARY_LINES) {
            message.push_str(&format!("\n  | {line}"));
        }
        message.push_str(&format!(
            "\n  note: fix what the step reports (run the command to see all of it), then build again; \
             if exit status {exit} is what this step should give, mark the block `expect={exit}`"
        ));
        self.problem(&step.chapter, step.line, &message);
    }

    fn directive(&mut self, file: &Path, directive: &Directive) -> String {
        let site = format!("{}:{}", display(file), directive.line);
        self.directive_sites
            .entry(directive.name.clone())
            .or_insert(site);
        match self.directive_text(directive) {
            Ok(text) => render::inert_markdown(&text),
            Err(message) => {
                let message = format!("directive `{}` failed: {message}", directive.name);
                self.problem(file, directive.line, &message);
                String::new()
            }
        }
    }

    /// A directive's text, from the cache when this fingerprint made it before (a report is a
    /// whole verify; a fully cached build should run nothing). Failures are never stored.
    fn directive_text(&self, directive: &Directive) -> Result<String, String> {
        let fingerprint = self.runner.fingerprint();
        let key = StepCache::directive_key(&directive.name, &directive.args, &fingerprint);
        if let Some(text) = self.cache.get_text(&key) {
            return Ok(text);
        }
        let text = self.runner.directive(&directive.name, &directive.args)?;
        let label = format!(
            "{{{{#forkbook {} {}}}}}",
            directive.name,
            directive.args.join(" ")
        );
        if let Err(e) = self.cache.put_text(&key, &label, &text) {
            eprintln!(
                "warning: could not cache the directive's text in `{}`: {e}",
                self.cache.dir().display()
            );
        }
        Ok(text)
    }

    fn problem(&mut self, file: &Path, line: usize, message: &str) {
        self.problems.push((
            file.to_path_buf(),
            format!("error: {}:{line}: {message}", display(file)),
        ));
    }

    /// Every problem of the run: the steps' and directives', then the book-wide findings, each
    /// with the chapter file that shows it (a finding without one: the first chapter's, empty).
    fn problems_with(mut self, findings: &[GateFinding]) -> Vec<(PathBuf, String)> {
        for finding in findings {
            let site = finding
                .shown_by
                .as_ref()
                .and_then(|name| self.directive_sites.get(name));
            let file = site
                .and_then(|site| site.rsplit_once(':'))
                .map(|(file, _)| PathBuf::from(file))
                .unwrap_or_default();
            let shown = site.map(|site| format!(" (shown in {site})"));
            let message = finding
                .finding
                .render_as(Layout::SeverityFirst, &shown.unwrap_or_default());
            self.problems.push((file, message));
        }
        self.problems
    }
}

/// Puts the gate's problems on the pages: each chapter with a problem gets a box of its own at
/// its top, and the first chapter a box with every problem, so the book's first page says why
/// the gate failed.
fn mark_failures(book: &mut Book, src: &Path, problems: &[(PathBuf, String)]) {
    let all: Vec<String> = problems.iter().map(|(_, text)| text.clone()).collect();
    let mut first = true;
    book.for_each_chapter_mut(|chapter| {
        let Some(source) = &chapter.source_path else {
            return;
        };
        let file = src.join(source);
        let here: Vec<String> = problems
            .iter()
            .filter(|(at, _)| display(at) == display(&file))
            .map(|(_, text)| text.clone())
            .collect();
        let shown = if first { &all } else { &here };
        if !shown.is_empty() {
            let banner = render::gate_failure_html(shown, all.len(), first);
            chapter.content = format!("{banner}\n\n{}", chapter.content);
        }
        first = false;
    });
}

/// The error a run fails with when the gate does: every problem, each naming its file and line
/// (and its check, for book-wide findings). Callers can tell it from a broken book with
/// `error.downcast_ref::<GateFailure>()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateFailure {
    pub problems: Vec<String>,
}

impl std::fmt::Display for GateFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let all = render::plural(self.problems.len(), "problem", "problems");
        write!(
            f,
            "the book's gate failed with {all}\n\n{}",
            self.problems.join("\n\n")
        )
    }
}

impl std::error::Error for GateFailure {}

/// The command of a `forkbook` block: one line (`\` continues it), starting with `forkbook`.
fn forkbook_command(text: &str) -> Result<String, String> {
    let joined = text.replace("\\\n", " ");
    let lines: Vec<&str> = joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let [line] = lines.as_slice() else {
        return Err(format!(
            "a `forkbook` block holds one command line, found {}",
            lines.len()
        ));
    };
    let line = line.strip_prefix("$ ").unwrap_or(line);
    match line.split_once(char::is_whitespace) {
        Some(("forkbook", rest)) => Ok(rest.trim().to_string()),
        None if line == "forkbook" => Ok(String::new()),
        _ => Err(format!(
            "a `forkbook` block must start with `forkbook`, found `{line}`"
        )),
    }
}

/// The block as the reader sees it: the command with variables filled in.
fn code_block(step: &Step) -> String {
    let (lang, text) = match step.kind {
        StepKind::Forkbook => ("console", format!("$ {}", step.display_command())),
        StepKind::Shell => ("sh", step.command.clone()),
    };
    let fence = "`".repeat(longest_backtick_run(&text).max(2) + 1);
    format!("{fence}{lang}\n{text}\n{fence}\n")
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// Rebuilds a chapter: edits replace their ranges, the prose between gets variables filled in.
fn splice(
    content: &str,
    edits: &[(std::ops::Range<usize>, String)],
    vars: &BTreeMap<String, String>,
) -> String {
    let mut out = String::with_capacity(content.len());
    let mut at = 0;
    for (range, text) in edits {
        out.push_str(&blocks::substitute_known(&content[at..range.start], vars));
        out.push_str(text);
        at = range.end;
    }
    out.push_str(&blocks::substitute_known(&content[at..], vars));
    out
}

/// Prefixes every line but the first (which follows the original indentation) with `prefix`.
fn indent(text: &str, prefix: &str) -> String {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default().to_string();
    lines.fold(first, |out, line| out + prefix + line)
}

fn display(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The variables a run fills in, book.toml's, the environment's and `overrides` (the command
/// line's), each over the one before; the book's bounds are read with them filled in.
pub fn vars(
    config: &Config,
    overrides: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>> {
    let settings: Settings = config
        .get(&format!("preprocessor.{NAME}"))?
        .unwrap_or_default();
    Ok(filled_vars(&settings.vars, overrides))
}

fn filled_vars(
    book_toml: &BTreeMap<String, serde_json::Value>,
    overrides: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut vars: BTreeMap<String, String> = (book_toml.iter())
        .map(|(k, v)| (k.clone(), value_text(v)))
        .collect();
    vars.extend(env_vars());
    vars.extend(overrides.clone());
    vars
}

/// `FORKBOOK_VAR_<name>=value` from the environment.
fn env_vars() -> BTreeMap<String, String> {
    std::env::vars()
        .filter_map(|(k, v)| {
            k.strip_prefix("FORKBOOK_VAR_")
                .map(|name| (name.to_string(), v))
        })
        .collect()
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forkbook_command_lines() {
        assert_eq!(
            forkbook_command("forkbook retarget x --check\n"),
            Ok("retarget x --check".into())
        );
        assert_eq!(forkbook_command("$ forkbook status\n"), Ok("status".into()));
        assert_eq!(
            forkbook_command("forkbook sync \\\n  --check\n"),
            Ok("sync    --check".into())
        );
        assert!(forkbook_command("git status\n").is_err());
        assert!(forkbook_command("forkbook a\nforkbook b\n").is_err());
        assert!(forkbook_command("forkbooks a\n").is_err());
    }

    #[test]
    fn supports_html_and_test_only() {
        assert!(supports_renderer("html"));
        assert!(supports_renderer("test"));
        assert!(!supports_renderer("markdown"));
    }

    #[test]
    fn code_block_fence_outlasts_backticks_in_the_script() {
        let step = Step {
            kind: StepKind::Shell,
            command: "echo '````'".into(),
            attrs: Default::default(),
            chapter: "src/a.md".into(),
            line: 1,
            book_root: ".".into(),
            renderer: "html".into(),
        };
        assert!(code_block(&step).starts_with("`````sh\n"));
    }
}
