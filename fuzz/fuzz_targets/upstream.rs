//! Fuzz target `upstream`: see `forkbook_fuzz::upstream` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| forkbook_fuzz::upstream(data));
