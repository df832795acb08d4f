//! The executable book against the demo world: books written by each test (and the project's own
//! book), built with `forkbook book build|test` in process, asserting on the rendered HTML and on
//! the failure messages; and the `forkbook mdbook` protocol the stock mdbook binary speaks.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A demo project with a book of the test's own in `<project>/book`.
struct BookFixture {
    demo: Demo,
}

impl BookFixture {
    /// `chapter` is the one chapter, `src/steps.md`; `vars` go under `[preprocessor.forkbook.vars]`.
    fn new(chapter: &str) -> BookFixture {
        let demo = Demo::new(Layout::Patch);
        let fixture = BookFixture { demo };
        let pin2 = fixture.demo.demo.world.pin2.clone();
        let toml = format!(
            "[book]\ntitle = \"steps\"\n\n[preprocessor.forkbook]\ncommand = \"forkbook mdbook\"\n\
             allow-shell = true\n\n[preprocessor.forkbook.vars]\npin2 = \"{pin2}\"\n"
        );
        fixture.write("book.toml", &toml);
        fixture.write("src/SUMMARY.md", "# Summary\n\n- [Steps](steps.md)\n");
        fixture.write("src/steps.md", chapter);
        fixture
    }

    fn book_dir(&self) -> PathBuf {
        self.demo.root().join("book")
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.book_dir().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// `forkbook book SUBCOMMAND --dir BOOK ARGS`: (exit status, output).
    fn book(&self, subcommand: &str, args: &[&str]) -> (i32, String) {
        let dir = self.book_dir();
        let mut full = vec!["book", subcommand, "--dir", dir.to_str().unwrap()];
        full.extend(args);
        self.demo.run(&full)
    }

    fn html(&self, chapter: &str) -> String {
        let path = self.book_dir().join("book").join(format!("{chapter}.html"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

#[test]
fn passing_step_output_is_embedded_with_its_commits() {
    let fixture = BookFixture::new("# Steps\n\n```forkbook,gate\nforkbook status\n```\n");
    let (code, out) = fixture.book("build", &[]);
    assert_eq!(code, 0, "{out}");
    let html = fixture.html("steps");
    let pin1 = &fixture.demo.demo.world.pin1[..8];
    assert!(html.contains("$ forkbook status"), "the command is shown");
    assert!(
        html.contains(&format!("pin      {pin1}")),
        "status output is embedded: {html}"
    );
    assert!(html.contains("exit 0"));
    assert!(
        html.contains(&format!("pin <code>{pin1}</code>")),
        "the commits it ran against"
    );
}

#[test]
fn failing_gated_step_fails_the_build_naming_chapter_and_line() {
    let chapter = "# Steps\n\nThe retarget to pin 2 conflicts in `mlx/device.cpp`.\n\n\
                   ```forkbook,gate\nforkbook retarget {{pin2}} --check\n```\n";
    let fixture = BookFixture::new(chapter);
    let (code, out) = fixture.book("build", &[]);
    assert_eq!(code, 1, "{out}");
    let pin2 = &fixture.demo.demo.world.pin2;
    assert!(
        out.contains(&format!(
            "src/steps.md:5: gated step `forkbook retarget {pin2} --check` exited 1, expected 0"
        )),
        "{out}"
    );
    assert!(
        out.contains("mlx/device.cpp"),
        "the output's tail is repeated: {out}"
    );
    assert!(out.contains("note: fix what the step reports"), "{out}");
    assert!(
        out.contains("1 step: 1 ran (0 passed, 1 failed), 0 skipped, 0 not run"),
        "{out}"
    );
    // The pages are written all the same, the failure marked on them (issue 25: a failing gate
    // left nothing to open). `book test` too, which writes them where `build` does.
    for subcommand in ["build", "test"] {
        let _ = std::fs::remove_dir_all(fixture.book_dir().join("book"));
        let (code, out) = fixture.book(subcommand, &[]);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("each failure marked on its page"), "{out}");
        let html = fixture.html("steps");
        assert!(
            html.contains("The book&#39;s gate failed with 1 problem")
                || html.contains("The book's gate failed with 1 problem"),
            "{subcommand}: {html}"
        );
        assert!(
            html.contains(&format!(
                "src/steps.md:5: gated step `forkbook retarget {pin2} --check`"
            )),
            "{subcommand}: {html}"
        );
        assert!(
            html.contains("expected 0: the gate fails"),
            "{subcommand}: {html}"
        );
    }
    // The same step with its exit status expected passes, and shows the conflict.
    fixture.write(
        "src/steps.md",
        &chapter.replace("forkbook,gate", "forkbook,gate,expect=1"),
    );
    let (code, out) = fixture.book("build", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(fixture.html("steps").contains("mlx/device.cpp"));
}

#[test]
fn skipped_steps_show_their_reason() {
    let chapter = "# Steps\n\n```forkbook,gate,requires=no-such-compiler-xyz\nforkbook status\n```\n\n\
                   ```forkbook,gate\nforkbook retarget 0123456789abcdef0123456789abcdef01234567 --check\n```\n";
    let fixture = BookFixture::new(chapter);
    let (code, out) = fixture.book("build", &[]);
    assert_eq!(code, 0, "skips do not fail `book build`: {out}");
    assert!(
        out.contains("2 steps: 0 ran (0 passed, 0 failed), 2 skipped, 0 not run"),
        "the summary line says nothing ran: {out}"
    );
    let html = fixture.html("steps");
    assert!(
        html.contains(
            "<strong>skipped:</strong> needs <code>no-such-compiler-xyz</code>, which is not on PATH"
        ),
        "{html}"
    );
    assert!(html.contains("is not in the object cache"), "{html}");
    assert!(
        html.contains(
            "run <code>forkbook fetch --upstream 0123456789abcdef0123456789abcdef01234567</code>"
        ),
        "{html}"
    );
    // `book test` is the acceptance gate: missing objects fail it.
    let (code, out) = fixture.book("test", &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("src/steps.md:7: gated step"), "{out}");
    assert!(out.contains("forkbook fetch"), "{out}");
}

#[test]
fn hostile_output_comes_out_escaped() {
    let chapter = "# Steps\n\n```sh,run\nprintf 'error: <script>alert(1)</script> in a<b>.cpp \\173\\173#include /etc/passwd}}\\n'\n```\n";
    let fixture = BookFixture::new(chapter);
    let (code, out) = fixture.book("build", &[]);
    assert_eq!(code, 0, "{out}");
    let html = fixture.html("steps");
    let output = html.split("forkbook-output").nth(1).expect("an output box");
    let output = output.split("</pre>").next().unwrap();
    assert!(!output.contains("<script>"), "{output}");
    assert!(
        output.contains("&lt;script&gt;alert(1)&lt;/script&gt; in a&lt;b&gt;.cpp"),
        "{output}"
    );
    assert!(!html.contains("root:x:0"), "no include was expanded");
}

#[test]
fn hostile_file_name_in_the_overlay_comes_out_escaped() {
    let chapter = "# Steps\n\n```forkbook\nforkbook status\n```\n\n{{#forkbook register}}\n";
    let fixture = BookFixture::new(chapter);
    // A local fix that adds a backend file whose name holds markup; the register names it.
    let copy = fixture.demo.tmp.path().join("edited");
    let (code, out) = fixture
        .demo
        .run(&["materialize", "--out", copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    std::fs::write(copy.join("mlx/backend/rocm/<script>alert(1).hpp"), "// x\n").unwrap();
    let (code, out) = fixture.demo.run(&[
        "fix",
        "add",
        "--from",
        copy.to_str().unwrap(),
        "--title",
        "Add <b>it</b>",
    ]);
    assert_eq!(code, 0, "{out}");
    // Give the new entry its state, as the user would, so the register's checks pass.
    let register = fixture.demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&register).unwrap();
    let todo = "- state: TODO, one of retarget-only (with - cause:), to-propose, proposed (with - link: and - package:), merged (with - link: and - fork-commit:), kept-local (with - reason: and - issue:)\n";
    let state = "- state: kept-local\n- reason: a test of hostile names\n- issue: #1\n";
    assert!(text.contains(todo), "{text}");
    std::fs::write(&register, text.replace(todo, state)).unwrap();
    let (code, out) = fixture.book("build", &[]);
    assert_eq!(code, 0, "{out}");
    let html = fixture.html("steps");
    assert!(
        html.contains("&lt;script&gt;alert(1).hpp"),
        "the name reaches the page, escaped: {html}"
    );
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(
        html.contains("Add &lt;b&gt;it&lt;/b&gt;"),
        "the title too: {html}"
    );
}

#[test]
fn results_are_cached_and_rerun_on_request_or_when_records_change() {
    let fixture = BookFixture::new("# Steps\n\n```forkbook\nforkbook status\n```\n");
    assert_eq!(fixture.book("build", &[]).0, 0);
    assert!(!fixture.html("steps").contains("(cached)"));
    assert_eq!(fixture.book("build", &[]).0, 0);
    assert!(fixture.html("steps").contains("(cached)"));
    assert_eq!(fixture.book("build", &["--rerun"]).0, 0);
    assert!(!fixture.html("steps").contains("(cached)"));
    // A change to the records is a change to what the step ran against.
    let upstream = fixture.demo.records().join("UPSTREAM");
    let text = std::fs::read_to_string(&upstream).unwrap();
    std::fs::write(&upstream, format!("{text}# a comment\n")).unwrap();
    assert_eq!(fixture.book("build", &[]).0, 0);
    assert!(!fixture.html("steps").contains("(cached)"));
}

#[test]
fn command_line_variables_override_book_toml() {
    let fixture =
        BookFixture::new("# Steps\n\n```forkbook\nforkbook retarget {{pin2}} --check\n```\n");
    let pin1 = fixture.demo.demo.world.pin1.clone();
    let (code, out) = fixture.book("build", &["--var", &format!("pin2={pin1}")]);
    assert_eq!(code, 0, "{out}");
    assert!(fixture
        .html("steps")
        .contains(&format!("$ forkbook retarget {pin1} --check")));
}

#[test]
fn bad_annotation_fails_with_its_line() {
    let fixture = BookFixture::new("# Steps\n\ntext\n\n```forkbook,gaet\nforkbook status\n```\n");
    let (code, out) = fixture.book("test", &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("src/steps.md:5: unknown block attribute `gaet`"),
        "{out}"
    );
}

/// The forkbook binary cargo built for these tests.
fn forkbook_bin() -> &'static str {
    env!("CARGO_BIN_EXE_forkbook")
}

#[test]
fn mdbook_handshake_supports_html_and_test() {
    for (renderer, expected) in [("html", Some(0)), ("test", Some(0)), ("epub", Some(1))] {
        let status = crate::common::forkbook_command()
            .args(["mdbook", "supports", renderer])
            .status()
            .unwrap();
        assert_eq!(status.code(), expected, "supports {renderer}");
    }
}

#[test]
fn mdbook_protocol_returns_the_processed_book_on_stdout() {
    use mdbook_preprocessor::book::{Book, BookItem, Chapter};
    use mdbook_preprocessor::config::Config;
    use mdbook_preprocessor::PreprocessorContext;
    use std::str::FromStr;

    let fixture = BookFixture::new("");
    let config =
        Config::from_str(&std::fs::read_to_string(fixture.book_dir().join("book.toml")).unwrap())
            .unwrap();
    let ctx = PreprocessorContext::new(fixture.book_dir(), config, "html".into());
    let chapter = Chapter::new(
        "Steps",
        "```forkbook\nforkbook status\n```\n".into(),
        "steps.md",
        vec![],
    );
    let book = Book::new_with_items(vec![BookItem::Chapter(chapter)]);
    let input = serde_json::to_vec(&(&ctx, &book)).unwrap();

    let processed = run_protocol(&fixture, &input);
    assert!(
        processed.status.success(),
        "{}",
        String::from_utf8_lossy(&processed.stderr)
    );
    let book: Book = serde_json::from_slice(&processed.stdout).unwrap();
    let content = &book.chapters().next().unwrap().content;
    assert!(content.contains("layout   patch"), "{content}");
}

fn run_protocol(fixture: &BookFixture, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = crate::common::forkbook_command()
        .arg("mdbook")
        .current_dir(fixture.book_dir())
        .env("FORKBOOK_CACHE", &fixture.demo.demo.cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Every chapter of the book folder is embedded in the binary, and every chapter SUMMARY.md
/// lists is one of them: a chapter added to `book/src/` but not to `book::SOURCES` (or listed
/// and not embedded) would be missing from `forkbook book build` in another project.
#[test]
fn embedded_book_sources_match_the_book_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("book");
    let embedded = |path: &str| forkbook::book::SOURCES.iter().any(|(p, _)| *p == path);
    let mut folders = vec![root.join("src")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let name = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                assert!(embedded(&name), "{name} is in book/ but not embedded");
            }
        }
    }
    let summary = forkbook::book::SOURCES
        .iter()
        .find(|(p, _)| *p == "src/SUMMARY.md")
        .unwrap()
        .1;
    for line in summary.lines().filter_map(|l| l.split("](").nth(1)) {
        let chapter = format!("src/{}", line.trim_end_matches(')'));
        assert!(embedded(&chapter), "{chapter} is embedded");
    }
}

/// The project's own book, built against the demo world with the candidate pin set to pin 2.
#[test]
fn the_project_book_builds_against_the_demo_world() {
    let demo = Demo::new(Layout::Patch);
    let dir = demo.root().join("book");
    forkbook::book::write_sources(&dir).unwrap();
    let pin2 = demo.demo.world.pin2.clone();
    let var = format!("candidate_pin={pin2}");
    // A compiler that is nowhere, so the drift build is skipped here (it has tests of its own).
    let compiler = "compiler=no-such-hipcc-for-tests";
    let book = dir.to_str().unwrap();
    let (code, out) = demo.run(&[
        "book", "build", "--dir", book, "--var", &var, "--var", compiler,
    ]);
    assert_eq!(code, 0, "every gated step passed: {out}");
    let read = |name: &str| {
        std::fs::read_to_string(dir.join("book").join(format!("{name}.html"))).unwrap()
    };
    let pin_bump = read("pin-bump");
    assert!(
        pin_bump.contains(&format!("$ forkbook retarget {pin2} --check")),
        "variables filled in"
    );
    assert!(
        pin_bump.contains("mlx/device.cpp: CONFLICT"),
        "the retarget preview shows the conflict"
    );
    assert!(
        pin_bump.contains("changed-signature"),
        "drift api shows the breaks at pin 2"
    );
    let skipped = "<strong>skipped:</strong> needs <code>no-such-hipcc-for-tests</code>, which is not on PATH";
    assert!(
        pin_bump.contains(skipped),
        "the drift build follows the compiler variable"
    );
    assert!(
        read("report").contains("ROCm overlay"),
        "the report section is rendered"
    );
    let register = read("register");
    assert!(
        register.contains("id=\"fix-1\""),
        "the register is one card per entry, each with its anchor"
    );
    assert!(
        register.contains("Free pooled buffers when the allocator is destroyed"),
        "{register}"
    );
    let checks = read("checks");
    for check in forkbook_checks::CHECKS {
        assert!(
            checks.contains(check.id),
            "the catalogue lists `{}`",
            check.id
        );
    }
}

/// The stock `mdbook` binary builds and tests a book through `forkbook mdbook`. It needs
/// mdbook 0.5.4 on PATH, so it is ignored by a plain `cargo test`; `.ci/run` installs mdbook and
/// runs it with `--ignored`, where a missing mdbook fails it.
#[test]
#[ignore = "needs the stock mdbook 0.5.4 on PATH (`cargo install mdbook --version 0.5.4 --locked`); .ci/run installs it and runs this test"]
fn stock_mdbook_builds_and_tests_through_forkbook_mdbook() {
    let mdbook = forkbook::book::find_on_path("mdbook")
        .expect("`mdbook` is not on PATH: `cargo install mdbook --version 0.5.4 --locked`");
    let fixture = BookFixture::new("# Steps\n\n```forkbook,gate\nforkbook status\n```\n");
    let bin_dir = Path::new(forkbook_bin()).parent().unwrap().to_path_buf();
    let system_path = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(&system_path)))
            .unwrap();
    let stock = |subcommand: &str| {
        Command::new(&mdbook)
            .args([subcommand, fixture.book_dir().to_str().unwrap()])
            .env("PATH", &path)
            .env("FORKBOOK_CACHE", &fixture.demo.demo.cache)
            .output()
            .unwrap()
    };
    let built = stock("build");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    assert!(
        fixture.html("steps").contains("layout   patch"),
        "the step ran through `forkbook mdbook`"
    );

    fixture.write(
        "src/steps.md",
        "# Steps\n\ntext\n\n```forkbook,gate\nforkbook retarget {{pin2}} --check\n```\n",
    );
    let tested = stock("test");
    let stderr = String::from_utf8_lossy(&tested.stderr);
    assert!(!tested.status.success(), "{stderr}");
    assert!(stderr.contains("src/steps.md:5: gated step"), "{stderr}");
}

#[test]
fn the_report_directive_is_cached_like_a_step() {
    let fixture = BookFixture::new("# Report\n\n{{#forkbook report}}\n");
    let (code, out) = fixture.book("build", &[]);
    assert_eq!(code, 0, "{out}");
    let first = fixture.html("steps");
    assert!(first.contains("ROCm overlay"), "{first}");
    let store = fixture.book_dir().join(".step-cache");
    let entries: Vec<PathBuf> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let entry = entries
        .iter()
        .find(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .contains("#forkbook report")
        })
        .expect("the directive's text is stored");
    // A stored text that says where it came from shows that the next build reads it; edited
    // without the cache's secret it is not believed, sealed with it it is.
    let stored = std::fs::read_to_string(entry).unwrap();
    let marked = stored.replacen("ROCm overlay", "ROCm overlay (from the step cache)", 1);
    std::fs::write(entry, &marked).unwrap();
    assert_eq!(fixture.book("build", &[]).0, 0);
    assert!(!fixture.html("steps").contains("(from the step cache)"));
    crate::caches::reseal(&fixture.demo, entry, "book step", |payload| {
        payload.replacen("ROCm overlay", "ROCm overlay (from the step cache)", 1)
    });
    assert_eq!(fixture.book("build", &[]).0, 0);
    assert!(fixture.html("steps").contains("(from the step cache)"));
    assert_eq!(std::fs::read_dir(&store).unwrap().count(), entries.len());
    // A forced rerun makes it again; so does a change to the records.
    assert_eq!(fixture.book("build", &["--rerun"]).0, 0);
    assert!(!fixture.html("steps").contains("(from the step cache)"));
    std::fs::write(
        entry,
        stored.replacen("ROCm overlay", "ROCm overlay (stale)", 1),
    )
    .unwrap();
    let upstream = fixture.demo.records().join("UPSTREAM");
    let text = std::fs::read_to_string(&upstream).unwrap();
    std::fs::write(&upstream, format!("{text}# a comment\n")).unwrap();
    assert_eq!(fixture.book("build", &[]).0, 0);
    assert!(!fixture.html("steps").contains("(stale)"));
}

/// The book shows results as HTML where HTML says more (issue 15): the retarget preview's
/// conflicts as a table whose upstream commit links to the upstream repository named in
/// forkbook.toml, its fixes linked to their register cards, the printed text folded beneath; the
/// residual as diffs whose fixes link to the register; the drift findings as a table linking
/// upstream's files and commits.
#[test]
fn results_are_tables_and_diffs_linked_to_upstream_and_the_register() {
    let demo = Demo::new(Layout::Patch);
    let config_path = demo.root().join("forkbook.toml");
    let config = std::fs::read_to_string(&config_path).unwrap();
    let mirror = demo.demo.world.upstream.display().to_string();
    let web = "https://github.com/example/mlx";
    std::fs::write(
        &config_path,
        config.replace(&format!("url = \"{mirror}\""), &format!("url = \"{web}\"")),
    )
    .unwrap();
    let dir = demo.root().join("book");
    forkbook::book::write_sources(&dir).unwrap();
    let pin2 = demo.demo.world.pin2.clone();
    let var = format!("candidate_pin={pin2}");
    let book = dir.to_str().unwrap();
    let (code, out) = demo.run(&[
        "--upstream-url",
        &mirror,
        "book",
        "build",
        "--dir",
        book,
        "--var",
        &var,
        "--var",
        "compiler=no-such-hipcc-for-tests",
    ]);
    assert_eq!(code, 0, "{out}");
    let read = |name: &str| {
        std::fs::read_to_string(dir.join("book").join(format!("{name}.html"))).unwrap()
    };
    let pin_bump = read("pin-bump");
    let register = read("register");

    // The retarget preview: a table row for the conflict, its cause linked upstream.
    let view = pin_bump
        .split("<div class=\"forkbook-view\">")
        .nth(1)
        .expect("the retarget step shows its result as a view");
    assert!(
        view.contains("<td><code>mlx/<wbr>device.<wbr>cpp</code> region 1 (pin/fork, pin line "),
        "{view}"
    );
    let commit_link = format!("<a href=\"{web}/commit/");
    assert!(
        view.contains(&commit_link),
        "the cause links upstream: {view}"
    );
    assert!(
        view.contains("<a href=\"register.html#fix-1\">fix 1</a>"),
        "{view}"
    );
    assert!(
        pin_bump.contains("<summary>printed output ("),
        "the printed text is kept, folded"
    );
    // Every fix link on the page lands on a card of the register.
    for part in pin_bump.split("href=\"register.html#").skip(1) {
        let anchor = &part[..part.find('"').unwrap()];
        assert!(
            register.contains(&format!("id=\"{anchor}\"")),
            "register.html has no `{anchor}`"
        );
    }
    // The drift findings: a table linking upstream's header at the candidate pin.
    assert!(
        pin_bump.contains("<th>finding</th><th>where</th><th>changed by</th>"),
        "{pin_bump}"
    );
    assert!(
        pin_bump.contains(&format!("<a href=\"{web}/blob/{pin2}/")),
        "a finding links upstream's file at the candidate pin"
    );

    // The residual: each hunk a diff, its fixes linked to their cards.
    let residual = pin_bump
        .split("<div class=\"forkbook-view\">")
        .find(|part| part.trim_start().starts_with("<p>Residual:"))
        .expect("the residual step shows its hunks as a view");
    assert!(
        residual.contains("<code class=\"language-diff\">"),
        "{residual}"
    );
    assert!(
        residual.contains("explained by <a href=\"register.html#fix-"),
        "{residual}"
    );
}

/// What the probe measures of every table on a page, in the page's title: the narrowest cell's
/// width in characters of its own font (`0`s), how many pixels the table is wider than its
/// wrapper, and how many code spans it broke into lines of fewer than 20 characters.
const TABLE_PROBE: &str = r#"<script>
window.addEventListener('load', () => {
  const charWidth = (parent) => {
    const probe = document.createElement('span');
    probe.textContent = '0000000000';
    probe.style.cssText = 'position:absolute;visibility:hidden;white-space:nowrap';
    parent.appendChild(probe);
    const width = probe.getBoundingClientRect().width / 10;
    probe.remove();
    return width;
  };
  const tables = [...document.querySelectorAll('.content table')].map((table) => {
    let narrowest = Infinity;
    for (const cell of table.querySelectorAll('th, td')) {
      const style = getComputedStyle(cell);
      const inner = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      narrowest = Math.min(narrowest, inner / charWidth(cell));
    }
    // Each name's lines, from where each of its characters is laid out: more lines than one
    // for every 20 characters is a name chopped into pieces; a line that ends between two
    // letters or digits of the name broke it inside a word.
    let choppy = 0;
    let midword = 0;
    for (const code of table.querySelectorAll('td code')) {
      const tops = new Set();
      const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
      let last = null;
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.length; i++) {
          const range = document.createRange();
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const rect = range.getClientRects()[0];
          if (!rect) continue;
          const c = node.data[i];
          tops.add(Math.round(rect.top));
          if (last && rect.top > last.top + 1 && /[A-Za-z0-9]/.test(c) && /[A-Za-z0-9]/.test(last.c)) midword++;
          last = { top: rect.top, c };
        }
      }
      if (tops.size > 1 + Math.floor(code.textContent.length / 20)) choppy++;
    }
    return `${Math.floor(narrowest)}:${table.scrollWidth - table.parentElement.clientWidth}:${choppy}:${midword}`;
  });
  const result = `W ${window.innerWidth} ${tables.join(' ')}`;
  document.title = result;
  if (parent !== window) parent.postMessage(result, '*');
});
</script>"#;

/// The pages a reviewer reads, in a real browser at 1280 px and at 420 px (a phone): no table
/// (register cards, results, the catalogue) is wider than its wrapper, its narrowest column holds
/// at least 12 characters, and at 1280 px no path or symbol is broken into pieces of a few
/// characters. The page is shown in an iframe of that width, because headless Chromium's window
/// is never narrower than 500 px. Needs Chromium: ignored by a plain `cargo test`, run by
/// `.ci/run`, which installs Debian's `chromium`.
///
/// Fails before issue 25: at 420 px the result tables' columns were 3 characters wide (the first
/// column took 45%), and at 1280 px the drift table broke paths every 8 characters.
#[test]
#[ignore = "needs chromium on PATH; .ci/run installs it and runs this test"]
fn pages_fit_the_column_in_chromium() {
    let chromium = forkbook::book::find_on_path("chromium")
        .expect("chromium is on PATH (this test is run on purpose with --ignored)");
    let demo = Demo::new(Layout::Patch);
    let dir = demo.root().join("book");
    forkbook::book::write_sources(&dir).unwrap();
    let var = format!("candidate_pin={}", demo.demo.world.pin2);
    // `c++` builds the drift step for real, so its error and symbol tables are on the page too.
    let (code, out) = demo.run(&[
        "book",
        "build",
        "--dir",
        dir.to_str().unwrap(),
        "--var",
        &var,
        "--var",
        "compiler=c++",
    ]);
    assert_eq!(code, 0, "{out}");
    let site = dir.join("book");
    let mut tables = 0;
    for page in [
        "forecast",
        "pin-bump",
        "fork-sync",
        "register",
        "report",
        "checks",
    ] {
        let html = std::fs::read_to_string(site.join(format!("{page}.html"))).unwrap();
        assert!(
            !html.contains("<td>drift: changed-signature `"),
            "{page}: a name in a table shows its backticks"
        );
        std::fs::write(
            site.join(format!("{page}-probe.html")),
            html.replace("</body>", &format!("{TABLE_PROBE}</body>")),
        )
        .unwrap();
        for width in [1280, 420] {
            // Chromium keeps a profile and a cache in HOME: this run's own, not the user's.
            let frame = site.join(format!("{page}-{width}.html"));
            std::fs::write(
                &frame,
                format!(
                    "<!doctype html><body style=\"margin:0\"><iframe src=\"{page}-probe.html\" \
                     style=\"width:{width}px;height:2400px;border:0\"></iframe><script>\
                     addEventListener('message', (e) => {{ document.title = e.data; }});\
                     </script></body>"
                ),
            )
            .unwrap();
            let profile = tempfile::tempdir().unwrap();
            let dom = Command::new(&chromium)
                .env("HOME", crate::common::home())
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--hide-scrollbars",
                    "--window-size=1300,2400",
                    "--virtual-time-budget=5000",
                    "--dump-dom",
                ])
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .arg(format!("file://{}", frame.display()))
                .stderr(Stdio::null())
                .output()
                .unwrap();
            let dom = String::from_utf8_lossy(&dom.stdout);
            let title = dom
                .split("<title>W ")
                .nth(1)
                .and_then(|t| t.split("</title>").next())
                .unwrap_or_else(|| panic!("{page} at {width} px: no probe result"));
            let mut words = title.split_whitespace();
            assert_eq!(
                words.next(),
                Some(width.to_string().as_str()),
                "{page}: the page is laid out at {width} px"
            );
            for (n, table) in words.enumerate() {
                tables += 1;
                let numbers: Vec<i64> = table.split(':').map(|x| x.parse().unwrap()).collect();
                let [narrowest, overflow, choppy, midword] = numbers[..] else {
                    panic!("{page}: probe said {table}")
                };
                let which = format!("{page} at {width} px, table {}", n + 1);
                assert!(
                    narrowest >= 12,
                    "{which}: its narrowest column holds {narrowest} characters"
                );
                assert!(
                    overflow <= 0,
                    "{which}: {overflow} px wider than the column"
                );
                assert_eq!(
                    midword, 0,
                    "{which}: {midword} names broken inside a word (between two letters or digits)"
                );
                if width == 1280 {
                    assert_eq!(
                        choppy, 0,
                        "{which}: {choppy} code spans broken into pieces under 20 characters"
                    );
                }
            }
        }
    }
    // Eight tables at each width: the move's result (pin bump, fork sync) is a list since it is
    // rendered through `Doc`, the other results stay tables.
    assert!(
        tables >= 2 * 8,
        "the pages hold their result tables: {tables}"
    );
}

/// The drift build's result in the book is tables too: the compile errors by place, the undefined
/// symbols with the objects that need them. Built for real with the machine's C++ compiler
/// (`--var compiler=c++`), as the demo's `next:` line does.
#[test]
fn the_drift_build_step_shows_its_errors_as_a_table() {
    let demo = Demo::new(Layout::Patch);
    let dir = demo.root().join("book");
    forkbook::book::write_sources(&dir).unwrap();
    let var = format!("candidate_pin={}", demo.demo.world.pin2);
    let (code, out) = demo.run(&[
        "book",
        "build",
        "--dir",
        dir.to_str().unwrap(),
        "--var",
        &var,
        "--var",
        "compiler=c++",
    ]);
    assert_eq!(code, 0, "{out}");
    let pin_bump = std::fs::read_to_string(dir.join("book").join("pin-bump.html")).unwrap();
    // A project's book has no world note: the variable is empty, not left as text.
    assert!(
        !pin_bump.contains("world_note") && !pin_bump.contains("demo world"),
        "{pin_bump}"
    );
    let build = pin_bump
        .split("<div class=\"forkbook-view\">")
        .find(|part| part.trim_start().starts_with("<p>Drift build with"))
        .expect("the drift build shows its result as a view");
    assert!(build.contains("<th>where</th><th>error</th>"), "{build}");
    assert!(
        build.contains("<code>mlx/<wbr>backend/<wbr>rocm/<wbr>"),
        "an error names its backend file: {build}"
    );
}

/// A step that asks for JSON shows its JSON, not the result's tables; the same step without
/// `--json` shows the view.
#[test]
fn a_json_step_shows_its_json_and_no_view() {
    let fixture = BookFixture::new(
        "# Steps\n\n```forkbook\nforkbook --json residual\n```\n\n```forkbook\nforkbook residual\n```\n",
    );
    let (code, out) = fixture.book("build", &[]);
    assert_eq!(code, 0, "{out}");
    let html = fixture.html("steps");
    let boxes: Vec<&str> = html.split("<div class=\"forkbook-step ").skip(1).collect();
    assert_eq!(boxes.len(), 2, "{html}");
    assert!(!boxes[0].contains("forkbook-view"), "{}", boxes[0]);
    assert!(
        boxes[0].contains("\"hunks\": ["),
        "the JSON is shown: {}",
        boxes[0]
    );
    assert!(boxes[1].contains("forkbook-view"), "{}", boxes[1]);
}

/// Every file of the built site, with its bytes.
fn site_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(site_files(&path));
        } else {
            let bytes = std::fs::read(&path).unwrap_or_default();
            out.push((path, bytes));
        }
    }
    out
}

/// Fails on main before this change: a link in `src/` to a folder or a file outside the book,
/// or an include of a file outside it, was followed, and `book build` copied what it reached
/// into the site (a link to `/etc` put `/etc/shadow` there) and `book serve` served it.
#[test]
fn a_link_or_include_out_of_the_book_folder_is_refused_in_build_test_and_serve() {
    let fixture = BookFixture::new("# Steps\n\ntext\n");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "SECRET-FROM-OUTSIDE\n").unwrap();
    let src = fixture.book_dir().join("src");
    // A link that stays in the book is fine.
    std::os::unix::fs::symlink(src.join("steps.md"), src.join("alias.md")).unwrap();
    let (code, out) = fixture.book("build", &[]);
    assert_eq!(code, 0, "{out}");

    let leaks = [
        ("leak", outside.path().to_path_buf()),
        ("secret.txt", outside.path().join("secret")),
        ("nested/deeper/up", PathBuf::from("../../../../")),
    ];
    for (name, target) in &leaks {
        let link = src.join(name);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, &link).unwrap();
        let site = fixture.book_dir().join("book");
        let _ = std::fs::remove_dir_all(&site);
        for subcommand in ["build", "test", "serve"] {
            let (code, out) = fixture.book(subcommand, &[]);
            assert_eq!(code, 2, "{subcommand} {name}: {out}");
            assert!(
                out.contains(&format!("`{}` is a link to ", link.display()))
                    && out.contains("outside the book folder"),
                "{subcommand} {name}: the link is named: {out}"
            );
        }
        let leaked = site_files(&site)
            .into_iter()
            .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains("SECRET-FROM-OUTSIDE"))
            .map(|(path, _)| path)
            .collect::<Vec<_>>();
        assert!(leaked.is_empty(), "{name}: {leaked:?}");
        std::fs::remove_file(&link).unwrap();
    }

    // An include climbing out of the book is refused the same way, with its chapter and line.
    std::fs::write(
        fixture.demo.root().join("secret.txt"),
        "SECRET-FROM-OUTSIDE\n",
    )
    .unwrap();
    fixture.write("src/steps.md", "# Steps\n\n{{#include ../../secret.txt}}\n");
    for subcommand in ["build", "test"] {
        let (code, out) = fixture.book(subcommand, &[]);
        assert_eq!(code, 2, "{subcommand}: {out}");
        assert!(
            out.contains("src/steps.md:3 includes `../../secret.txt`, outside the book folder"),
            "{subcommand}: {out}"
        );
    }
    let site = fixture.book_dir().join("book");
    assert!(site_files(&site)
        .iter()
        .all(|(_, bytes)| !String::from_utf8_lossy(bytes).contains("SECRET-FROM-OUTSIDE")));
}

/// Fails on main before this change: the book's bounds read includes in the `.md` files below
/// `src` alone and took every `{{` after a backslash as escaped, while mdBook escapes only
/// `\{{#` and expands the includes of included text, of any type, ten deep: `\{{ #include }}`,
/// an include in `src/snippet.txt` and one in `extra/inner.md` each put a file from outside the
/// book into the site, as did a hard link in `src` and a summary chapter outside the book. Each
/// is refused before any step runs, with the chain of files that reaches it; a chain of includes
/// inside the book still builds.
#[test]
fn every_file_mdbook_would_include_or_publish_is_held_to_the_book_folder() {
    let fixture = BookFixture::new("# Steps\n");
    let secret = fixture.demo.root().join("secret.txt");
    std::fs::write(&secret, "SECRET-FROM-OUTSIDE\n").unwrap();
    std::fs::write(
        fixture.demo.root().join("secret.md"),
        "SECRET-FROM-OUTSIDE\n",
    )
    .unwrap();
    let ran = fixture.demo.tmp.path().join("the-step-ran");
    let step = format!("\n```sh,run\ntouch '{}'\n```\n", ran.display());
    let chapter = format!("# Steps\n\n{{{{#include snippet.txt}}}}\n{step}");
    let legit = || {
        fixture.write("src/SUMMARY.md", "# Summary\n\n- [Steps](steps.md)\n");
        fixture.write("src/steps.md", &chapter);
        fixture.write("src/snippet.txt", "{{#include ../extra/inner.md}}\n");
        fixture.write("extra/inner.md", "INNER-TEXT\n");
    };
    legit();
    let (code, out) = fixture.book("build", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        fixture.html("steps").contains("INNER-TEXT"),
        "an include inside the book works"
    );
    std::fs::remove_file(&ran).unwrap();

    let escaped = format!("# Steps\n\n\\{{{{ #include ../../secret.txt }}}}\n{step}");
    let attacks: [(&str, &str, &str); 4] = [
        (
            "src/steps.md",
            &escaped,
            "src/steps.md:3 includes `../../secret.txt`, outside the book folder",
        ),
        (
            "src/snippet.txt",
            "text\n{{#include ../../secret.txt}}\n",
            "src/steps.md:3 includes `snippet.txt`, which at line 2 includes `../../secret.txt`, \
             outside the book folder",
        ),
        (
            "extra/inner.md",
            "{{#include ../../secret.txt}}",
            "src/steps.md:3 includes `snippet.txt`, which at line 1 includes `../extra/inner.md`, \
             which at line 1 includes `../../secret.txt`, outside the book folder",
        ),
        (
            "src/SUMMARY.md",
            "# Summary\n\n- [Steps](steps.md)\n- [Secret](../../secret.md)\n",
            "src/../../secret.md`, outside the book folder",
        ),
    ];
    let refused = |what: &str, named: &str| {
        for subcommand in ["build", "test"] {
            let site = fixture.book_dir().join("book");
            let _ = std::fs::remove_dir_all(&site);
            let (code, out) = fixture.book(subcommand, &[]);
            assert_eq!(code, 2, "{what} {subcommand}: {out}");
            assert!(out.contains(named), "{what} {subcommand}: {out}");
            assert!(!ran.exists(), "{what} {subcommand}: a step ran");
            let leaked = site_files(&site)
                .into_iter()
                .any(|(_, bytes)| String::from_utf8_lossy(&bytes).contains("SECRET-FROM-OUTSIDE"));
            assert!(!leaked, "{what} {subcommand}");
        }
    };
    for (file, text, named) in attacks {
        legit();
        fixture.write(file, text);
        refused(file, named);
    }
    // A hard link carries the content of a file outside the book, published as it is or
    // included.
    legit();
    let inner = fixture.book_dir().join("extra/inner.md");
    std::fs::remove_file(&inner).unwrap();
    std::fs::hard_link(&secret, &inner).unwrap();
    refused("included hard link", "includes `../extra/inner.md`: `");
    refused(
        "included hard link",
        "extra/inner.md` is a hard link (2 names)",
    );
    std::fs::remove_file(&inner).unwrap();
    legit();
    std::fs::hard_link(&secret, fixture.book_dir().join("src/copy.txt")).unwrap();
    refused(
        "published hard link",
        "src/copy.txt` is a hard link (2 names)",
    );
}

/// Fails on main before this change: every build empties its build folder, and `build-dir = "."`
/// in book.toml deleted the whole book (book.toml, the chapters, the CSS); `src` deleted the
/// chapters; a step cache `cache-dir = "../patches-rocm"` wrote its entries into the records
/// folder. Each is refused before anything runs or renders, naming what the folder holds or where
/// it lies, and no file of the book or the records changes; folders of their own build.
#[test]
fn a_build_or_cache_folder_that_is_not_the_book_s_own_is_refused() {
    let fixture = BookFixture::new("# Steps\n\n```forkbook\nforkbook status\n```\n");
    fixture.write("theme/head.hbs", "<meta name=\"x\">\n");
    fixture.write("site/.git/HEAD", "ref: refs/heads/main\n");
    let book = fixture.book_dir();
    let toml = std::fs::read_to_string(book.join("book.toml")).unwrap();
    let sorted = |dir: &Path| {
        let mut files = site_files(dir);
        files.sort();
        files
    };
    let records = fixture.demo.records();
    let (book_before, records_before) = (sorted(&book), sorted(&records));
    let build = |dir: &str| format!("{toml}\n[build]\nbuild-dir = \"{dir}\"\n");
    let cache = |dir: &str| {
        toml.replace(
            "allow-shell",
            &format!("cache-dir = \"{dir}\"\nallow-shell"),
        )
    };
    let cases = [
        (build("."), "holds `book.toml`"),
        (build("src"), "holds `book.src`"),
        (build("src/site"), "lies in `book.src`"),
        (build("theme"), "holds `theme`"),
        (build("site"), "is or holds a git repository"),
        (
            cache("../patches-rocm"),
            "patches-rocm`, outside the book folder",
        ),
        (
            cache("src/cache"),
            "in `book.src`, which the site publishes",
        ),
        (
            cache("book/cache"),
            "in `build.build-dir`, which every build empties",
        ),
    ];
    for (book_toml, named) in cases {
        fixture.write("book.toml", &book_toml);
        let (code, out) = fixture.book("build", &[]);
        assert_eq!(code, 2, "{book_toml}: {out}");
        assert!(
            out.contains("the book writes where it must not") && out.contains(named),
            "{book_toml}: {out}"
        );
        fixture.write("book.toml", &toml);
        assert!(
            sorted(&book) == book_before,
            "{book_toml}: no file of the book changed"
        );
        assert!(
            sorted(&records) == records_before,
            "{book_toml}: nor of the records"
        );
    }
    let own = cache("own-cache").replace("[book]", "[build]\nbuild-dir = \"out\"\n\n[book]");
    fixture.write("book.toml", &own);
    let (code, out) = fixture.book("build", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(book.join("out/steps.html").is_file(), "{out}");
    assert!(book.join("own-cache").is_dir(), "{out}");
}

/// `book serve` is the stock `mdbook serve` (axum) with this forkbook as its preprocessor: 32
/// clients that connect and send nothing do not keep a 33rd from its page, answered within 5 s.
/// Fails on main before this change, whose own server answered 16 clients at a time (the 33rd
/// waited 20 s). Needs mdbook 0.5.4 on PATH, so `.ci/run` (which installs it) runs it with
/// `--ignored`.
#[test]
#[ignore = "needs the stock mdbook 0.5.4 on PATH; .ci/run installs it and runs this test"]
fn book_serve_answers_a_page_past_32_idle_clients() {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};
    forkbook::book::find_on_path("mdbook")
        .expect("`mdbook` is not on PATH: `cargo install mdbook --version 0.5.4 --locked`");
    let fixture = BookFixture::new("# Steps\n\n```forkbook,gate\nforkbook status\n```\n");
    let port = TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = fixture.demo.tmp.path().join("serve.log");
    let mut server = Command::new(forkbook_bin())
        .arg("--root")
        .arg(fixture.demo.root())
        .args(["book", "serve", "--port", &port.to_string(), "--dir"])
        .arg(fixture.book_dir())
        .env("FORKBOOK_CACHE", &fixture.demo.demo.cache)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(log.with_extension("err")).unwrap())
        .spawn()
        .unwrap();
    let log_text = || {
        format!(
            "{}{}",
            std::fs::read_to_string(&log).unwrap_or_default(),
            std::fs::read_to_string(log.with_extension("err")).unwrap_or_default()
        )
    };
    // The first build runs the step; the server listens once it is done.
    let started = Instant::now();
    let mut listening = false;
    while started.elapsed() < Duration::from_secs(240) {
        if let Some(status) = server.try_wait().unwrap() {
            panic!("`book serve` ended ({status}): {}", log_text());
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            listening = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(listening, "`book serve` never listened: {}", log_text());
    let idle: Vec<TcpStream> = (0..32)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    // Answered within 5 s: main's server answered 16 clients at a time and dropped an idle one
    // after 10 s, so this page came after 20 s there. A connection the server resets is asked
    // again, as a browser does, within the same 5 s (one such reset was seen in a CI run on a
    // busy machine; a server that resets every 33rd client still fails).
    let get = || -> std::io::Result<String> {
        let mut client = TcpStream::connect(("127.0.0.1", port))?;
        client.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(
            client,
            "GET /steps.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )?;
        let mut response = Vec::new();
        client.read_to_end(&mut response)?;
        Ok(String::from_utf8_lossy(&response).into_owned())
    };
    let asked = Instant::now();
    let mut read = get();
    while read.is_err() && asked.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
        read = get();
    }
    let response = read.as_deref().unwrap_or_default().to_string();
    server.kill().unwrap();
    server.wait().unwrap();
    drop(idle);
    assert!(read.is_ok(), "{read:?}; the server said: {}", log_text());
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains("layout   patch"),
        "the page holds the step's output, run through this forkbook: {response}"
    );
}
