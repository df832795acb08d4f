//! Every writer of a record against every other: two runs at once on one project, a write that
//! fails half way, and what a killed run leaves behind. Each writer reads, edits and writes the
//! records under the project's lock in one atomic replace, so a second writer waits
//! (`FORKBOOK_LOCK_WAIT=1`) or is refused with a clear message; none overwrites another's record.
//! Also the records' own truth: conflict markers in a record, numbers no entry can have, a
//! non-regular file in the records folder, a fix the fork merged.
//!
//! The forkbook binary runs as child processes, so the runs are really concurrent and a size
//! limit touches only the child.

use crate::common::Demo;
use forkbook::engine::config::Layout;
use forkbook::engine::register;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn forkbook(demo: &Demo, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_forkbook"));
    cmd.arg("--root")
        .arg(demo.root())
        .arg("--cache")
        .arg(&demo.demo.cache)
        .args(args);
    for var in [
        "FORKBOOK_FAIL_AFTER_WRITES",
        "FORKBOOK_LOCK_WAIT",
        "FORKBOOK_OFFLINE",
        "FORKBOOK_CACHE",
    ] {
        cmd.env_remove(var);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Waits for a child at most `secs` seconds; a child still running then is killed and the test
/// fails (a read that blocks forever must not hang the suite).
fn finish(mut child: Child, secs: u64, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("`{what}` did not finish in {secs} s: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Starts every command at once (each queues for the lock), then waits for all of them.
fn run_together(demo: &Demo, runs: &[Vec<String>]) -> Vec<(String, Output)> {
    let children: Vec<(String, Child)> = runs
        .iter()
        .map(|args| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let child = forkbook(demo, &args)
                .env("FORKBOOK_LOCK_WAIT", "1")
                .spawn()
                .unwrap();
            (args.join(" "), child)
        })
        .collect();
    children
        .into_iter()
        .map(|(what, child)| {
            let out = finish(child, 300, &what);
            (what, out)
        })
        .collect()
}

fn register_of(demo: &Demo) -> register::Register {
    register::parse("LOCAL_FIXES.md", &demo.read("LOCAL_FIXES.md"))
}

fn link(n: u32) -> String {
    format!("https://github.com/NripeshN/mlx/pull/{}", 500 + n)
}

fn record_run(n: u32) -> Vec<String> {
    ["propose", "--record", &n.to_string(), &link(n)]
        .map(String::from)
        .to_vec()
}

/// Appends heading entries `from..=to` to the register, each with `fields`.
fn add_entries(
    demo: &Demo,
    numbers: std::ops::RangeInclusive<u32>,
    fields: &dyn Fn(u32) -> String,
) {
    let path = demo.records().join("LOCAL_FIXES.md");
    let mut text = std::fs::read_to_string(&path).unwrap();
    for n in numbers {
        text.push_str(&format!(
            "\n## {n}. Extra fix {n}\n\nWhy fix {n} exists.\n\n{}",
            fields(n)
        ));
    }
    std::fs::write(&path, text).unwrap();
}

fn draft_fields(n: u32) -> String {
    format!("- state: retarget-only\n- cause: 1a2b3c4d\n- draft: a rename drafted by forkbook from drift api (signature `f{n}`); review it, then `forkbook fix confirm {n}`\n")
}

fn assert_all_ok(outs: &[(String, Output)], ok: &[i32]) {
    for (what, out) in outs {
        let code = out.status.code().unwrap_or(-1);
        assert!(ok.contains(&code), "`{what}` exited {code}: {}", text(out));
    }
}

fn assert_linked(demo: &Demo, numbers: std::ops::RangeInclusive<u32>) {
    let register = register_of(demo);
    for n in numbers {
        let entry = register
            .entry(n)
            .unwrap_or_else(|| panic!("entry {n} is gone: {}", demo.read("LOCAL_FIXES.md")));
        assert_eq!(
            entry.value("link"),
            Some(link(n).as_str()),
            "the record of entry {n} survived: {}",
            demo.read("LOCAL_FIXES.md")
        );
        assert_eq!(entry.value("state"), Some("proposed"), "entry {n}");
    }
}

/// Twenty `propose --record` at once, each on its own entry: every link is in the register.
/// Fails on main, where each run read the register, edited it and replaced it without a lock,
/// so the last writer's copy dropped the others' links (exit 0 all the same).
#[test]
fn twenty_records_at_once_keep_every_link() {
    let demo = Demo::new(Layout::Patch);
    add_entries(&demo, 5..=24, &|_| String::new());
    let runs: Vec<Vec<String>> = (5..=24).map(record_run).collect();
    let outs = run_together(&demo, &runs);
    assert_all_ok(&outs, &[0]);
    assert_linked(&demo, 5..=24);
}

/// A sync racing records: the sync waits for the lock and reads the register after it, or the
/// records wait for the sync; every link survives and the sync is written. Fails on main, where
/// the sync read the records before taking the lock and swapped its older copy in over them.
#[test]
fn records_racing_a_sync_keep_every_link_and_the_sync() {
    let demo = Demo::new(Layout::Patch);
    add_entries(&demo, 5..=16, &|_| String::new());
    let f2 = demo.fork(2).to_string();
    let mut runs: Vec<Vec<String>> = vec![vec!["sync".into(), f2.clone()]];
    runs.extend((5..=16).map(record_run));
    let outs = run_together(&demo, &runs);
    // The sync leaves the demo's conflict with fix 4 (exit 1); the records exit 0.
    assert_all_ok(&outs, &[0, 1]);
    assert_linked(&demo, 5..=16);
    assert!(demo.read("UPSTREAM").contains(&format!("commit: {f2}")));
}

/// `fixes migrate --write` racing records on a list-form register: the register ends migrated
/// (every entry a heading) with every link. Fails on main (no lock: 29 of 30 records lost).
#[test]
fn a_migration_racing_records_keeps_every_link() {
    let demo = Demo::new(Layout::Patch);
    let mut list = String::from("# Local fixes\n\n");
    for n in 1..=16 {
        list.push_str(&format!(
            "{n}. **Fix number {n}.** It changes `mlx/backend/rocm/f{n}.cpp` for the pin.\n"
        ));
    }
    std::fs::write(demo.records().join("LOCAL_FIXES.md"), list).unwrap();
    let mut runs: Vec<Vec<String>> = vec![vec!["fixes".into(), "migrate".into(), "--write".into()]];
    runs.extend((5..=16).map(record_run));
    let outs = run_together(&demo, &runs);
    assert_all_ok(&outs, &[0]);
    assert_linked(&demo, 5..=16);
    let register = register_of(&demo);
    assert_eq!(register.entries.len(), 16);
    assert!(
        register
            .entries
            .iter()
            .all(|e| e.form == register::Form::Heading),
        "the migration was written: {}",
        demo.read("LOCAL_FIXES.md")
    );
}

/// `fix confirm` racing records: every confirmation and every link is kept. Fails on main (no
/// lock, and the register rewritten in place).
#[test]
fn confirmations_racing_records_keep_every_record() {
    let demo = Demo::new(Layout::Patch);
    add_entries(&demo, 5..=10, &draft_fields);
    add_entries(&demo, 11..=16, &|_| String::new());
    let mut runs: Vec<Vec<String>> = Vec::new();
    for (confirm, record) in (5..=10).zip(11..=16) {
        runs.push(vec!["fix".into(), "confirm".into(), confirm.to_string()]);
        runs.push(record_run(record));
    }
    let outs = run_together(&demo, &runs);
    assert_all_ok(&outs, &[0]);
    assert_linked(&demo, 11..=16);
    let register = register_of(&demo);
    for n in 5..=10 {
        let entry = register.entry(n).unwrap();
        assert!(entry.field("draft").is_none(), "entry {n} is confirmed");
        assert!(
            entry
                .value("confirmed")
                .is_some_and(|c| c.contains(&format!("`f{n}`"))),
            "entry {n}: {:?}",
            entry.fields
        );
    }
}

/// Without `FORKBOOK_LOCK_WAIT`, each writer of the register is refused while another run holds
/// the project, says so and how to queue, and writes nothing. Fails on main for `propose
/// --record`, `fixes migrate --write` and `fix confirm`, which took no lock and wrote.
#[test]
fn every_register_writer_is_refused_while_another_run_holds_the_project() {
    let demo = Demo::new(Layout::Patch);
    add_entries(&demo, 5..=5, &draft_fields);
    let path = demo.records().join("LOCAL_FIXES.md");
    let list = "# Local fixes\n\n1. **Only fix.** It changes `mlx/backend/rocm/a.cpp`.\n";
    let writers: [(&str, Vec<String>); 3] = [
        ("propose --record", record_run(2)),
        (
            "fix confirm",
            vec!["fix".into(), "confirm".into(), "5".into()],
        ),
        (
            "fixes migrate --write",
            vec!["fixes".into(), "migrate".into(), "--write".into()],
        ),
    ];
    for (what, args) in writers {
        if what == "fixes migrate --write" {
            std::fs::write(&path, list).unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let lock = forkbook::engine::fsutil::RunLock::acquire(demo.root(), "overlay").unwrap();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = finish(forkbook(&demo, &args).spawn().unwrap(), 60, what);
        drop(lock);
        let message = text(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {message}");
        assert!(
            message.contains("another forkbook run is using the overlay"),
            "{what}: {message}"
        );
        assert!(
            message.contains("FORKBOOK_LOCK_WAIT=1"),
            "{what}: {message}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{what} wrote nothing"
        );
        let out = finish(forkbook(&demo, &args).spawn().unwrap(), 60, what);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what} once free: {}",
            text(&out)
        );
        assert_ne!(
            std::fs::read(&path).unwrap(),
            before,
            "{what} writes once free"
        );
    }
}

fn with_file_size_limit(cmd: &mut Command, bytes: u64) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal and setrlimit are async-signal-safe and touch only the child.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// `fix confirm` under a file-size limit (a full disk): exit 2 with the OS reason, the register
/// byte for byte as it was, no temporary file left. Fails on main, which rewrote the register in
/// place and left it cut at the limit (entries lost).
#[test]
fn fix_confirm_under_a_size_limit_leaves_the_register_byte_for_byte() {
    let demo = Demo::new(Layout::Patch);
    add_entries(&demo, 5..=6, &draft_fields);
    let path = demo.records().join("LOCAL_FIXES.md");
    let before = std::fs::read(&path).unwrap();
    assert!(before.len() > 1024, "the register is larger than the limit");
    let mut cmd = forkbook(&demo, &["fix", "confirm", "5"]);
    let out = finish(
        with_file_size_limit(&mut cmd, 1024).spawn().unwrap(),
        60,
        "fix confirm",
    );
    let message = text(&out);
    assert_eq!(out.status.code(), Some(2), "{message}");
    assert!(message.contains("File too large"), "{message}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "byte for byte");
    let left: Vec<String> = std::fs::read_dir(demo.records())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("forkbook-new"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    let out = finish(
        forkbook(&demo, &["fix", "confirm", "5"]).spawn().unwrap(),
        60,
        "fix confirm",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(register_of(&demo).entry(6).is_some(), "every entry is kept");
}

/// `propose --record` on an entry whose `state` runs over several lines keeps those lines (as a
/// paragraph of the field, not its value). Fails on main, which replaced the field's lines with
/// the one new line.
#[test]
fn a_record_keeps_the_continuation_lines_of_the_field_it_replaces() {
    let demo = Demo::new(Layout::Patch);
    add_entries(&demo, 5..=5, &|_| {
        "- state: to-propose, held until the fork's\n  allocator rework lands (see the notes\n  in our tracker)\n- reason: waits for the rework\n".into()
    });
    let out = finish(
        forkbook(&demo, &["propose", "--record", "5", &link(5)])
            .spawn()
            .unwrap(),
        60,
        "record",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let register = demo.read("LOCAL_FIXES.md");
    assert!(
        register.contains("  allocator rework lands (see the notes\n  in our tracker)\n"),
        "{register}"
    );
    let entry = register_of(&demo).entry(5).unwrap().clone();
    assert_eq!(entry.value("state"), Some("proposed"));
    assert_eq!(entry.value("reason"), Some("waits for the rework"));
    assert_eq!(entry.value("link"), Some(link(5).as_str()));
}

/// `fixes migrate` keeps a bold entry's body as written: a leading `-O3`, `...`, `—` or `::`
/// is the body's text, not a separator. Fails on main (`-O3` became `O3`).
#[test]
fn migrate_keeps_the_leading_punctuation_of_a_bold_entry_s_body() {
    let bodies = [
        "-O3 breaks the kernel on gfx90a.",
        "... and the sum overflows.",
        "— the fork's guard is kept.",
        ":: scoped names stay qualified.",
        "--offload-arch is passed twice.",
    ];
    let mut text = String::from("# Local fixes\n\n");
    for (i, body) in bodies.iter().enumerate() {
        text.push_str(&format!("**{}. Title {}.** {body}\n\n", i + 1, i + 1));
    }
    let migrated = register::migrate(&text, "LOCAL_FIXES.md", None).text;
    for (i, body) in bodies.iter().enumerate() {
        assert!(
            migrated.contains(&format!("## {}. Title {}\n\n{body}\n", i + 1, i + 1)),
            "{body}: {migrated}"
        );
    }
    // A separator after an open title is form, and goes.
    let migrated =
        register::migrate("**1. Title** — prose.\n\n**2. Other**: more.\n", "f", None).text;
    assert!(migrated.contains("## 1. Title\n\nprose.\n"), "{migrated}");
    assert!(migrated.contains("## 2. Other\n\nmore.\n"), "{migrated}");
}

/// Denying and conditional status sentences never give `proposed` or `merged`, in the parser
/// and in what `fixes migrate --write` writes. Fails on main, which read 10 of 13 as a state.
#[test]
fn denied_and_conditional_sentences_give_no_pull_request_state() {
    let sentences = [
        "It was never merged upstream (PR #12).",
        "PR #12 has not been merged.",
        "Not yet proposed; PR #12 is a draft.",
        "If it is merged as PR #12, drop this entry.",
        "Once proposed as PR #12, record the link.",
        "It would be proposed as PR #12.",
        "PR #12 hasn't been sent yet.",
        "We will send it as PR #12.",
        "PR #12 was rejected.",
        "PR #12 is waiting to be merged.",
        "Merged? Not yet, see PR #12.",
        "PR #12 might be merged next month.",
        "Neither sent nor merged: PR #12 is a placeholder.",
    ];
    let mut bold = String::from("# Local fixes\n\n");
    let mut headings = String::from("# Local fixes\n\n");
    for (i, sentence) in sentences.iter().enumerate() {
        let n = i + 1;
        bold.push_str(&format!(
            "**{n}. Fix {n}.** It changes `mlx/backend/rocm/f{n}.cpp`.\n\n{sentence}\n\n"
        ));
        headings.push_str(&format!(
            "## {n}. Fix {n}\n\nIt changes `mlx/backend/rocm/f{n}.cpp`. {sentence}\n\n"
        ));
    }
    let parsed = register::parse("LOCAL_FIXES.md", &headings);
    assert_eq!(parsed.entries.len(), sentences.len());
    for (entry, sentence) in parsed.entries.iter().zip(sentences) {
        let state = entry.state();
        assert!(
            !matches!(
                state,
                Some(register::State::Proposed | register::State::Merged)
            ),
            "{sentence}: read as {state:?}"
        );
    }
    let migration = register::migrate(&bold, "LOCAL_FIXES.md", Some("https://github.com/o/r"));
    assert!(
        !migration.text.contains("- state: merged"),
        "{}",
        migration.text
    );
    assert!(
        !migration.text.contains("- state: proposed"),
        "{}",
        migration.text
    );
    // What says it plainly still gives the state.
    let plain = register::parse(
        "f",
        "## 1. One\n\nProse. Sent to the fork as PR #12.\n\n## 2. Two\n\nProse. Merged into the fork as https://github.com/o/r/pull/13 in 1a2b3c4d.\n",
    );
    assert_eq!(plain.entries[0].state(), Some(register::State::Proposed));
    assert_eq!(plain.entries[1].state(), Some(register::State::Merged));
}

/// An entry number that no `u32` holds is an error at its line, in every form an entry takes.
/// Fails on main for the list item and the bold title, which were dropped without a word.
#[test]
fn an_entry_number_too_large_is_an_error_at_its_line() {
    for form in [
        "## 4294967296. Huge heading",
        "4294967296. **Huge item.** Prose.",
        "**99999999999. Huge bold.** Prose.",
    ] {
        let text = format!("# Local fixes\n\n## 1. One\n\nProse.\n\n{form}\n");
        let parsed = register::parse("LOCAL_FIXES.md", &text);
        let problem = parsed
            .problems
            .iter()
            .find(|p| p.message.contains("too large"))
            .unwrap_or_else(|| panic!("{form}: {:?}", parsed.problems));
        assert_eq!(problem.line, 7, "{form}");
    }
    let demo = Demo::new(Layout::Patch);
    let path = demo.records().join("LOCAL_FIXES.md");
    let register = std::fs::read_to_string(&path).unwrap();
    let lines = register.lines().count();
    std::fs::write(&path, format!("{register}\n4294967296. **Huge.** Prose.\n")).unwrap();
    let out = finish(forkbook(&demo, &["check"]).spawn().unwrap(), 120, "check");
    let message = text(&out);
    assert_eq!(out.status.code(), Some(1), "{message}");
    assert!(
        message.contains(&format!("LOCAL_FIXES.md:{}", lines + 2)) && message.contains("too large"),
        "{message}"
    );
}

/// Conflict markers left in a record fail `check` with the record and the line: the register, the
/// README and a patch's message. Fails on main, where every gate passed them.
#[test]
fn conflict_markers_in_a_record_fail_check_with_file_and_line() {
    let marked = "<<<<<<< ours\nOur side.\n=======\nTheir side.\n>>>>>>> theirs\n";
    for record in ["LOCAL_FIXES.md", "README.md", "patches/0001"] {
        let demo = Demo::new(Layout::Patch);
        let path = if record.starts_with("patches/") {
            std::fs::read_dir(demo.records().join("patches"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with("0001-")
                })
                .unwrap()
        } else {
            demo.records().join(record)
        };
        let old = std::fs::read_to_string(&path).unwrap();
        // Into the patch's message (before its `---`), or after a record's first paragraph.
        let at = if record.starts_with("patches/") {
            old.find("\n---\n").unwrap() + 1
        } else {
            old.find("\n\n").unwrap() + 2
        };
        let line = old[..at].lines().count() + 1;
        std::fs::write(&path, format!("{}{marked}{}", &old[..at], &old[at..])).unwrap();
        let out = finish(forkbook(&demo, &["check"]).spawn().unwrap(), 120, "check");
        let message = text(&out);
        assert_eq!(out.status.code(), Some(1), "{record}: {message}");
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            message
                .lines()
                .any(|l| l.contains(&format!("{name}:{line}")) && l.contains("conflict")),
            "{record} at line {line}: {message}"
        );
    }
}

/// A FIFO in the records folder is refused with its path by `status`, `check` and `adopt`, which
/// would otherwise block reading it forever. Fails on main (each of them hung).
#[test]
fn a_fifo_in_the_records_folder_is_refused_not_read() {
    let demo = Demo::new(Layout::Patch);
    for place in ["notes.fifo", "patches/0009-stray.patch"] {
        let fifo = demo.records().join(place);
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        for args in [vec!["status"], vec!["check"], vec!["adopt"]] {
            let what = format!("{} with {place}", args.join(" "));
            let out = finish(forkbook(&demo, &args).spawn().unwrap(), 60, &what);
            let message = text(&out);
            assert_eq!(out.status.code(), Some(2), "{what}: {message}");
            assert!(message.contains(place), "{what} names it: {message}");
            assert!(message.contains("not a regular file"), "{what}: {message}");
        }
        std::fs::remove_file(&fifo).unwrap();
    }
}

/// A patch in a folder below the series (`patches/dropped/`, where a maintainer keeps what left
/// the series) is in no series: not applied, not checked, and a move keeps it as it is. Fails
/// on d481506, where the overlay took it into the series (every command: "out of sequence")
/// while the checks' series left it out.
#[test]
fn a_patch_below_the_series_folder_is_kept_and_not_applied() {
    let demo = Demo::new(Layout::Patch);
    let (code, status) = demo.run(&["status"]);
    assert_eq!(code, 0, "{status}");
    let series = demo.records().join("patches");
    let mut names: Vec<_> = std::fs::read_dir(&series)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    std::fs::create_dir_all(series.join("dropped")).unwrap();
    let dropped = series.join("dropped/0009-an-old-fix.patch");
    std::fs::copy(&names[0], &dropped).unwrap();
    let kept = std::fs::read(&dropped).unwrap();
    let (code, out) = demo.run(&["status"]);
    assert_eq!(
        (code, out.as_str()),
        (0, status.as_str()),
        "status reads the same series"
    );
    let upstream = demo.read("UPSTREAM");
    let recorded = upstream
        .lines()
        .find_map(|l| l.strip_prefix("commit: "))
        .unwrap();
    // A move that writes: to the recorded fork commit, every record rendered again.
    for args in [
        vec!["check"],
        vec!["sync", "--check"],
        vec!["sync", recorded],
    ] {
        let (code, out) = demo.run(&args);
        assert_eq!(code, 0, "{}: {out}", args.join(" "));
        assert!(!out.contains("0009"), "{}: {out}", args.join(" "));
    }
    assert_eq!(
        std::fs::read(&dropped).unwrap(),
        kept,
        "the move kept it byte for byte"
    );
}

/// A sync killed with `kill -9` leaves its stage (`.patches-rocm.forkbook-new-PID`); the next
/// run clears it even when that run is refused. Fails on main, where only a run that got as far
/// as staging its own folder cleared a dead one.
#[test]
fn a_killed_run_s_stage_is_cleared_by_the_next_run_even_when_refused() {
    let demo = Demo::new(Layout::Patch);
    let dead = {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let stage = demo
        .root()
        .join(format!(".patches-rocm.forkbook-new-{dead}"));
    for args in [
        vec!["sync", "no-such-revision"],
        vec!["retarget", "no-such-revision"],
        vec!["sync", "--check"],
    ] {
        std::fs::create_dir_all(stage.join("patches")).unwrap();
        std::fs::write(stage.join("UPSTREAM"), "half written\n").unwrap();
        let what = args.join(" ");
        let _ = finish(forkbook(&demo, &args).spawn().unwrap(), 120, &what);
        assert!(!stage.exists(), "`{what}` leaves the dead run's stage");
    }
}

/// The remedy the checks give for a fix the fork now holds: mark its entry merged and remove its
/// patch. Every command then reads the overlay and the check accepts the gap in the series.
/// Fails on main, where the series was "out of sequence" and `status` and `sync --check` exited 2.
#[test]
fn a_fix_marked_merged_with_its_patch_removed_keeps_every_command_working() {
    let demo = Demo::new(Layout::Patch);
    let f3 = demo.fork(3).to_string();
    let (code, out) = demo.run(&["sync", &f3]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("droppable"), "{out}");
    let patch = demo
        .records()
        .join("patches/0002-free-pooled-buffers-when-the-allocator-is.patch");
    std::fs::remove_file(&patch).unwrap();
    let path = demo.records().join("LOCAL_FIXES.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replacen(
        "- state: proposed\n- link: https://github.com/NripeshN/mlx/pull/101\n",
        &format!(
            "- state: merged\n- link: https://github.com/NripeshN/mlx/pull/101\n- fork-commit: {f3}\n"
        ),
        1,
    );
    std::fs::write(&path, text).unwrap();
    for args in [
        vec!["status"],
        vec!["sync", "--check"],
        vec!["check"],
        vec!["residual"],
    ] {
        let (code, out) = demo.run(&args);
        assert_ne!(code, 2, "`{}`: {out}", args.join(" "));
        assert!(!out.contains("out of sequence"), "{out}");
    }
    let (_, out) = demo.run(&["sync", "--check"]);
    assert!(!out.contains("LOCAL_FIXES"), "the records reproduce: {out}");
    let (_, out) = demo.run(&["check"]);
    assert!(
        !out.lines().any(|l| l.contains("fixes-numbered")),
        "a merged entry needs no patch: {out}"
    );
    // The next fix takes the next free number, after the merged entry's.
    let mat = demo.tmp.path().join("edited");
    let (code, out) = demo.run(&["materialize", "--out", mat.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    std::fs::write(mat.join("mlx/backend/rocm/extra.txt"), "an edit\n").unwrap();
    let (code, out) = demo.run(&[
        "fix",
        "add",
        "--from",
        mat.to_str().unwrap(),
        "--title",
        "An edit",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("recorded fix 5"), "{out}");
}

/// With the whole files in the records folder itself (`tree = "."`), a fork file whose name
/// looks like editor noise (`.gitignore`, `notes~`) is an overlay file where the fork's files go,
/// and stays noise elsewhere. Fails on main, which dropped such a file on every read.
#[test]
fn with_tree_dot_the_noise_rule_never_drops_a_fork_file() {
    use forkbook::engine::config::Config;
    use forkbook::engine::overlay::Records;
    use forkbook::engine::project::{Overrides, Project};
    let tmp = tempfile::tempdir().unwrap();
    let config = Config::parse(
        "[overlay]\ndir = \"patches-rocm\"\nlayout = \"files\"\ntree = \".\"\n\n[fork]\nurl = \"https://github.com/o/fork\"\n",
    )
    .unwrap();
    let project = Project::with_config(tmp.path(), config, &Overrides::default());
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let mut files = forkbook::engine::FileMap::new();
    let mut put = |p: &str, t: &str| {
        files.insert(p.to_string(), std::sync::Arc::new(t.as_bytes().to_vec()));
    };
    put(
        "UPSTREAM",
        &format!("commit: {sha}\nfork_upstream_merge_base: {sha}\n"),
    );
    put("mlx/backend/rocm/.gitignore", "*.o\n");
    put("mlx/backend/rocm/kernels/notes~", "fork notes\n");
    put("mlx/backend/rocm/device.cpp", "int x;\n");
    put(".DS_Store", "noise");
    put("notes.swp", "noise");
    let records = Records::from_files(&project, files).unwrap();
    for kept in [
        "mlx/backend/rocm/.gitignore",
        "mlx/backend/rocm/kernels/notes~",
        "mlx/backend/rocm/device.cpp",
    ] {
        assert!(
            records.tree.contains_key(kept),
            "{kept}: {:?}",
            records.tree.keys()
        );
    }
    for noise in [".DS_Store", "notes.swp", "UPSTREAM"] {
        assert!(!records.tree.contains_key(noise), "{noise}");
    }
}
