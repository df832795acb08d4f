pub mod book;
pub mod cli;
pub mod engine;
