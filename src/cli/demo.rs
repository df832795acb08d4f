//! `forkbook demo`: the whole procedure, live, on a generated world with no network.

use super::{Ctx, OK};
use crate::demo::project::{generate, DemoProject};
use crate::engine::config::Layout;
use crate::engine::Result;
use std::path::PathBuf;

/// Build a small synthetic upstream, fork and overlay with real git history, then run the procedure on it
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to build the demo (default: a new folder under the system's temporary folder)
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Layout of the demo overlay
    #[arg(long, value_parser = ["patch", "files"], default_value = "patch")]
    pub layout: String,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("forkbook-demo-{}", std::process::id())),
    };
    // Absolute, so the world's URLs in forkbook.toml and the printed paths work from anywhere.
    let dir = std::path::absolute(&dir)?;
    if dir.join("project").exists() {
        return Err(
            crate::engine::Error::new(format!("`{}` already holds a demo", dir.display()))
                .with_note("pass a new folder, or remove that one"),
        );
    }
    let layout = if args.layout == "files" {
        Layout::Files
    } else {
        Layout::Patch
    };
    let demo = generate(&dir, layout)?;
    let world = &demo.world;
    writeln!(ctx.out, "demo world in {}", dir.display())?;
    writeln!(
        ctx.out,
        "  upstream {} (pin 1 {}, candidate pin 2 {})",
        world.upstream.display(),
        &world.pin1[..8],
        &world.pin2[..8]
    )?;
    writeln!(
        ctx.out,
        "  fork     {} (F1..F4: {})",
        world.fork.display(),
        world
            .fork_commits
            .iter()
            .map(|c| &c[..8])
            .collect::<Vec<_>>()
            .join(" ")
    )?;
    writeln!(
        ctx.out,
        "  project  {} ({} layout, 4 local fixes)",
        demo.root.display(),
        layout.name()
    )?;
    let f2 = world.fork_commits[1].clone();
    let pin2 = world.pin2.clone();
    let book = demo.root.join("book");
    crate::book::write_sources(&book)?;
    set_world_note(&book)?;
    let steps: Vec<(&str, Vec<String>)> = vec![
        ("the overlay at a glance", vec!["status".into()]),
        (
            "the committed overlay reproduces byte for byte",
            vec!["sync".into(), "--check".into()],
        ),
        (
            "core files against the pin plus the fork's change",
            vec!["residual".into()],
        ),
        (
            "fork sync to F2 (dry run): a local fix collides with the fork",
            vec!["sync".into(), f2.clone(), "--check".into()],
        ),
        (
            "pin bump to pin 2 (dry run): core-file conflicts",
            vec!["retarget".into(), pin2.clone(), "--check".into()],
        ),
        (
            "what the backend will fail to compile or link at pin 2",
            vec!["drift".into(), "api".into(), "--to".into(), pin2.clone()],
        ),
        (
            "everything a change must pass (a step needing a tool or GPU this machine lacks is skipped, saying why)",
            vec!["verify".into()],
        ),
        (
            "the executable book: every step above, run live and embedded",
            vec![
                "book".into(),
                "build".into(),
                "--dir".into(),
                book.to_string_lossy().into_owned(),
                "--var".into(),
                format!("candidate_pin={pin2}"),
                "--var".into(),
                format!("candidate_fork={f2}"),
            ],
        ),
    ];
    let mut previews_with_problems = 0;
    for (what, args) in steps {
        writeln!(ctx.out, "\n== {what}\n$ forkbook {}", args.join(" "))?;
        let is_book = args[0] == "book";
        let (code, printed) = run_on_demo(&demo, args, ctx)?;
        writeln!(ctx.out, "(exit {code})")?;
        if code == super::PROBLEMS {
            previews_with_problems += 1;
        }
        if is_book {
            writeln!(
                ctx.out,
                "{}",
                book_failures_note(&printed, previews_with_problems)
            )?;
        }
    }
    writeln!(
        ctx.out,
        "open {} in a browser",
        book.join("book/index.html").display()
    )?;
    // Each `next:` line is a shell command that works as printed, in order, in one shell.
    let forkbook = this_forkbook();
    let pin2 = &world.pin2[..8];
    writeln!(
        ctx.out,
        "\ngo on by hand (each `next:` line is a command to paste):"
    )?;
    writeln!(
        ctx.out,
        "next: cd {}",
        shell_quote(&demo.root.to_string_lossy())
    )?;
    // The build first: after the retarget the overlay holds conflict markers, and a build of it
    // would report their fallout as compile errors.
    writeln!(
        ctx.out,
        "next: {forkbook} drift build --to {pin2} --compiler c++    # the real build at pin 2, with C++, before anything moves"
    )?;
    writeln!(
        ctx.out,
        "next: {forkbook} retarget {pin2}    # the pin bump for real: conflicts to resolve, exit 1"
    )?;
    writeln!(
        ctx.out,
        "next: {forkbook} status    # exit 1: the conflict markers the retarget left, by overlay path"
    )?;
    writeln!(
        ctx.out,
        "next: {forkbook} materialize --out materialized    # the overlay's files: status's mlx/device.cpp:21 is materialized/mlx/device.cpp, line 21"
    )?;
    Ok(OK)
}

/// The demo's book says on its pages which red boxes its planted breaks make, so a reader of the
/// pages alone (not the terminal) knows them for the expected ones.
const WORLD_NOTE: &str = "**This book runs against forkbook's demo world, which is made to go \
wrong.** Its pin 2 conflicts with the fork's hook in `mlx/device.cpp` and breaks the backend's \
API, and its fork commit 2 collides with local fix 4. The red boxes of the previews that look at \
them (`retarget --check`, `drift api`, `drift build`, and `sync --check` to fork commit 2) are \
those planted breaks, found as a real bump's would be; none of them is gated. The gated boxes \
are green: a red one would be a real failure.";

/// Sets `world_note` in the demo book's `book.toml` (a project's book leaves it empty).
fn set_world_note(book: &std::path::Path) -> Result<()> {
    let (_, text) = crate::book::SOURCES
        .iter()
        .find(|(path, _)| *path == "book.toml")
        .expect("the book's sources hold book.toml");
    let quoted = toml::Value::String(WORLD_NOTE.to_string()).to_string();
    let text = text.replacen("world_note = \"\"", &format!("world_note = {quoted}"), 1);
    crate::engine::fsutil::write_file(&book.join("book.toml"), text.as_bytes())
}

/// What the book's failed steps are, so red boxes beside "exit 0" are not read as forkbook
/// failing: the previews above that exit 1 on purpose (the demo world is made to conflict and to
/// drift) and the machine's own steps, none of them gated.
fn book_failures_note(printed: &str, previews_with_problems: usize) -> String {
    let failed = printed
        .lines()
        .find_map(|line| {
            let (_, rest) = line.split_once(" passed, ")?;
            rest.split_once(" failed")?.0.parse::<usize>().ok()
        })
        .unwrap_or(0);
    if failed == 0 {
        return "every step of the book passed".to_string();
    }
    format!(
        "the book's {failed} failed {} expected: the demo world is made to conflict and to drift \
         ({previews_with_problems} of the previews above exit 1 the same way), and the build \
         step, where this machine has the compiler, fails on those breaks; none is gated, so \
         the book is still built (exit 0), and its pages say so at the top",
        if failed == 1 { "step is" } else { "steps are" }
    )
}

/// How to call this forkbook from a shell: `forkbook` when that is what PATH finds, else the
/// full path of this executable (after `cargo run`, forkbook is not on PATH).
fn this_forkbook() -> String {
    let this = std::env::current_exe().ok();
    let on_path = crate::book::find_on_path("forkbook");
    let same = match (&this, &on_path) {
        (Some(a), Some(b)) => a.canonicalize().ok() == b.canonicalize().ok(),
        _ => false,
    };
    match this {
        Some(exe) if !same && exe.file_name().is_some_and(|n| n == "forkbook") => {
            shell_quote(&exe.to_string_lossy())
        }
        _ => "forkbook".to_string(),
    }
}

/// `text` as one shell word (`shlex`'s quoting; a path holds no NUL, which no shell can take).
fn shell_quote(text: &str) -> String {
    let text = text.replace('\0', "");
    shlex::try_quote(&text).map_or(text.clone(), |quoted| quoted.into_owned())
}

/// Runs one forkbook command against the demo project, in process, printing what it prints;
/// returns its exit status and what it printed.
fn run_on_demo(demo: &DemoProject, args: Vec<String>, ctx: &mut Ctx) -> Result<(i32, String)> {
    let overrides = crate::engine::project::Overrides {
        cache: Some(demo.cache.clone()),
        ..Default::default()
    };
    let full = super::argv(&demo.root, &overrides, args);
    let mut buf = Vec::new();
    let code = super::run(full, &mut buf);
    ctx.out.write_all(&buf)?;
    Ok((code, String::from_utf8_lossy(&buf).into_owned()))
}
