//! `overlay-files-in-scope`: every overlay file is a backend file or a core file, so that some
//! check holds it against what it should be.

use crate::facts::Facts;
use crate::{pages::overlay_files_in_scope as CHECK, Findings};

pub(crate) fn run(facts: &Facts, findings: &mut Findings) {
    let Some(overlay) = &facts.overlay else {
        return;
    };
    let lock = facts.record_path("overlay.lock");
    let line = |path: &str| facts.records.lock.as_ref()?.lines.get(path).copied();
    let prefix = &facts.backend_prefix;
    findings.extend(
        overlay
            .tree
            .files
            .iter()
            .filter(|path| !path.starts_with(prefix.as_str()) && !overlay.core_files.contains(path))
            .map(|path| {
                let message = format!(
                    "`{path}` is an overlay file outside the backend folder `{prefix}` and not one of \
                     the core files: nothing holds it against the pin plus the fork's change"
                );
                CHECK.finding(&lock, line(path), message).with_note(
                    "add it to `[overlay] core_files` in forkbook.toml (the residual then checks it \
                     line by line), or take it out of the overlay",
                )
            })
    );
}
