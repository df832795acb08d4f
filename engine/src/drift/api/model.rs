//! What the drift analysis knows about a declaration, and how two signatures are compared.
//!
//! Two comparisons, because C++ treats callers and definitions differently: a caller does not
//! notice `const Shape&` becoming `Shape` (call form), but an out-of-line definition must repeat
//! its declaration's parameter types exactly (definition form).

use super::syntax::{split_top_level, squeeze};
use serde::Serialize;

/// A place in a file: repository-relative path and 1-based line.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
pub struct Loc {
    pub path: String,
    pub line: usize,
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.path, self.line)
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, serde::Deserialize,
)]
pub enum DeclKind {
    /// A free function (namespace scope).
    #[default]
    Function,
    /// A member function, static or not.
    Method,
    Constructor,
    /// A class, struct or union with a body.
    Class,
    Enumerator,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Param {
    /// The parameter's type, whitespace squeezed, without its name or default.
    pub ty: String,
    pub has_default: bool,
}

/// One declaration or definition found in a C++ file (by default a free function with nothing
/// known yet: no scope, name, return type or parameters, no qualifier, no place).
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct Decl {
    pub kind: DeclKind,
    /// Enclosing namespaces and classes, outermost first (`["mlx", "core", "Event"]`).
    pub scope: Vec<String>,
    pub name: String,
    /// Return type, squeezed (empty for constructors, classes and enumerators).
    pub ret: String,
    pub params: Vec<Param>,
    /// Takes `...` or a parameter pack: any number of trailing arguments.
    pub variadic: bool,
    /// A `const` member function.
    pub is_const: bool,
    /// Has a body in place (inline, `= default`, `= delete`): nobody else must define it.
    pub has_body: bool,
    pub is_pure: bool,
    pub is_template: bool,
    /// Declared through a qualified name (`void Event::wait() {}`, `void gpu::eval(..)`).
    pub qualified_name: bool,
    pub path: String,
    /// First and last line (1-based) of the declaration.
    pub lines: (usize, usize),
    /// The declaration's text as written in the real file (no blanking), for history lookups.
    pub text: String,
}

impl Decl {
    /// `mlx::core::Event::wait`.
    pub fn key(&self) -> String {
        qualify(&self.scope, &self.name)
    }

    pub fn loc(&self) -> Loc {
        Loc {
            path: self.path.clone(),
            line: self.lines.0,
        }
    }

    pub fn is_callable(&self) -> bool {
        matches!(
            self.kind,
            DeclKind::Function | DeclKind::Method | DeclKind::Constructor
        )
    }

    /// Whether a call with `args` arguments can reach this overload.
    pub fn fits(&self, args: usize) -> bool {
        let required = self.params.iter().filter(|p| !p.has_default).count();
        args >= required && (self.variadic || args <= self.params.len())
    }

    /// A caller passing `args` arguments still compiles against `new` where it compiled
    /// against `self`: same result type and the same argument types, up to const and
    /// reference (a parameter now by value, a new defaulted trailing parameter are fine).
    pub fn call_compatible(&self, new: &Decl, args: usize) -> bool {
        self.same_result(new) && self.accepts_same_arguments(new, args)
    }

    /// The caller's arguments still fit `new`; the result type is not looked at.
    pub fn accepts_same_arguments(&self, new: &Decl, args: usize) -> bool {
        new.fits(args)
            && (self.variadic || new.variadic || same_call_params(&self.params, &new.params, args))
    }

    /// The same result type, up to const and reference.
    pub fn same_result(&self, new: &Decl) -> bool {
        call_form(&self.ret) == call_form(&new.ret)
    }

    /// The signature an out-of-line definition must repeat exactly.
    pub fn definition_form(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| definition_param(&p.ty))
            .collect();
        let variadic = if self.variadic { ",..." } else { "" };
        let constness = if self.is_const { " const" } else { "" };
        format!("({}{variadic}){constness}", params.join(","))
    }

    /// Human form: `(const Shape&, int64_t = ...) -> std::pair<Shape, Strides>`.
    pub fn describe(&self) -> String {
        let default = |p: &Param| if p.has_default { " = ..." } else { "" };
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| format!("{}{}", p.ty, default(p)))
            .collect();
        let constness = if self.is_const { " const" } else { "" };
        let arrow = if self.ret.is_empty() { "" } else { " -> " };
        format!("({}){constness}{arrow}{}", params.join(", "), self.ret)
    }
}

fn same_call_params(old: &[Param], new: &[Param], args: usize) -> bool {
    (0..args).all(|i| match (old.get(i), new.get(i)) {
        (Some(a), Some(b)) => call_form(&a.ty) == call_form(&b.ty),
        _ => false,
    })
}

/// `a::b` + `c` = `a::b::c`.
pub fn qualify(scope: &[String], name: &str) -> String {
    if scope.is_empty() {
        name.to_string()
    } else {
        format!("{}::{name}", scope.join("::"))
    }
}

/// A type as a caller sees it: `const T&`, `T&&`, `T&` and `T` all accept the same arguments
/// for our purpose (a value, a temporary or an lvalue of `T`).
pub fn call_form(ty: &str) -> &str {
    let ty = ty.trim_end_matches('&');
    let ty = ty.strip_suffix(" const").unwrap_or(ty);
    if ty.ends_with('*') {
        return ty;
    }
    ty.strip_prefix("const ").unwrap_or(ty)
}

/// How many elements a structured binding of a `std::tuple<..>` or `std::pair<..>` (or a
/// reference to one) takes; `None` for any other type, whose binding rules (public members,
/// `std::array`, user tuple-likes) are not modelled.
pub fn tuple_arity(ty: &str) -> Option<usize> {
    tuple_elements(call_form(ty.trim())).map(|elements| elements.len())
}

/// The element types of `std::tuple<..>` / `std::pair<..>` (or a reference to one).
///
/// A text split (`split_top_level`), not the parse's nodes: both callers hold the type as text
/// alone, `Decl::ret` of the declaration model (kept between runs without its parse) and a
/// draft's return type as `Cpp::return_type` gives it.
pub fn tuple_elements(ty: &str) -> Option<Vec<String>> {
    let ty = squeeze(ty);
    let ty = ty.trim_end_matches('&').trim();
    let ty = ty.strip_prefix("const ").unwrap_or(ty);
    let ty = ty.strip_prefix("std::").unwrap_or(ty);
    let inner = ty
        .strip_prefix("tuple<")
        .or_else(|| ty.strip_prefix("pair<"))?
        .strip_suffix('>')?;
    Some(split_top_level(inner).iter().map(|t| squeeze(t)).collect())
}

/// A parameter type as a definition must repeat it: top-level `const` on a by-value
/// parameter is not part of the signature.
fn definition_param(ty: &str) -> String {
    if ty.contains('&') || ty.contains('*') {
        ty.to_string()
    } else {
        ty.strip_prefix("const ").unwrap_or(ty).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(ret: &str, params: &[(&str, bool)]) -> Decl {
        Decl {
            scope: vec!["ns".into()],
            name: "f".into(),
            ret: ret.into(),
            params: params
                .iter()
                .map(|(t, d)| Param {
                    ty: t.to_string(),
                    has_default: *d,
                })
                .collect(),
            path: "a.h".into(),
            lines: (1, 1),
            ..Decl::default()
        }
    }

    #[test]
    fn callers_ignore_by_value_and_new_defaults() {
        let old = decl("void", &[("const Shape&", false)]);
        assert!(old.call_compatible(&decl("void", &[("Shape", false)]), 1));
        assert!(old.call_compatible(&decl("void", &[("const Shape&", false), ("int", true)]), 1));
        assert!(!old.call_compatible(&decl("void", &[("const Shape&", false), ("int", false)]), 1));
        assert!(!old.call_compatible(&decl("int", &[("const Shape&", false)]), 1));
        assert!(!old.call_compatible(&decl("void", &[("Strides", false)]), 1));
    }

    #[test]
    fn tuple_arity_counts_top_level_elements() {
        let arity = |ty| tuple_arity(ty);
        assert_eq!(
            arity("std::tuple<bool,bool,Shape,std::vector<Strides>>"),
            Some(4)
        );
        assert_eq!(arity("std::pair<Shape, Strides>"), Some(2));
        assert_eq!(arity("const std::tuple<std::map<int,int>,int>&"), Some(2));
        assert_eq!(arity("std::tuple<>"), Some(0));
        assert_eq!(arity("Shape"), None);
        assert_eq!(arity("std::array<int,3>"), None);
    }

    #[test]
    fn definitions_see_reference_changes() {
        let by_ref = decl("void", &[("const Shape&", false)]);
        let by_value = decl("void", &[("Shape", false)]);
        assert_ne!(by_ref.definition_form(), by_value.definition_form());
        assert_eq!(
            by_value.definition_form(),
            decl("void", &[("const Shape", false)]).definition_form()
        );
    }
}
