//! What each fuzz target checks, as plain functions: the `cargo fuzz` targets call them, and the
//! stable replay test (`tests/replay.rs`) runs them over the seed corpus and mutated inputs.
//!
//! Every parser here reads text from other people (records of a fork, patches, compiler logs,
//! `nm` output, book chapters). Beyond "never panics", each target checks the property its
//! callers rely on: a record that parses renders back to the same record, a path that comes out
//! is one the path check accepts, HTML output holds no markup from the input.

use forkbook_engine::drift::build::{log, nm};
use forkbook_engine::paths::{check_relative, normalize};
use forkbook_engine::records::{Counts, Lock, Upstream};
use forkbook_engine::{patch, register, FileMap};
use forkbook_preprocessor::{blocks, render};
use std::collections::BTreeMap;

/// `UPSTREAM`: a parsed record renders to text that parses to the same pairs, the rendering is
/// stable after one round, and an update lands where `get` finds it.
pub fn upstream(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(parsed) = Upstream::parse(text, "UPSTREAM") else {
        return;
    };
    for pair in parsed.pairs() {
        let key = pair.key.as_str();
        assert!(
            !key.is_empty() && !key.contains(char::is_whitespace),
            "key {key:?}"
        );
        assert!(parsed.get(key).is_some());
        let _ = parsed.sha(key, "UPSTREAM");
    }
    let rendered = parsed.render();
    let again = Upstream::parse(&rendered, "UPSTREAM").expect("a rendered UPSTREAM parses");
    assert_eq!(again.pairs(), parsed.pairs(), "pairs survive a round trip");
    assert_eq!(again.render(), rendered, "rendering is stable");
    let mut updated = again;
    let sha = "0123456789abcdef0123456789abcdef01234567";
    updated.set("commit", sha);
    let reread =
        Upstream::parse(&updated.render(), "UPSTREAM").expect("an updated UPSTREAM parses");
    assert_eq!(reread.sha("commit", "UPSTREAM").ok().as_deref(), Some(sha));
}

/// `overlay.lock`: every path it accepts passes the path check, and it round-trips.
pub fn lock(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(parsed) = Lock::parse(text, "overlay.lock") else {
        return;
    };
    for (path, hash) in &parsed.files {
        check_relative(path).expect("the lock only holds checked paths");
        assert!(
            hash.len() == 64
                && hash
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }
    let again = Lock::parse(&parsed.render(), "overlay.lock").expect("a rendered lock parses");
    assert_eq!(again, parsed);
    assert!(parsed.mismatches(&again).is_empty());
}

/// The README counts block: after `write_into`, `stated` reads back exactly the numbers written,
/// whatever the README held before (the checker compares those numbers).
pub fn counts(data: &[u8]) {
    let Ok(readme) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Counts::stated(readme);
    let counts = Counts {
        backend_files: 106,
        core_files: 15,
        local_fixes: 9,
    };
    let written = counts.write_into(readme);
    let stated = Counts::stated(&written).expect("a README with a written block has a block");
    let values: Vec<(&str, Option<usize>)> = stated
        .iter()
        .map(|(_, name, value)| (name.as_str(), *value))
        .collect();
    assert_eq!(
        values,
        [
            ("backend files", Some(106)),
            ("core files", Some(15)),
            ("local fixes", Some(9))
        ],
        "{written:?}"
    );
    assert_eq!(
        counts.write_into(&written),
        written,
        "writing the same counts again changes nothing"
    );
}

/// Pre-images the patch target applies patches to.
fn patch_pre_images() -> FileMap {
    let mut pre = FileMap::new();
    pre.insert("a.txt".into(), b"one\ntwo\nthree\n".to_vec().into());
    pre.insert(
        "mlx/backend/rocm/eval.cpp".into(),
        b"void eval() {\n  run();\n}\n".to_vec().into(),
    );
    pre.insert("bin.dat".into(), b"\0\x01\x02\xff".to_vec().into());
    pre
}

/// Patches: every path `touched` returns passes the path check, and applying the patch (strictly)
/// changes only those paths.
pub fn patch(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(paths) = patch::touched(text, "fuzz.patch") else {
        return;
    };
    for path in &paths {
        check_relative(path).expect("touched paths are checked");
    }
    let pre = patch_pre_images();
    if let Ok(post) = patch::apply(text, "fuzz.patch", &pre) {
        for path in post.keys() {
            assert!(
                paths.contains(path),
                "apply wrote `{path}`, which the patch does not name"
            );
        }
    }
}

/// `LOCAL_FIXES.md`: parsing never fails or panics; every entry found can be looked up and
/// edited, and the edited register still has that entry.
pub fn register(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = register::parse("LOCAL_FIXES.md", text);
    let lines = text.lines().count().max(1);
    for entry in &parsed.entries {
        assert!(
            entry.line >= 1
                && entry.line <= entry.end_line.max(entry.line)
                && entry.line <= lines + 1
        );
        assert!(parsed.entry(entry.number).is_some());
    }
    if let Some(first) = parsed.entries.first() {
        let number = first.number;
        if let Ok(edited) =
            register::record_link(text, number, "https://github.com/NripeshN/mlx/pull/1")
        {
            assert!(
                register::parse("LOCAL_FIXES.md", &edited)
                    .entry(number)
                    .is_some(),
                "entry {number} lost by record_link"
            );
        }
    }
    let _ = register::migrate(
        text,
        "LOCAL_FIXES.md",
        Some("https://github.com/NripeshN/mlx"),
    );
}

/// Compiler and CMake logs: parsing never panics, and the paths it reports never climb out.
pub fn compiler_log(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = log::parse_compiler_log(&text);
    let _ = log::parse_cmake_log(&text);
    for object in log::failed_objects(&text) {
        if let Some(source) = log::source_of_object(&object) {
            assert!(!source.split('/').any(|p| p == ".."), "{source}");
        }
    }
    for line in text.lines().take(64) {
        if let Some(path) = normalize(line) {
            assert!(
                !path.split('/').any(|p| p == ".." || p == "."),
                "normalize({line:?}) = {path:?}"
            );
        }
    }
}

/// `nm -C` output: parsing never panics, and the qualified name is a part of the symbol.
pub fn nm(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let table = nm::parse_nm(&text, None);
    let _ = nm::parse_nm(&text, Some("x.o"));
    let _ = table.missing_in("mlx::core");
    for symbol in table.defined.iter().chain(table.undefined.keys()) {
        let name = nm::qualified_name(symbol);
        assert!(symbol.contains(name), "{name:?} is not inside {symbol:?}");
        let _ = nm::in_namespace(symbol, "mlx::core");
    }
}

/// Book chapters: blocks found are where they say they are, info strings parse or give a
/// message, substitution never panics, and escaped text holds no markup.
pub fn book(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let vars: BTreeMap<String, String> = [
        ("pin".to_string(), "{{pin}}".to_string()),
        ("compiler".to_string(), "c++".to_string()),
    ]
    .into();
    let scan = blocks::scan(text, &vars);
    for block in &scan.blocks {
        assert!(
            text.get(block.range.clone()).is_some(),
            "block range on a char boundary"
        );
        assert_eq!(block.line, blocks::line_of(text, block.range.start));
    }
    for line in text.lines().take(64) {
        let _ = blocks::parse_info(line);
    }
    let mut missing = Vec::new();
    let _ = blocks::substitute(text, &vars, &mut missing);
    let escaped = render::escape(text);
    assert!(
        !escaped.contains(['<', '>', '"', '\'', '{', '}']),
        "markup left in {escaped:?}"
    );
    assert!(!render::inert_markdown(text).contains("{{"));
}

/// One target's check.
pub type Target = fn(&[u8]);

/// The targets by name, for the replay test.
pub const TARGETS: [(&str, Target); 8] = [
    ("upstream", upstream),
    ("lock", lock),
    ("counts", counts),
    ("patch", patch),
    ("register", register),
    ("compiler_log", compiler_log),
    ("nm", nm),
    ("book", book),
];
