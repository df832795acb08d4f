//! The kinds of drift finding: one table, used by the analysis, the report and the suppressions.

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
pub(crate) use named_enum;

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
