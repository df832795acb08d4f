//! The kinds of drift finding: one list, used by the analysis, the report and the suppressions.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A function or member the backend calls or defines changed its return or parameters.
    ChangedSignature,
    /// A constructor the backend uses or defines changed its arguments.
    ConstructorChanged,
    /// A new primitive declares `eval_gpu`; the backend neither defines nor stubs it.
    MissingEvalGpu,
    /// A new declaration that every backend defines (other backends do); this one does not.
    MissingBackendDefinition,
    /// A new declaration in an enclosing namespace hides what the backend calls unqualified.
    HiddenByNewDeclaration,
    /// Something the backend uses or defines is no longer declared.
    RemovedDeclaration,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::ChangedSignature => "changed-signature",
            Kind::ConstructorChanged => "constructor-changed",
            Kind::MissingEvalGpu => "missing-eval-gpu",
            Kind::MissingBackendDefinition => "missing-backend-definition",
            Kind::HiddenByNewDeclaration => "hidden-by-new-declaration",
            Kind::RemovedDeclaration => "removed-declaration",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        ALL_KINDS.iter().copied().find(|k| k.as_str() == text)
    }
}

pub const ALL_KINDS: [Kind; 6] = [
    Kind::ChangedSignature,
    Kind::ConstructorChanged,
    Kind::MissingEvalGpu,
    Kind::MissingBackendDefinition,
    Kind::HiddenByNewDeclaration,
    Kind::RemovedDeclaration,
];
