//! forkbook, the application: the command line, the book glue and the demo, on top of the engine
//! crate (`forkbook-engine`), which knows nothing of either.

pub mod book;
pub mod cli;
pub mod demo;
pub mod invoke;

/// The engine, under the name the application and its tests have always used.
pub use forkbook_engine as engine;
