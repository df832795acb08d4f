//! `forkbook demo`: the whole procedure, live, on a generated world with no network.

use super::adopt::LayoutArg;
use super::{Ctx, OK};
use crate::demo::project::{generate, DemoProject};
use crate::engine::config::Layout;
use crate::engine::text::short_id;
use crate::engine::Result;
use std::path::{Path, PathBuf};

/// Build a small synthetic upstream, fork and overlay with real git history, then run the procedure on it
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to build the demo (default: a new folder under the system's temporary folder)
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Layout of the demo overlay
    #[arg(long, value_enum, default_value_t = LayoutArg::Patch)]
    pub layout: LayoutArg,
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    let dir = demo_dir(args.dir.as_ref())?;
    let layout = Layout::from(args.layout);
    let demo = generate(&dir, layout)?;
    print_world(&demo, &dir, layout, ctx)?;
    let book = demo.root.join("book");
    crate::book::write_sources(&book)?;
    set_world_note(&book)?;
    run_steps(&demo, &book, ctx)?;
    writeln!(
        ctx.out,
        "open {} in a browser",
        book.join("book/index.html").display()
    )?;
    print_next_steps(&demo, ctx)?;
    Ok(OK)
}

/// The folder to build the demo in: absolute, so the world's URLs in forkbook.toml and the
/// printed paths work from anywhere, and not one that already holds a demo.
fn demo_dir(dir: Option<&PathBuf>) -> Result<PathBuf> {
    let dir = match dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("forkbook-demo-{}", std::process::id())),
    };
    let dir = std::path::absolute(&dir)?;
    if dir.join("project").exists() {
        return Err(
            crate::engine::Error::new(format!("`{}` already holds a demo", dir.display()))
                .with_note("pass a new folder, or remove that one"),
        );
    }
    Ok(dir)
}

/// Where the generated upstream, fork and project are, with the commits the steps name.
fn print_world(demo: &DemoProject, dir: &Path, layout: Layout, ctx: &mut Ctx) -> Result<()> {
    let world = &demo.world;
    let fork_commits: Vec<&str> = world.fork_commits.iter().map(|c| short_id(c)).collect();
    writeln!(ctx.out, "demo world in {}", dir.display())?;
    writeln!(
        ctx.out,
        "  upstream {} (pin 1 {}, candidate pin 2 {})",
        world.upstream.display(),
        short_id(&world.pin1),
        short_id(&world.pin2)
    )?;
    writeln!(
        ctx.out,
        "  fork     {} (F1..F4: {})",
        world.fork.display(),
        fork_commits.join(" ")
    )?;
    writeln!(
        ctx.out,
        "  project  {} ({} layout, 4 local fixes)",
        demo.root.display(),
        layout.name()
    )?;
    Ok(())
}

/// Runs the procedure's steps on the demo, each under its heading, then the book built from them.
fn run_steps(demo: &DemoProject, book: &Path, ctx: &mut Ctx) -> Result<()> {
    let mut previews_with_problems = 0;
    for (what, args) in demo_steps(demo, book) {
        writeln!(ctx.out, "\n== {what}\n$ forkbook {}", args.join(" "))?;
        let is_book = args[0] == "book";
        let (code, printed) = run_on_demo(demo, args, ctx)?;
        writeln!(ctx.out, "(exit {code})")?;
        if code == super::PROBLEMS {
            previews_with_problems += 1;
        }
        if is_book {
            let note = book_failures_note(&printed, previews_with_problems);
            writeln!(ctx.out, "{note}")?;
        }
    }
    Ok(())
}

/// The steps the demo runs: a heading and forkbook's arguments each.
fn demo_steps(demo: &DemoProject, book: &Path) -> Vec<(&'static str, Vec<String>)> {
    let (f2, pin2) = (&demo.world.fork_commits[1], &demo.world.pin2);
    // Every word of these is free of spaces; the book's folder is not, so it stays one argument.
    let words = |line: String| line.split(' ').map(String::from).collect::<Vec<_>>();
    let mut book_build = words("book build --dir".into());
    book_build.push(book.to_string_lossy().into_owned());
    book_build.extend(words(format!(
        "--var candidate_pin={pin2} --var candidate_fork={f2}"
    )));
    vec![
        ("the overlay at a glance", words("status".into())),
        (
            "the committed overlay reproduces byte for byte",
            words("sync --check".into()),
        ),
        (
            "core files against the pin plus the fork's change",
            words("residual".into()),
        ),
        (
            "fork sync to F2 (dry run): a local fix collides with the fork",
            words(format!("sync {f2} --check")),
        ),
        (
            "pin bump to pin 2 (dry run): core-file conflicts",
            words(format!("retarget {pin2} --check")),
        ),
        (
            "what the backend will fail to compile or link at pin 2",
            words(format!("drift api --to {pin2}")),
        ),
        (
            "everything a change must pass (a step needing a tool or GPU this machine lacks is skipped, saying why)",
            words("verify".into()),
        ),
        (
            "the executable book: every step above, run live and embedded",
            book_build,
        ),
    ]
}

/// Each `next:` line is a shell command that works as printed, in order, in one shell: the
/// demo's own object cache first (else they would fill `~/.cache/forkbook`), and no remote a
/// shell exports for another project (the world's own are in its forkbook.toml), then the pin bump
/// for real, through the conflict's resolution recorded as a fix, to a `check` that passes.
fn print_next_steps(demo: &DemoProject, ctx: &mut Ctx) -> Result<()> {
    let forkbook = this_forkbook();
    let pin2 = short_id(&demo.world.pin2);
    writeln!(
        ctx.out,
        "\ngo on by hand (each `next:` line is a command to paste):"
    )?;
    let root = shell_quote(&demo.root.to_string_lossy());
    writeln!(ctx.out, "next: cd {root}")?;
    let cache = shell_quote(&demo.cache.to_string_lossy());
    writeln!(
        ctx.out,
        "next: export FORKBOOK_CACHE={cache} && unset FORKBOOK_FORK_URL FORKBOOK_UPSTREAM_URL    # the demo's object cache, not ~/.cache/forkbook, and its own world's remotes"
    )?;
    let cause = upstream_commit_changing(demo, "mlx/device.cpp")?;
    let register = format!("{}/LOCAL_FIXES.md", demo.open()?.config.overlay.dir);
    // The build first: after the retarget the overlay holds conflict markers, and a build of it
    // would report their fallout as compile errors.
    let forkbook_lines = [
        format!("drift build --to {pin2} --compiler c++    # the real build at pin 2, with C++, before anything moves"),
        format!("retarget {pin2}    # the pin bump for real: conflicts to resolve, exit 1"),
        "status    # exit 1: the conflict markers the retarget left, by overlay path".to_string(),
        "materialize --out materialized    # the overlay's files: status's mlx/device.cpp:21 is materialized/mlx/device.cpp, line 21".to_string(),
    ];
    for command in forkbook_lines {
        writeln!(ctx.out, "next: {forkbook} {command}")?;
    }
    // The resolution keeps the fork's side (its CPU preference) and gives it the pin's new
    // device index: what a person would write in an editor, as one command to paste.
    writeln!(
        ctx.out,
        "next: perl -0pi -e 's/<<<<<<< .*?\\n=======\\n//s; s/\\n>>>>>>> [^\\n]*//; s/: Device::cpu\\}}/: Device::cpu, default_index()}}/' materialized/mlx/device.cpp    # resolve it as you would in an editor: the fork's CPU preference and the pin's device index, both kept"
    )?;
    writeln!(
        ctx.out,
        "next: {forkbook} fix add --from materialized --title \"Keep the fork's CPU preference beside the pin's device index\"    # the resolution becomes fix 5"
    )?;
    writeln!(
        ctx.out,
        "next: {forkbook} check    # exit 1: fix 5's entry has no state yet; its TODO line lists each state with the lines it needs"
    )?;
    writeln!(
        ctx.out,
        "next: perl -0pi -e 's/TODO: why this fix exists\\./Pin 2 reads the device index from MLX_DEVICE_INDEX; the fork keeps the CPU where MLX_ROCM_PREFER_CPU is set./; s/- state: TODO[^\\n]*/- state: retarget-only\\n- cause: {cause}/' {register}    # fix 5 adapts to pin 2: retarget-only, caused by upstream {}",
        short_id(&cause)
    )?;
    writeln!(
        ctx.out,
        "next: {forkbook} check    # exit 0: every check passes at pin 2"
    )?;
    Ok(())
}

/// The upstream commit after pin 1, up to pin 2, that last changed `path` (first parents): the
/// cause a resolution of its conflict is recorded with.
fn upstream_commit_changing(demo: &DemoProject, path: &str) -> Result<String> {
    let failed = |e: git2::Error| crate::engine::Error::new(format!("the demo's upstream: {e}"));
    let repo = git2::Repository::open_bare(&demo.world.upstream).map_err(failed)?;
    let blob = |commit: &git2::Commit| {
        let tree = commit.tree().ok()?;
        tree.get_path(Path::new(path)).ok().map(|entry| entry.id())
    };
    let mut commit = repo
        .find_commit(git2::Oid::from_str(&demo.world.pin2).map_err(failed)?)
        .map_err(failed)?;
    while commit.id().to_string() != demo.world.pin1 {
        let parent = commit.parent(0).map_err(failed)?;
        if blob(&commit) != blob(&parent) {
            return Ok(commit.id().to_string());
        }
        commit = parent;
    }
    Err(crate::engine::Error::new(format!(
        "no upstream commit of the demo changes `{path}` after pin 1"
    )))
}

/// The demo's book says on its pages which red boxes its planted breaks make, so a reader of the
/// pages alone (not the terminal) knows them for the expected ones.
const WORLD_NOTE: &str = "**This book runs against forkbook's demo world, which is made to go \
wrong.** Its pin 2 conflicts with the fork's hook in `mlx/device.cpp` and breaks the backend's \
API, and its fork commit 2 collides with local fix 4. The red boxes of the previews that look at \
them (`retarget --check`, `drift api`, `drift build`, and `sync --check` to fork commit 2) are \
those planted breaks, found as a real bump's would be; none of them is gated. The gated boxes \
are green: a red one would be a real failure.";

/// The demo book's `book.toml`: `world_note` set (a project's book leaves it empty), and the
/// fork and upstream named as the demo's own.
fn set_world_note(book: &Path) -> Result<()> {
    let text = crate::book::init::book_toml(&[
        ("world_note", WORLD_NOTE.to_string()),
        (
            "fork",
            "the demo world's fork, branch `rocm-support`".to_string(),
        ),
        (
            "upstream",
            "the demo world's upstream, branch `main`".to_string(),
        ),
    ]);
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
    // The demo's own world, whatever `FORKBOOK_*_URL` the shell exports for another project.
    let overrides = crate::engine::project::Overrides {
        cache: Some(demo.cache.clone()),
        fork_url: Some(demo.world.fork.to_string_lossy().into_owned()),
        upstream_url: Some(demo.world.upstream.to_string_lossy().into_owned()),
        ..Default::default()
    };
    let full = super::argv(&demo.root, &overrides, args);
    let mut buf = Vec::new();
    let code = super::run(full, &mut buf);
    ctx.out.write_all(&buf)?;
    Ok((code, String::from_utf8_lossy(&buf).into_owned()))
}
