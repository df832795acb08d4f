//! Runs every fuzz target on stable Rust: over its seed corpus (and any finds in `runs/`), then
//! over a few thousand inputs mutated from the seeds with a fixed seed, so a failure reproduces.
//!
//! `cargo test --manifest-path fuzz/Cargo.toml` (no nightly, no libFuzzer run needed).

use std::path::Path;

/// Small deterministic generator (xorshift), so every run mutates the same way.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes the parsers care about: line ends, separators, markers.
const TOKENS: [&[u8]; 14] = [
    b"\n",
    b"\r\n",
    b"\r",
    b":",
    b"  ",
    b"../",
    b"/",
    b"\0",
    b"diff --git a/x b/x\n",
    b"@@ -1 +1 @@\n",
    b"<!-- forkbook:counts -->",
    b"<!-- /forkbook:counts -->",
    b"```forkbook,gate\n",
    b"## 1. ",
];

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(4) {
            0 if !data.is_empty() => {
                let end = (at + rng.below(8)).min(data.len());
                data.drain(at.min(end)..end);
            }
            1 => data.insert(at, rng.next() as u8),
            2 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                data.splice(at..at, token.iter().copied());
            }
            _ => {
                // Duplicate a slice of the input elsewhere (splices lines together).
                let from = rng.below(data.len() + 1);
                let end = (from + rng.below(32)).min(data.len());
                let piece: Vec<u8> = data[from..end].to_vec();
                data.splice(at..at, piece);
            }
        }
    }
    data
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for dir in ["corpus", "runs"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        paths.sort();
        out.extend(paths.iter().map(|p| std::fs::read(p).unwrap()));
    }
    out
}

#[test]
fn every_target_survives_its_corpus_and_mutations() {
    for (name, target) in forkbook_fuzz::TARGETS {
        let seeds = seeds(name);
        assert!(!seeds.is_empty(), "`{name}` has no seed corpus");
        for seed in &seeds {
            target(seed);
        }
        let mut rng = Rng(0x5eed_f0e5 ^ name.len() as u64);
        let runs = if name == "patch" { 1_000 } else { 3_000 };
        for _ in 0..runs {
            let seed = &seeds[rng.below(seeds.len())];
            let input = mutate(&mut rng, seed);
            target(&input);
        }
    }
}
