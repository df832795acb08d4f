//! What a file name in the register means: the one rule lives beside the register's model
//! (`forkbook_records::names`), so an entry's files (`Entry::named_files`) and every check
//! resolve a name alike.

pub use forkbook_records::names::{
    base_name, entries_naming, named_files, resolve, Names, Resolved,
};
