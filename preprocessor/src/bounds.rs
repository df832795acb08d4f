//! The site holds the book and nothing else. mdBook copies every file of the source folder into
//! the site, following links, reads `{{#include}}` files wherever they point, and copies the
//! theme and the additional CSS and JavaScript: a link in `src/` to `/etc`, or an include of
//! `../../.ssh/id_rsa`, would publish what the book's folder does not hold. [`check`] refuses,
//! with its path, every link and every path of the configuration or of an include that leads out
//! of the book's folder, before anything is rendered; it runs in every build, test and serve,
//! since the preprocessor does. It also refuses the folders a build writes where they are not
//! the book's own: a build folder that holds or lies in the book's files (every build empties
//! it), and a step cache outside the book folder, in its sources or in its build folder.

use mdbook_preprocessor::book::Book;
use mdbook_preprocessor::config::Config;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Every way the book reaches outside its folder, or `Ok`. `root` is the book's folder (where
/// book.toml is), `chapters` the book as mdBook loaded it from the summary, `vars` the variables
/// forkbook fills in (book.toml's, the environment's and the command line's, as the run has them).
pub fn check(
    root: &Path,
    config: &Config,
    chapters: &Book,
    vars: &BTreeMap<String, String>,
) -> Result<(), String> {
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
    let chapters = chapter_texts(&book, &src, chapters, vars, &mut problems);
    includes(&book, &src, &chapters, &mut problems);
    let mut published = vec![src.clone(), root.join("theme")];
    published.extend(
        named
            .iter()
            .filter(|(key, _)| key.starts_with("output."))
            .map(|(_, p)| p.clone()),
    );
    hard_links(&published, &mut problems);
    if !problems.is_empty() {
        return Err(format!(
            "the book reaches outside its folder, and the site would carry what it reaches:\n  {}\n\
             keep the book's files in its folder (copy them in instead of linking)",
            problems.join("\n  ")
        ));
    }
    let mut problems = build_dir_problems(root, &build_dir, &named);
    problems.extend(cache_dir_problems(&book, root, config, &src, &build_dir));
    problems.extend(page_404_problem(config));
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

/// mdBook reads `[output.html] input-404` below `src/` and writes its page at the same path
/// below the build folder (`.md` spelled `.html`, a name without it kept as it is): a path that
/// climbs or starts at `/` reads a file outside the book and writes over one outside the site
/// (`../../.git/config` is read, rendered, and written back over itself).
fn page_404_problem(config: &Config) -> Option<String> {
    let html = config.html_config()?;
    let page = html.input_404.as_deref()?;
    let stays_below = Path::new(page)
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    (!stays_below).then(|| {
        format!(
            "book.toml's `output.html.input-404` is `{page}`: mdBook reads it below `src/` and \
             writes its page at the same path below the build folder, so it must stay below both"
        )
    })
}

/// The paths book.toml names, by key: the sources, the build folder, the theme, the CSS and
/// JavaScript.
fn configured_paths<'a>(root: &Path, config: &'a Config) -> Vec<(&'a str, PathBuf)> {
    let mut named = vec![
        ("book.src", root.join(&config.book.src)),
        ("build.build-dir", root.join(&config.build.build_dir)),
    ];
    if let Some(html) = config.html_config() {
        if let Some(page) = &html.input_404 {
            named.push((
                "output.html.input-404",
                root.join(&config.book.src).join(page),
            ));
        }
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

/// The chapters mdBook renders, each as its path below `src` and its text as mdBook's links
/// preprocessor reads it: forkbook runs first (mdBook orders preprocessors by name), so with
/// the variables filled in (a variable holding `{{#include ../../.git/config}}` put the
/// file into the site). A chapter whose file the summary names outside the book
/// (`[x](../../secret.md)`, which mdBook reads as it is) or that is a hard link is a problem
/// instead.
fn chapter_texts(
    book: &Path,
    src: &Path,
    chapters: &Book,
    vars: &BTreeMap<String, String>,
    problems: &mut Vec<String>,
) -> Vec<(PathBuf, String)> {
    let mut texts = Vec::new();
    for chapter in chapters.chapters() {
        let (Some(path), Some(source)) = (&chapter.path, &chapter.source_path) else {
            continue;
        };
        let file = src.join(source);
        if !resolves_inside(book, &file) {
            problems.push(format!(
                "the summary names the chapter `{}`, outside the book folder",
                file.display()
            ));
            continue;
        }
        let hard = std::fs::metadata(&file)
            .ok()
            .and_then(|m| hard_link(&file, &m));
        problems.extend(hard);
        let text = crate::blocks::substitute_known(&chapter.content, vars);
        texts.push((path.clone(), text));
    }
    texts
}

/// A file a chapter's text reads, through the links that led to it: each hop the file it was
/// found in (as mdBook joined it), the line there, and the file as the link names it.
type Chain = Vec<(PathBuf, Option<usize>, String)>;

/// `src/a.md:3 includes `b.txt`, which at line 2 includes `../x``: the chain as the reader
/// follows it.
fn shown(chain: &Chain) -> String {
    let hops = chain
        .iter()
        .enumerate()
        .map(|(i, (file, line, named))| match (i, line) {
            (0, Some(line)) => format!("{}:{line} includes `{named}`", file.display()),
            (0, None) => format!("{} includes `{named}`", file.display()),
            (_, Some(line)) => format!("which at line {line} includes `{named}`"),
            (_, None) => format!("which includes `{named}`"),
        });
    hops.collect::<Vec<_>>().join(", ")
}

/// A text mdBook's links preprocessor expands: a chapter, or what a link took from a file.
struct Text {
    text: String,
    /// For each line of `text`, the line of `file` it came from.
    lines: Vec<Option<usize>>,
    /// The file it came from, as mdBook joined it; its folder is where the links lead from.
    file: PathBuf,
    chain: Chain,
}

/// Every file the chapters read through mdBook's links (`{{#include}}` and the others, by
/// [`crate::links`]'s grammar, in included text too, as deep as mdBook goes) that is outside
/// `book`, is not a regular file, or is a hard link, with the chain of files that leads to it.
/// Nothing outside the book is read. The texts wait in a queue, shallowest first, and a file
/// taken the same way from the same folder is expanded once: a book that includes itself ten
/// times a page costs no more than one that does not.
fn includes(book: &Path, src: &Path, chapters: &[(PathBuf, String)], problems: &mut Vec<String>) {
    let mut queue: std::collections::VecDeque<(Text, usize)> = chapters
        .iter()
        .map(|(path, content)| {
            let text = Text {
                lines: (1..=content.split('\n').count()).map(Some).collect(),
                text: content.clone(),
                file: src.join(path),
                chain: Vec::new(),
            };
            (text, 0)
        })
        .collect();
    let mut expanded = std::collections::HashSet::new();
    let mut met = std::collections::HashSet::new();
    while let Some((text, depth)) = queue.pop_front() {
        let folder = text.file.parent().unwrap_or(src);
        for link in crate::links::links(&text.text) {
            let line = text.text[..link.at].matches('\n').count();
            let line = text.lines.get(line).copied().flatten();
            // The same link met again (a chapter that is also included) says nothing new.
            let site = (
                (text.file.canonicalize().ok(), folder.canonicalize().ok()),
                (line, link.at),
                link.file.clone(),
            );
            if !met.insert(site) {
                continue;
            }
            let mut chain = text.chain.clone();
            chain.push((text.file.clone(), line, link.file.display().to_string()));
            let target = folder.join(&link.file);
            let Some(content) = readable(book, &target, &chain, problems) else {
                continue;
            };
            // mdBook follows the next links from the folder of the path as it joined it, which
            // a link as the last part of the path does not change.
            let from = target.parent().and_then(|f| f.canonicalize().ok());
            let key = (target.canonicalize().ok(), from, link.kind.clone());
            if depth + 1 > crate::links::MAX_DEPTH || !expanded.insert(key) {
                continue;
            }
            let (taken, lines) = crate::links::taken(&content, &link.kind);
            let next = Text {
                text: taken,
                lines,
                file: target,
                chain,
            };
            queue.push_back((next, depth + 1));
        }
    }
}

/// The content of a file a link reads, where it is in `book`, a regular file with one name and
/// text (mdBook leaves a link it cannot read as it is); a problem, with `chain`, where it is not.
fn readable(
    book: &Path,
    target: &Path,
    chain: &Chain,
    problems: &mut Vec<String>,
) -> Option<String> {
    if !resolves_inside(book, target) {
        problems.push(format!("{}, outside the book folder", shown(chain)));
        return None;
    }
    let meta = std::fs::metadata(target).ok()?;
    if meta.is_dir() {
        return None;
    }
    if !meta.is_file() {
        problems.push(format!("{}, which is not a regular file", shown(chain)));
        return None;
    }
    if let Some(problem) = hard_link(target, &meta) {
        problems.push(format!("{}: {problem}", shown(chain)));
        return None;
    }
    std::fs::read_to_string(target).ok()
}

/// Why a regular file with more than one name is refused, or `None`. Its content is the same
/// file's wherever its other names are, and nothing in the book folder says where: a hard link
/// to the runner's `.git/config` is in the book folder and carries the job's token.
fn hard_link(path: &Path, meta: &std::fs::Metadata) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let names = meta.nlink();
        if meta.is_file() && names > 1 {
            return Some(format!(
                "`{}` is a hard link ({names} names), whose content may be a file's outside the \
                 book folder",
                path.display()
            ));
        }
    }
    let _ = (path, meta);
    None
}

/// Every regular file the site publishes as it is (below `src`, the theme folder, the CSS and
/// JavaScript book.toml names) that is a hard link ([`hard_link`]). mdBook copies through
/// links, so a link is judged by what it leads to, and a linked folder is walked too, once.
fn hard_links(published: &[PathBuf], problems: &mut Vec<String>) {
    let mut pending = published.to_vec();
    let mut walked = std::collections::HashSet::new();
    while let Some(dir) = pending.pop() {
        let files = match std::fs::metadata(&dir) {
            Ok(meta) if meta.is_dir() => {
                if !walked.insert(dir.canonicalize().ok()) {
                    continue;
                }
                entries_below(&dir, |_| true)
            }
            Ok(meta) => vec![(dir.clone(), meta)],
            Err(_) => continue,
        };
        for (path, _) in files {
            // A link that leads nowhere is `links_below`'s to report.
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if meta.is_dir() && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()) {
                pending.push(path);
                continue;
            }
            problems.extend(hard_link(&path, &meta));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mdbook_preprocessor::book::Chapter;

    /// A book folder in a temporary folder, its files written, and a secret beside it.
    fn book_with(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("secret.txt"), "SECRET\n").unwrap();
        let root = tmp.path().join("book");
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        (tmp, root)
    }

    /// The problems of the includes of the chapter `src/a.md`.
    fn problems(root: &Path) -> Vec<String> {
        let book = root.canonicalize().unwrap();
        let content = std::fs::read_to_string(root.join("src/a.md")).unwrap();
        let mut problems = Vec::new();
        let chapters = [(PathBuf::from("a.md"), content)];
        includes(&book, &root.join("src"), &chapters, &mut problems);
        problems
    }

    #[test]
    fn an_include_is_followed_as_deep_as_mdbook_reads_and_no_deeper() {
        // a.md includes d1.txt, …, d10.txt includes the secret: mdBook reads it at depth 10.
        let mut files = vec![("src/a.md".to_string(), "{{#include d1.txt}}\n".to_string())];
        for n in 1..10 {
            files.push((
                format!("src/d{n}.txt"),
                format!("{{{{#include d{}.txt}}}}", n + 1),
            ));
        }
        let last = (
            "src/d10.txt".to_string(),
            "{{#include ../../secret.txt}}".to_string(),
        );
        let refs = |files: &[(String, String)]| -> Vec<(String, String)> { files.to_vec() };
        let deep = [refs(&files), vec![last.clone()]].concat();
        let as_str: Vec<(&str, &str)> =
            deep.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let (_tmp, root) = book_with(&as_str);
        let found = problems(&root);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("a.md:1 includes `d1.txt`, which at line 1 includes `d2.txt`")
                && found[0].ends_with(
                    "which at line 1 includes `../../secret.txt`, outside the book folder"
                ),
            "{found:?}"
        );
        // One level more and mdBook never reads it: d11.txt's text is not expanded.
        let mut deeper = files.clone();
        deeper.push(("src/d10.txt".into(), "{{#include d11.txt}}".into()));
        deeper.push(("src/d11.txt".into(), "{{#include ../../secret.txt}}".into()));
        let as_str: Vec<(&str, &str)> = deeper
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_tmp, root) = book_with(&as_str);
        assert!(problems(&root).is_empty());
    }

    #[test]
    fn a_book_that_includes_itself_is_expanded_once_a_way() {
        let many = "{{#include a.md}}\n".repeat(20);
        let (_tmp, root) = book_with(&[("src/a.md", &many)]);
        assert!(problems(&root).is_empty());
        let leak = format!("{many}{{{{#include ../../secret.txt}}}}\n");
        let (_tmp, root) = book_with(&[("src/a.md", &leak)]);
        let found = problems(&root);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("a.md:21 includes `../../secret.txt`"),
            "{found:?}"
        );
    }

    #[test]
    fn a_link_named_last_leads_on_from_its_own_folder_as_in_mdbook() {
        // `src/in.md` links to `deep/x/in.md`; mdBook follows its `../../secret.txt` from
        // `src/`, not from `deep/x/`, which would stay in the book.
        let (_tmp, root) = book_with(&[
            (
                "src/a.md",
                "{{#include ../deep/x/in.md}}\n{{#include in.md}}\n",
            ),
            ("deep/x/in.md", "{{#include ../../secret.txt}}\n"),
            ("secret.txt", "inside\n"),
        ]);
        std::os::unix::fs::symlink(root.join("deep/x/in.md"), root.join("src/in.md")).unwrap();
        let found = problems(&root);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("a.md:2 includes `in.md`, which at line 1"),
            "{found:?}"
        );
    }

    #[test]
    fn a_404_page_that_climbs_out_of_the_sources_is_refused() {
        let (_tmp, root) = book_with(&[("src/a.md", "# A\n"), ("book.toml", "[book]\n")]);
        let chapter = Chapter::new("A", "# A\n".into(), "a.md", Vec::new());
        let book = Book::new_with_items(vec![chapter.into()]);
        let config_with = |page: &str| {
            let toml = format!("[output.html]\ninput-404 = \"{page}\"\n");
            toml.parse::<Config>().unwrap()
        };
        let vars = BTreeMap::new();
        assert_eq!(check(&root, &config_with("a.md"), &book, &vars), Ok(()));
        assert_eq!(check(&root, &config_with("./x/a.md"), &book, &vars), Ok(()));
        for page in [
            "../../secret.md",
            "../../.git/config",
            "/etc/passwd",
            "x/../../y.md",
        ] {
            let refused = check(&root, &config_with(page), &book, &vars).unwrap_err();
            // Refused for the file it reads outside the book, or for the path it climbs.
            assert!(
                refused.contains("`output.html.input-404` is `"),
                "{page}: {refused}"
            );
        }
    }

    #[test]
    fn a_hard_link_and_a_summary_chapter_outside_are_refused() {
        let (tmp, root) = book_with(&[("src/a.md", "# A\n"), ("book.toml", "[book]\n")]);
        let config = Config::default();
        let chapter = |path: &str| Chapter::new("A", "# A\n".into(), path, Vec::new());
        let book = Book::new_with_items(vec![chapter("a.md").into()]);
        assert_eq!(check(&root, &config, &book, &BTreeMap::new()), Ok(()));
        std::fs::hard_link(tmp.path().join("secret.txt"), root.join("src/copy.txt")).unwrap();
        let refused = check(&root, &config, &book, &BTreeMap::new()).unwrap_err();
        assert!(
            refused.contains("copy.txt` is a hard link (2 names)"),
            "{refused}"
        );
        std::fs::remove_file(root.join("src/copy.txt")).unwrap();
        // Through a link in `src` to a file or a folder elsewhere in the book.
        std::fs::create_dir_all(root.join("extra")).unwrap();
        std::fs::hard_link(tmp.path().join("secret.txt"), root.join("extra/h.txt")).unwrap();
        for (link, target) in [("src/h.txt", "../extra/h.txt"), ("src/more", "../extra")] {
            std::os::unix::fs::symlink(target, root.join(link)).unwrap();
            let refused = check(&root, &config, &book, &BTreeMap::new()).unwrap_err();
            assert!(
                refused.contains("h.txt` is a hard link (2 names)"),
                "{link}: {refused}"
            );
            std::fs::remove_file(root.join(link)).unwrap();
        }
        std::fs::remove_file(root.join("extra/h.txt")).unwrap();
        let outside = Book::new_with_items(vec![chapter("../../secret.txt").into()]);
        let refused = check(&root, &config, &outside, &BTreeMap::new()).unwrap_err();
        assert!(
            refused.contains("the summary names the chapter `")
                && refused.contains("outside the book folder"),
            "{refused}"
        );
    }
}
