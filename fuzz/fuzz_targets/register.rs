//! Fuzz target `register`: see `forkbook_fuzz::register` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| forkbook_fuzz::register(data));
