//! `forkbook book build|test|serve`: the executable book, built in process with mdbook-driver and
//! the forkbook preprocessor registered, so no `mdbook` binary is needed.
//!
//! Exit status 1 when the book's gate fails (a gated step, a check error), 2 when the book
//! cannot be loaded or rendered.

use super::{Ctx, FAILED, OK, PROBLEMS};
use crate::book::BookRunner;
use crate::engine::{Error, Result};
use forkbook_preprocessor::{ForkbookPreprocessor, GateFailure, Tally};
use mdbook_driver::MDBook;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Build, test or serve the executable book (the procedures, with every step run)
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: BookCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum BookCommand {
    /// Run every step and render the HTML book
    Build(BookArgs),
    /// Run every step and apply the gate (what CI runs); the pages are written, failures marked
    Test(BookArgs),
    /// Build, then serve the HTML book on localhost
    Serve {
        #[command(flatten)]
        book: BookArgs,
        /// The port to listen on (127.0.0.1 only)
        #[arg(long, default_value_t = 3000)]
        port: u16,
    },
}

/// What every book command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct BookArgs {
    /// The book folder (holding book.toml); default: `book` in the project
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Set a variable of the procedures, over book.toml's (repeatable)
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
    pub vars: Vec<(String, String)>,
    /// Run every step again instead of reusing cached results
    #[arg(long)]
    pub rerun: bool,
}

fn parse_var(text: &str) -> std::result::Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("expected `NAME=VALUE`, found `{text}`")),
    }
}

pub fn run(args: &Args, ctx: &mut Ctx) -> Result<i32> {
    match &args.command {
        BookCommand::Build(book) => build(book, ctx).map(|(code, _)| code),
        BookCommand::Test(book) => test(book, ctx),
        BookCommand::Serve { book, port } => match build(book, ctx)? {
            (OK, Some(html)) => serve(&html, *port, ctx),
            (code, _) => Ok(code),
        },
    }
}

/// Loads the book with the forkbook preprocessor registered over book.toml's command; the
/// handle holds what the steps did once the book is built.
fn load(args: &BookArgs, ctx: &Ctx, run_for: Option<&str>) -> Result<Loaded> {
    let project = ctx.project()?;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| project.root.join("book"));
    let mut book = MDBook::load(&dir).map_err(|e| {
        Error::new(format!(
            "failed to load the book `{}`: {e:#}",
            dir.display()
        ))
    })?;
    let vars: BTreeMap<String, String> = args.vars.iter().cloned().collect();
    let runner = BookRunner::new(project.root.clone(), ctx.overrides(), super::run_for_book);
    let mut preprocessor = ForkbookPreprocessor::new(runner)
        .with_vars(vars)
        .with_rerun(args.rerun);
    if let Some(renderer) = run_for {
        preprocessor = preprocessor.with_steps_run_for(renderer);
    }
    let tally = preprocessor.tally_handle();
    let (preprocessor, gate) = preprocessor.with_pages_on_failure();
    // Same name as `[preprocessor.forkbook]`, so this replaces the `forkbook mdbook` command.
    book.with_preprocessor(preprocessor);
    Ok(Loaded { book, tally, gate })
}

/// A book ready to build: what its steps did, and the gate's failure once it has run.
struct Loaded {
    book: MDBook,
    tally: Arc<Mutex<Tally>>,
    gate: Arc<Mutex<Option<GateFailure>>>,
}

/// The summary line every build and test ends with, so a book whose steps were all skipped
/// does not read as a book whose steps all passed.
fn print_tally(tally: &Mutex<Tally>, ctx: &mut Ctx) -> Result<()> {
    let tally = tally.lock().map(|t| t.clone()).unwrap_or_default();
    writeln!(ctx.out, "{tally}")?;
    Ok(())
}

fn build(args: &BookArgs, ctx: &mut Ctx) -> Result<(i32, Option<PathBuf>)> {
    let loaded = load(args, ctx, None)?;
    let html = loaded.book.build_dir_for("html");
    let built = loaded.book.build();
    print_tally(&loaded.tally, ctx)?;
    match built {
        Ok(()) => match failed_gate(&loaded) {
            None => {
                writeln!(ctx.out, "built the book into `{}`", html.display())?;
                Ok((OK, Some(html)))
            }
            Some(gate) => gate_failed(&gate, &html, ctx).map(|code| (code, None)),
        },
        Err(e) => gate_or_error(e, ctx).map(|code| (code, None)),
    }
}

/// The gate with `mdbook test`'s strictness (its steps run as for the renderer `test`: missing
/// objects fail rather than skip), and the HTML pages written all the same, so a failing gate
/// leaves pages to open with the failures marked.
fn test(args: &BookArgs, ctx: &mut Ctx) -> Result<i32> {
    let loaded = load(args, ctx, Some("test"))?;
    let html = loaded.book.build_dir_for("html");
    let built = loaded.book.build();
    print_tally(&loaded.tally, ctx)?;
    match built {
        Ok(()) => match failed_gate(&loaded) {
            None => {
                writeln!(ctx.out, "the book's gate passed")?;
                Ok(OK)
            }
            Some(gate) => gate_failed(&gate, &html, ctx),
        },
        Err(e) => gate_or_error(e, ctx),
    }
}

fn failed_gate(loaded: &Loaded) -> Option<GateFailure> {
    loaded.gate.lock().ok().and_then(|mut slot| slot.take())
}

/// Exit 1 with the gate's problems, after saying where the pages that show them are.
fn gate_failed(gate: &GateFailure, html: &Path, ctx: &mut Ctx) -> Result<i32> {
    writeln!(
        ctx.out,
        "wrote the book into `{}`, each failure marked on its page",
        html.display()
    )?;
    writeln!(ctx.out, "error: {gate}")?;
    Ok(PROBLEMS)
}

/// A gate failure is exit 1 with its problems printed; anything else is the tool failing.
fn gate_or_error(e: mdbook_driver::errors::Error, ctx: &mut Ctx) -> Result<i32> {
    match e.downcast_ref::<GateFailure>() {
        Some(gate) => {
            writeln!(ctx.out, "error: {gate}")?;
            Ok(PROBLEMS)
        }
        None => Err(Error::new(format!("{e:#}"))),
    }
}

/// Serves `dir` on 127.0.0.1 until the process is stopped.
fn serve(dir: &Path, port: u16, ctx: &mut Ctx) -> Result<i32> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| Error::new(format!("failed to listen on 127.0.0.1:{port}: {e}")))?;
    writeln!(
        ctx.out,
        "serving `{}` on http://127.0.0.1:{port}/ (stop with Ctrl-C)",
        dir.display()
    )?;
    ctx.out.flush()?;
    serve_on(&listener, dir, None);
    Ok(FAILED)
}

/// At most this many clients are answered at once; the next ones wait in the listener's queue.
const MAX_CLIENTS: usize = 16;

/// A client that sends its request (or reads the answer) slower than this is dropped.
const CLIENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Answers requests on `listener` (`limit` of them, or for ever).
fn serve_on(listener: &TcpListener, dir: &Path, limit: Option<usize>) {
    serve_with(listener, dir, limit, CLIENT_TIMEOUT);
}

/// Each client on a thread of its own (at most [`MAX_CLIENTS`] at once), with `timeout` on
/// every read and write, so one idle or slow client never holds up the others. Returns when
/// `limit` clients were answered.
fn serve_with(
    listener: &TcpListener,
    dir: &Path,
    limit: Option<usize>,
    timeout: std::time::Duration,
) {
    let busy = Arc::new((Mutex::new(0usize), Condvar::new()));
    std::thread::scope(|scope| {
        for stream in listener
            .incoming()
            .take(limit.unwrap_or(usize::MAX))
            .flatten()
        {
            let slot = Slot::take(&busy);
            scope.spawn(move || {
                let _slot = slot;
                if stream.set_write_timeout(Some(timeout)).is_ok() {
                    let _ = answer(stream, dir, timeout);
                }
            });
        }
    });
}

/// One of the [`MAX_CLIENTS`] places, given back when the client's thread ends (panic included).
struct Slot(Arc<(Mutex<usize>, Condvar)>);

impl Slot {
    fn take(busy: &Arc<(Mutex<usize>, Condvar)>) -> Slot {
        let (count, freed) = &**busy;
        let mut count = count.lock().unwrap_or_else(|e| e.into_inner());
        while *count >= MAX_CLIENTS {
            count = freed.wait(count).unwrap_or_else(|e| e.into_inner());
        }
        *count += 1;
        Slot(busy.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let (count, freed) = &*self.0;
        *count.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        freed.notify_one();
    }
}

/// The longest request line read; a longer one is refused.
const MAX_REQUEST_LINE: usize = 8 * 1024;

/// The request line, read by `deadline` in all: a client sending one byte at a time never keeps
/// its thread past it, and one that never ends its line is cut at [`MAX_REQUEST_LINE`] bytes
/// (`None`). The headers after it are read too (up to the same cap), so closing the connection
/// leaves nothing unread, which would reset it under the response.
fn read_request_line(stream: &mut TcpStream, deadline: Instant) -> std::io::Result<Option<String>> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    let first_line = |head: &[u8]| {
        head.iter()
            .position(|&b| b == b'\n')
            .filter(|&end| end <= MAX_REQUEST_LINE)
            .map(|end| String::from_utf8_lossy(&head[..end]).into_owned())
    };
    loop {
        let ended =
            head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n");
        if ended || head.len() > MAX_REQUEST_LINE {
            return Ok(first_line(&head));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut chunk)? {
            0 => return Ok(first_line(&head)),
            n => head.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Ends the connection politely: no more writes, then what the client still sends is read and
/// dropped (until it closes, 64 KiB, a second, or the deadline), so the response is not reset
/// away.
fn close(stream: &mut TcpStream, deadline: Instant) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let deadline = deadline.min(Instant::now() + Duration::from_secs(1));
    let mut sink = [0u8; 1024];
    let mut drained = 0;
    while drained < 64 * 1024 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(n) => drained += n,
        }
    }
}

/// Answers one GET with a file of `dir`; paths that climb out are refused.
fn answer(mut stream: TcpStream, dir: &Path, timeout: Duration) -> std::io::Result<()> {
    let deadline = Instant::now() + timeout;
    let result = answer_request(&mut stream, dir, deadline);
    close(&mut stream, deadline);
    result
}

fn answer_request(stream: &mut TcpStream, dir: &Path, deadline: Instant) -> std::io::Result<()> {
    let Some(request) = read_request_line(stream, deadline)? else {
        return respond(
            stream,
            "414 URI Too Long",
            "text/plain",
            b"request line too long",
        );
    };
    let target = request.split_whitespace().nth(1).unwrap_or("/");
    let path = target
        .split(['?', '#'])
        .next()
        .unwrap_or("/")
        .trim_start_matches('/');
    let relative = Path::new(path);
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return respond(stream, "403 Forbidden", "text/plain", b"forbidden");
    }
    let mut file = dir.join(relative);
    if file.is_dir() {
        file = file.join("index.html");
    }
    match std::fs::read(&file) {
        Ok(bytes) => respond(stream, "200 OK", content_type(&file), &bytes),
        Err(_) => respond(stream, "404 Not Found", "text/plain", b"not found"),
    }
}

fn respond(stream: &mut TcpStream, status: &str, kind: &str, body: &[u8]) -> std::io::Result<()> {
    write!(stream, "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())?;
    stream.write_all(body)
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css",
        Some("js") => "text/javascript",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("woff2") => "font/woff2",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn get(dir: &Path, target: &str) -> String {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let dir = dir.to_path_buf();
        let server = std::thread::spawn(move || serve_on(&listener, &dir, Some(1)));
        let mut stream = TcpStream::connect(addr).unwrap();
        write!(stream, "GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        server.join().unwrap();
        response
    }

    #[test]
    fn serves_files_and_index_pages_and_refuses_to_climb_out() {
        let tmp = tempfile::tempdir().unwrap();
        let site = tmp.path().join("site");
        std::fs::create_dir_all(site.join("sub")).unwrap();
        std::fs::write(site.join("index.html"), "home").unwrap();
        std::fs::write(site.join("sub/page.css"), "p{}").unwrap();
        std::fs::write(tmp.path().join("secret"), "secret").unwrap();
        assert!(get(&site, "/").starts_with("HTTP/1.1 200 OK"));
        assert!(get(&site, "/").ends_with("home"));
        assert!(get(&site, "/sub/page.css?x=1").contains("Content-Type: text/css"));
        assert!(get(&site, "/../secret").starts_with("HTTP/1.1 403"));
        assert!(get(&site, "/missing.html").starts_with("HTTP/1.1 404"));
    }

    /// Fails on main before this change: the server answered one client at a time with no
    /// read timeout, so a client that connected and sent nothing kept every other one waiting.
    #[test]
    fn an_idle_client_neither_blocks_another_nor_stays_for_ever() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("index.html"), "home").unwrap();
        let serve = |timeout: Duration| {
            let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
            let addr = listener.local_addr().unwrap();
            let dir = tmp.path().to_path_buf();
            let server = std::thread::spawn(move || serve_with(&listener, &dir, Some(2), timeout));
            (addr, server)
        };
        // Without this bound a server that never answers would hang the test instead of failing it.
        let bounded = |stream: &TcpStream| {
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap()
        };

        let (addr, server) = serve(Duration::from_secs(60));
        let idle = TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(100)); // the idle client is accepted first
        let mut second = TcpStream::connect(addr).unwrap();
        bounded(&second);
        write!(second, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut response = String::new();
        second.read_to_string(&mut response).unwrap();
        assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
        assert!(response.ends_with("home"), "{response}");
        // The idle client is still connected: the page did not wait for it to be dropped.
        idle.set_nonblocking(true).unwrap();
        let still_open = matches!((&idle).read(&mut [0u8; 1]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        assert!(
            still_open,
            "the idle client was dropped before the second was answered"
        );
        drop(idle);
        server.join().unwrap();

        // A client that sends nothing is dropped at the timeout, its connection closed.
        let (addr, server) = serve(Duration::from_millis(500));
        let mut slow = TcpStream::connect(addr).unwrap();
        bounded(&slow);
        let started = Instant::now();
        let mut rest = Vec::new();
        let read = slow.read_to_end(&mut rest);
        assert!(
            matches!(read, Ok(0)),
            "the server closed the connection: {read:?} after {:?}",
            started.elapsed()
        );
        let mut last = TcpStream::connect(addr).unwrap();
        bounded(&last);
        write!(last, "GET /../secret HTTP/1.1\r\n\r\n").unwrap();
        let mut response = String::new();
        last.read_to_string(&mut response).unwrap();
        assert!(response.starts_with("HTTP/1.1 403"), "{response}");
        server.join().unwrap();
    }

    /// A client that sends a byte now and then, each within the timeout, is still dropped at the
    /// timeout of the whole request line; one that never ends its line is refused at the cap.
    /// Before, each byte restarted the timeout and the line had no bound.
    #[test]
    fn a_trickling_or_endless_request_line_is_cut_off() {
        let tmp = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let dir = tmp.path().to_path_buf();
        let server = std::thread::spawn(move || {
            serve_with(&listener, &dir, Some(2), Duration::from_millis(600))
        });
        let mut trickle = TcpStream::connect(addr).unwrap();
        trickle
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let started = Instant::now();
        let mut closed = false;
        for _ in 0..40 {
            if trickle.write_all(b"G").is_err() {
                closed = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
            trickle.set_nonblocking(true).unwrap();
            let mut probe = [0u8; 1];
            let gone = matches!((&trickle).read(&mut probe), Ok(0));
            trickle.set_nonblocking(false).unwrap();
            if gone {
                closed = true;
                break;
            }
        }
        assert!(closed, "a trickling client kept its thread");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );

        let mut endless = TcpStream::connect(addr).unwrap();
        endless
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let _ = endless.write_all(&vec![b'a'; MAX_REQUEST_LINE + 10]);
        let mut response = String::new();
        let _ = endless.read_to_string(&mut response);
        assert!(response.starts_with("HTTP/1.1 414"), "{response}");
        server.join().unwrap();
    }

    #[test]
    fn vars_are_name_equals_value() {
        assert_eq!(parse_var("pin=abc=d"), Ok(("pin".into(), "abc=d".into())));
        assert!(parse_var("=x").is_err());
        assert!(parse_var("novalue").is_err());
    }
}
