//! Fuzz target `counts`: see `forkbook_fuzz::counts` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| forkbook_fuzz::counts(data));
