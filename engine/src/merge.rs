//! Three-way file merges through libgit2, which is git's own xdiff: results equal
//! `git merge-file ours base theirs` byte for byte, conflict markers included.

use super::error::Result;
use forkbook_checks::markers::MarkerKind;

/// The result of one file merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    pub content: Vec<u8>,
    /// Number of conflict regions left in `content` (0 when it merged cleanly).
    pub conflicts: usize,
}

/// The labels written after `<<<<<<<`, `|||||||` and `>>>>>>>`: they name the commits.
#[derive(Debug, Clone, Copy)]
pub struct Labels<'a> {
    pub ours: &'a str,
    pub base: &'a str,
    pub theirs: &'a str,
}

/// libgit2's file merge (git2 0.21) fails with "no error" (code -1) unless the library was
/// initialized by an earlier call, such as opening a repository; creating a config object
/// initializes it.
fn ensure_libgit2_initialized() {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        let _ = git2::Config::new();
    });
}

/// Merges `theirs` into `ours` with `base` as the common ancestor (`None`: both added the file).
///
/// Identical sides and one-sided changes short-cut, as git does; otherwise libgit2 merges with
/// standard conflict style. All three inputs carry the same `path`, which libgit2 requires.
pub fn merge_file(
    base: Option<&[u8]>,
    ours: &[u8],
    theirs: &[u8],
    path: &str,
    labels: Labels,
) -> Result<Merged> {
    if ours == theirs || base == Some(theirs) {
        return Ok(Merged {
            content: ours.to_vec(),
            conflicts: 0,
        });
    }
    if base == Some(ours) {
        return Ok(Merged {
            content: theirs.to_vec(),
            conflicts: 0,
        });
    }
    ensure_libgit2_initialized();
    let base = base.unwrap_or(b"");
    let (a, o, t) = (input(base, path), input(ours, path), input(theirs, path));
    let mut opts = git2::MergeFileOptions::new();
    opts.ancestor_label(labels.base)
        .our_label(labels.ours)
        .their_label(labels.theirs);
    let result = git2::merge_file(&a, &o, &t, Some(&mut opts))?;
    let content = result.content().to_vec();
    let conflicts = if result.is_automergeable() {
        0
    } else {
        count_conflicts(&content).max(1)
    };
    Ok(Merged { content, conflicts })
}

/// A file on one side of a 3-way merge: `None` where that side has no such file.
pub type Side<'a> = Option<&'a [u8]>;

/// What a 3-way merge over optional files did. Every caller (the base tree's core files, a sync's
/// carried fixes, a proposal's package) maps this one outcome to its own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Neither side changed the file (or neither side has it).
    Unchanged,
    /// Only ours changed it (added, changed or deleted): ours.
    Ours,
    /// Only theirs changed it (added, changed or deleted): theirs.
    Theirs,
    /// Both made the same change: either.
    Same,
    /// Both changed it and libgit2 merged the changes cleanly.
    Merged,
    /// Both changed it and `regions` conflict regions are left, with markers.
    Conflict { regions: usize, kind: ConflictKind },
}

/// Why the two sides collide: the words a user needs to resolve it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictKind {
    /// Both sides change the same lines.
    BothChanged,
    /// Both sides add the file, differently.
    BothAdded,
    /// Ours deletes a file theirs changes.
    OursDeletes,
    /// Theirs deletes a file ours changes.
    TheirsDeletes,
}

/// The content a 3-way merge left (`None`: the file is absent) and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge3 {
    pub content: Option<Vec<u8>>,
    pub outcome: Outcome,
}

/// Merges `theirs` into `ours` with `base` as the common ancestor, where any side may lack the
/// file. One-sided changes (deletions and additions included) are taken as git takes them; two
/// changes are merged by [`merge_file`], and a deletion against a change is a conflict whose
/// content is the merge against an empty file, as `git merge-file` leaves it.
pub fn merge3(path: &str, base: Side, ours: Side, theirs: Side, labels: Labels) -> Result<Merge3> {
    let take = |side: Side, outcome| Merge3 {
        content: side.map(<[u8]>::to_vec),
        outcome,
    };
    if ours == theirs {
        let outcome = if ours == base {
            Outcome::Unchanged
        } else {
            Outcome::Same
        };
        return Ok(take(ours, outcome));
    }
    if theirs == base {
        return Ok(take(ours, Outcome::Ours));
    }
    if ours == base {
        return Ok(take(theirs, Outcome::Theirs));
    }
    let kind = match (base, ours, theirs) {
        (None, _, _) => ConflictKind::BothAdded,
        (_, None, _) => ConflictKind::OursDeletes,
        (_, _, None) => ConflictKind::TheirsDeletes,
        _ => ConflictKind::BothChanged,
    };
    let merged = merge_file(
        base,
        ours.unwrap_or(b""),
        theirs.unwrap_or(b""),
        path,
        labels,
    )?;
    let outcome = match merged.conflicts {
        0 => Outcome::Merged,
        regions => Outcome::Conflict { regions, kind },
    };
    Ok(Merge3 {
        content: Some(merged.content),
        outcome,
    })
}

fn input<'a>(content: &'a [u8], path: &str) -> git2::MergeFileInput<'a> {
    let mut input = git2::MergeFileInput::new();
    input.content(content).path(path);
    input
}

/// Counts `<<<<<<<` marker lines (conflict regions) in merged content, by git's rule for a
/// marker line (the one the checks follow).
pub fn count_conflicts(content: &[u8]) -> usize {
    let scanned = forkbook_checks::markers::scan(content).into_iter();
    scanned.filter(|m| m.kind == MarkerKind::Ours).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABELS: Labels = Labels {
        ours: "pin 2222222",
        base: "base 1111111",
        theirs: "fork 3333333",
    };

    /// A region counts as the checks count it (git's rule): a CRLF file's `<<<<<<<\r` opens
    /// one, `<<<<<<<x` and eight `<` do not. Before, `status` counted only `<<<<<<< ` and a
    /// bare `<<<<<<<`, so a CRLF overlay file with markers showed no conflict.
    #[test]
    fn conflicts_are_counted_by_the_checks_marker_rule() {
        let text =
            b"a\r\n<<<<<<<\r\nx\r\n=======\r\ny\r\n>>>>>>>\r\n<<<<<<< pin\n<<<<<<<x\n<<<<<<<<\n";
        assert_eq!(count_conflicts(text), 2);
    }

    #[test]
    fn disjoint_changes_merge_cleanly() {
        let base = b"a\nb\nc\nd\ne\n";
        let ours = b"A\nb\nc\nd\ne\n";
        let theirs = b"a\nb\nc\nd\nE\n";
        let m = merge_file(Some(base), ours, theirs, "f.cpp", LABELS).unwrap();
        assert_eq!(m.conflicts, 0);
        assert_eq!(m.content, b"A\nb\nc\nd\nE\n");
    }

    #[test]
    fn colliding_changes_leave_labelled_markers() {
        let m = merge_file(Some(b"x\n"), b"ours\n", b"theirs\n", "f.cpp", LABELS).unwrap();
        assert_eq!(m.conflicts, 1);
        let text = String::from_utf8(m.content).unwrap();
        assert_eq!(
            text,
            "<<<<<<< pin 2222222\nours\n=======\ntheirs\n>>>>>>> fork 3333333\n"
        );
    }

    #[test]
    fn equals_git_merge_file() {
        let tmp = tempfile::tempdir().unwrap();
        let base = b"int f();\nint g();\nint h();\n";
        let ours = b"int f(int);\nint g();\nint h();\n";
        let theirs = b"int f(long);\nint g();\nint h(void);\n";
        for (name, bytes) in [
            ("ours", &ours[..]),
            ("base", &base[..]),
            ("theirs", &theirs[..]),
        ] {
            std::fs::write(tmp.path().join(name), bytes).unwrap();
        }
        let status = std::process::Command::new("git")
            .args([
                "merge-file",
                "-L",
                LABELS.ours,
                "-L",
                LABELS.base,
                "-L",
                LABELS.theirs,
                "ours",
                "base",
                "theirs",
            ])
            .current_dir(tmp.path())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(1), "git reports one conflict");
        let expected = std::fs::read(tmp.path().join("ours")).unwrap();
        let m = merge_file(Some(base), ours, theirs, "f.cpp", LABELS).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&m.content),
            String::from_utf8_lossy(&expected)
        );
        assert_eq!(m.conflicts, 1);
    }

    #[test]
    fn merge3_takes_one_sided_changes_of_optional_files() {
        let m = |b: Side, o: Side, t: Side| merge3("f.cpp", b, o, t, LABELS).unwrap();
        let (a, b) = (Some(&b"a\n"[..]), Some(&b"b\n"[..]));
        assert_eq!(m(a, a, a).outcome, Outcome::Unchanged);
        assert_eq!(m(None, None, None).outcome, Outcome::Unchanged);
        // Theirs adds, changes or deletes; ours keeps the base.
        assert_eq!(
            m(None, None, b),
            Merge3 {
                content: Some(b"b\n".to_vec()),
                outcome: Outcome::Theirs
            }
        );
        assert_eq!(
            m(a, a, None),
            Merge3 {
                content: None,
                outcome: Outcome::Theirs
            }
        );
        assert_eq!(
            m(a, b, a),
            Merge3 {
                content: Some(b"b\n".to_vec()),
                outcome: Outcome::Ours
            }
        );
        assert_eq!(m(a, b, b).outcome, Outcome::Same);
        assert_eq!(
            m(a, None, None),
            Merge3 {
                content: None,
                outcome: Outcome::Same
            }
        );
    }

    #[test]
    fn merge3_names_the_kind_of_each_collision() {
        let kind =
            |b: Side, o: Side, t: Side| match merge3("f.cpp", b, o, t, LABELS).unwrap().outcome {
                Outcome::Conflict { kind, .. } => kind,
                other => panic!("expected a conflict, got {other:?}"),
            };
        let (a, b, c) = (Some(&b"a\n"[..]), Some(&b"b\n"[..]), Some(&b"c\n"[..]));
        assert_eq!(kind(a, b, c), ConflictKind::BothChanged);
        assert_eq!(kind(None, b, c), ConflictKind::BothAdded);
        assert_eq!(kind(a, None, c), ConflictKind::OursDeletes);
        assert_eq!(kind(a, b, None), ConflictKind::TheirsDeletes);
    }
}
