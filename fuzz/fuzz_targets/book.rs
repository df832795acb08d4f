//! Fuzz target `book`: see `forkbook_fuzz::book` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| forkbook_fuzz::book(data));
