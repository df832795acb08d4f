//! The `forkbook` binary: the command line in [`forkbook::cli`], printing to stdout and stderr.

fn main() {
    forkbook::engine::process::tune_allocator();
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    let code = forkbook::cli::run_split(
        std::env::args_os().collect(),
        &mut stdout,
        Some(&mut stderr),
    );
    std::process::exit(code);
}
