//! Benchmarks of forkbook beside the shell-tooling way of doing the same work, measured in the
//! same run and reported as ratios (not a timed test: it prints a table and asserts nothing).
//!
//! ```sh
//! cargo bench --bench bench -- [--iters N] [--demo] [--real DIR] [--book]
//! ```
//!
//! `--demo` generates the demo world (files layout) in a temporary folder. `--real DIR` uses a
//! files-layout project made with `forkbook init` (its URLs may be overridden with
//! `FORKBOOK_FORK_URL`/`FORKBOOK_UPSTREAM_URL`; its cache is `FORKBOOK_CACHE` or `--cache`); the
//! project is copied to a temporary folder first, so nothing of it is touched. Every forkbook
//! command runs in process, warm (after one untimed run); every figure is the median of N runs.
//!
//! The baselines do what a shell script would: `git ls-tree` for the backend's file list, one
//! `git cat-file blob` process per file and commit, one `git merge-file -p` per core file, one
//! `git diff --no-index` per core file, and one `sha256sum` over every file.

use forkbook::engine::project::{Overrides, Project};
use forkbook::engine::records::{keys, Upstream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Options {
    iters: usize,
    demo: bool,
    real: Option<PathBuf>,
    cache: Option<PathBuf>,
    book: bool,
    /// The candidate pin for `drift api` on the real overlay.
    to: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        iters: 5,
        demo: false,
        real: None,
        cache: std::env::var_os("FORKBOOK_CACHE").map(PathBuf::from),
        book: false,
        to: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--iters" => o.iters = args.next().and_then(|n| n.parse().ok()).expect("--iters N"),
            "--demo" => o.demo = true,
            "--real" => o.real = args.next().map(PathBuf::from),
            "--cache" => o.cache = args.next().map(PathBuf::from),
            "--book" => o.book = true,
            // `cargo bench` passes `--bench` to a harness-less bench.
            "--bench" => {}
            "--to" => o.to = args.next(),
            other => panic!("unknown argument `{other}`"),
        }
    }
    if !o.demo && o.real.is_none() {
        o.demo = true;
    }
    o
}

/// A project to measure: its root, its object cache, and what the baselines need to know.
struct Setup {
    name: String,
    root: PathBuf,
    cache: PathBuf,
    fork: String,
    base: String,
    pin: String,
    prefix: String,
    core: Vec<String>,
    records: PathBuf,
    /// `--var NAME=VALUE` for the book (the demo's candidate commits; book.toml fits the real one).
    book_vars: Vec<String>,
    /// Kept alive so the temporary folder outlives the measurements.
    _tmp: tempfile::TempDir,
}

impl Setup {
    fn read(name: &str, root: PathBuf, cache: PathBuf, tmp: tempfile::TempDir) -> Setup {
        let project = Project::open(
            &root,
            &Overrides {
                cache: Some(cache.clone()),
                ..Overrides::default()
            },
        )
        .expect("project");
        let records = project.records_dir();
        let text = std::fs::read_to_string(records.join("UPSTREAM")).expect("UPSTREAM");
        let upstream = Upstream::parse(&text, "UPSTREAM").expect("UPSTREAM parses");
        let sha = |key| upstream.sha(key, "UPSTREAM").expect("recorded commit");
        let base = sha(keys::BASE);
        let pin = if upstream.get(keys::PIN).is_some() {
            sha(keys::PIN)
        } else {
            base.clone()
        };
        let config = &project.config.overlay;
        assert_eq!(
            config.layout,
            forkbook::engine::config::Layout::Files,
            "the baselines read a files-layout overlay"
        );
        Setup {
            name: name.into(),
            fork: sha(keys::COMMIT),
            base,
            pin,
            prefix: config.backend_prefix.clone(),
            core: config.core_files.clone(),
            records,
            cache,
            root,
            book_vars: Vec::new(),
            _tmp: tmp,
        }
    }

    fn demo() -> (Setup, String) {
        let tmp = tempfile::tempdir().unwrap();
        let demo =
            forkbook::demo::project::generate(tmp.path(), forkbook::engine::config::Layout::Files)
                .expect("demo");
        let pin2 = demo.world.pin2.clone();
        let mut setup = Setup::read("demo", demo.root.clone(), demo.cache.clone(), tmp);
        setup.book_vars = vec![
            format!("candidate_pin={pin2}"),
            format!("candidate_fork={}", demo.world.fork_commits[1]),
        ];
        (setup, pin2)
    }

    fn real(dir: &Path, cache: PathBuf) -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        copy_dir(dir, &root);
        Setup::read("real", root, cache, tmp)
    }

    /// forkbook ARGS in process against this project; returns the exit status.
    fn forkbook(&self, args: &[&str]) -> i32 {
        let overrides = forkbook::engine::project::Overrides {
            cache: Some(self.cache.clone()),
            ..Default::default()
        };
        let full = forkbook::cli::argv(&self.root, &overrides, args.iter().copied());
        let mut out = Vec::new();
        let code = forkbook::cli::run(full, &mut out);
        if code == 2 {
            eprintln!(
                "forkbook {args:?} failed:\n{}",
                String::from_utf8_lossy(&out)
            );
        }
        code
    }

    fn git(&self) -> Command {
        let mut cmd = Command::new("git");
        cmd.arg("--git-dir").arg(&self.cache);
        cmd.stderr(Stdio::null());
        cmd
    }

    fn cat_file(&self, commit: &str, path: &str) -> Vec<u8> {
        let out = self
            .git()
            .args(["cat-file", "blob", &format!("{commit}:{path}")])
            .output()
            .unwrap();
        out.stdout
    }

    fn backend_paths(&self) -> Vec<String> {
        let out = self
            .git()
            .args([
                "ls-tree",
                "-r",
                "--name-only",
                &self.fork,
                "--",
                &self.prefix,
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The core file as `git merge-file -p pin base fork` makes it, written into `dir`.
    fn merge_core(&self, path: &str, dir: &Path) -> PathBuf {
        let slot = path.replace('/', "__");
        let sides = [
            ("pin", &self.pin),
            ("base", &self.base),
            ("fork", &self.fork),
        ];
        let files: Vec<PathBuf> = sides
            .iter()
            .map(|(side, commit)| {
                let file = dir.join(format!("{slot}.{side}"));
                std::fs::write(&file, self.cat_file(commit, path)).unwrap();
                file
            })
            .collect();
        let merged = self
            .git()
            .args(["merge-file", "-p"])
            .args(&files)
            .output()
            .unwrap();
        let out = dir.join(slot);
        std::fs::write(&out, merged.stdout).unwrap();
        out
    }

    /// `sync --check` the shell way: the base tree rebuilt one process per blob and merge, every
    /// overlay file hashed by `sha256sum` and compared with the lock, and the base tree compared
    /// with the recorded tree by `diff -r` (the local fixes).
    ///
    /// With `every_side`, every file is read at the fork, its base and the pin, as a script that
    /// treats all files alike does (the issue's baseline); without, backend files are read at
    /// the fork only (the least a script can do).
    fn baseline_sync_check(&self, every_side: bool) -> usize {
        let work = tempfile::tempdir().unwrap();
        let base = work.path().join("base");
        let mut processes = 1;
        for path in self.backend_paths() {
            let file = base.join(&path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, self.cat_file(&self.fork, &path)).unwrap();
            processes += 1;
            if every_side {
                for commit in [&self.base, &self.pin] {
                    std::fs::write(work.path().join("side"), self.cat_file(commit, &path)).unwrap();
                    processes += 1;
                }
            }
        }
        let merges = work.path().join("merges");
        std::fs::create_dir_all(&merges).unwrap();
        for path in &self.core {
            let merged = self.merge_core(path, &merges);
            let file = base.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::rename(merged, file).unwrap();
            processes += 4;
        }
        let tree = self.records.join("tree");
        let hashes = Command::new("sh")
            .arg("-c")
            .arg("find . -type f -print0 | sort -z | xargs -0 sha256sum")
            .current_dir(&tree)
            .output()
            .unwrap();
        processes += 4;
        let lock = std::fs::read_to_string(self.records.join("overlay.lock")).unwrap();
        let listed: Vec<&str> = lock.lines().filter(|l| !l.starts_with('#')).collect();
        let hashed = String::from_utf8_lossy(&hashes.stdout).replace("  ./", "  ");
        assert_eq!(
            hashed.lines().count(),
            listed.len(),
            "the baseline hashes every locked file"
        );
        Command::new("diff")
            .arg("-r")
            .arg(&base)
            .arg(&tree)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        processes + 1
    }

    /// The residual the shell way: per core file, three blobs, one merge and one diff.
    fn baseline_residual(&self) -> usize {
        let work = tempfile::tempdir().unwrap();
        let mut processes = 0;
        for path in &self.core {
            let merged = self.merge_core(path, work.path());
            let overlay = self.records.join("tree").join(path);
            Command::new("git")
                .args(["diff", "--no-index", "--"])
                .arg(&merged)
                .arg(&overlay)
                .stdout(Stdio::null())
                .status()
                .unwrap();
            processes += 5;
        }
        processes
    }

    /// What `drift api` reads, the shell way: every upstream header at both pins and every
    /// backend source at the fork, one `git cat-file` each (no parsing at all: a lower bound).
    fn baseline_drift_reads(&self, to: &str) -> usize {
        let headers = |commit: &str| -> Vec<String> {
            let out = self
                .git()
                .args(["ls-tree", "-r", "--name-only", commit, "--", "mlx/"])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|p| p.ends_with(".h") && !p.starts_with(&self.prefix))
                .map(str::to_string)
                .collect()
        };
        let mut processes = 0;
        for commit in [self.pin.as_str(), to] {
            for path in headers(commit) {
                self.cat_file(commit, &path);
                processes += 1;
            }
            processes += 1;
        }
        for path in self.backend_paths() {
            self.cat_file(&self.fork, &path);
            processes += 1;
        }
        processes + 1
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Median wall time of `iters` runs of `f`, after one untimed warm-up run.
fn median(iters: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..iters)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

struct Row {
    world: String,
    what: String,
    forkbook: Duration,
    /// forkbook's exit status (1 means it ran and found problems, such as a conflict).
    exit: i32,
    baseline: Option<(Duration, usize)>,
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn print(rows: &[Row], iters: usize) {
    println!("\nmedian of {iters} warm runs; baseline = shell tooling, one process per blob/merge/diff\n");
    println!("| world | command | exit | forkbook | baseline (processes) | baseline / forkbook |");
    println!("| --- | --- | ---: | ---: | ---: | ---: |");
    for row in rows {
        let (base, ratio) = match row.baseline {
            Some((d, n)) => (
                format!("{} ({n})", ms(d)),
                format!("{:.0}x", d.as_secs_f64() / row.forkbook.as_secs_f64()),
            ),
            None => ("-".into(), "-".into()),
        };
        println!(
            "| {} | `{}` | {} | {} | {base} | {ratio} |",
            row.world,
            row.what,
            row.exit,
            ms(row.forkbook),
        );
    }
}

fn measure(setup: &Setup, to: Option<&str>, book: bool, iters: usize, rows: &mut Vec<Row>) {
    let mut processes = 0;
    let last = std::cell::Cell::new(0);
    let run = |args: &[&str], expect: &[i32]| {
        let code = setup.forkbook(args);
        assert!(expect.contains(&code), "forkbook {args:?} exited {code}");
        last.set(code);
    };
    let fb = median(iters, || run(&["sync", "--check"], &[0]));
    let bl = median(iters, || processes = setup.baseline_sync_check(true));
    rows.push(Row {
        world: setup.name.clone(),
        what: "sync --check".into(),
        forkbook: fb,
        exit: last.get(),
        baseline: Some((bl, processes)),
    });
    let bl = median(iters, || processes = setup.baseline_sync_check(false));
    rows.push(Row {
        world: setup.name.clone(),
        what: "sync --check (minimal baseline)".into(),
        forkbook: fb,
        exit: last.get(),
        baseline: Some((bl, processes)),
    });

    let fb = median(iters, || run(&["residual"], &[0, 1]));
    let bl = median(iters, || processes = setup.baseline_residual());
    rows.push(Row {
        world: setup.name.clone(),
        what: "residual".into(),
        forkbook: fb,
        exit: last.get(),
        baseline: Some((bl, processes)),
    });

    if let Some(to) = to {
        let args = ["drift", "api", "--from", &setup.pin, "--to", to];
        let fb = median(iters, || run(&args, &[0, 1]));
        let bl = median(iters, || processes = setup.baseline_drift_reads(to));
        rows.push(Row {
            world: setup.name.clone(),
            what: format!("drift api --to {}", &to[..8]),
            forkbook: fb,
            exit: last.get(),
            baseline: Some((bl, processes)),
        });
    }

    if let Some(to) = to {
        // The forecast from the pin to `to`: on the real overlay 39886de4 -> 846d176, 293
        // first-parent commits (target: 30 s on 2 cores). Warm: the drift cache holds the
        // analyses after the first run; cold figures come from hyperfine with `--prepare`
        // removing `forkbook-drift-api/` (docs/reliability.md).
        let args = ["roll", "--check", "--to", to];
        let fb = median(iters, || run(&args, &[0]));
        rows.push(Row {
            world: setup.name.clone(),
            what: format!("roll --check --to {}", &to[..8]),
            forkbook: fb,
            exit: last.get(),
            baseline: None,
        });
    }

    let fb = median(iters, || run(&["check"], &[0, 1]));
    rows.push(Row {
        world: setup.name.clone(),
        what: "check".into(),
        forkbook: fb,
        exit: last.get(),
        baseline: None,
    });

    if book {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("book");
        copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("book"), &dir);
        let dir = dir.to_string_lossy().into_owned();
        let fb = median(iters, || {
            let mut args = vec!["book", "build", "--dir", &dir, "--rerun"];
            for var in &setup.book_vars {
                args.extend(["--var", var.as_str()]);
            }
            run(&args, &[0, 1])
        });
        rows.push(Row {
            world: setup.name.clone(),
            what: "book build --rerun".into(),
            forkbook: fb,
            exit: last.get(),
            baseline: None,
        });
    }
}

fn main() {
    let o = options();
    let mut rows = Vec::new();
    if o.demo {
        let (setup, pin2) = Setup::demo();
        measure(&setup, Some(&pin2), o.book, o.iters, &mut rows);
    }
    if let Some(dir) = &o.real {
        let cache = o
            .cache
            .clone()
            .expect("--cache DIR or FORKBOOK_CACHE for the real overlay");
        let setup = Setup::real(dir, cache);
        measure(&setup, o.to.as_deref(), o.book, o.iters, &mut rows);
    }
    print(&rows, o.iters);
}
