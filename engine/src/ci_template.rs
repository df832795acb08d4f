//! The workflow templates' one substitution: each `{{name}}` of a template in
//! `engine/workflow/` becomes a value YAML-quoted by [`yaml_quoted`], or forkbook's own text.

use super::text::yaml_quoted;

/// A value for a template's `{{name}}` ([`fill`]).
pub enum Fill<'a> {
    /// A value from the user or the project, written as a YAML double-quoted scalar
    /// ([`yaml_quoted`]: the workflow's one quoting rule).
    Value(&'a str),
    /// forkbook's own YAML or text (another template filled, an action's `uses:`, a word the
    /// caller quoted for the shell), written as it is.
    Ours(&'a str),
}

/// `template` with each `{{name}}` (a name of `a-z` and `_`) replaced by its value in `fills`.
/// Anything else between braces, such as GitHub's `${{ expression }}`, is kept as written.
/// The templates are forkbook's own, so a name without a value is a bug: it panics (the
/// integration tests write the workflow with every combination of options).
pub fn fill(template: &str, fills: &[(&str, Fill)]) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        let after = &rest[at + 2..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(after.len());
        if name_len == 0 || !after[name_len..].starts_with("}}") {
            out.push_str(&rest[..at + 2]);
            rest = after;
            continue;
        }
        let name = &after[..name_len];
        let value = fills.iter().find(|(n, _)| *n == name).map(|(_, v)| v);
        out.push_str(&rest[..at]);
        match value
            .unwrap_or_else(|| panic!("the workflow template's `{{{{{name}}}}}` has no value"))
        {
            Fill::Value(text) => out.push_str(&yaml_quoted(text)),
            Fill::Ours(text) => out.push_str(text),
        }
        rest = &after[name_len + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_s_values_are_quoted_and_github_s_expressions_kept() {
        let template = "run: {{value}}\nuses: {{ours}}\nurl: ${{ steps.x.outputs.url }}\n{{ odd }}";
        let text = fill(
            template,
            &[
                ("value", Fill::Value("a \"b\"\n")),
                ("ours", Fill::Ours("x@v4")),
            ],
        );
        assert_eq!(
            text,
            "run: \"a \\\"b\\\"\\u000a\"\nuses: x@v4\nurl: ${{ steps.x.outputs.url }}\n{{ odd }}"
        );
    }
}
