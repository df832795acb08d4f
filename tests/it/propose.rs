//! `propose` on the generated world: packages against the fork commit that apply through
//! libgit2 and `git am`, pushed as branches, and links recorded in the register.

use std::path::Path;
use std::process::Command;

use crate::common::Demo;
use forkbook::engine::check::{gather_facts, run_checks};
use forkbook::engine::config::Layout;
use forkbook::engine::overlay::OverlayState;
use forkbook::engine::propose::{self, Package};
use forkbook::engine::{register, Cache};

/// Opens the cache. The run lock is an advisory lock on the cache folder, and a `git` process
/// another test thread forks at that moment briefly shares the descriptor: retry then.
fn open_cache(project: &forkbook::engine::Project) -> Cache {
    for _ in 0..50 {
        match Cache::open(project) {
            Ok(cache) => return cache,
            Err(e) if e.message().contains("another forkbook run") => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            Err(e) => panic!("{e}"),
        }
    }
    panic!("the object cache stayed locked")
}

/// Builds the packages of `numbers` on a demo project.
fn packages(demo: &Demo, numbers: &[u32]) -> forkbook::engine::Result<Vec<Package>> {
    let project = demo.demo.open().unwrap();
    let cache = open_cache(&project);
    let state = OverlayState::load(&project, &cache).unwrap();
    let register =
        register::load(&demo.records().join("LOCAL_FIXES.md"), "LOCAL_FIXES.md").unwrap();
    propose::build(&project, &cache, &state, &register, numbers)
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A work tree of the demo fork at the overlay's fork commit (F1).
fn fork_checkout(demo: &Demo, name: &str) -> std::path::PathBuf {
    let dir = demo.tmp.path().join(name);
    let fork = demo.demo.world.fork.to_str().unwrap();
    git(
        demo.tmp.path(),
        &["clone", "--quiet", fork, dir.to_str().unwrap()],
    );
    git(&dir, &["checkout", "--quiet", demo.fork(1)]);
    dir
}

#[test]
fn packages_apply_to_the_fork_commit_with_git_am_and_give_the_fixed_files() {
    let demo = Demo::new(Layout::Patch);
    let packages = packages(&demo, &[]).unwrap();
    let numbers: Vec<u32> = packages.iter().map(|p| p.number).collect();
    assert_eq!(numbers, [2, 4], "the demo's entries that apply to the fork");
    let allocator = &packages[0];
    assert_eq!(
        allocator.file,
        "0002-free-pooled-buffers-when-the-allocator-is.patch"
    );
    assert_eq!(allocator.paths, ["mlx/backend/rocm/allocator.cpp"]);
    assert_eq!(allocator.fork_commit, demo.fork(1));
    assert!(
        allocator
            .patch
            .contains("Subject: [PATCH] Free pooled buffers when the allocator is destroyed"),
        "{}",
        allocator.patch
    );
    let checkout = fork_checkout(&demo, "am");
    let patch = demo.tmp.path().join(&allocator.file);
    std::fs::write(&patch, &allocator.patch).unwrap();
    git(&checkout, &["am", "--quiet", patch.to_str().unwrap()]);
    // Fix 2 is exactly fork commit F3's allocator change, so git am must give F3's file.
    let f3 = git(
        &checkout,
        &[
            "show",
            &format!("{}:mlx/backend/rocm/allocator.cpp", demo.fork(3)),
        ],
    );
    let applied = std::fs::read_to_string(checkout.join("mlx/backend/rocm/allocator.cpp")).unwrap();
    assert_eq!(applied, f3);
    let cache = git2::Repository::open_bare(&demo.demo.cache).unwrap();
    let package_tree = cache
        .find_commit(git2::Oid::from_str(&allocator.commit).unwrap())
        .unwrap()
        .tree_id();
    assert_eq!(
        git(&checkout, &["rev-parse", "HEAD^{tree}"]).trim(),
        package_tree.to_string(),
        "git am gives the package's tree"
    );
}

#[test]
fn packages_apply_through_libgit2_and_are_the_same_commit_every_time() {
    let demo = Demo::new(Layout::Patch);
    let first = packages(&demo, &[4]).unwrap();
    let again = packages(&demo, &[4]).unwrap();
    assert_eq!(first[0].commit, again[0].commit);
    assert_eq!(first[0].patch, again[0].patch);
    let repo = git2::Repository::open(&demo.demo.world.fork).unwrap();
    let fork = repo
        .find_commit(git2::Oid::from_str(demo.fork(1)).unwrap())
        .unwrap();
    let diff = git2::Diff::from_buffer(first[0].patch.as_bytes()).unwrap();
    let mut index = repo
        .apply_to_tree(&fork.tree().unwrap(), &diff, None)
        .unwrap();
    let tree = repo.find_tree(index.write_tree_to(&repo).unwrap()).unwrap();
    let eval = tree
        .get_path(Path::new("mlx/backend/rocm/eval.cpp"))
        .unwrap();
    let text = String::from_utf8(repo.find_blob(eval.id()).unwrap().content().to_vec()).unwrap();
    assert!(
        text.contains("// local fix 4: synchronize before returning"),
        "{text}"
    );
}

#[test]
fn a_core_file_fix_is_carried_onto_the_fork_version_of_the_file() {
    let demo = Demo::new(Layout::Patch);
    let path = demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = register::set_fields(&text, 1, &[("state", "proposed")]).unwrap();
    std::fs::write(&path, text).unwrap();
    let package = packages(&demo, &[1]).unwrap().remove(0);
    assert_eq!(package.paths, ["mlx/fast.cpp"]);
    let checkout = fork_checkout(&demo, "core");
    let patch = demo.tmp.path().join("core.patch");
    std::fs::write(&patch, &package.patch).unwrap();
    git(&checkout, &["am", "--quiet", patch.to_str().unwrap()]);
    let fast = std::fs::read_to_string(checkout.join("mlx/fast.cpp")).unwrap();
    let fork_fast = git(
        &checkout,
        &["show", &format!("{}:mlx/fast.cpp", demo.fork(1))],
    );
    assert!(
        fast.contains("// Local fix 1: the ROCm fast path"),
        "{fast}"
    );
    assert_eq!(
        fast.lines().count(),
        fork_fast.lines().count() + 1,
        "only the fix's line is added to the fork's file"
    );
}

#[test]
fn entries_not_meant_for_the_fork_are_refused() {
    let demo = Demo::new(Layout::Patch);
    let err = packages(&demo, &[3]).unwrap_err();
    assert!(
        err.message()
            .contains("entry 3 is `kept-local`: it is not meant for the fork"),
        "{err}"
    );
    let err = packages(&demo, &[9]).unwrap_err();
    assert!(err.message().contains("no entry 9"), "{err}");
}

#[test]
fn files_layout_packages_come_from_the_files_each_entry_names() {
    let demo = Demo::new(Layout::Files);
    let packages = packages(&demo, &[2, 4]).unwrap();
    assert_eq!(packages[0].paths, ["mlx/backend/rocm/allocator.cpp"]);
    assert_eq!(packages[1].paths, ["mlx/backend/rocm/eval.cpp"]);
}

#[test]
fn push_to_a_local_bare_repository_creates_the_branch_with_exactly_that_commit() {
    let demo = Demo::new(Layout::Patch);
    let project = demo.demo.open().unwrap();
    let cache = open_cache(&project);
    let state = OverlayState::load(&project, &cache).unwrap();
    let register =
        register::load(&demo.records().join("LOCAL_FIXES.md"), "LOCAL_FIXES.md").unwrap();
    let package = propose::build(&project, &cache, &state, &register, &[2])
        .unwrap()
        .remove(0);
    let remote = demo.tmp.path().join("mine.git");
    git2::Repository::init_bare(&remote).unwrap();
    propose::push(&cache, remote.to_str().unwrap(), &package).unwrap();
    let mine = git2::Repository::open_bare(&remote).unwrap();
    let branch = mine
        .find_reference(&format!("refs/heads/{}", package.branch))
        .unwrap();
    let commit = branch.peel_to_commit().unwrap();
    assert_eq!(commit.id().to_string(), package.commit);
    assert_eq!(commit.parent_id(0).unwrap().to_string(), demo.fork(1));
    assert_eq!(
        commit.summary().unwrap(),
        Some("Free pooled buffers when the allocator is destroyed")
    );
}

#[test]
fn written_packages_have_their_pr_text_and_an_index() {
    let demo = Demo::new(Layout::Patch);
    let packages = packages(&demo, &[]).unwrap();
    let out = demo.tmp.path().join("out");
    propose::write(&out, &packages).unwrap();
    let pr = std::fs::read_to_string(
        out.join("0004-synchronize-the-stream-before-finalize-returns.pr.md"),
    )
    .unwrap();
    assert!(pr.starts_with("# Synchronize the stream before finalize returns\n\n`finalize` returned before queued work finished"), "{pr}");
    assert!(pr.contains("- ` mlx/backend/rocm/eval.cpp `"), "{pr}");
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    assert!(index.contains("| 2 | Free pooled buffers when the allocator is destroyed | proposed | [`0002-free-pooled-buffers-when-the-allocator-is.patch`]"), "{index}");
}

/// Fails on main before this change: the register's `@someone` and `#12` went into the pull
/// request's body for the fork as written: GitHub would notify that person, and `#12` linked the
/// fork's issue 12, not ours or upstream's. The body has them inert, a web address kept.
#[test]
fn the_pr_text_for_the_fork_notifies_no_one_and_links_none_of_its_issues() {
    let demo = Demo::new(Layout::Patch);
    let path = demo.records().join("LOCAL_FIXES.md");
    let register = std::fs::read_to_string(&path).unwrap();
    let said = "`finalize` returned before queued work finished";
    let added = " (thanks @someone and @ml-explore/core; #12, https://example.org/x#12)";
    assert!(register.contains(said));
    std::fs::write(&path, register.replacen(said, &format!("{said}{added}"), 1)).unwrap();
    let out = demo.tmp.path().join("out");
    propose::write(&out, &packages(&demo, &[4]).unwrap()).unwrap();
    let pr = std::fs::read_to_string(
        out.join("0004-synchronize-the-stream-before-finalize-returns.pr.md"),
    )
    .unwrap();
    let zw = '\u{200b}';
    let inert = format!(
        " (thanks @{zw}someone and @{zw}ml-explore/core; #{zw}12, https://example.org/x#12)"
    );
    assert!(pr.contains(&format!("{said}{inert}")), "{pr}");
}

/// A title and a link are the register's text: the index quotes them, so neither adds HTML, a
/// link of its own or a column to the table.
#[test]
fn the_index_quotes_the_register_s_titles_and_links() {
    let demo = Demo::new(Layout::Patch);
    let mut packages = packages(&demo, &[]).unwrap();
    packages[0].title = "Free <img src=x onerror=alert(1)> | [buffers](javascript:alert(2))".into();
    packages[0].link = Some("javascript:alert(3)".into());
    let out = demo.tmp.path().join("out");
    propose::write(&out, &packages).unwrap();
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    let row = index.lines().find(|l| l.contains("Free ")).unwrap();
    assert!(
        row.contains("| Free &lt;img src=x onerror=alert\\(1\\)\\> \\\\| \\[buffers\\]"),
        "{row}"
    );
    assert!(row.contains("| ` javascript:alert(3) ` |"), "{row}");
    let outside_code: String = index.split('`').step_by(2).collect();
    assert!(!outside_code.contains("<img"), "{index}");
    assert!(!outside_code.contains("](javascript"), "{index}");
    assert_eq!(row.matches(" | ").count(), 6, "{row}");
}

#[test]
fn record_adds_the_link_and_the_link_check_passes_again() {
    let demo = Demo::new(Layout::Patch);
    let path = demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("- link: https://github.com/NripeshN/mlx/pull/101\n", ""),
    )
    .unwrap();
    let link_findings = || {
        let project = demo.demo.open().unwrap();
        let cache = open_cache(&project);
        let state = OverlayState::load(&project, &cache).unwrap();
        let facts = gather_facts(&project, &cache, &state).unwrap();
        run_checks(&facts)
            .into_iter()
            .filter(|f| f.check == "fix-link-present")
            .count()
    };
    assert_eq!(link_findings(), 1);
    let project = demo.demo.open().unwrap();
    propose::record(
        &project,
        2,
        "https://github.com/NripeshN/mlx/pull/111",
        &demo.root().join("propose"),
    )
    .unwrap();
    assert_eq!(link_findings(), 0);
    let entry = register::load(&path, "LOCAL_FIXES.md")
        .unwrap()
        .entry(2)
        .unwrap()
        .clone();
    assert_eq!(
        entry.value("link"),
        Some("https://github.com/NripeshN/mlx/pull/111")
    );
}

#[test]
fn propose_command_writes_pushes_and_records() {
    let demo = Demo::new(Layout::Patch);
    let out = demo.tmp.path().join("packages");
    let remote = demo.tmp.path().join("mine.git");
    git2::Repository::init_bare(&remote).unwrap();
    let (code, text) = demo.run(&[
        "propose",
        "4",
        "--out",
        out.to_str().unwrap(),
        "--push",
        remote.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(
            "pushed as branch `propose/0004-synchronize-the-stream-before-finalize-returns`"
        ),
        "{text}"
    );
    assert!(out
        .join("0004-synchronize-the-stream-before-finalize-returns.patch")
        .is_file());
    let mine = git2::Repository::open_bare(&remote).unwrap();
    assert!(mine
        .find_reference("refs/heads/propose/0004-synchronize-the-stream-before-finalize-returns")
        .is_ok());
    let (code, text) = demo.run(&[
        "propose",
        "--record",
        "4",
        "https://github.com/NripeshN/mlx/pull/140",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    let entry = register::load(&demo.records().join("LOCAL_FIXES.md"), "f")
        .unwrap()
        .entry(4)
        .unwrap()
        .clone();
    assert_eq!(
        entry.value("link"),
        Some("https://github.com/NripeshN/mlx/pull/140")
    );
    let (code, text) = demo.run(&["propose", "3"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("entry 3 is `kept-local`"), "{text}");
}

/// Writes a one-chapter book rendering the register into the demo project.
fn register_book(demo: &Demo) -> std::path::PathBuf {
    let dir = demo.root().join("book");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let toml =
        "[book]\ntitle = \"register\"\n\n[preprocessor.forkbook]\ncommand = \"forkbook mdbook\"\n";
    std::fs::write(dir.join("book.toml"), toml).unwrap();
    std::fs::write(
        dir.join("src/SUMMARY.md"),
        "# Summary\n\n- [Register](register.md)\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/register.md"),
        "# The register\n\n{{#forkbook register}}\n",
    )
    .unwrap();
    dir
}

#[test]
fn the_book_fails_on_a_missing_link_and_passes_once_record_adds_it() {
    let demo = Demo::new(Layout::Patch);
    let book = register_book(&demo);
    let book = book.to_str().unwrap();
    let path = demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("- link: https://github.com/NripeshN/mlx/pull/102\n", ""),
    )
    .unwrap();
    let (code, out) = demo.run(&["book", "build", "--dir", book]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("fix-link-present")
            && out.contains("entry 4 applies to the fork but has no upstream link"),
        "{out}"
    );
    let url = "https://github.com/NripeshN/mlx/pull/150";
    let (code, out) = demo.run(&["propose", "--record", "4", url]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = demo.run(&["book", "build", "--dir", book]);
    assert_eq!(code, 0, "{out}");
    let html = std::fs::read_to_string(demo.root().join("book/book/register.html")).unwrap();
    assert!(
        html.contains(url),
        "the register table shows the recorded link"
    );
}

/// Fails on main before this test: `propose` without numbers stopped at entry 2 (exit 2,
/// "names no file that differs from the base tree") once the fork had merged its change, and
/// proposed nothing else.
#[test]
fn propose_without_numbers_skips_an_entry_the_fork_already_contains_and_proposes_the_others() {
    let demo = Demo::new(Layout::Files);
    // F3 holds fix 2's allocator change; fix 4 still applies to the fork.
    let (code, out) = demo.run(&["sync", demo.fork(3)]);
    assert_eq!(code, 1, "F3 still carries F2's conflict with fix 4: {out}");
    let packages = demo.tmp.path().join("packages");
    let (code, text) = demo.run(&["propose", "--out", packages.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    let f3 = &demo.fork(3)[..8];
    assert!(
        text.contains(&format!(
            "entry 2: skipped: the files it names equal the base tree (fork {f3}"
        )) && text.contains("mark the entry `merged` with the fork commit that contains it"),
        "{text}"
    );
    assert!(
        text.contains("entry 4: 0004-synchronize-the-stream-before-finalize-returns.patch"),
        "{text}"
    );
    assert!(text.contains("wrote 1 package and"), "{text}");
    assert!(packages
        .join("0004-synchronize-the-stream-before-finalize-returns.patch")
        .is_file());
    assert!(!packages
        .join("0002-free-pooled-buffers-when-the-allocator-is.patch")
        .exists());
    // Asked for by number, the same entry is an error saying why.
    let (code, text) = demo.run(&["propose", "2", "--out", packages.to_str().unwrap()]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("entry 2: the files it names equal the base tree"),
        "{text}"
    );
}

/// Fails on main before this change: `propose --out patches-rocm` wrote its packages and index
/// into the records folder, and `--out DIR` wrote over a file `index.md` of DIR's own. Both are
/// refused with nothing written; a folder holding other files gets the packages beside them,
/// and a folder propose made is its own to write again.
#[test]
fn propose_never_writes_into_the_records_or_over_a_file_not_its_own() {
    let demo = Demo::new(Layout::Files);
    let records = demo.records();
    let (code, out) = demo.run(&["propose", "--out", records.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("is or holds the records folder"), "{out}");
    let inside = records.join("packages");
    let (code, out) = demo.run(&["propose", "--out", inside.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("lies inside the records folder"), "{out}");
    assert!(!records.join("index.md").exists() && !inside.exists());

    let mine = demo.tmp.path().join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("index.md"), "my own index\n").unwrap();
    std::fs::write(mine.join("notes.txt"), "my notes\n").unwrap();
    let (code, out) = demo.run(&["propose", "--out", mine.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("it exists, and forkbook did not write"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(mine.join("index.md")).unwrap(),
        "my own index\n"
    );
    assert_eq!(
        std::fs::read_dir(&mine).unwrap().count(),
        2,
        "nothing written beside them"
    );

    std::fs::remove_file(mine.join("index.md")).unwrap();
    let (code, out) = demo.run(&["propose", "--out", mine.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(mine.join("index.md").is_file());
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.txt")).unwrap(),
        "my notes\n"
    );

    for _ in 0..2 {
        let (code, out) = demo.run(&["propose"]);
        assert_eq!(
            code, 0,
            "the default folder is propose's own, run after run: {out}"
        );
    }
}

/// Runs `forkbook ARGS` with the world's repositories as mirrors of the URLs `forkbook.toml`
/// names (as a user points `FORKBOOK_FORK_URL` at a clone of the fork).
fn run_with_mirrors(demo: &Demo, args: &[&str]) -> (i32, String) {
    let world = &demo.demo.world;
    let overrides = forkbook::engine::project::Overrides {
        cache: Some(demo.demo.cache.clone()),
        tool_path: Some(crate::common::tool_path().to_os_string()),
        fork_url: Some(world.fork.to_string_lossy().into_owned()),
        upstream_url: Some(world.upstream.to_string_lossy().into_owned()),
        ..Default::default()
    };
    let full = forkbook::cli::argv(demo.root(), &overrides, args.iter().copied());
    let mut out = Vec::new();
    let code = forkbook::cli::run(full, &mut out);
    (code, String::from_utf8_lossy(&out).into_owned())
}

/// `forkbook.toml` names the fork and upstream by their web addresses, as a real project does.
fn name_the_repositories_by_their_addresses(demo: &Demo) {
    let path = demo.root().join("forkbook.toml");
    let world = &demo.demo.world;
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text
        .replace(
            &format!("url = \"{}\"", world.fork.display()),
            "url = \"https://github.com/NripeshN/mlx.git\"",
        )
        .replace(
            &format!("url = \"{}\"", world.upstream.display()),
            "url = \"https://github.com/ml-explore/mlx.git\"",
        );
    assert!(text.contains("NripeshN/mlx.git") && text.contains("ml-explore/mlx.git"));
    std::fs::write(path, text).unwrap();
}

/// Appends `text` to line `line` (1-based) of the overlay file `path` in the records' tree.
fn mark_line(demo: &Demo, path: &str, line: usize, text: &str) {
    let file = demo.records().join("tree").join(path);
    let old = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<String> = old.lines().map(String::from).collect();
    lines[line - 1].push_str(text);
    std::fs::write(&file, format!("{}\n", lines.join("\n"))).unwrap();
}

fn add_entry(demo: &Demo, text: &str) {
    let path = demo.records().join("LOCAL_FIXES.md");
    let old = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{old}\n{text}")).unwrap();
}

fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
}

/// A commit of the world's fork with `parent` as its only parent and `parent`'s tree; `branch`
/// moves to it when given.
fn fork_commit(demo: &Demo, parent: &str, message: &str, branch: Option<&str>) -> String {
    let repo = git2::Repository::open_bare(&demo.demo.world.fork).unwrap();
    let parent = repo
        .find_commit(git2::Oid::from_str(parent).unwrap())
        .unwrap();
    let who = git2::Signature::new("t", "t@t", &git2::Time::new(1_700_000_000, 0)).unwrap();
    let tree = parent.tree().unwrap();
    let reference = branch.map(|b| format!("refs/heads/{b}"));
    let oid = repo
        .commit(reference.as_deref(), &who, &who, message, &tree, &[&parent])
        .unwrap();
    oid.to_string()
}

fn pull_ref(demo: &Demo, number: u32, commit: &str) {
    let repo = git2::Repository::open_bare(&demo.demo.world.fork).unwrap();
    let oid = git2::Oid::from_str(commit).unwrap();
    let name = format!("refs/pull/{number}/head");
    repo.reference(&name, oid, true, "test").unwrap();
}

/// The files layout with the project's own git history: two entries whose changes to one file
/// each came in the commit that wrote the entry (each its own package, the second stacked on
/// the first, as their lines touch), two entries sharing a file with no commit of their own
/// (one package that says so), and an entry naming no file (named with what to add, exit 1).
/// Every patch passes `git apply --check` on a clone of the fork at the fork commit, in order.
/// Fails on main before this change: `propose` stopped at entry 9 ("names no file that differs
/// from the base tree", exit 2) and wrote nothing.
#[test]
fn propose_packages_what_it_can_from_the_project_s_history_and_names_the_rest() {
    let demo = Demo::new(Layout::Files);
    name_the_repositories_by_their_addresses(&demo);
    let root = demo.root().to_path_buf();
    git(&root, &["init", "-q"]);
    commit_all(&root, "Adopt the ROCm overlay");
    let kernels = "mlx/backend/rocm/kernels.cpp";
    mark_line(&demo, kernels, 10, " // local fix 5: guard the empty grid");
    add_entry(&demo, "## 5. Guard the kernel launch against an empty grid\n\nFiles: `mlx/backend/rocm/kernels.cpp`\n\nAn empty grid launched anyway. Discussed in https://github.com/NripeshN/mlx/pull/103.\n\n- state: to-propose\n");
    commit_all(&root, "Guard the kernel launch against an empty grid");
    mark_line(
        &demo,
        kernels,
        12,
        " // local fix 6: round the block count up",
    );
    add_entry(&demo, "## 6. Round the block count up\n\nFiles: `mlx/backend/rocm/kernels.cpp`\n\nThe last partial block was dropped; see NripeshN/mlx#104 and ml-explore/mlx#7.\n\n- state: to-propose\n");
    commit_all(&root, "Round the block count up");
    // Not committed: entries 7 and 8 change one file, and entry 9 names none.
    let copy = "mlx/backend/rocm/copy.cpp";
    mark_line(&demo, copy, 5, " // local fix 7");
    mark_line(&demo, copy, 20, " // local fix 8");
    add_entry(&demo, "## 7. Copy strided views in one pass\n\nFiles: `mlx/backend/rocm/copy.cpp`\n\nLike https://github.com/NripeshN/mlx/pull/105.\n\n- state: to-propose\n");
    add_entry(&demo, "## 8. Copy an empty array without a launch\n\nFiles: `mlx/backend/rocm/copy.cpp`\n\nNo launch for no elements.\n\n- state: to-propose\n");
    add_entry(&demo, "## 9. Retry the device query once\n\nThe first query after a reset fails.\n\n- state: to-propose\n");
    // The fork's pull refs: #101 merged (its head on the branch), #102 open, #103 open, #105
    // squash-merged (the branch's commit names it), #104 none.
    pull_ref(&demo, 101, demo.fork(3));
    let open = fork_commit(
        &demo,
        demo.fork(1),
        "Synchronize before finalize returns",
        None,
    );
    pull_ref(&demo, 102, &open);
    pull_ref(
        &demo,
        103,
        &fork_commit(&demo, demo.fork(1), "Guard the empty grid", None),
    );
    pull_ref(
        &demo,
        105,
        &fork_commit(&demo, demo.fork(1), "Copy strided views", None),
    );
    let tip = demo.fork(4).to_string();
    let squash = fork_commit(
        &demo,
        &tip,
        "Copy strided views in one pass (#105)",
        Some("rocm-support"),
    );

    let out_dir = demo.tmp.path().join("packages");
    let (code, text) = run_with_mirrors(&demo, &["propose", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(code, 1, "some entries were not packaged: {text}");
    let history: Vec<String> = git(&root, &["log", "--format=%H", "-2"])
        .lines()
        .map(String::from)
        .collect();
    let (fix6_commit, fix5_commit) = (&history[0][..12], &history[1][..12]);
    let f1 = &demo.fork(1)[..12];
    for line in [
        "entry 5: 0005-guard-the-kernel-launch-against-an-empty-grid.patch (1 file)".to_string(),
        format!("  change from: commit {fix5_commit} of the project's history (\"Guard the kernel launch against an empty grid\"), the files it names"),
        format!("  change from: commit {fix6_commit} of the project's history (\"Round the block count up\"), the files it names"),
        "  stacked on entry 5 (their changes touch the same lines)".to_string(),
        "entry 7: 0007-copy-strided-views-in-one-pass.patch (1 file)".to_string(),
        "  one package for entries 7, 8: they share `mlx/backend/rocm/copy.cpp`, and no commit of the project's history tells their changes apart".to_string(),
        "  change from: the files it names, overlay against the base tree".to_string(),
        format!("  git apply --check onto fork commit {f1}: applies"),
        "entry 9: not packaged: entry 9 names no file".to_string(),
        "  note: add the files it changes to its text (`mlx/backend/rocm/…` in backticks) or a `- files:` line to entry 9 of `patches-rocm/LOCAL_FIXES.md`".to_string(),
        format!("  entry 2: fork #101: merged at {}", &demo.fork(3)[..12]),
        "  entry 4: fork #102: open (https://github.com/NripeshN/mlx/pull/102)".to_string(),
        "  entry 5: fork #103: open".to_string(),
        "  entry 6: fork #104: absent (NripeshN/mlx#104)".to_string(),
        format!("  entry 7: fork #105: merged at {}", &squash[..12]),
        "1 entry not packaged: add what each note says, then run `forkbook propose` again".to_string(),
        // Entries 1 and 3 cite the project's own tracker, which nobody mirrors here.
        "2 numbers of example/app cited, not read: it is neither the fork nor upstream".to_string(),
        // The upstream world has no pull refs at all: nothing is said of its numbers.
        "no pull refs of the upstream to read: the mirror holds no `refs/pull/*` (a GitHub mirror made with `git clone --mirror` has them): their state is not said".to_string(),
    ] {
        assert!(text.contains(&line), "missing {line:?} in:\n{text}");
    }
    assert!(
        !text.contains("entry 8: 0008"),
        "entry 8 is in entry 7's package: {text}"
    );
    // The stacked package does not apply to the fork commit alone, and says so.
    let six = text.split("entry 6: ").nth(1).unwrap();
    assert!(
        six.contains(&format!(
            "git apply --check onto fork commit {f1}: does not apply"
        )),
        "{text}"
    );

    // Each package holds its own change: 5's line in 5's patch, 6's in 6's.
    let patch = |name: &str| std::fs::read_to_string(out_dir.join(name)).unwrap();
    let added = |text: &str| -> String {
        text.lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let five = patch("0005-guard-the-kernel-launch-against-an-empty-grid.patch");
    let six = patch("0006-round-the-block-count-up.patch");
    let seven = patch("0007-copy-strided-views-in-one-pass.patch");
    assert!(
        added(&five).contains("local fix 5") && !added(&five).contains("local fix 6"),
        "{five}"
    );
    assert!(
        added(&six).contains("local fix 6") && !added(&six).contains("local fix 5"),
        "{six}"
    );
    assert!(
        added(&seven).contains("local fix 7") && added(&seven).contains("local fix 8"),
        "{seven}"
    );

    // git itself: every package that is on the fork commit applies there, and 6 after 5.
    let checkout = fork_checkout(&demo, "apply");
    let check = |name: &str| {
        let file = out_dir.join(name);
        git(&checkout, &["apply", "--check", file.to_str().unwrap()]);
    };
    for name in [
        "0002-free-pooled-buffers-when-the-allocator-is.patch",
        "0004-synchronize-the-stream-before-finalize-returns.patch",
        "0005-guard-the-kernel-launch-against-an-empty-grid.patch",
        "0007-copy-strided-views-in-one-pass.patch",
    ] {
        check(name);
    }
    let five_file = out_dir.join("0005-guard-the-kernel-launch-against-an-empty-grid.patch");
    git(&checkout, &["am", "--quiet", five_file.to_str().unwrap()]);
    check("0006-round-the-block-count-up.patch");

    // Asked for by number, entry 8 brings entry 7, whose change its file's difference holds.
    let (code, text) =
        run_with_mirrors(&demo, &["propose", "8", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("one package for entries 7, 8: they share"),
        "{text}"
    );

    // `fixes list` and `check` read the same states from the pull refs.
    let (code, list) = run_with_mirrors(&demo, &["fixes", "list"]);
    assert_eq!(code, 0, "{list}");
    for line in [
        format!(
            "       pull requests: fork #101 merged at {}",
            &demo.fork(3)[..12]
        ),
        "       pull requests: fork #102 open".to_string(),
        "       pull requests: fork #104 absent".to_string(),
    ] {
        assert!(list.contains(&line), "missing {line:?} in:\n{list}");
    }
    let (_, checked) = run_with_mirrors(&demo, &["check"]);
    let pull_findings: Vec<&str> = checked
        .lines()
        .filter(|l| l.contains("[fix-pull-state]"))
        .collect();
    assert_eq!(pull_findings.len(), 3, "{checked}");
    for finding in [
        "entry 2 is `proposed`, but the fork's pull request #101 is merged at",
        "entry 5 is to be proposed, but the fork's pull request #103 is already open",
        "entry 7 is to be proposed, but the fork's pull request #105 is merged at",
    ] {
        assert!(
            pull_findings.iter().any(|f| f.contains(finding)),
            "missing {finding:?} in:\n{checked}"
        );
    }
    assert!(
        checked.contains(
            "record it: `forkbook propose --record 5 https://github.com/NripeshN/mlx/pull/103`"
        ),
        "{checked}"
    );
}
