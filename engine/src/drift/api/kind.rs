//! The kinds of drift finding: one table, used by the analysis, the report and the suppressions;
//! and what answers each, one table too.

use crate::doc::{code, words, Span};

/// An enum of unit variants from one table of variant and name: the name is its JSON form, what
/// `as_str` gives and what `parse` reads back.
macro_rules! named_enum {
    ($(#[$attr:meta])* pub enum $name:ident { $($(#[$doc:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[derive(serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$doc])* #[serde(rename = $text)] $variant,)*
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

named_enum! {
    /// What a finding is; the order is the report's.
    pub enum Kind {
        /// A function or member the backend calls or defines changed its return or parameters.
        ChangedSignature = "changed-signature",
        /// A constructor the backend uses or defines changed its arguments.
        ConstructorChanged = "constructor-changed",
        /// A new primitive declares `eval_gpu`; the backend neither defines nor stubs it.
        MissingEvalGpu = "missing-eval-gpu",
        /// A new declaration that every backend defines (other backends do); this one does not.
        MissingBackendDefinition = "missing-backend-definition",
        /// A new declaration in an enclosing namespace hides what the backend calls unqualified.
        HiddenByNewDeclaration = "hidden-by-new-declaration",
        /// Something the backend uses or defines is no longer declared.
        RemovedDeclaration = "removed-declaration",
    }
}

named_enum! {
    /// What a draft does.
    pub enum Remedy {
        /// The backend's stub macro for a new primitive.
        Stub = "stub",
        /// A definition shaped like the other backends', its body a stub.
        StubDefinition = "stub-definition",
        /// A definition's parameter list brought to the new declaration.
        ParameterList = "parameter-list",
        /// A structured binding widened to the tuple's new size.
        WidenedBinding = "widened-binding",
    }
}

impl Kind {
    /// What answers a finding of this kind, one row a kind: the drafts `drift api --draft` can
    /// write for it (`drift/draft.rs`), or why only a person can, in the words it prints.
    pub fn remedy(self) -> Result<&'static [Remedy], &'static str> {
        match self {
            Kind::ChangedSignature => Ok(&[Remedy::ParameterList, Remedy::WidenedBinding]),
            Kind::ConstructorChanged => {
                Err("no draft: a constructor's new arguments carry values only a person can choose")
            }
            Kind::MissingEvalGpu => Ok(&[Remedy::Stub]),
            Kind::MissingBackendDefinition => Ok(&[Remedy::StubDefinition]),
            Kind::HiddenByNewDeclaration => Err(
                "no draft: which declaration the call means (qualify it, or rename the backend's) is a choice",
            ),
            Kind::RemovedDeclaration => Err(
                "no draft: what replaces a removed declaration is upstream's design, not a mechanical edit",
            ),
        }
    }
}

impl Kind {
    /// A finding as every report names it: its kind, then its symbol as code.
    pub fn named(self, symbol: &str) -> Vec<Span> {
        vec![words(format!("{} ", self.as_str())), code(symbol)]
    }
}
