//! Static API drift (WIP).
mod syntax;
