//! Fingerprints the static drift analysis's source code, so that its on-disk cache
//! (`drift::api::store`) never serves a result an older analysis made: a changed rule is a new
//! key, even between two builds of one version.
//!
//! A file the analysis comes to use from outside `src/drift/api` belongs in the list below.

use std::path::Path;

fn main() {
    let mut files = Vec::new();
    collect(Path::new("src/drift/api"), &mut files);
    files.push(Path::new("src/drift/api.rs").to_path_buf());
    // What the analysis uses from outside its folder (the include paths' rule), and the
    // workspace's lock: another tree-sitter parses otherwise.
    files.push(Path::new("src/paths.rs").to_path_buf());
    files.push(Path::new("../Cargo.lock").to_path_buf());
    files.sort();
    // FNV-1a, 64 bits: stable across toolchains, no dependency.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let bytes = std::fs::read(file).unwrap_or_default();
        for byte in file.to_string_lossy().bytes().chain([0]).chain(bytes) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rerun-if-changed=src/drift/api");
    println!("cargo:rustc-env=FORKBOOK_DRIFT_API_SOURCE={hash:016x}");
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
