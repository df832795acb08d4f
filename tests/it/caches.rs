//! The results caches (`forkbook-merges/`, `forkbook-blob-digests/`, `forkbook-drift-api/`,
//! `forkbook-drift-parse/`, `forkbook-drift-build-results/`, `forkbook-drift-build-failures/`,
//! `forkbook-first-parents/`, the book's `.step-cache/`) are untrusted input: a pull request may carry forged or damaged
//! entries in them. A cache can make a run faster, never change its result: with each kind
//! forged or damaged, every gate command's exit status and output equal a run with no cache, in
//! both layouts.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use forkbook_records::cache_entry::{seal, Key, Secret};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Splits a kept entry into its header and payload. A sealed entry has a five-line header; of
/// the older, unsealed formats the merges' had one line naming the format, the others none.
fn split(entry: &[u8]) -> (&[u8], &[u8]) {
    if !entry.starts_with(b"forkbook cache entry ") {
        let header = match entry.starts_with(b"forkbook ") {
            true => entry.iter().position(|&b| b == b'\n').unwrap() + 1,
            false => 0,
        };
        return entry.split_at(header);
    }
    let mut at = 0;
    for _ in 0..5 {
        at += entry[at..].iter().position(|&b| b == b'\n').unwrap() + 1;
    }
    entry.split_at(at)
}

/// Rewrites the entry at `path` as someone without the cache's secret can: the payload edited,
/// under a header whose kind, key and length are right, sealed with a guessed secret.
fn forge(path: &Path, edit: impl FnOnce(Vec<u8>) -> Vec<u8>) {
    let entry = std::fs::read(path).unwrap();
    let (header, payload) = split(&entry);
    let payload = edit(payload.to_vec());
    if !header.starts_with(b"forkbook cache entry ") {
        std::fs::write(path, [header, &payload].concat()).unwrap();
        return;
    }
    let header = String::from_utf8_lossy(header);
    let kind = header
        .lines()
        .nth(1)
        .unwrap()
        .strip_prefix("kind ")
        .unwrap();
    let key = Key::from_hex(path.file_name().unwrap().to_str().unwrap()).unwrap();
    let guessed = Secret::from_bytes([0; 32]);
    std::fs::write(path, seal(&guessed, kind, &key, &payload)).unwrap();
}

/// Rewrites the entry at `path` with its payload edited and sealed with the cache's own secret,
/// as only this machine can: shows that an entry is really read back.
pub fn reseal(demo: &Demo, path: &Path, kind: &str, edit: impl FnOnce(String) -> String) {
    let secret = Secret::beside(demo.demo.cache.parent().unwrap()).unwrap();
    let entry = std::fs::read(path).unwrap();
    let payload = edit(String::from_utf8(split(&entry).1.to_vec()).unwrap());
    let key = Key::from_hex(path.file_name().unwrap().to_str().unwrap()).unwrap();
    std::fs::write(path, seal(&secret, kind, &key, payload.as_bytes())).unwrap();
}

/// The entries of a cache folder, by path.
fn entries(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let Ok(list) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    list.map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect()
}

/// A demo project at a state where the caches matter, with a book whose gate runs `STEP`.
struct World {
    demo: Demo,
}

const BOOK_TOML: &str =
    "[book]\ntitle = \"gate\"\n\n[preprocessor.forkbook]\ncommand = \"forkbook mdbook\"\n";

impl World {
    /// The demo moved to its second pin (core files merged, one conflict, seven API breaks),
    /// its book gated on `forkbook verify`.
    fn retargeted(layout: Layout) -> World {
        let demo = Demo::new(layout);
        let pin2 = demo.demo.world.pin2.clone();
        let (code, out) = demo.run(&["retarget", &pin2]);
        assert_eq!(code, 1, "{layout:?}: device.cpp conflicts: {out}");
        let world = World { demo };
        world.chapter("```forkbook,gate\nforkbook verify\n```\n");
        world
    }

    fn chapter(&self, step: &str) {
        let src = self.book().join("src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(self.book().join("book.toml"), BOOK_TOML).unwrap();
        std::fs::write(src.join("SUMMARY.md"), "# Summary\n\n- [Gate](gate.md)\n").unwrap();
        std::fs::write(src.join("gate.md"), format!("# Gate\n\n{step}")).unwrap();
    }

    fn book(&self) -> PathBuf {
        self.demo.root().join("book")
    }

    fn merges(&self) -> PathBuf {
        self.demo.demo.cache.with_file_name("forkbook-merges")
    }

    fn blob_digests(&self) -> PathBuf {
        self.demo.demo.cache.with_file_name("forkbook-blob-digests")
    }

    fn drift(&self) -> PathBuf {
        self.demo.demo.cache.with_file_name("forkbook-drift-api")
    }

    fn parses(&self) -> PathBuf {
        self.demo.demo.cache.with_file_name("forkbook-drift-parse")
    }

    fn first_parents(&self) -> PathBuf {
        self.demo
            .demo
            .cache
            .with_file_name("forkbook-first-parents")
    }

    fn steps(&self) -> PathBuf {
        self.book().join(".step-cache")
    }

    /// Empties every results cache: the next command runs as with no cache.
    fn clear(&self) {
        let caches = [
            self.merges(),
            self.blob_digests(),
            self.drift(),
            self.parses(),
            self.first_parents(),
            self.steps(),
        ];
        for dir in caches {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// Every gate command's exit status and output (and the trees `materialize` and
    /// `export-tree` write), each run right after `prepare`.
    fn verdicts(&self, prepare: &dyn Fn()) -> Vec<String> {
        let out_dir = self.demo.tmp.path().join("out");
        let book = self.book();
        let book = book.to_str().unwrap();
        let out = out_dir.to_str().unwrap();
        let commands: [&[&str]; 8] = [
            &["check"],
            &["sync", "--check"],
            &["verify"],
            &["report"],
            &["status"],
            &["materialize", "--out", out],
            &["export-tree", "--dest", out],
            &["book", "test", "--dir", book],
        ];
        let mut verdicts = Vec::new();
        for args in commands {
            prepare();
            let _ = std::fs::remove_dir_all(&out_dir);
            let (code, text) = self.demo.run(args);
            verdicts.push(format!("{args:?} exit {code}\n{}", normalized(&text)));
            if out_dir.exists() {
                for (path, bytes) in forkbook::engine::fsutil::read_tree(&out_dir).unwrap() {
                    verdicts.push(format!("{args:?} wrote {path} {}", sha256(&bytes[..])));
                }
            }
        }
        verdicts
    }

    /// The file `path` as `materialize` writes it with no cache.
    fn materialized(&self, path: &str) -> Vec<u8> {
        self.clear();
        let out = self.demo.tmp.path().join("truth");
        let (code, text) = self
            .demo
            .run(&["materialize", "--out", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{text}");
        std::fs::read(out.join(path)).unwrap()
    }
}

fn sha256(bytes: &[u8]) -> String {
    forkbook_records::hex::encode(&Sha256::digest(bytes))
}

/// `text` without what differs between two runs of the same verdict: step times (`(8 ms)`) and
/// how many book results came from the cache.
pub fn normalized(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = match line.find(" from the cache") {
            Some(end) => {
                let start = line[..end].rfind("; ").unwrap_or(end);
                format!(
                    "{}{}",
                    &line[..start],
                    &line[end + " from the cache".len()..]
                )
            }
            None => line.to_string(),
        };
        let mut kept = String::new();
        let mut rest = line.as_str();
        while let Some(at) = rest.find(" ms)") {
            let digits = rest[..at].trim_end_matches(|c: char| c.is_ascii_digit());
            kept.push_str(digits);
            kept.push_str("N ms)");
            rest = &rest[at + " ms)".len()..];
        }
        kept.push_str(rest);
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// Writes `entries` back before a run, so every command meets them (a run that finds an entry
/// wanting makes it again and keeps the true one).
fn restore(world: &World, kept: &BTreeMap<PathBuf, Vec<u8>>) {
    world.clear();
    for (path, bytes) in kept {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// Fills the caches the way the gate commands do.
fn warm(world: &World) {
    world.clear();
    world.demo.run(&["verify"]);
    world
        .demo
        .run(&["book", "build", "--dir", world.book().to_str().unwrap()]);
}

/// A forged merge (a line of a merged core file replaced by a CMake `execute_process` line of
/// the same length, and the matching `overlay.lock` line) and a damaged one (one byte, same
/// length) change no verdict: they are misses, merged again. Fails before the entries were
/// sealed: `materialize` wrote the forged line and `sync --check` agreed with the forged lock.
#[test]
fn a_forged_or_damaged_merge_changes_no_verdict() {
    for layout in [Layout::Patch, Layout::Files] {
        let world = World::retargeted(layout);
        warm(&world);
        let kept = entries(&world.merges());
        assert!(
            !kept.is_empty(),
            "{layout:?}: the retarget's merges are kept"
        );
        // The first merged file of the first entry, and a line of it the overlay holds.
        let (entry, bytes) = kept.iter().next().unwrap();
        let payload = split(bytes).1;
        let header_end = payload.iter().position(|&b| b == b'\n').unwrap();
        let header = std::str::from_utf8(&payload[..header_end]).unwrap();
        let path = header.splitn(3, ' ').nth(2).unwrap().to_string();
        let truth = world.materialized(&path);
        let truth_text = String::from_utf8(truth.clone()).unwrap();
        let line = truth_text
            .lines()
            .find(|l| l.len() >= 27 && truth_text.matches(*l).count() == 1)
            .unwrap_or_else(|| panic!("{layout:?}: a long line in {path}"))
            .to_string();
        let forged_line = format!("{:<1$}", "execute_process(COMMAND id)", line.len());
        let forged_file = truth_text.replacen(&line, &forged_line, 1);
        let lock_path = world.demo.records().join("overlay.lock");
        let lock = std::fs::read_to_string(&lock_path).unwrap();
        let suffix = format!("  {path}");
        let forged_lock: String = lock
            .lines()
            .map(|l| match l.ends_with(&suffix) {
                true => format!("{}{suffix}\n", sha256(forged_file.as_bytes())),
                false => format!("{l}\n"),
            })
            .collect();
        assert_ne!(forged_lock, lock, "{layout:?}: {path} is in the lock");
        std::fs::write(&lock_path, forged_lock).unwrap();

        let no_cache = world.verdicts(&|| world.clear());
        let forged = {
            let entry = entry.clone();
            let mut forged_kept = kept.clone();
            restore(&world, &kept);
            forge(&entry, |payload| {
                let text = String::from_utf8(payload).unwrap();
                assert!(text.contains(&line), "{layout:?}: the entry holds the line");
                text.replacen(&line, &forged_line, 1).into_bytes()
            });
            forged_kept.insert(entry.clone(), std::fs::read(&entry).unwrap());
            forged_kept
        };
        let with_forged = world.verdicts(&|| restore(&world, &forged));
        assert_eq!(with_forged, no_cache, "{layout:?}: a forged merge");

        let mut damaged = kept.clone();
        let bytes = damaged.get_mut(entry).unwrap();
        let at = bytes.len() - 2;
        bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
        let with_damaged = world.verdicts(&|| restore(&world, &damaged));
        assert_eq!(with_damaged, no_cache, "{layout:?}: a damaged merge");
    }
}

/// A drift analysis with its findings emptied changes no verdict: the pin's seven API breaks
/// still fail `verify`, `report` and `book test`. Fails before the entries were sealed: all
/// three passed.
#[test]
fn an_emptied_drift_analysis_changes_no_verdict() {
    for layout in [Layout::Patch, Layout::Files] {
        let world = World::retargeted(layout);
        warm(&world);
        let mut kept = entries(&world.drift());
        assert!(!kept.is_empty(), "{layout:?}: verify's analysis is kept");
        let no_cache = world.verdicts(&|| world.clear());
        restore(&world, &kept);
        for (path, bytes) in kept.iter_mut() {
            forge(path, |payload| {
                let mut entry: serde_json::Value = serde_json::from_slice(&payload).unwrap();
                entry["report"]["findings"] = serde_json::json!([]);
                entry["evidence"] = serde_json::json!([]);
                serde_json::to_vec(&entry).unwrap()
            });
            *bytes = std::fs::read(path).unwrap();
        }
        let with_forged = world.verdicts(&|| restore(&world, &kept));
        assert_eq!(with_forged, no_cache, "{layout:?}: emptied findings");
    }
}

/// Parses with every declaration and use emptied change no verdict: each is a miss, parsed
/// again, so the pin's seven API breaks still fail `verify`, `report` and `book test`.
#[test]
fn a_forged_parse_changes_no_verdict() {
    let world = World::retargeted(Layout::Patch);
    warm(&world);
    let mut kept = entries(&world.parses());
    assert!(!kept.is_empty(), "verify's parses are kept");
    let no_cache = world.verdicts(&|| world.clear());
    restore(&world, &kept);
    for (path, bytes) in kept.iter_mut() {
        forge(path, |payload| {
            let mut entry: serde_json::Value = serde_json::from_slice(&payload).unwrap();
            entry["facts"]["decls"] = serde_json::json!([]);
            let uses =
                serde_json::json!({"calls": [], "constructs": [], "names": {}, "spelled": {}});
            entry["uses"] = uses;
            serde_json::to_vec(&entry).unwrap()
        });
        *bytes = std::fs::read(path).unwrap();
    }
    let with_forged = world.verdicts(&|| restore(&world, &kept));
    assert_eq!(with_forged, no_cache, "emptied parses");
}

/// A kept first-parent line is checked against the commits before it is walked along: one forged
/// without the secret, and ones resealed with it that leave a commit out or end elsewhere than
/// the fork base, change no verdict (`report` still names the upstream commits behind the
/// conflict). One resealed with its trees changed is really what a rerun reads.
#[test]
fn a_forged_first_parent_line_changes_no_verdict() {
    let world = World::retargeted(Layout::Patch);
    world.clear();
    let (code, out) = world.demo.run(&["report"]);
    assert_eq!(code, 1, "device.cpp conflicts: {out}");
    let kept = entries(&world.first_parents());
    assert_eq!(kept.len(), 1, "report's line is kept: {out}");
    let no_cache = world.verdicts(&|| world.clear());
    let (entry, _) = kept.iter().next().unwrap();
    let steps = |payload: &str| {
        payload
            .lines()
            .skip(1)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let framed = |steps: &[String]| format!("steps {}\n{}\n", steps.len(), steps.join("\n"));

    let mut forged = kept.clone();
    restore(&world, &kept);
    forge(entry, |payload| {
        let text = String::from_utf8(payload).unwrap();
        framed(&steps(&text)[..1]).into_bytes()
    });
    forged.insert(entry.clone(), std::fs::read(entry).unwrap());
    let with_forged = world.verdicts(&|| restore(&world, &forged));
    assert_eq!(with_forged, no_cache, "a line forged without the secret");

    let resealed = |edit: &dyn Fn(Vec<String>) -> Vec<String>| {
        restore(&world, &kept);
        reseal(&world.demo, entry, "first-parent line", |payload| {
            framed(&edit(steps(&payload)))
        });
        let mut kept = kept.clone();
        kept.insert(entry.clone(), std::fs::read(entry).unwrap());
        kept
    };
    let cut_short = resealed(&|steps| steps[..steps.len() - 1].to_vec());
    let without_one = resealed(&|mut steps| {
        assert!(steps.len() > 2, "a line with a middle: {steps:?}");
        steps.remove(1);
        steps
    });
    for (what, line) in [("cut short", cut_short), ("a commit left out", without_one)] {
        let with_line = world.verdicts(&|| restore(&world, &line));
        assert_eq!(with_line, no_cache, "a resealed line {what}");
    }

    // Every tree of the line but the fork base's said to be the pin's: the line then holds
    // one change, its oldest commit's, and the trace names that commit alone.
    let one_change = resealed(&|steps| {
        let pin_tree = steps[0].split(' ').nth(1).unwrap().to_string();
        let last = steps.len() - 1;
        let step = |(i, step): (usize, &String)| {
            let ids: Vec<&str> = step.split(' ').collect();
            let parent_tree = if i == last { ids[3] } else { &pin_tree };
            format!("{} {pin_tree} {} {parent_tree}", ids[0], ids[2])
        };
        steps.iter().enumerate().map(step).collect()
    });
    world.clear();
    let (_, truth) = world.demo.run(&["report"]);
    restore(&world, &one_change);
    let (_, read_back) = world.demo.run(&["report"]);
    assert_ne!(read_back, truth, "the kept line is what the trace walks");
}

/// `drift api --draft` on a warm drift cache writes the drafts a cold run writes: the kept
/// analysis carries the upstream declarations the drafts start from. Fails before they were
/// kept: after a plain `drift api`, the four drafts were one.
#[test]
fn a_kept_drift_analysis_drafts_what_a_fresh_one_drafts() {
    let mut drafted = Vec::new();
    for warm in [false, true] {
        let demo = Demo::new(Layout::Patch);
        let pin2 = demo.demo.world.pin2.clone();
        if warm {
            let (code, out) = demo.run(&["drift", "api", "--to", &pin2]);
            assert_eq!(code, 1, "the seven breaks: {out}");
            let kept = demo.demo.cache.with_file_name("forkbook-drift-api");
            assert!(!entries(&kept).is_empty(), "the analysis is kept: {out}");
        }
        let (code, out) = demo.run(&["drift", "api", "--to", &pin2, "--draft"]);
        assert_eq!(code, 1, "drafts wait for a person: {out}");
        assert!(
            out.contains("drafts: 4 fixes written"),
            "warm {warm}: {out}"
        );
        drafted.push(std::fs::read_to_string(demo.records().join("LOCAL_FIXES.md")).unwrap());
    }
    assert_eq!(drafted[0], drafted[1], "the same register, warm or cold");
}

/// A forged green result of a failing gated book step changes no verdict: `book test` still
/// fails on it. The forger learns the step's entry by running it ungated (an ungated failure is
/// kept), then rewrites the entry to exit 0. Fails before the entries were sealed: `book test`
/// passed.
#[test]
fn a_forged_green_step_result_changes_no_verdict() {
    for layout in [Layout::Patch, Layout::Files] {
        let demo = Demo::new(layout);
        let world = World { demo };
        let pin2 = world.demo.demo.world.pin2.clone();
        let step = format!("forkbook drift api --to {pin2}\n```\n");
        world.chapter(&format!("```forkbook\n{step}"));
        world.clear();
        let (code, out) =
            world
                .demo
                .run(&["book", "build", "--dir", world.book().to_str().unwrap()]);
        assert_eq!(code, 0, "{layout:?}: {out}");
        let mut kept = entries(&world.steps());
        let failing: Vec<PathBuf> = kept
            .iter()
            .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains("\"exit\":1"))
            .map(|(path, _)| path.clone())
            .collect();
        assert_eq!(failing.len(), 1, "{layout:?}: the ungated failure is kept");
        world.chapter(&format!("```forkbook,gate\n{step}"));
        let no_cache = world.verdicts(&|| world.clear());
        restore(&world, &kept);
        forge(&failing[0], |payload| {
            let mut result: serde_json::Value = serde_json::from_slice(&payload).unwrap();
            result["exit"] = serde_json::json!(0);
            result["output"] = serde_json::json!("0 breaks\n");
            result["view"] = serde_json::Value::Null;
            serde_json::to_vec(&result).unwrap()
        });
        kept.insert(failing[0].clone(), std::fs::read(&failing[0]).unwrap());
        let with_forged = world.verdicts(&|| restore(&world, &kept));
        assert_eq!(with_forged, no_cache, "{layout:?}: a forged green step");
        let book_test = no_cache.iter().find(|v| v.contains("\"test\"")).unwrap();
        assert!(book_test.contains("exit 1"), "{layout:?}: {book_test}");
    }
}

/// A compile failure kept per translation unit (issue 41.3) is a results cache like the others:
/// failures forged without the secret change nothing (the files compile again and the same
/// errors are reported), and failures resealed with the secret are really what a build replays.
#[test]
fn a_forged_compile_failure_changes_no_verdict() {
    let demo = Demo::new(Layout::Patch);
    let work = demo.tmp.path().join("work");
    let pin2 = demo.demo.world.pin2.clone();
    let args = [
        "--json",
        "drift",
        "build",
        "--to",
        &pin2,
        "--compiler",
        "c++",
        "--jobs",
        "2",
        "--work",
        work.to_str().unwrap(),
    ];
    let cache = &demo.demo.cache;
    let outcomes = cache.with_file_name("forkbook-drift-build-results");
    let run = || {
        // Each tree's kept outcome gone, so the trees are built and their units' failures read.
        let _ = std::fs::remove_dir_all(&outcomes);
        let (code, out) = demo.run(&args);
        let json: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let differential = &json["differential"];
        let errors = [&differential["new_errors"], &differential["known_errors"]];
        (code, serde_json::json!(errors), out)
    };
    let (code, errors, out) = run();
    assert_eq!(code, 1, "{out}");
    let failures = cache.with_file_name("forkbook-drift-build-failures");
    let kept = entries(&failures);
    assert!(!kept.is_empty(), "no failure kept: {out}");
    const FORGED: &str = "@FORKBOOK_TREE@/mlx/forged.cpp:1:1: error: forged failure\n";
    // An entry's status and command lines, then the unit's stderr.
    let forged = |payload: &str| {
        let head: Vec<&str> = payload.lines().take(2).collect();
        format!("{}\n{FORGED}", head.join("\n"))
    };
    for path in kept.keys() {
        forge(path, |payload| {
            forged(&String::from_utf8_lossy(&payload)).into_bytes()
        });
    }
    let (code, forged_errors, out) = run();
    assert_eq!(code, 1, "{out}");
    assert_eq!(forged_errors, errors, "{out}");
    for path in entries(&failures).keys() {
        reseal(&demo, path, "drift build compile failure", |payload| {
            forged(&payload)
        });
    }
    let (_, _, out) = run();
    assert!(out.contains("forged failure"), "{out}");
}

/// A results cache inside the project's checkout is the pull request's to write, its secret
/// included: nothing is kept there, and nothing found there is believed.
#[test]
fn a_cache_inside_the_project_is_never_trusted() {
    let demo = Demo::new(Layout::Patch);
    let inside = demo.root().join(".forkbook-cache").join("objects.git");
    let run = |args: &[&str]| run_with_cache(&demo, &inside, args);
    let (code, out) = run(&["fetch"]);
    assert_eq!(code, 0, "{out}");
    let pin2 = demo.demo.world.pin2.clone();
    let (code, out) = run(&["retarget", &pin2]);
    assert_eq!(code, 1, "{out}");
    let (code, out) = run(&["verify"]);
    assert_eq!(code, 1, "seven API breaks: {out}");
    let home = inside.parent().unwrap();
    for kept in [
        "forkbook-merges",
        "forkbook-drift-api",
        "forkbook-drift-parse",
        "forkbook-first-parents",
        "forkbook-cache.key",
    ] {
        assert!(!home.join(kept).exists(), "{kept} kept inside the project");
    }
    // The same run with its cache outside the project keeps its results.
    let (code, out) = demo.run(&["verify"]);
    assert_eq!(code, 1, "{out}");
    let outside = demo.demo.cache.parent().unwrap();
    assert!(outside.join("forkbook-drift-api").is_dir());
    assert!(outside.join("forkbook-cache.key").is_file());
}

/// A mirror inside the checkout (a pull request may point `forkbook.toml` at one it commits) could
/// hold a loose object named by the recorded commit's blob and holding other content. Objects
/// read from the checkout are checked against their hash, so a forged backend file is an error
/// naming the object, never a base tree the gate would judge. Fails without the check: the
/// forged file is read as the fork's.
#[test]
fn a_forged_object_in_a_mirror_inside_the_checkout_is_an_error() {
    let demo = Demo::new(Layout::Patch);
    let mirror = demo.root().join("mirror").join("fork.git");
    copy_tree(&demo.demo.world.fork, &mirror);
    let config = demo.root().join("forkbook.toml");
    let toml = std::fs::read_to_string(&config).unwrap();
    let fork_url = demo.demo.world.fork.to_string_lossy().into_owned();
    assert!(toml.contains(&fork_url), "{toml}");
    std::fs::write(&config, toml.replace(&fork_url, &mirror.to_string_lossy())).unwrap();
    // `UPSTREAM` names the fork the objects come from (`upstream-names-the-fork`).
    let upstream = demo.records().join("UPSTREAM");
    let record = std::fs::read_to_string(&upstream).unwrap();
    std::fs::write(
        &upstream,
        record.replace(&fork_url, &mirror.to_string_lossy()),
    )
    .unwrap();
    // A cache of its own, outside the checkout, that reads the fork from that mirror alone.
    let cache = demo.tmp.path().join("fresh").join("objects.git");
    let run = |args: &[&str]| run_with_cache(&demo, &cache, args);
    let (code, out) = run(&["fetch"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = run(&["sync", "--check"]);
    assert_eq!(code, 0, "{out}");
    let git = |args: &[&str], input: &[u8]| {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .args(args)
            .env("GIT_DIR", &mirror)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    // A backend file of the recorded fork commit, which the overlay takes whole.
    let fork = out
        .split("at fork ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let target = git(
        &[
            "rev-parse",
            &format!("{fork}:mlx/backend/rocm/allocator.cpp"),
        ],
        b"",
    );
    let forged = git(
        &["hash-object", "-w", "--stdin"],
        b"// a backend file the pull request wrote\n",
    );
    let loose = |id: &str| mirror.join("objects").join(&id[..2]).join(&id[2..]);
    assert!(
        loose(&target).is_file(),
        "the mirror keeps its objects loose"
    );
    std::fs::rename(loose(&forged), loose(&target)).unwrap();
    let (code, out) = run(&["sync", "--check"]);
    assert_eq!(code, 2, "a forged object is an error, not a verdict: {out}");
    assert!(
        out.contains("object hash mismatch") && out.contains(&target),
        "{out}"
    );
    // forkbook.toml back on the fork outside the checkout: the cache still links the mirror as
    // an alternate (a runner that keeps its cache, the next pull request's checkout at the same
    // path), so objects are still checked. The outside fork loses that blob, so the mirror's
    // forged one is the only one there is.
    std::fs::write(&config, &toml).unwrap();
    let outside = demo
        .demo
        .world
        .fork
        .join("objects")
        .join(&target[..2])
        .join(&target[2..]);
    std::fs::remove_file(&outside).unwrap();
    let (code, out) = run(&["sync", "--check"]);
    assert_eq!(code, 2, "read through the alternate, still checked: {out}");
    assert!(
        out.contains("object hash mismatch") && out.contains(&target),
        "{out}"
    );
}

/// Runs forkbook in process on the demo project with the object cache `cache`.
fn run_with_cache(demo: &Demo, cache: &Path, args: &[&str]) -> (i32, String) {
    let overrides = forkbook::engine::project::Overrides {
        cache: Some(cache.to_path_buf()),
        tool_path: Some(crate::common::tool_path().to_os_string()),
        ..Default::default()
    };
    let full = forkbook::cli::argv(demo.root(), &overrides, args.iter().copied());
    let mut out = Vec::new();
    let code = forkbook::cli::run(full, &mut out);
    (code, String::from_utf8_lossy(&out).into_owned())
}

/// Copies the folder `from` to `to`, files and folders.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A book step's kept result depends on the tools it found: made with `hipcc` on PATH, it is
/// not replayed once `hipcc` is gone (issue 25: old hipcc failures came back "(cached)"). The
/// test sets the search path (a stub `hipcc` and `sh`, then `sh` alone). Fails before the tools
/// were in the key: the failure came back cached.
#[test]
fn a_step_result_made_with_hipcc_is_not_replayed_without_it() {
    let demo = Demo::new(Layout::Patch);
    let world = World { demo };
    let book = world.book();
    std::fs::create_dir_all(book.join("src")).unwrap();
    std::fs::write(
        book.join("book.toml"),
        format!("{BOOK_TOML}allow-shell = true\n"),
    )
    .unwrap();
    std::fs::write(
        book.join("src/SUMMARY.md"),
        "# Summary\n\n- [Gate](gate.md)\n",
    )
    .unwrap();
    std::fs::write(
        book.join("src/gate.md"),
        "# Gate\n\n```sh,run,requires=hipcc\nhipcc --version\n```\n",
    )
    .unwrap();
    let tools = world.demo.tmp.path().join("tools");
    let stub = world.demo.tmp.path().join("stub");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::create_dir_all(&stub).unwrap();
    let sh = forkbook::engine::tools::find_program("sh").unwrap();
    std::os::unix::fs::symlink(&sh, tools.join("sh")).unwrap();
    let hipcc = stub.join("hipcc");
    std::fs::write(
        &hipcc,
        "#!/bin/sh\necho 'hipcc: stub failure' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hipcc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let build = |path: &str| {
        let book = book.to_str().unwrap();
        let (code, out) = world.demo.run_with_tools(
            std::ffi::OsStr::new(path),
            &["book", "build", "--dir", book],
        );
        let html = std::fs::read_to_string(world.book().join("book/gate.html")).unwrap_or_default();
        (Some(code), out, html)
    };
    let with_hipcc = format!("{}:{}", stub.display(), tools.display());
    let (code, out, html) = build(&with_hipcc);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("1 ran (0 passed, 1 failed)"), "{out}");
    assert!(html.contains("hipcc: stub failure"), "{html}");
    let (_, again, _) = build(&with_hipcc);
    assert!(again.contains("1 result from the cache"), "kept: {again}");
    let (code, out, html) = build(&tools.display().to_string());
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("0 ran (0 passed, 0 failed), 1 skipped"),
        "hipcc is gone: the step is skipped, not replayed: {out}"
    );
    assert!(!html.contains("(cached)"), "{html}");
    assert!(!html.contains("hipcc: stub failure"), "{html}");
    assert!(html.contains("which is not on PATH"), "{html}");
}

/// The object cache's alternates keep every line a run did not add, bytes and all: a line that
/// is not UTF-8, and a last line without its newline. Fails on d481506, where such a file read
/// as empty and was replaced by the one line the run added: the upstream mirror's line was lost.
#[test]
fn a_fetch_keeps_every_alternate_it_did_not_add() {
    let demo = Demo::new(Layout::Patch);
    let alternates = demo.demo.cache.join("objects/info/alternates");
    let text = String::from_utf8(std::fs::read(&alternates).unwrap()).unwrap();
    let fork = format!("{}\n", demo.demo.world.fork.join("objects").display());
    assert!(text.contains(&fork), "{text}");
    let kept = [
        text.replace(&fork, "").as_bytes(),
        b"/srv/mirrors/caf\xe9.git/objects",
    ]
    .concat();
    std::fs::write(&alternates, &kept).unwrap();
    let (code, out) = demo.run(&["fetch"]);
    assert_eq!(code, 0, "{out}");
    let after = std::fs::read(&alternates).unwrap();
    let shown = String::from_utf8_lossy(&after);
    assert!(after.starts_with(&[&kept[..], b"\n"].concat()), "{shown}");
    assert!(shown.lines().any(|l| format!("{l}\n") == fork), "{shown}");
}

/// A kept drift build outcome is a results cache like the others (issue 41.3): an outcome forged
/// without the secret to say the candidate built clean changes nothing (both trees are built
/// again and the planted breaks are drift again), and one resealed with the secret is really
/// what a rerun reads.
#[test]
fn a_forged_drift_build_outcome_changes_no_verdict() {
    let demo = Demo::new(Layout::Patch);
    let work = demo.tmp.path().join("work");
    let pin2 = demo.demo.world.pin2.clone();
    let args = [
        "--json",
        "drift",
        "build",
        "--to",
        &pin2,
        "--compiler",
        "c++",
        "--jobs",
        "2",
        "--work",
        work.to_str().unwrap(),
    ];
    let run = || {
        let (code, out) = demo.run(&args);
        let json: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        (code, json["differential"]["new_errors"].clone(), json)
    };
    let (code, new_errors, json) = run();
    assert_eq!(code, 1, "{json:#}");
    assert!(!new_errors.as_array().unwrap().is_empty(), "{json:#}");
    let store = demo
        .demo
        .cache
        .with_file_name("forkbook-drift-build-results");
    let kept = entries(&store);
    // One outcome a tree: the recorded pin's, the candidate's, and the candidate's with its
    // conflict at the pin's side (what its symbols are read from).
    assert_eq!(kept.len(), 3, "one outcome a tree");
    let clean = |payload: Vec<u8>| {
        let mut outcome: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        outcome["build_log"] = serde_json::json!("");
        outcome["missing"] = serde_json::json!([]);
        serde_json::to_vec(&outcome).unwrap()
    };
    for path in kept.keys() {
        forge(path, clean);
    }
    let (code, forged_errors, json) = run();
    assert_eq!(code, 1, "{json:#}");
    assert_eq!(forged_errors, new_errors, "{json:#}");
    for path in entries(&store).keys() {
        reseal(&demo, path, "drift build", |payload| {
            String::from_utf8(clean(payload.into_bytes())).unwrap()
        });
    }
    let (_, resealed_errors, json) = run();
    assert_eq!(resealed_errors, serde_json::json!([]), "{json:#}");
}

/// The blob digests (`forkbook-blob-digests/`) tell a fork blob from the overlay's copy of it
/// by SHA-256, without git's hash of the copy. An entry forged to say that a core file's blob
/// has the SHA-256 of an edited copy is a miss, made again from the blob: the edit is still a
/// residual hunk that the records leave out, so `sync --check`, `check`, `status` and
/// `residual` say what they say with no cache, though the records are the ones a run believing
/// the entry writes. The same entry sealed with this machine's secret is believed (the kept
/// entry is what a warm run reads). Fails before the digests were kept: no entry.
#[test]
fn a_forged_blob_digest_changes_no_verdict() {
    let demo = Demo::new(Layout::Files);
    // A residual record, so the base tree's core files are part of `sync --check`'s verdict.
    let (code, out) = demo.run(&["residual", "--write"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = demo.run(&["sync", "--check"]);
    assert_eq!(code, 0, "{out}");
    let store = demo.demo.cache.with_file_name("forkbook-blob-digests");
    let kept = entries(&store);
    assert_eq!(kept.len(), 1, "one entry for the base tree");
    let (entry, true_entry) = kept.into_iter().next().unwrap();

    // A core file the overlay holds as the fork has it (no hunk), edited.
    let copy = demo.records().join("tree/mlx/device.cpp");
    let original = std::fs::read(&copy).unwrap();
    let line_of = |payload: &str, digest: &str| {
        let line = payload.lines().find(|l| l.ends_with(digest));
        line.map(str::to_string)
    };
    let payload = String::from_utf8(split(&true_entry).1.to_vec()).unwrap();
    let blob_line = line_of(&payload, &sha256(&original)).expect("device.cpp is the fork's");
    let edited = [&original[..], b"int forged();\n"].concat();
    std::fs::write(&copy, &edited).unwrap();
    let forged_line = format!("{} {}", &blob_line[..40], sha256(&edited));
    let forge_payload = |payload: String| payload.replacen(&blob_line, &forged_line, 1);

    // The records a run that believes the entry writes: the edit locked, and no hunk for it.
    reseal(&demo, &entry, "blob digests", forge_payload);
    let fork = demo.read("UPSTREAM");
    let fork = fork
        .lines()
        .find_map(|l| l.strip_prefix("commit: "))
        .unwrap();
    let (code, out) = demo.run(&["sync", fork]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = demo.run(&["sync", "--check"]);
    assert_eq!(code, 0, "a resealed entry is read back: {out}");
    let resealed = std::fs::read(&entry).unwrap();

    let verdicts = |prepare: &dyn Fn()| -> Vec<String> {
        let commands: [&[&str]; 4] = [&["sync", "--check"], &["check"], &["status"], &["residual"]];
        let each = commands.iter().map(|args| {
            prepare();
            let (code, text) = demo.run(args);
            format!("{args:?} exit {code}\n{}", normalized(&text))
        });
        each.collect()
    };
    let no_cache = verdicts(&|| {
        let _ = std::fs::remove_dir_all(&store);
    });
    assert!(
        no_cache[0].contains("exit 1") && no_cache[0].contains("residual.diff"),
        "the edit is a hunk the residual record leaves out: {}",
        no_cache[0]
    );
    let forged = || {
        std::fs::create_dir_all(&store).unwrap();
        std::fs::write(&entry, &resealed).unwrap();
        forge(&entry, |payload| payload);
    };
    let with_forged = verdicts(&forged);
    assert_eq!(with_forged, no_cache, "a forged blob digest");
    forged();
    demo.run(&["sync", "--check"]);
    let again = std::fs::read(&entry).unwrap();
    assert!(
        again == true_entry,
        "the forged entry is made again from the blob"
    );
}
