//! The bottom crate of forkbook: nothing here uses git, mdBook or the command line.
//!
//! It holds the records model and the rules every other crate shares, so each lives in one
//! place. [`Records::from_files`] reads the records of a records folder, read once: `UPSTREAM`
//! ([`upstream`]), the lock ([`lock`]), the README's counts ([`readme`]), the residual record
//! ([`residual_record`]), the patch series and the build's pin ([`series`]), the register
//! ([`register`]), each with file and line on every field and every problem as data
//! ([`problem`]); each renders back what `sync` writes. Beside them: how a file is replaced
//! without ever leaving half of it ([`atomic`]), what a command found and how it is printed
//! ([`finding`]), how bytes are written as hex ([`hex`]), which
//! paths a record may name ([`path`]), which repository a remote URL names ([`remote`]), and how
//! a cache keys, seals and checks what it keeps ([`cache_entry`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub mod atomic;
pub mod cache_entry;
pub mod finding;
pub mod hex;
pub mod lock;
pub mod names;
pub mod path;
pub mod problem;
pub mod readme;
pub mod register;
pub mod remote;
pub mod residual_record;
pub mod series;
pub mod upstream;

pub use finding::{Finding, Severity};
pub use lock::Lock;
pub use problem::{Problem, RecordError};
pub use readme::{Counts, Readme};
pub use residual_record::{Flavor, ResidualRecord};
pub use series::{BuildPin, SeriesPatch};
pub use upstream::Upstream;

pub const UPSTREAM_FILE: &str = "UPSTREAM";
pub const LOCK_FILE: &str = "overlay.lock";
pub const README_FILE: &str = "README.md";
pub const FIXES_FILE: &str = "LOCAL_FIXES.md";
/// The residual record written by `residual --write`, inside the records folder.
pub const RESIDUAL_FILE: &str = "residual.diff";
/// The residual record the first user keeps, read and kept in its own format.
pub const CORE_RESIDUAL_FILE: &str = "CORE_RESIDUAL.diff";
/// The patch layout's series folder inside the records folder.
pub const PATCHES_DIR: &str = "patches";

/// What reading a records folder needs to know of the project.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// The records folder as findings name it, relative to the project root (`patches-rocm`).
    pub name: String,
    /// The fork's backend folder with its final `/`, which README prose may name.
    pub backend_prefix: String,
    /// The patch layout: read the series in `patches/`.
    pub patch_layout: bool,
    /// The file the build records its pin in: as findings name it, and where it is.
    pub pin_file: Option<(String, PathBuf)>,
    /// Leave `LOCAL_FIXES.md` unparsed (`Records::register` stays `None`): for a command that
    /// reads its entries one at a time from the folder's text ([`register::each_entry`]).
    pub register_unparsed: bool,
}

/// The records of an overlay, each as read; `None` where the folder has no such file.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Records {
    /// The records folder as findings name it (`patches-rocm`).
    pub dir: String,
    pub upstream: Option<Upstream>,
    pub lock: Option<Lock>,
    pub readme: Option<Readme>,
    /// `LOCAL_FIXES.md` as parsed ([`register::parse`]); `None` too where it was left unparsed
    /// ([`ReadOptions::register_unparsed`]).
    pub register: Option<register::Register>,
    /// `CORE_RESIDUAL.diff`, else `residual.diff`.
    pub residual_record: Option<ResidualRecord>,
    /// In the patch layout, the series of patches; `None` without a `patches/` folder.
    pub patch_series: Option<Vec<SeriesPatch>>,
    pub build_pin: Option<BuildPin>,
}

impl Records {
    /// The records among `files`, the files of a records folder by relative path as the engine
    /// read it once (invalid UTF-8 replaced, so a broken byte is a finding, not a stop). Only a
    /// build pin that exists and cannot be read is an error; what is wrong inside a record is one
    /// of its problems.
    pub fn from_files<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        options: &ReadOptions,
    ) -> Result<Records, RecordError> {
        let files: BTreeMap<&str, &[u8]> = files.into_iter().collect();
        let dir = options.name.trim_end_matches('/').to_string();
        let name = |file: &str| match dir.as_str() {
            "" => file.to_string(),
            dir => format!("{dir}/{file}"),
        };
        // Borrowed where the bytes are UTF-8 (a copy only where one is replaced): a record's
        // text is not held twice.
        let read = |file: &str| files.get(file).map(|bytes| String::from_utf8_lossy(bytes));
        let mut records = Records {
            upstream: read(UPSTREAM_FILE).map(|t| Upstream::read(&name(UPSTREAM_FILE), &t)),
            lock: read(LOCK_FILE).map(|t| Lock::read(&t)),
            readme: read(README_FILE)
                .map(|t| Readme::read(&name(README_FILE), t.into_owned(), &options.backend_prefix)),
            register: (read(FIXES_FILE).filter(|_| !options.register_unparsed))
                .map(|text| register::parse(&name(FIXES_FILE), &text)),
            ..Records::default()
        };
        records.residual_record = [Flavor::Core, Flavor::Own].into_iter().find_map(|flavor| {
            let text = read(flavor.file())?;
            Some(ResidualRecord::read(&name(flavor.file()), &text, flavor))
        });
        if options.patch_layout {
            records.patch_series = series(&files, &name);
        }
        if let Some((name, path)) = &options.pin_file {
            let text = read_text(path, name)?.unwrap_or_default();
            records.build_pin = Some(BuildPin::read(name, &text));
        }
        records.dir = dir;
        Ok(records)
    }

    /// A record's path as findings name it (`patches-rocm/UPSTREAM`).
    pub fn path(&self, name: &str) -> String {
        if self.dir.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.dir)
        }
    }
}

/// The series folder's patches in name order. No folder at all is a layout problem, which
/// loading the overlay names; not an empty series.
fn series(
    files: &BTreeMap<&str, &[u8]>,
    name: &dyn Fn(&str) -> String,
) -> Option<Vec<SeriesPatch>> {
    let folder = format!("{PATCHES_DIR}/");
    let mut series = files
        .iter()
        .filter_map(|(path, bytes)| Some((path.strip_prefix(&folder)?, *path, bytes)))
        .peekable();
    series.peek()?;
    let patches = series
        .filter_map(|(_, path, bytes)| {
            let patch = series::series_name(path)?;
            Some(SeriesPatch::of(
                patch,
                name(path),
                &String::from_utf8_lossy(bytes),
            ))
        })
        .collect();
    Some(patches)
}

/// The build pin's text (invalid UTF-8 replaced); `None` when there is no such file. A FIFO or a
/// device there is refused before it is opened: it would block or never end.
fn read_text(path: &Path, name: &str) -> Result<Option<String>, RecordError> {
    let meta = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(RecordError::at(
                name,
                None,
                format!("failed to read it: {e}"),
            ))
        }
        Ok(meta) => meta,
    };
    if meta.is_dir() {
        return Ok(None);
    }
    if !meta.is_file() {
        return Err(RecordError::at(name, None, "is not a regular file")
            .with_note("name a plain file there"));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| RecordError::at(name, None, format!("failed to read it: {e}")))?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}
