pub mod cli;
pub mod engine;
