//! `forkbook residual`'s record: the residual record the folder keeps (`CORE_RESIDUAL.diff` or
//! `residual.diff`, modelled in `forkbook_records::residual_record`) rewritten for the recorded
//! commits, its notes kept.

use super::cache::Cache;
use super::doc::{code, text, words, Described, Doc};
use super::error::Result;
use super::project::Project;
use super::residual::Residual;
use super::residual_diff::render_record;
use serde::Serialize;

pub use forkbook_records::residual_record::{
    Flavor, Note, Recorded, RecordedCommits, ResidualRecord, COMMIT_KEYS,
};

/// What `residual --write` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Written {
    /// The record's name in the records folder.
    pub file: String,
    /// Core files whose note was flagged for review because their residual changed.
    pub flagged: Vec<String>,
}

/// `residual --write`: the record the folder keeps (`CORE_RESIDUAL.diff` where it has one, else
/// `residual.diff`) written for the recorded commits, its notes kept.
pub fn write(
    project: &super::project::Project,
    computed: &super::residual::Computed,
) -> super::error::Result<Written> {
    let files = &computed.records.files;
    let old = computed.records.model.residual_record.as_ref();
    let flavor = old.map_or(Flavor::Own, |record| record.flavor);
    let (text, flagged) = render_record(
        old,
        flavor,
        &computed.commits.recorded(),
        (&computed.core, &super::digests::FileDigests::default()),
        &computed.residual,
    );
    let _lock = project.lock_records()?;
    let path = project.records_dir().join(flavor.file());
    super::fsutil::refuse_changed_since_read(
        &path,
        files.get(flavor.file()).map(|b| b.as_slice()),
        &project.record_name(flavor.file()),
    )?;
    super::fsutil::replace_file(&path, text.as_bytes())?;
    Ok(Written {
        file: project.record_name(flavor.file()),
        flagged,
    })
}

/// Each hunk with the record's note for its file: the note is what explains it, and in the files
/// layout (no patches to attribute it) the item the note names is its fix.
fn attach_notes(computed: &mut super::residual::Computed) {
    let Some(record) = &computed.records.model.residual_record else {
        return;
    };
    for hunk in &mut computed.residual.hunks {
        let Some(note) = record.note(&hunk.file) else {
            continue;
        };
        hunk.note = Some(super::residual::HunkNote {
            item: note.item,
            reason: note.reason.clone(),
        });
        if hunk.fixes.is_empty() {
            hunk.fixes.extend(note.item.map(|n| n as usize));
        }
    }
}

/// What `forkbook residual` found, and what `--write` wrote. Its JSON is the residual alone.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct ResidualRun {
    pub residual: Residual,
    #[serde(skip)]
    pub written: Option<Written>,
    /// Whether the run was under a stand-in pin (each hunk is then marked).
    #[serde(skip)]
    pub stand_in: bool,
}

/// `forkbook residual`: the residual at the recorded commits; with `write`, also kept in the
/// records folder (see [`fn@write`]).
pub fn run(project: &Project, cache: &Cache, write: bool) -> Result<ResidualRun> {
    let mut computed = super::residual::compute_with_records(project, cache)?;
    attach_notes(&mut computed);
    let written = write.then(|| self::write(project, &computed)).transpose()?;
    Ok(ResidualRun {
        residual: computed.residual,
        written,
        stand_in: project.stand_in_pin().is_some(),
    })
}

impl Described for ResidualRun {
    /// The residual, then the record written and the notes to review.
    fn doc(&self, links: &crate::markdown::PageLinks) -> Doc {
        let mut doc = self.residual.doc(links, self.stand_in);
        if let Some(written) = &self.written {
            doc.line(vec![words("wrote "), text(&written.file)]);
            for path in &written.flagged {
                let flagged = format!(": its residual changed (flagged in {})", written.file);
                doc.line(vec![
                    words("review the note for "),
                    code(path),
                    text(flagged),
                ]);
            }
        }
        doc
    }

    /// A note flagged for review is a problem: a person has to read it again.
    fn found_problems(&self) -> bool {
        self.written.as_ref().is_some_and(|w| !w.flagged.is_empty())
    }
}
