//! The bottom crate of forkbook: nothing here uses git, mdBook or the command line.
//!
//! It holds the rules every other crate shares, so each lives in one place: how a file is
//! replaced without ever leaving half of it ([`atomic`]), how bytes are written as hex
//! ([`hex`]), and how a cache keys, seals and checks what it keeps ([`cache_entry`]). The
//! records model (UPSTREAM, the lock, the register, the residual record, the README counts, the
//! patch series) belongs here too: read once, with file and line on every field.

pub mod atomic;
pub mod cache_entry;
pub mod hex;
