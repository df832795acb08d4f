//! Fuzz target `patch`: see `forkbook_fuzz::patch` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| forkbook_fuzz::patch(data));
