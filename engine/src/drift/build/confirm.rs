//! Which static findings (`drift api`) the real build confirmed, and what the build found that
//! no finding predicted.
//!
//! A finding is confirmed by a compile error whose text (message, notes or source excerpt)
//! names its symbol, or by an undefined symbol with its name. Names are compared without the
//! upstream namespace and without parameters, by their last two components (`array::set_data`,
//! `Buffer::Buffer`) or the one (`ceil_div`), since compilers print calls both qualified and
//! not; clang names only the class of a constructor, which is matched too.

use serde::Serialize;

use super::log::Diagnostic;
use super::nm::qualified_name;
use super::{BuildReport, UndefinedSymbol};
use crate::doc::{code, separated, words, Doc};
use crate::drift::api::Kind;

/// A static finding the build confirmed, with the build's evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Confirmed {
    pub kind: Kind,
    pub symbol: String,
    /// The errors (`file:line: message`) and undefined symbols that show it.
    pub evidence: Vec<String>,
}

/// The build's verdict on the static findings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Confirmation {
    pub confirmed: Vec<Confirmed>,
    /// Findings the build did not show, as (kind, symbol).
    pub not_seen: Vec<(Kind, String)>,
    /// Errors no finding names.
    pub unpredicted_errors: Vec<Diagnostic>,
    /// Undefined symbols no finding names.
    pub unpredicted_undefined: Vec<UndefinedSymbol>,
}

/// Compares the build's errors and undefined symbols with `static_findings` (kind, symbol).
pub fn confirm(report: &BuildReport, static_findings: &[(Kind, String)]) -> Confirmation {
    let keys: Vec<SymbolKey> = static_findings
        .iter()
        .map(|(_, symbol)| SymbolKey::new(symbol, &report.namespace))
        .collect();
    let mut confirmation = Confirmation::default();
    for ((kind, symbol), key) in static_findings.iter().zip(&keys) {
        let errors = report.errors.iter().filter(|e| key.matches_error(e));
        let undefined = report.undefined.iter().filter(|u| key.matches_undefined(u));
        let evidence: Vec<String> = (errors.map(describe_error))
            .chain(undefined.map(|u| u.symbol.clone()))
            .collect();
        let (kind, symbol) = (*kind, symbol.clone());
        match evidence.is_empty() {
            true => confirmation.not_seen.push((kind, symbol)),
            false => confirmation.confirmed.push(Confirmed {
                kind,
                symbol,
                evidence,
            }),
        }
    }
    let unpredicted = |e: &&Diagnostic| !keys.iter().any(|k| k.matches_error(e));
    confirmation.unpredicted_errors = report.errors.iter().filter(unpredicted).cloned().collect();
    let unpredicted = |u: &&UndefinedSymbol| !keys.iter().any(|k| k.matches_undefined(u));
    let undefined = report.undefined.iter().filter(unpredicted);
    confirmation.unpredicted_undefined = undefined.cloned().collect();
    confirmation
}

impl Confirmation {
    /// The static findings against the build: which it confirmed (with its evidence), which it
    /// did not show, and what it found that none predicted.
    pub fn doc(&self) -> Doc {
        let confirmed = self.confirmed.iter().map(|f| {
            let evidence = f.evidence.iter().map(code);
            vec![f.kind.named(&f.symbol), separated(evidence, "; ")]
        });
        let mut doc = Doc::default();
        doc.say(format!("confirmed by the build: {}", self.confirmed.len()))
            .records(&["static finding", "evidence"], confirmed.collect());
        if !self.not_seen.is_empty() {
            doc.say(format!("not seen in the build: {}", self.not_seen.len()))
                .list(self.not_seen.iter().map(|(k, s)| k.named(s)).collect());
        }
        let unpredicted = self.unpredicted_errors.len() + self.unpredicted_undefined.len();
        let errors = self
            .unpredicted_errors
            .iter()
            .map(|e| vec![code(describe_error(e))]);
        let undefined = self.unpredicted_undefined.iter();
        let undefined = undefined.map(|u| vec![words("undefined "), code(&u.symbol)]);
        doc.say(format!("found by the build, not predicted: {unpredicted}"))
            .list(errors.chain(undefined).collect());
        doc
    }
}

fn describe_error(error: &Diagnostic) -> String {
    format!("{}: {}", error.place(), error.message)
}

/// How a symbol is looked for in the build's output.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SymbolKey {
    /// The last two components (`array::set_data`), or the one.
    tail: String,
    /// The last component (`set_data`).
    last: String,
    /// For a constructor `X::X`, the class.
    constructor_of: Option<String>,
}

impl SymbolKey {
    fn new(symbol: &str, namespace: &str) -> SymbolKey {
        let components = components(symbol, namespace);
        let last = components.last().cloned().unwrap_or_default();
        let (tail, constructor_of) = match components.as_slice() {
            [.., owner, member] => (
                format!("{owner}::{member}"),
                (owner == member).then(|| owner.clone()),
            ),
            _ => (last.clone(), None),
        };
        SymbolKey {
            tail,
            last,
            constructor_of,
        }
    }

    fn matches_error(&self, error: &Diagnostic) -> bool {
        if self.last.is_empty() {
            return false;
        }
        let in_context = error
            .context
            .iter()
            .any(|line| contains_word(line, &self.tail));
        let constructor = self.constructor_of.as_ref().is_some_and(|class| {
            error.message.contains("constructor") && contains_word(&error.message, class)
        });
        contains_word(&error.message, &self.tail)
            || contains_word(&error.message, &self.last)
            || in_context
            || constructor
    }

    fn matches_undefined(&self, undefined: &UndefinedSymbol) -> bool {
        let name = strip_templates(qualified_name(&undefined.symbol));
        !self.tail.is_empty()
            && name
                .strip_suffix(self.tail.as_str())
                .is_some_and(|head| head.is_empty() || head.ends_with("::"))
    }
}

/// The components of a symbol's name inside `namespace`, without template arguments:
/// `mlx::core::allocator::Buffer::Buffer(void*)` gives `allocator`, `Buffer`, `Buffer`.
fn components(symbol: &str, namespace: &str) -> Vec<String> {
    let name = strip_templates(qualified_name(symbol));
    let inner = super::nm::inside(&name, namespace).unwrap_or(&name);
    inner
        .split("::")
        .filter(|part| !part.is_empty())
        .map(str::to_string)
        .collect()
}

/// `ceil_div<int>` -> `ceil_div`; names of operators are left alone.
fn strip_templates(name: &str) -> String {
    if name.contains("operator") {
        return name.to_string();
    }
    crate::drift::api::strip_template_args(name)
}

/// Whether `word` occurs in `text` with no identifier character right before or after it.
pub(super) fn contains_word(text: &str, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(message: &str, context: &[&str]) -> Diagnostic {
        Diagnostic {
            file: "mlx/backend/rocm/x.cpp".into(),
            line: Some(1),
            column: None,
            severity: "error".into(),
            message: message.into(),
            context: context.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn gcc_and_clang_messages_name_the_symbols() {
        let key = |symbol| SymbolKey::new(symbol, "mlx::core");
        let buffer = key("mlx::core::allocator::Buffer::Buffer");
        assert!(buffer.matches_error(&error(
            "no matching function for call to 'mlx::core::allocator::Buffer::Buffer(void*&)'",
            &[]
        )));
        assert!(buffer.matches_error(&error(
            "no matching constructor for initialization of 'Buffer'",
            &[]
        )));
        let set_data = key("mlx::core::array::set_data");
        assert!(set_data.matches_error(&error(
            "no matching member function for call to 'set_data'",
            &[]
        )));
        let collapse = key("mlx::core::collapse_contiguous_dims");
        assert!(collapse.matches_error(&error(
            "only 2 names provided for structured binding",
            &["   11 |   auto [shape, strides] = collapse_contiguous_dims(in.shape(), in.strides());"]
        )));
        assert!(
            !collapse.matches_error(&error("collapse_contiguous_dims_v2 was not declared", &[]))
        );
        let eval_gpu = key("mlx::core::GatherQMM::eval_gpu");
        let undefined = |symbol: &str| UndefinedSymbol {
            symbol: symbol.into(),
            needed_by: Vec::new(),
            probably_in: None,
        };
        assert!(eval_gpu.matches_undefined(&undefined(
            "mlx::core::GatherQMM::eval_gpu(std::vector<mlx::core::array> const&, mlx::core::array&)"
        )));
        assert!(!eval_gpu.matches_undefined(&undefined("mlx::core::Add::eval_gpu(int)")));
        assert!(key("mlx::core::ceil_div")
            .matches_undefined(&undefined("int mlx::core::ceil_div<int>(int, int)")));
    }
}
