//! Fuzz target `compiler_log`: see `forkbook_fuzz::compiler_log` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| forkbook_fuzz::compiler_log(data));
