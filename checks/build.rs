//! Reads the header of each check (id, name, severity, chapter, what it needs) from the front
//! matter of its page, `<id>.md`, and writes the catalogue's entry for it: a page whose header is
//! malformed fails the build, never a run.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // Read when the script runs, not when it was compiled: a build folder copied to another
    // checkout would otherwise read (and watch) the first checkout's pages.
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&dir);
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut pages: Vec<_> = std::fs::read_dir(dir)
        .expect("the checks folder reads")
        .map(|entry| entry.expect("the checks folder reads").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    let mut code = String::new();
    for path in &pages {
        let page = std::fs::read_to_string(path).expect("a check's page reads");
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 name");
        code.push_str(&entry(stem, &page).unwrap_or_else(|(line, why)| {
            panic!("checks/{stem}.md:{line}: {why}; the page starts with `---`, lines `key: value` (id, name, severity, chapter, needs, optionally without and reads) and `---`")
        }));
    }
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("pages.rs");
    std::fs::write(out, code).expect("the catalogue's entries are written");
}

/// The catalogue entry of the check whose page `<stem>.md` is `page`, or the line of the page
/// that is wrong and why.
fn entry(stem: &str, page: &str) -> Result<String, (usize, String)> {
    let mut lines = page.split_inclusive('\n');
    if lines.next() != Some("---\n") {
        return Err((1, "no front matter".into()));
    }
    let mut fields = std::collections::BTreeMap::new();
    let mut end = None;
    for (at, line) in lines.by_ref().enumerate() {
        let number = at + 2;
        if line == "---\n" {
            end = Some(number);
            break;
        }
        let (key, value) = line
            .trim_end()
            .split_once(": ")
            .ok_or((number, format!("`{}` is no `key: value`", line.trim_end())))?;
        if ![
            "id", "name", "severity", "chapter", "needs", "without", "reads",
        ]
        .contains(&key)
        {
            return Err((number, format!("unknown key `{key}`")));
        }
        if fields.insert(key, (number, value)).is_some() {
            return Err((number, format!("`{key}` given twice")));
        }
    }
    let end = end.ok_or((1, "the front matter has no closing `---`".to_string()))?;
    let field = |key: &str| fields.get(key).copied().ok_or((end, format!("no `{key}`")));
    let (line, id) = field("id")?;
    if id != stem {
        return Err((line, format!("the id `{id}` is not the page's name")));
    }
    let pick = |key: &str, choices: [(&str, &str); 2]| {
        let (line, value) = field(key)?;
        let named = choices.iter().find(|(word, _)| *word == value);
        named.map(|(_, code)| code.to_string()).ok_or((
            line,
            format!("`{key}` is `{}` or `{}`", choices[0].0, choices[1].0),
        ))
    };
    let severity = pick("severity", [("error", "Error"), ("warning", "Warning")])?;
    let chapter = pick("chapter", [("register", "Register"), ("checks", "Checks")])?;
    let (line, needs) = field("needs")?;
    let without = fields.get("without").map(|(_, text)| *text);
    let needs = match (needs, without) {
        ("records", None) => "Needs::Records".to_string(),
        ("objects", without) => format!("Needs::Objects {{ without: {without:?} }}"),
        ("records", Some(_)) => return Err((line, "`without` is for `needs: objects`".into())),
        _ => return Err((line, "`needs` is `records` or `objects`".into())),
    };
    // A check that reads the register one entry at a time has a `one_entry` of its own, which
    // `forkbook check` hands each entry as it reads the register.
    let one_entry = match fields.get("reads") {
        None => "None".to_string(),
        Some((_, "one entry at a time")) => {
            format!("Some(crate::{}::one_entry)", stem.replace('-', "_"))
        }
        Some((line, _)) => return Err((*line, "`reads` is `one entry at a time`".into())),
    };
    let doc: String = lines.collect();
    let module = stem.replace('-', "_");
    let mut code = String::new();
    writeln!(
        code,
        "pub(crate) const {module}: Check = Check {{ id: {id:?}, name: {:?}, \
         severity: Severity::{severity}, chapter: Chapter::{chapter}, doc: {doc:?}, \
         needs: {needs}, run: crate::{module}::run, one_entry: {one_entry} }};",
        field("name")?.1
    )
    .expect("writing to a String");
    Ok(code)
}
