//! Fuzz target `lock`: see `forkbook_fuzz::lock` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| forkbook_fuzz::lock(data));
