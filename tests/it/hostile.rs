//! The hostile-world corpus: fork trees that try to climb out of the overlay or carry awkward
//! bytes, built as real bare git repositories (a tiny upstream and a fork of it), then put
//! through `init`, `sync`, `sync --check` and `materialize` as a user runs them.
//!
//! Every case has one defined outcome: refused with exit 2 and a message that names the entry,
//! with nothing written; or carried byte for byte. Either way nothing appears outside the
//! project's records folder, the materialized folder and the object cache.
//!
//! Trees are written as raw tree objects, because libgit2's tree builder (rightly) refuses most
//! of these names; a real attacker's git server is not so polite.

use forkbook::engine::paths::check_relative;
use git2::{ObjectType, Oid, Repository, Signature, Time};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const BACKEND: &str = "mlx/backend/rocm/";

/// A tree being described: entries by raw name (bytes, so any name can be written).
#[derive(Clone, Default)]
struct Dir(BTreeMap<Vec<u8>, Node>);

#[derive(Clone)]
enum Node {
    File {
        mode: &'static str,
        bytes: Vec<u8>,
    },
    Dir(Dir),
    /// A gitlink (submodule entry) naming a commit that need not exist.
    Gitlink,
}

impl Dir {
    /// Puts `node` at `path`. Below the backend folder the rest of `path` is one entry name,
    /// whatever bytes it holds (so a name can hold `/`, `\` or a line break); elsewhere `/`
    /// separates folders.
    fn put(&mut self, path: &[u8], node: Node) {
        let parts: Vec<&[u8]> = match path.iter().position(|b| *b == b'/') {
            Some(_) if path.starts_with(BACKEND.as_bytes()) => {
                let rest = &path[BACKEND.len()..];
                let mut parts: Vec<&[u8]> = BACKEND
                    .trim_end_matches('/')
                    .split('/')
                    .map(str::as_bytes)
                    .collect();
                parts.push(rest);
                parts
            }
            Some(_) => path.split(|b| *b == b'/').collect(),
            None => vec![path],
        };
        let mut dir = self;
        for part in &parts[..parts.len() - 1] {
            let entry = dir
                .0
                .entry(part.to_vec())
                .or_insert_with(|| Node::Dir(Dir::default()));
            dir = match entry {
                Node::Dir(d) => d,
                _ => panic!("not a folder"),
            };
        }
        dir.0.insert(parts[parts.len() - 1].to_vec(), node);
    }

    fn file(&mut self, path: &str, bytes: impl Into<Vec<u8>>) {
        self.put(
            path.as_bytes(),
            Node::File {
                mode: "100644",
                bytes: bytes.into(),
            },
        );
    }

    /// Writes the tree as a raw object: `<mode> <name>\0<20-byte id>` per entry, in git's order.
    fn write(&self, repo: &Repository) -> Oid {
        let mut entries: Vec<(Vec<u8>, &'static str, Oid)> = Vec::new();
        for (name, node) in &self.0 {
            let (mode, id, sort_key) = match node {
                Node::File { mode, bytes } => (*mode, repo.blob(bytes).unwrap(), name.clone()),
                Node::Dir(dir) => ("40000", dir.write(repo), [name.as_slice(), b"/"].concat()),
                Node::Gitlink => (
                    "160000",
                    Oid::from_str("1234567890123456789012345678901234567890").unwrap(),
                    name.clone(),
                ),
            };
            entries.push((sort_key, mode, id));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut raw = Vec::new();
        for (key, mode, id) in entries {
            let name = key
                .strip_suffix(b"/")
                .filter(|_| mode == "40000")
                .unwrap_or(&key);
            raw.extend_from_slice(mode.as_bytes());
            raw.push(b' ');
            raw.extend_from_slice(name);
            raw.push(0);
            raw.extend_from_slice(id.as_bytes());
        }
        repo.odb().unwrap().write(ObjectType::Tree, &raw).unwrap()
    }
}

fn commit(repo: &Repository, tree: &Dir, parent: Option<Oid>, message: &str) -> Oid {
    let tree = repo.find_tree(tree.write(repo)).unwrap();
    let who = Signature::new(
        "Hostile Fork",
        "fork@example.com",
        &Time::new(1_700_000_000, 0),
    )
    .unwrap();
    let parents: Vec<git2::Commit> = parent
        .map(|p| repo.find_commit(p).unwrap())
        .into_iter()
        .collect();
    let parents: Vec<&git2::Commit> = parents.iter().collect();
    repo.commit(None, &who, &who, message, &tree, &parents)
        .unwrap()
}

/// The tiny upstream: a root CMake file, a core CMake file with CRLF line ends, one source.
fn upstream_tree() -> Dir {
    let mut dir = Dir::default();
    dir.file(
        "CMakeLists.txt",
        "cmake_minimum_required(VERSION 3.20)\nproject(mini)\nadd_subdirectory(mlx)\n",
    );
    dir.file(
        "mlx/CMakeLists.txt",
        "add_library(mlx core.cpp)\r\ntarget_include_directories(mlx PUBLIC .)\r\n",
    );
    dir.file("mlx/core.cpp", "int core() { return 1; }\n");
    dir
}

/// The fork at F1: upstream plus its hook in the core file and a clean backend.
fn fork_f1() -> Dir {
    let mut dir = upstream_tree();
    dir.file(
        "mlx/CMakeLists.txt",
        "add_library(mlx core.cpp)\r\nif(MLX_BUILD_ROCM)\r\n  add_subdirectory(backend/rocm)\r\nendif()\r\ntarget_include_directories(mlx PUBLIC .)\r\n",
    );
    dir.file(
        "mlx/backend/rocm/CMakeLists.txt",
        "target_sources(mlx PRIVATE eval.cpp)\n",
    );
    dir.file("mlx/backend/rocm/eval.cpp", "void eval() {}\n");
    dir
}

/// A world: upstream `main` at the pin; fork `rocm-support` at F1 then F2 = `f2(F1 tree)`.
struct World {
    tmp: tempfile::TempDir,
    pin: Oid,
    f1: Oid,
    f2: Oid,
}

impl World {
    fn new(f1_tree: Dir, f2_tree: Dir) -> World {
        let tmp = tempfile::tempdir().unwrap();
        let upstream = Repository::init_bare(tmp.path().join("upstream.git")).unwrap();
        let fork = Repository::init_bare(tmp.path().join("fork.git")).unwrap();
        let pin = commit(&upstream, &upstream_tree(), None, "upstream: the pin");
        upstream
            .reference("refs/heads/main", pin, true, "test")
            .unwrap();
        // The same tree and signature give the same commit id in the fork's repository.
        assert_eq!(
            commit(&fork, &upstream_tree(), None, "upstream: the pin"),
            pin
        );
        let f1 = commit(&fork, &f1_tree, Some(pin), "fork: F1");
        let f2 = commit(&fork, &f2_tree, Some(f1), "fork: F2");
        fork.reference("refs/heads/rocm-support", f2, true, "test")
            .unwrap();
        World { tmp, pin, f1, f2 }
    }

    fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// A new project folder `name` of `layout` on this world.
    fn project(&self, name: &str, layout: &str) -> PathBuf {
        let root = self.root().join(name);
        std::fs::create_dir_all(&root).unwrap();
        let config = format!(
            "[overlay]\ndir = \"patches-rocm\"\nlayout = \"{layout}\"\nbackend_prefix = \"{BACKEND}\"\ncore_files = [\"mlx/CMakeLists.txt\"]\n\n\
             [fork]\nurl = \"{}\"\nbranch = \"rocm-support\"\n\n[upstream]\nurl = \"{}\"\nbranch = \"main\"\n",
            self.root().join("fork.git").display(),
            self.root().join("upstream.git").display()
        );
        std::fs::write(root.join("forkbook.toml"), config).unwrap();
        root
    }

    /// `forkbook --root ROOT --cache CACHE ARGS`, in process: (exit status, everything printed).
    fn run(&self, root: &Path, args: &[&str]) -> (i32, String) {
        let mut full: Vec<std::ffi::OsString> = vec![
            "forkbook".into(),
            "--root".into(),
            root.into(),
            "--tool-path".into(),
            crate::common::tool_path().into(),
            "--cache".into(),
        ];
        full.push(self.root().join("cache.git").into());
        full.extend(args.iter().map(|a| a.into()));
        let mut out = Vec::new();
        let code = forkbook::cli::run(full, &mut out);
        (code, String::from_utf8_lossy(&out).into_owned())
    }
}

/// Every path below `dir` (files and folders), skipping the object cache, whose insides git owns.
fn paths_below(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let rel = format!("{prefix}{}", entry.file_name().to_string_lossy());
            out.push(rel.clone());
            if entry.file_type().unwrap().is_dir() && rel != "cache.git" {
                walk(&entry.path(), &format!("{rel}/"), out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, "", &mut out);
    out.sort();
    out
}

/// The new paths below the world's root, outside the places forkbook may write.
fn written_outside(before: &[String], after: &[String], allowed: &[&str]) -> Vec<String> {
    after
        .iter()
        .filter(|p| !before.contains(p))
        .filter(|p| {
            !allowed
                .iter()
                .any(|a| p.as_str() == *a || p.starts_with(&format!("{a}/")))
        })
        .cloned()
        .collect()
}

/// Names the hostile entries aim at; none may ever appear anywhere.
const ESCAPE_NAMES: [&str; 4] = [
    "escaped.txt",
    "forkbook-hostile-abs",
    "post-checkout",
    "config-from-fork",
];

fn assert_nothing_escaped(world: &World) {
    for path in paths_below(world.root()) {
        assert!(
            !ESCAPE_NAMES.iter().any(|n| path.ends_with(n)),
            "`{path}` was written"
        );
    }
    assert!(!Path::new("/tmp/forkbook-hostile-abs").exists());
}

/// One refused case: F1 is clean, F2 adds the hostile entry. `init` at F2 is refused naming
/// `shown`; an overlay at F1 refuses to sync to F2 and keeps its records; nothing escapes.
fn assert_refused(name: &str, entry: &[u8], node: Node, shown: &str, why: &str) {
    let mut f2 = fork_f1();
    f2.put(entry, node);
    let world = World::new(fork_f1(), f2);
    for layout in ["patch", "files"] {
        let fresh = world.project(&format!("fresh-{layout}"), layout);
        let project = world.project(&format!("synced-{layout}"), layout);
        let before = paths_below(world.root());
        let (code, out) = world.run(
            &fresh,
            &[
                "init",
                "--fork",
                &world.f2.to_string(),
                "--pin",
                &world.pin.to_string(),
            ],
        );
        assert_eq!(code, 2, "{name} ({layout}): init must refuse: {out}");
        assert!(
            out.contains(shown),
            "{name} ({layout}): the message names `{shown}`: {out}"
        );
        assert!(
            out.contains(why),
            "{name} ({layout}): the message says `{why}`: {out}"
        );
        assert!(
            !fresh.join("patches-rocm").exists(),
            "{name}: a refused init writes no records"
        );

        let (code, out) = world.run(
            &project,
            &[
                "init",
                "--fork",
                &world.f1.to_string(),
                "--pin",
                &world.pin.to_string(),
            ],
        );
        assert_eq!(code, 0, "{name}: init at the clean F1: {out}");
        let records = std::fs::read_dir(project.join("patches-rocm"))
            .unwrap()
            .count();
        let upstream = std::fs::read(project.join("patches-rocm/UPSTREAM")).unwrap();
        let (code, out) = world.run(&project, &["sync", &world.f2.to_string()]);
        assert_eq!(code, 2, "{name} ({layout}): sync must refuse: {out}");
        assert!(out.contains(shown), "{name} ({layout}): {out}");
        assert_eq!(
            std::fs::read(project.join("patches-rocm/UPSTREAM")).unwrap(),
            upstream,
            "{name}: records untouched"
        );
        assert_eq!(
            std::fs::read_dir(project.join("patches-rocm"))
                .unwrap()
                .count(),
            records
        );

        let after = paths_below(world.root());
        // Beside the object cache: the blob digests a files-layout run keeps, and their secret.
        let allowed = [
            format!("synced-{layout}/patches-rocm"),
            "cache.git".to_string(),
            "forkbook-blob-digests".to_string(),
            "forkbook-cache.key".to_string(),
        ];
        let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
        assert_eq!(
            written_outside(&before, &after, &allowed),
            Vec::<String>::new(),
            "{name} ({layout})"
        );
        assert_nothing_escaped(&world);
    }
}

fn file(bytes: &str) -> Node {
    Node::File {
        mode: "100644",
        bytes: bytes.as_bytes().to_vec(),
    }
}

fn link(target: &str) -> Node {
    Node::File {
        mode: "120000",
        bytes: target.as_bytes().to_vec(),
    }
}

fn folder(name: &str, node: Node) -> Node {
    let mut dir = Dir::default();
    dir.0.insert(name.as_bytes().to_vec(), node);
    Node::Dir(dir)
}

#[test]
fn dot_dot_entry_is_refused() {
    let entry = b"mlx/backend/rocm/..";
    assert_refused(
        "..",
        entry,
        folder("escaped.txt", file("out\n")),
        "mlx/backend/rocm/..`",
        "`..` component",
    );
}

#[test]
fn absolute_looking_names_are_refused() {
    let entry = b"mlx/backend/rocm//tmp/forkbook-hostile-abs";
    assert_refused(
        "absolute",
        entry,
        file("abs\n"),
        "mlx/backend/rocm//tmp/forkbook-hostile-abs",
        "empty or `.` component",
    );
    let entry = b"mlx/backend/rocm/..\\..\\escaped.txt";
    assert_refused(
        "backslash",
        entry,
        file("win\n"),
        "escaped.txt",
        "backslash",
    );
    let entry = b"mlx/backend/rocm/.";
    assert_refused(
        "dot",
        entry,
        folder("escaped.txt", file("dot\n")),
        "mlx/backend/rocm/.`",
        "`.` component",
    );
}

#[test]
fn dot_git_components_are_refused() {
    let entry = b"mlx/backend/rocm/.git";
    assert_refused(
        ".git",
        entry,
        folder("config-from-fork", file("[core]\n")),
        "mlx/backend/rocm/.git`",
        "`.git` component",
    );
    let entry = b"mlx/backend/rocm/.GIT";
    let hooks = folder(
        "hooks",
        folder("post-checkout", file("#!/bin/sh\nrm -rf ~\n")),
    );
    assert_refused(
        ".GIT",
        entry,
        hooks,
        "mlx/backend/rocm/.GIT`",
        "`.git` component",
    );
}

#[test]
fn links_are_refused_and_escaping_ones_say_so() {
    let entry = b"mlx/backend/rocm/escape";
    assert_refused(
        "escaping link",
        entry,
        link("../../../../etc/passwd"),
        "mlx/backend/rocm/escape",
        "leads outside",
    );
    let entry = b"mlx/backend/rocm/abs-link";
    assert_refused(
        "absolute link",
        entry,
        link("/etc/passwd"),
        "mlx/backend/rocm/abs-link",
        "leads outside",
    );
    let entry = b"mlx/backend/rocm/alias.cpp";
    assert_refused(
        "inner link",
        entry,
        link("eval.cpp"),
        "mlx/backend/rocm/alias.cpp",
        "links are not supported",
    );
}

#[test]
fn line_breaks_in_names_are_refused() {
    let entry = b"mlx/backend/rocm/bad\nname.cpp";
    assert_refused(
        "newline",
        entry,
        file("x\n"),
        "mlx/backend/rocm/bad\\nname.cpp",
        "NUL or line break",
    );
    let entry = b"mlx/backend/rocm/bad\rname.cpp";
    assert_refused(
        "carriage return",
        entry,
        file("x\n"),
        "mlx/backend/rocm/bad\\rname.cpp",
        "NUL or line break",
    );
}

#[test]
fn nul_in_a_name_cannot_be_written_and_is_refused_by_the_path_check() {
    // A NUL ends the name inside a tree object, so no git tree can carry one: libgit2's
    // builder refuses it outright, and the path check refuses it should it ever arrive.
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::init_bare(tmp.path()).unwrap();
    let blob = repo.blob(b"x\n").unwrap();
    let mut builder = repo.treebuilder(None).unwrap();
    assert!(builder.insert("bad\0name.cpp", blob, 0o100644).is_err());
    let err = check_relative("mlx/backend/rocm/bad\0name.cpp").unwrap_err();
    assert!(err.message().contains("NUL or line break"), "{err}");
    assert!(
        err.message().contains("bad\\0name.cpp"),
        "the name is shown escaped: {err}"
    );
}

#[test]
fn non_utf8_names_are_refused() {
    let entry = b"mlx/backend/rocm/caf\xe9.cpp";
    assert_refused(
        "non-UTF-8 name",
        entry,
        file("x\n"),
        "non-UTF-8 file name under `mlx/backend/rocm/`",
        "non-UTF-8",
    );
}

#[test]
fn submodules_are_refused() {
    assert_refused(
        "submodule",
        b"mlx/backend/rocm/third_party",
        Node::Gitlink,
        "mlx/backend/rocm/third_party",
        "submodule",
    );
}

/// Awkward but legitimate contents, by backend path.
fn odd_files() -> Vec<(&'static str, Vec<u8>)> {
    let mut big = Vec::with_capacity(50 << 20);
    let mut x: u32 = 1;
    while big.len() < 50 << 20 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        big.extend_from_slice(&x.to_le_bytes());
    }
    vec![
        ("mlx/backend/rocm/big.bin", big),
        (
            "mlx/backend/rocm/kernel.hsaco",
            b"\x7fELF\x02\x01\x01\0\0\0\0\0\xff\xfe\x00binary\0\0".to_vec(),
        ),
        (
            "mlx/backend/rocm/crlf.cpp",
            b"int a;\r\nint b;\r\nint c;\r\n".to_vec(),
        ),
        (
            "mlx/backend/rocm/no_newline.cpp",
            b"int last_line_without_newline;".to_vec(),
        ),
        (
            "mlx/backend/rocm/latin1.cpp",
            b"// caf\xe9 \xff\xfe not UTF-8\nint x;\n".to_vec(),
        ),
        ("mlx/backend/rocm/empty.cpp", Vec::new()),
    ]
}

/// F2 changes each odd file (still odd) so that a sync carries new bytes.
fn odd_files_f2() -> Vec<(&'static str, Vec<u8>)> {
    odd_files()
        .into_iter()
        .map(|(path, mut bytes)| {
            match path {
                p if p.ends_with("crlf.cpp") => bytes.extend_from_slice(b"int d;\r\n"),
                p if p.ends_with("no_newline.cpp") => bytes.extend_from_slice(b" int more;"),
                p if p.ends_with("big.bin") => bytes[25 << 20] ^= 0xff,
                _ => bytes.extend_from_slice(b"\xe9\0"),
            }
            (path, bytes)
        })
        .collect()
}

fn with_odd(files: Vec<(&'static str, Vec<u8>)>) -> Dir {
    let mut dir = fork_f1();
    for (path, bytes) in files {
        dir.file(path, bytes);
    }
    dir
}

fn read_all(dir: &Path, prefix: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for path in paths_below(dir) {
        let full = dir.join(&path);
        if full.is_file() && path.starts_with(prefix) {
            out.insert(path, std::fs::read(full).unwrap());
        }
    }
    out
}

#[test]
fn odd_contents_are_carried_byte_for_byte_through_init_and_sync() {
    let world = World::new(with_odd(odd_files()), with_odd(odd_files_f2()));
    let before = paths_below(world.root());
    for layout in ["patch", "files"] {
        let project = world.project(layout, layout);
        let (code, out) = world.run(
            &project,
            &[
                "init",
                "--fork",
                &world.f1.to_string(),
                "--pin",
                &world.pin.to_string(),
            ],
        );
        assert_eq!(code, 0, "{layout}: {out}");
        let (code, out) = world.run(&project, &["sync", "--check"]);
        assert_eq!(code, 0, "{layout}: {out}");
        for (step, files) in [("init", odd_files()), ("sync", odd_files_f2())] {
            if step == "sync" {
                let (code, out) = world.run(&project, &["sync", &world.f2.to_string()]);
                assert_eq!(code, 0, "{layout}: {out}");
                let (code, out) = world.run(&project, &["sync", "--check"]);
                assert_eq!(code, 0, "{layout} after sync: {out}");
            }
            let mat = project.join("materialized");
            let (code, out) = world.run(&project, &["materialize", "--out", mat.to_str().unwrap()]);
            assert_eq!(code, 0, "{layout}: {out}");
            let written = read_all(&mat, "");
            for (path, bytes) in &files {
                assert!(
                    written.get(*path) == Some(bytes),
                    "{layout} after {step}: `{path}` is not carried byte for byte"
                );
            }
            // The core file is the fork's, CRLF line ends and all (pin = base: the merge is exact).
            let hook = b"add_library(mlx core.cpp)\r\nif(MLX_BUILD_ROCM)\r\n  add_subdirectory(backend/rocm)\r\nendif()\r\ntarget_include_directories(mlx PUBLIC .)\r\n";
            assert_eq!(written["mlx/CMakeLists.txt"], hook.to_vec(), "{layout}");
            if layout == "files" {
                let tree = read_all(&project.join("patches-rocm/tree"), "");
                for (path, bytes) in &files {
                    assert!(
                        tree.get(*path) == Some(bytes),
                        "files layout record of `{path}` after {step}"
                    );
                }
            }
            let lock = std::fs::read_to_string(project.join("patches-rocm/overlay.lock")).unwrap();
            let big = &files[0].1;
            assert!(
                lock.contains(&format!(
                    "{}  mlx/backend/rocm/big.bin",
                    forkbook::engine::records::sha256_hex(big)
                )),
                "{lock}"
            );
        }
    }
    let after = paths_below(world.root());
    let allowed = [
        "patch",
        "files",
        "cache.git",
        "forkbook-blob-digests",
        "forkbook-cache.key",
    ];
    assert_eq!(
        written_outside(&before, &after, &allowed),
        Vec::<String>::new()
    );
    for layout in ["patch", "files"] {
        let unexpected: Vec<String> = paths_below(&world.root().join(layout))
            .into_iter()
            .filter(|p| {
                !["forkbook.toml", "patches-rocm", "materialized"]
                    .iter()
                    .any(|a| p == a || p.starts_with(&format!("{a}/")))
            })
            .collect();
        assert_eq!(unexpected, Vec::<String>::new(), "{layout}");
    }
    assert_nothing_escaped(&world);
}

#[test]
fn a_local_fix_on_a_crlf_file_survives_a_sync_that_changes_other_lines() {
    let world = World::new(with_odd(odd_files()), with_odd(odd_files_f2()));
    let project = world.project("files", "files");
    let (code, out) = world.run(
        &project,
        &[
            "init",
            "--fork",
            &world.f1.to_string(),
            "--pin",
            &world.pin.to_string(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    // A local fix in the files layout: the record's whole file is edited.
    let crlf = project.join("patches-rocm/tree/mlx/backend/rocm/crlf.cpp");
    std::fs::write(&crlf, b"int A; // local fix\r\nint b;\r\nint c;\r\n").unwrap();
    let (code, out) = world.run(&project, &["sync", &world.f2.to_string()]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read(&crlf).unwrap(),
        b"int A; // local fix\r\nint b;\r\nint c;\r\nint d;\r\n",
        "{out}"
    );
}

/// Fails on main before issue 12: two upstream links that each stay inside (`a/b/up -> ../..`,
/// `a/b/out -> up/../secret.txt`) were exported, and together they lead outside the tree.
#[test]
fn export_tree_refuses_a_chain_of_links_that_leaves_the_tree() {
    let world = World::new(fork_f1(), fork_f1());
    let upstream = Repository::open_bare(world.root().join("upstream.git")).unwrap();
    let mut tree = upstream_tree();
    tree.put(b"a/b/up", link("../.."));
    tree.put(b"a/b/out", link("up/../secret.txt"));
    let escaping = commit(&upstream, &tree, Some(world.pin), "upstream: links");
    let mut tree = upstream_tree();
    tree.put(b"a/b/up", link("../.."));
    tree.put(b"a/b/in", link("up/mlx/core.cpp"));
    let staying = commit(&upstream, &tree, Some(world.pin), "upstream: links inside");
    upstream
        .reference("refs/heads/links", escaping, true, "test")
        .unwrap();
    upstream
        .reference("refs/heads/links-inside", staying, true, "test")
        .unwrap();
    let project = world.project("links", "patch");
    let (code, out) = world.run(
        &project,
        &[
            "init",
            "--fork",
            &world.f1.to_string(),
            "--pin",
            &world.pin.to_string(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    let dest = world.root().join("export");
    let (code, out) = world.run(
        &project,
        &[
            "export-tree",
            "--at",
            &escaping.to_string(),
            "--dest",
            dest.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("a/b/out") && out.contains("outside the tree"),
        "{out}"
    );
    assert!(!dest.exists(), "nothing was written");
    let (code, out) = world.run(
        &project,
        &[
            "export-tree",
            "--at",
            &staying.to_string(),
            "--dest",
            dest.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read_to_string(dest.join("a/b/in")).unwrap(),
        "int core() { return 1; }\n"
    );
}

/// Fails on main before issue 12: `sync` printed a fork's file name raw, so ESC and BEL in it
/// reached the terminal (retitle it, erase a line, forge "applies as before").
#[test]
fn control_characters_in_a_fork_file_name_never_reach_the_terminal() {
    let mut f2 = fork_f1();
    let name =
        "mlx/backend/rocm/\u{1b}]0;owned\u{7}\u{1b}[2K\u{1b}[1A  fix 1: applies as before.cpp";
    f2.file(name, "int x;\n");
    let world = World::new(fork_f1(), f2);
    let project = world.project("escape", "patch");
    let (code, out) = world.run(
        &project,
        &[
            "init",
            "--fork",
            &world.f1.to_string(),
            "--pin",
            &world.pin.to_string(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    let f2 = world.f2.to_string();
    for args in [vec!["sync", &f2, "--check"], vec!["sync", &f2]] {
        let (code, out) = world.run(&project, &args);
        assert_eq!(code, 0, "{args:?}: {out}");
        assert!(
            !out.contains(|c: char| c.is_control() && c != '\n'),
            "{args:?}: a control character reached the output: {out:?}"
        );
        assert!(
            out.contains("\"mlx/backend/rocm/\\033]0;owned\\a\\033[2K\\033[1A  fix 1: applies as before.cpp\": added"),
            "{args:?}: the name is shown quoted the way git quotes it: {out}"
        );
    }
}

/// Fails on main before this change: the sync preview's table put a fork file name's ESC and
/// BEL into the book's page as raw bytes (`cat` of the page replays them on a terminal). Every
/// page is scanned: no byte below 0x20 but the line break and the tab, and no DEL.
#[test]
fn control_characters_in_a_fork_file_name_never_reach_a_page() {
    let mut f2 = fork_f1();
    let name = "mlx/backend/rocm/\u{1b}]0;owned\u{7}\u{1b}[2K\u{7f}\u{9b}31m\u{8}.cpp";
    f2.file(name, "int x;\n");
    let world = World::new(fork_f1(), f2);
    let project = world.project("page", "patch");
    let (code, out) = world.run(
        &project,
        &[
            "init",
            "--fork",
            &world.f1.to_string(),
            "--pin",
            &world.pin.to_string(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    let book = project.join("book");
    std::fs::create_dir_all(book.join("src")).unwrap();
    std::fs::write(
        book.join("book.toml"),
        "[book]\ntitle = \"sync\"\n\n[preprocessor.forkbook]\ncommand = \"forkbook mdbook\"\n",
    )
    .unwrap();
    std::fs::write(
        book.join("src/SUMMARY.md"),
        "# Summary\n\n- [Sync](sync.md)\n",
    )
    .unwrap();
    std::fs::write(
        book.join("src/sync.md"),
        format!(
            "# Sync\n\n```forkbook\nforkbook sync {} --check\n```\n",
            world.f2
        ),
    )
    .unwrap();
    let (code, out) = world.run(
        &project,
        &["book", "build", "--dir", book.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}");
    let page = std::fs::read_to_string(book.join("book/sync.html")).unwrap();
    assert!(
        page.contains("033]0;owned") && page.contains("owned\\a\\033[2K"),
        "the name is on the page, escaped as the terminal shows it: {page}"
    );
    let mut pages = 0;
    let mut stack = vec![book.join("book")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            // The pages and the search index carry the book's text; mdBook's own scripts are
            // mdBook's (highlight.js holds a DEL of its own).
            let name = path.file_name().unwrap().to_string_lossy();
            let text_file = name.ends_with(".html") || name.starts_with("searchindex");
            if !text_file {
                continue;
            }
            pages += 1;
            let bytes = std::fs::read(&path).unwrap();
            let hostile = bytes
                .iter()
                .position(|&b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f);
            assert!(
                hostile.is_none(),
                "{}: byte {:?} at {hostile:?}",
                path.display(),
                hostile.map(|at| bytes[at])
            );
        }
    }
    assert!(pages > 3, "the site was scanned: {pages} files");
}

/// A commit on `parent` in `repo` (`fork.git`, `upstream.git`) whose folder `folder` holds a
/// folder `deep` nested `depth` folders down (`d/d/…/d`, a file at the bottom), written from the
/// bottom up so that nothing here recurses.
fn nested_commit(world: &World, repo: &str, parent: Oid, folder: &str, depth: usize) -> Oid {
    let repo = Repository::open_bare(world.root().join(repo)).unwrap();
    let odb = repo.odb().unwrap();
    let entry = |mode: &str, name: &str, id: Oid| {
        let mut raw = format!("{mode} {name}\0").into_bytes();
        raw.extend_from_slice(id.as_bytes());
        raw
    };
    let mut deep = repo.blob(b"at the bottom\n").unwrap();
    let mut mode = "100644";
    for _ in 0..depth {
        deep = odb
            .write(ObjectType::Tree, &entry(mode, "d", deep))
            .unwrap();
        mode = "40000";
    }
    // The parent's tree with `deep` added to `folder`, one level up at a time.
    let parent = repo.find_commit(parent).unwrap();
    let root = parent.tree().unwrap();
    let mut child = ("deep".to_string(), deep);
    let mut at = Some(folder);
    while let Some(folder) = at {
        let tree = match folder {
            "" => parent.tree().unwrap(),
            _ => repo
                .find_tree(root.get_path(Path::new(folder)).unwrap().id())
                .unwrap(),
        };
        let mut builder = repo.treebuilder(Some(&tree)).unwrap();
        builder.insert(&child.0, child.1, 0o040000).unwrap();
        let name = folder.rsplit('/').next().unwrap().to_string();
        child = (name, builder.write().unwrap());
        at = match folder {
            "" => None,
            _ => Some(folder.rsplit_once('/').map_or("", |(up, _)| up)),
        };
    }
    let who = Signature::new(
        "Hostile Fork",
        "fork@example.com",
        &Time::new(1_700_000_000, 0),
    )
    .unwrap();
    let tree = repo.find_tree(child.1).unwrap();
    repo.commit(None, &who, &who, "nested", &tree, &[&parent])
        .unwrap()
}

#[test]
fn a_tree_nested_past_the_stack_is_read_and_one_past_a_path_s_length_is_refused() {
    let world = World::new(fork_f1(), fork_f1());
    // 1,900 folders: a 3,822-byte path, legal, and deeper than a reader that recursed could go
    // on a test's thread (2,000 aborted the process with a stack overflow).
    let legal = nested_commit(&world, "fork.git", world.f1, "mlx/backend/rocm", 1900);
    let project = world.project("legal", "files");
    let pin = world.pin.to_string();
    let (code, out) = world.run(
        &project,
        &["init", "--fork", &legal.to_string(), "--pin", &pin],
    );
    assert_eq!(code, 0, "{out}");
    let bottom = format!("patches-rocm/tree/{BACKEND}deep/{}d", "d/".repeat(1899));
    assert_eq!(
        std::fs::read(project.join(bottom)).unwrap(),
        b"at the bottom\n"
    );
    for command in [&["sync", "--check"][..], &["check"], &["status"]] {
        let (code, out) = world.run(&project, command);
        assert_eq!(code, 0, "{command:?}: {out}");
    }

    // 3,000 folders: a 6,022-byte path. Refused at once, shown cut short, records untouched.
    let hostile = nested_commit(&world, "fork.git", world.f1, "mlx/backend/rocm", 3_000);
    let fresh = world.project("fresh", "files");
    let (code, out) = world.run(
        &fresh,
        &["init", "--fork", &hostile.to_string(), "--pin", &pin],
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("longer than 4,096 bytes"), "{out}");
    assert!(out.contains("… (4"), "the path is shown cut short: {out}");
    assert!(out.len() < 1_000, "{} bytes of error", out.len());
    assert!(!fresh.join("patches-rocm").exists());
    let upstream = std::fs::read(project.join("patches-rocm/UPSTREAM")).unwrap();
    let (code, out) = world.run(&project, &["sync", &hostile.to_string()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("longer than 4,096 bytes"), "{out}");
    assert_eq!(
        std::fs::read(project.join("patches-rocm/UPSTREAM")).unwrap(),
        upstream
    );
    assert_nothing_escaped(&world);
}

#[test]
fn an_upstream_revision_nested_past_a_path_s_length_is_refused_by_drift_api() {
    let world = World::new(fork_f1(), fork_f1());
    let project = world.project("project", "patch");
    let (fork, pin) = (world.f1.to_string(), world.pin.to_string());
    let (code, out) = world.run(&project, &["init", "--fork", &fork, "--pin", &pin]);
    assert_eq!(code, 0, "{out}");
    // A revision of upstream's (a pull request's head, say) with a folder 100,000 deep under
    // the header root. libgit2 walks a tree by recursion: walked whole, it ends the process.
    let hostile = nested_commit(&world, "upstream.git", world.pin, "mlx", 100_000);
    // Upstream's own, so the pin rule lets it through and the depth is what refuses it.
    let upstream = Repository::open_bare(world.root().join("upstream.git")).unwrap();
    (upstream.reference("refs/pull/1/head", hostile, false, "a pull request")).unwrap();
    let (code, out) = world.run(&project, &["fetch"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = world.run(&project, &["drift", "api", "--to", &hostile.to_string()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("longer than 4,096 bytes"), "{out}");
    assert!(out.len() < 1_000, "{} bytes of error", out.len());
}
