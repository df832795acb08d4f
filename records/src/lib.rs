//! The bottom crate of forkbook: nothing here uses git, mdBook or the command line.
//!
//! It holds the rules every other crate shares, so each lives in one place: how a file is
//! replaced without ever leaving half of it ([`atomic`]), and how bytes are written as hex
//! ([`hex`]). The records model (UPSTREAM, the lock, the register, the residual record, the
//! README counts, the patch series) belongs here too: read once, with file and line on every
//! field.

pub mod atomic;
pub mod hex;
