//! Fuzz target `nm`: see `forkbook_fuzz::nm` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| forkbook_fuzz::nm(data));
