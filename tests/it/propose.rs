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
