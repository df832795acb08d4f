//! Suppressions: findings a person has judged harmless, each with a reason, kept in a
//! checked-in TOML file next to the records.
//!
//! ```toml
//! [[suppress]]
//! kind = "missing-eval-gpu"
//! symbol = "mlx::core::Foo::eval_gpu"
//! reason = "the backend never schedules Foo on the GPU"
//! ```

use super::kind::Kind;
use crate::bail;
use crate::error::{Context, Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Suppression {
    pub kind: Kind,
    pub symbol: String,
    pub reason: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuppressionFile {
    #[serde(default)]
    suppress: Vec<Suppression>,
}

/// Reads the suppressions file; a missing file means none.
pub fn load(path: &Path) -> Result<Vec<Suppression>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::from(e))
                .with_context(|| format!("failed to read `{}`", path.display()))
        }
    };
    parse(&text).with_context(|| format!("bad suppressions file `{}`", path.display()))
}

/// Parses suppressions; each needs a known kind (TOML's error names the line), a symbol and a
/// reason.
pub fn parse(text: &str) -> Result<Vec<Suppression>> {
    let file: SuppressionFile =
        toml::from_str(text).map_err(|e| Error::new(e.to_string().trim().to_string()))?;
    for (index, entry) in file.suppress.iter().enumerate() {
        let number = index + 1;
        if entry.symbol.trim().is_empty() {
            bail!("suppression {number}: empty symbol");
        }
        if entry.reason.trim().is_empty() {
            bail!(
                "suppression {number} (`{}`): a reason is required",
                entry.symbol
            );
        }
    }
    Ok(file.suppress)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_required() {
        let text = "[[suppress]]\nkind = \"missing-eval-gpu\"\nsymbol = \"a::B::eval_gpu\"\nreason = \" \"\n";
        let err = parse(text).unwrap_err();
        assert!(err.message().contains("a reason is required"), "{err}");
    }

    #[test]
    fn unknown_kinds_are_refused() {
        let text = "[[suppress]]\nkind = \"typo\"\nsymbol = \"a\"\nreason = \"r\"\n";
        let err = parse(text).unwrap_err();
        let message = err.message();
        assert!(message.contains("line 2"), "{message}");
        assert!(message.contains("unknown variant `typo`"), "{message}");
        assert!(message.contains("`missing-eval-gpu`"), "{message}");
    }

    #[test]
    fn a_missing_file_means_no_suppressions() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(&dir.path().join("none.toml")).unwrap().is_empty());
    }
}
