//! The preprocessor over an in-memory book with a fake runner: what a chapter becomes, when the
//! gate fails and what it says, and when the cache answers.

use forkbook_preprocessor::{
    Fingerprint, ForkbookPreprocessor, GateFinding, Step, StepKind, StepOutcome, StepRunner,
};
use forkbook_records::finding::{Finding, Severity};
use mdbook_preprocessor::book::{Book, BookItem, Chapter};
use mdbook_preprocessor::config::Config;
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};
use std::cell::{Cell, RefCell};
use std::str::FromStr;
use std::time::Duration;

/// Answers from the command text: `fail` exits 1, `hostile` prints a script tag, `needs-gpu`
/// is skipped; everything else exits 0 echoing its command.
#[derive(Default)]
struct FakeRunner {
    calls: Cell<usize>,
    seen: RefCell<Vec<Step>>,
    findings: Vec<GateFinding>,
}

impl StepRunner for FakeRunner {
    fn run(&self, step: &Step) -> StepOutcome {
        self.calls.set(self.calls.get() + 1);
        self.seen.borrow_mut().push(step.clone());
        let ran = |exit, output: &str| StepOutcome::Ran {
            exit,
            duration: Duration::from_millis(30),
            output: output.to_string(),
            view: None,
        };
        match step.command.as_str() {
            c if c.starts_with("fail") => {
                ran(1, "conflict in mlx/device.cpp\n3 files merged, 1 conflict")
            }
            "hostile" => ran(0, "error: <script>alert(1)</script> in `a<b>.cpp`"),
            "needs-gpu" => StepOutcome::Skipped {
                reason: "`hipcc` is not on PATH".into(),
            },
            c => ran(0, &format!("ran `{c}`")),
        }
    }

    fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            commits: vec![
                ("fork".into(), "75915908".into()),
                ("pin".into(), "846d176".into()),
            ],
            tool_version: "test".into(),
            extra: String::new(),
            tools: Vec::new(),
        }
    }

    fn cache_secret(&self) -> Option<forkbook_records::cache_entry::Secret> {
        Some(forkbook_records::cache_entry::Secret::from_bytes([5; 32]))
    }

    fn directive(&self, name: &str, args: &[String]) -> Result<String, String> {
        match name {
            "hostile" => Ok(
                "| file |\n|---|\n| <script>alert(1)</script> {{#include /etc/passwd}} |\n".into(),
            ),
            "register" => Ok(format!(
                "| entry | state |\n|---|---|\n| 1 {} | proposed |\n",
                args.join(" ")
            )),
            other => Err(format!("unknown directive `{other}`")),
        }
    }

    fn gate_findings(&self, _renderer: &str) -> Vec<GateFinding> {
        self.findings.clone()
    }
}

const BOOK_TOML: &str = r#"
[book]
title = "t"
[preprocessor.forkbook]
command = "forkbook mdbook"
[preprocessor.forkbook.vars]
candidate_pin = "846d176"
fork = "75915908"
"#;

struct Fixture {
    dir: tempfile::TempDir,
    toml: String,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
            toml: BOOK_TOML.to_string(),
        }
    }

    fn allow_shell(mut self) -> Fixture {
        self.toml = self.toml.replace(
            "command = \"forkbook mdbook\"",
            "command = \"x\"\nallow-shell = true",
        );
        self
    }

    fn run(&self, pre: &ForkbookPreprocessor<FakeRunner>, chapter: &str) -> Result<String, String> {
        let config = Config::from_str(&self.toml).unwrap();
        let ctx = PreprocessorContext::new(self.dir.path().to_path_buf(), config, "html".into());
        let book = Book::new_with_items(vec![BookItem::Chapter(Chapter::new(
            "Pin bump",
            chapter.to_string(),
            "pin-bump.md",
            vec![],
        ))]);
        let book = pre.run(&ctx, book).map_err(|e| format!("{e:#}"))?;
        let content = book.chapters().next().unwrap().content.clone();
        Ok(content)
    }
}

#[test]
fn passing_step_is_replaced_by_command_and_result_with_variables_filled_in() {
    let chapter = "# Pin bump\n\nBump to {{candidate_pin}}.\n\n```forkbook,gate\nforkbook retarget {{candidate_pin}} --check\n```\n\nAfter.\n";
    let pre = ForkbookPreprocessor::new(FakeRunner::default());
    let out = Fixture::new().run(&pre, chapter).unwrap();
    assert!(out.contains("Bump to 846d176."));
    assert!(out.contains("```console\n$ forkbook retarget 846d176 --check\n```"));
    assert!(out.contains("ran `retarget 846d176 --check`"));
    assert!(out.contains("exit 0"));
    assert!(out.contains("ran against fork <code>75915908</code>, pin <code>846d176</code>"));
    assert!(out.ends_with("\nAfter.\n"), "{out}");
    let seen = pre.runner().seen.borrow();
    assert_eq!(
        (seen[0].line, seen[0].chapter.to_str()),
        (5, Some("src/pin-bump.md"))
    );
}

#[test]
fn command_line_variables_override_book_toml() {
    let vars = [("candidate_pin".to_string(), "abc1234".to_string())].into();
    let pre = ForkbookPreprocessor::new(FakeRunner::default()).with_vars(vars);
    let out = Fixture::new()
        .run(&pre, "```forkbook\nforkbook fetch {{candidate_pin}}\n```\n")
        .unwrap();
    assert!(out.contains("ran `fetch abc1234`"));
}

#[test]
fn failing_gated_step_fails_the_build_naming_file_line_and_what_to_do() {
    let chapter = "# Pin bump\n\ntext\n\n```forkbook,gate\nforkbook fail-retarget\n```\n";
    let err = Fixture::new()
        .run(&ForkbookPreprocessor::new(FakeRunner::default()), chapter)
        .unwrap_err();
    assert!(
        err.contains("src/pin-bump.md:5: gated step `forkbook fail-retarget` exited 1, expected 0"),
        "{err}"
    );
    assert!(err.contains("| 3 files merged, 1 conflict"), "{err}");
    assert!(err.contains("note: fix what the step reports"), "{err}");
}

#[test]
fn failing_step_without_gate_or_with_its_expected_exit_passes() {
    let chapter =
        "```forkbook\nforkbook fail-a\n```\n\n```forkbook,gate,expect=1\nforkbook fail-b\n```\n";
    let out = Fixture::new()
        .run(&ForkbookPreprocessor::new(FakeRunner::default()), chapter)
        .unwrap();
    assert!(out.contains("exit 1, expected 0"));
    assert!(
        out.matches("forkbook-failed").count() == 1 && out.contains("forkbook-passed"),
        "{out}"
    );
}

#[test]
fn skipped_step_shows_its_reason_and_does_not_fail_the_gate() {
    let out = Fixture::new()
        .run(
            &ForkbookPreprocessor::new(FakeRunner::default()),
            "```forkbook,gate,requires=hipcc\nforkbook needs-gpu\n```\n",
        )
        .unwrap();
    assert!(
        out.contains("<strong>skipped:</strong> <code>hipcc</code> is not on PATH"),
        "{out}"
    );
}

#[test]
fn shell_steps_run_only_where_book_toml_allows_them() {
    let chapter = "```sh,run\necho hi\n```\n";
    let pre = ForkbookPreprocessor::new(FakeRunner::default());
    let off = Fixture::new().run(&pre, chapter).unwrap();
    assert!(off.contains("skipped:</strong> shell steps are off in this book"));
    assert_eq!(pre.runner().calls.get(), 0);
    let on = Fixture::new().allow_shell().run(&pre, chapter).unwrap();
    assert!(on.contains("ran `echo hi`"));
    assert_eq!(pre.runner().seen.borrow()[0].kind, StepKind::Shell);
}

#[test]
fn hostile_output_comes_out_escaped() {
    let out = Fixture::new()
        .run(
            &ForkbookPreprocessor::new(FakeRunner::default()),
            "```forkbook,hide\nforkbook hostile\n```\n",
        )
        .unwrap();
    assert!(!out.contains("<script>"), "{out}");
    assert!(out.contains("&lt;script&gt;alert(1)&lt;/script&gt; in `a&lt;b&gt;.cpp`"));
    assert!(!out.contains("```console"), "hide drops the block: {out}");
}

#[test]
fn results_are_cached_until_a_rerun_is_forced() {
    let fixture = Fixture::new();
    let chapter = "```forkbook\nforkbook status\n```\n";
    let pre = ForkbookPreprocessor::new(FakeRunner::default());
    fixture.run(&pre, chapter).unwrap();
    let second = fixture.run(&pre, chapter).unwrap();
    assert_eq!(pre.runner().calls.get(), 1);
    assert!(second.contains("(cached)"));
    let rerun = ForkbookPreprocessor::new(FakeRunner::default()).with_rerun(true);
    assert!(!fixture.run(&rerun, chapter).unwrap().contains("(cached)"));
    assert_eq!(rerun.runner().calls.get(), 1);
}

#[test]
fn directives_render_and_unknown_ones_fail_with_their_line() {
    let pre = ForkbookPreprocessor::new(FakeRunner::default());
    let out = Fixture::new()
        .run(
            &pre,
            "# R\n\n{{#forkbook register all}}\n\n`{{#forkbook nope}}`\n",
        )
        .unwrap();
    assert!(out.contains("| 1 all | proposed |"));
    assert!(
        out.contains("`{{#forkbook nope}}`"),
        "directives in code stay as written"
    );
    let err = Fixture::new()
        .run(&pre, "# R\n\n{{#forkbook nope}}\n")
        .unwrap_err();
    assert!(
        err.contains("src/pin-bump.md:3: directive `nope` failed: unknown directive `nope`"),
        "{err}"
    );
}

#[test]
fn raw_html_and_includes_from_directives_are_made_inert() {
    let pre = ForkbookPreprocessor::new(FakeRunner::default());
    let out = Fixture::new().run(&pre, "{{#forkbook hostile}}\n").unwrap();
    assert!(
        out.contains("| &lt;script&gt;alert(1)&lt;/script&gt;"),
        "{out}"
    );
    assert!(!out.contains("{{#include"), "{out}");
}

#[test]
fn gate_findings_fail_the_build_naming_check_and_chapter() {
    let finding = GateFinding {
        finding: Finding::new(
            "register-link",
            Severity::Error,
            "patches-rocm/LOCAL_FIXES.md",
            Some(12),
            "entry 3 applies to the fork and has no upstream link",
        )
        .with_note("propose it with `forkbook propose 3` and record the link"),
        shown_by: Some("register".into()),
    };
    let pre = ForkbookPreprocessor::new(FakeRunner {
        findings: vec![finding],
        ..Default::default()
    });
    let err = Fixture::new()
        .run(&pre, "# R\n\n{{#forkbook register}}\n")
        .unwrap_err();
    assert!(
        err.contains("error[register-link]: patches-rocm/LOCAL_FIXES.md:12: entry 3"),
        "{err}"
    );
    assert!(err.contains("(shown in src/pin-bump.md:3)"), "{err}");
    assert!(err.contains("note: propose it"), "{err}");
}

#[test]
fn bad_annotations_and_undefined_variables_name_their_line() {
    let pre = ForkbookPreprocessor::new(FakeRunner::default());
    let err = Fixture::new()
        .run(&pre, "x\n\n```forkbook,gaet\nforkbook status\n```\n")
        .unwrap_err();
    assert!(
        err.contains("src/pin-bump.md:3: unknown block attribute `gaet`"),
        "{err}"
    );
    let err = Fixture::new()
        .run(&pre, "x\n\n```forkbook\nforkbook fetch {{nope}}\n```\n")
        .unwrap_err();
    assert!(
        err.contains("src/pin-bump.md:3: undefined variable `nope`"),
        "{err}"
    );
}

#[test]
fn supports_handshake_and_name() {
    let pre = ForkbookPreprocessor::new(FakeRunner::default());
    assert_eq!(pre.name(), "forkbook");
    assert!(pre.supports_renderer("html").unwrap());
    assert!(pre.supports_renderer("test").unwrap());
    assert!(!pre.supports_renderer("epub").unwrap());
}
