//! The site holds the book and nothing else. mdBook copies every file of the source folder into
//! the site, following links, reads `{{#include}}` files wherever they point, and copies the
//! theme and the additional CSS and JavaScript: a link in `src/` to `/etc`, or an include of
//! `../../.ssh/id_rsa`, would publish what the book's folder does not hold. [`check`] refuses,
//! with its path, every link and every path of the configuration or of an include that leads out
//! of the book's folder, before anything is rendered; it runs in every build, test and serve,
//! since the preprocessor does. It also refuses the folders a build writes where they are not
//! the book's own: a build folder that holds or lies in the book's files (every build empties
//! it), and a step cache outside the book folder, in its sources or in its build folder.

use mdbook_preprocessor::config::Config;
use std::path::{Component, Path, PathBuf};

/// Every way the book reaches outside its folder, or `Ok`. `root` is the book's folder (where
/// book.toml is).
pub fn check(root: &Path, config: &Config) -> Result<(), String> {
    let book = root
        .canonicalize()
        .map_err(|e| format!("the book folder `{}`: {e}", root.display()))?;
    let mut problems = Vec::new();
    let build_dir = root.join(&config.build.build_dir);
    let src = root.join(&config.book.src);
    let named = configured_paths(root, config);
    for (key, path) in &named {
        if !resolves_inside(&book, path) {
            problems.push(format!(
                "book.toml's `{key}` is `{}`, outside the book folder `{}`",
                path.display(),
                book.display()
            ));
        }
    }
    links_below(&book, root, &build_dir, &mut problems);
    includes_below(&book, &src, &mut problems);
    if !problems.is_empty() {
        return Err(format!(
            "the book reaches outside its folder, and the site would carry what it reaches:\n  {}\n\
             keep the book's files in its folder (copy them in instead of linking)",
            problems.join("\n  ")
        ));
    }
    let mut problems = build_dir_problems(root, &build_dir, &named);
    problems.extend(cache_dir_problems(&book, root, config, &src, &build_dir));
    if problems.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the book writes where it must not:\n  {}\n\
         give `[build] build-dir` and `[preprocessor.forkbook] cache-dir` folders of their own \
         inside the book folder (the defaults are `book` and `.step-cache`)",
        problems.join("\n  ")
    ))
}

/// The paths book.toml names, by key: the sources, the build folder, the theme, the CSS and
/// JavaScript.
fn configured_paths<'a>(root: &Path, config: &'a Config) -> Vec<(&'a str, PathBuf)> {
    let mut named = vec![
        ("book.src", root.join(&config.book.src)),
        ("build.build-dir", root.join(&config.build.build_dir)),
    ];
    if let Some(html) = config.html_config() {
        let theme = html.theme.iter().map(|t| ("output.html.theme", t));
        let css = html
            .additional_css
            .iter()
            .map(|c| ("output.html.additional-css", c));
        let js = html
            .additional_js
            .iter()
            .map(|j| ("output.html.additional-js", j));
        named.extend(
            theme
                .chain(css)
                .chain(js)
                .map(|(key, path)| (key, root.join(path))),
        );
    }
    named
}

/// Whether `path` is in `book` (canonical) once its links are followed ([`resolved`]).
fn resolves_inside(book: &Path, path: &Path) -> bool {
    resolved(path).is_some_and(|path| path.starts_with(book))
}

/// `path` with its links followed: the part of it that exists resolved, the rest kept as it is;
/// `None` where the rest climbs (`..`) or nothing of it exists.
fn resolved(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        rest.push(existing.file_name()?.to_owned());
        existing = existing.parent()?;
    }
    let rest: PathBuf = rest.iter().rev().collect();
    let climbs = rest
        .components()
        .any(|c| !matches!(c, Component::Normal(_)));
    if climbs {
        return None;
    }
    let existing = existing.canonicalize().ok()?;
    // Joining an empty rest would add a trailing `/` to the path messages show.
    Some(match rest.as_os_str().is_empty() {
        true => existing,
        false => existing.join(rest),
    })
}

/// The step cache (`[preprocessor.forkbook] cache-dir`, default `.step-cache`) is written by
/// every build: it must lie in the book folder, outside the sources (the site would publish it)
/// and outside the build folder (every build empties that). A pull request's `"../patches-rocm"`
/// wrote the cache's entries into the records folder.
fn cache_dir_problems(
    book: &Path,
    root: &Path,
    config: &Config,
    src: &Path,
    build_dir: &Path,
) -> Vec<String> {
    let key = "preprocessor.forkbook.cache-dir";
    let named = config.get::<PathBuf>(key).ok().flatten();
    let named = root.join(named.as_deref().unwrap_or(Path::new(".step-cache")));
    let shown = named.display();
    let Some(cache) = resolved(&named).filter(|path| path.starts_with(book)) else {
        return vec![format!(
            "book.toml's `{key}` is `{shown}`, outside the book folder `{}`",
            book.display()
        )];
    };
    let inside = |folder: &Path| resolved(folder).is_some_and(|f| cache.starts_with(f));
    let mut problems = Vec::new();
    if inside(src) {
        problems.push(format!(
            "book.toml's `{key}` is `{shown}`, in `book.src`, which the site publishes"
        ));
    }
    if inside(build_dir) {
        problems.push(format!(
            "book.toml's `{key}` is `{shown}`, in `build.build-dir`, which every build empties"
        ));
    }
    problems
}

/// Every build empties its build folder first (mdBook removes what it holds), so the folder may
/// hold none of the book's own files (book.toml, the sources, the theme, the CSS and JavaScript)
/// nor lie in them, and may not be or hold a git repository: `build-dir = "."` in a pull
/// request's book.toml would delete the book.
fn build_dir_problems(root: &Path, build_dir: &Path, named: &[(&str, PathBuf)]) -> Vec<String> {
    let Some(build) = resolved(build_dir) else {
        return Vec::new();
    };
    // Without `output.html.theme`, mdBook takes the folder `theme` where there is one.
    let own = [
        ("book.toml", root.join("book.toml")),
        ("theme", root.join("theme")),
    ];
    let own = own.iter().filter(|(_, path)| path.exists());
    let mut problems: Vec<String> = own
        .chain(named.iter().filter(|(key, _)| *key != "build.build-dir"))
        .filter_map(|(key, path)| {
            let path = resolved(path)?;
            let how = if path.starts_with(&build) {
                "holds"
            } else if build.starts_with(&path) {
                "lies in"
            } else {
                return None;
            };
            Some(format!(
                "book.toml's `build.build-dir` is `{}`, which every build empties, and it {how} \
                 `{key}` (`{}`)",
                build.display(),
                path.display()
            ))
        })
        .collect();
    let in_git = build
        .ancestors()
        .any(|dir| dir.file_name().is_some_and(|n| n == ".git"));
    if in_git || build.join(".git").exists() {
        problems.push(format!(
            "book.toml's `build.build-dir` is `{}`, which every build empties, and it is or holds a \
             git repository",
            build.display()
        ));
    }
    problems
}

/// Every link below `dir` (but the build folder and `.git`) whose target is outside `book`.
fn links_below(book: &Path, dir: &Path, build_dir: &Path, problems: &mut Vec<String>) {
    let passed = |path: &Path| path == build_dir || path.file_name().is_some_and(|n| n == ".git");
    for (path, meta) in entries_below(dir, |path| !passed(path)) {
        if passed(&path) || !meta.file_type().is_symlink() {
            continue;
        }
        let target = std::fs::read_link(&path)
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        match path.canonicalize() {
            Ok(resolved) if resolved.starts_with(book) => {}
            Ok(resolved) => problems.push(format!(
                "`{}` is a link to `{target}` (`{}`), outside the book folder",
                path.display(),
                resolved.display()
            )),
            Err(_) => problems.push(format!(
                "`{}` is a link to `{target}`, which does not resolve",
                path.display()
            )),
        }
    }
}

/// Every entry below `dir` with its metadata (a link's own), sorted, each folder before what it
/// holds; a folder `enter` refuses is listed but not entered. The entries still to visit wait
/// in a list, not on the call stack: a folder can nest deeper than any stack goes.
fn entries_below(dir: &Path, enter: impl Fn(&Path) -> bool) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut out = Vec::new();
    let mut pending: Vec<PathBuf> = sorted_entries(dir).into_iter().rev().collect();
    while let Some(path) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() && enter(&path) {
            pending.extend(sorted_entries(&path).into_iter().rev());
        }
        out.push((path, meta));
    }
    out
}

/// The paths of the entries of `dir`, sorted; none where it cannot be read.
fn sorted_entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    let mut paths: Vec<_> = entries.map(|e| e.path()).collect();
    paths.sort();
    paths
}

/// The `{{#include}}`-like directives of mdBook's links preprocessor: each reads a file.
const INCLUDES: &[&str] = &["include", "rustdoc_include", "playground", "playpen"];

/// Every include in the Markdown below `src` whose file is outside `book`.
fn includes_below(book: &Path, src: &Path, problems: &mut Vec<String>) {
    for (path, meta) in entries_below(src, |_| true) {
        if !meta.is_file() || path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let folder = path.parent().unwrap_or(src);
        for (line, file) in included_files(&text) {
            if !resolves_inside(book, &folder.join(&file)) {
                problems.push(format!(
                    "{}:{line} includes `{file}`, outside the book folder",
                    path.display()
                ));
            }
        }
    }
}

/// The files `{{#include FILE}}` (and the other [`INCLUDES`], `{{ #include FILE }}` too) name in
/// `text`, with their lines; an escaped `\{{#include}}` is text, not an include.
fn included_files(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(start) = text[at..].find("{{").map(|i| at + i) {
        at = start + 2;
        let Some(rest) = text[at..].trim_start().strip_prefix('#') else {
            continue;
        };
        if text[..start].ends_with('\\') {
            continue;
        }
        let Some(end) = rest.find("}}") else {
            break;
        };
        let mut words = rest[..end].split_whitespace();
        let (Some(name), Some(arg)) = (words.next(), words.next()) else {
            continue;
        };
        if INCLUDES.contains(&name) {
            // `file.rs:2:10` and `file.rs:anchor` name `file.rs`.
            let file = arg.split(':').next().unwrap_or(arg);
            let line = text[..start].matches('\n').count() + 1;
            found.push((line, file.to_string()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_found_with_their_lines_and_escaped_ones_are_not() {
        let text = "# A\n{{#include ../x.rs:2:3}}\n\\{{#include /etc/passwd}}\n{{ #playground  b.rs editable }}\n{{#forkbook checks}}\n";
        assert_eq!(
            included_files(text),
            [(2, "../x.rs".to_string()), (4, "b.rs".to_string())]
        );
    }
}
