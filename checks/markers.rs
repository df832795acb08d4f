//! Conflict markers as git itself recognizes them (`is_cmarker` in git's `rerere.c`): a line
//! that starts with exactly seven `<`, `|`, `=` or `>` followed by whitespace. Eight `=` in a row
//! is not a marker, and neither is `<<<<<<<x`; git would not stop a commit on them either.

use serde::Serialize;

/// How many marker characters git writes (its default `conflict-marker-size`).
pub const MARKER_SIZE: usize = 7;

/// Which of the four marker lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MarkerKind {
    /// `<<<<<<<`: the start of a region, our side.
    Ours,
    /// `|||||||`: the common ancestor's side (diff3 style).
    Base,
    /// `=======`: between the two sides.
    Separator,
    /// `>>>>>>>`: the end of a region, their side.
    Theirs,
}

impl MarkerKind {
    pub fn text(self) -> &'static str {
        match self {
            MarkerKind::Ours => "<<<<<<<",
            MarkerKind::Base => "|||||||",
            MarkerKind::Separator => "=======",
            MarkerKind::Theirs => ">>>>>>>",
        }
    }
}

/// One marker line: 1-based line number and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Marker {
    pub line: usize,
    pub kind: MarkerKind,
}

/// The kind of marker `line` is (without its newline), if it is one.
pub fn marker_kind(line: &[u8]) -> Option<MarkerKind> {
    let kind = match line.first()? {
        b'<' => MarkerKind::Ours,
        b'|' => MarkerKind::Base,
        b'=' => MarkerKind::Separator,
        b'>' => MarkerKind::Theirs,
        _ => return None,
    };
    let first = line[0];
    if line.len() < MARKER_SIZE || !line[..MARKER_SIZE].iter().all(|&b| b == first) {
        return None;
    }
    // What follows the seven characters: the end of the line, or whitespace (a label follows).
    match line.get(MARKER_SIZE) {
        None => Some(kind),
        Some(b) if b.is_ascii_whitespace() => Some(kind),
        Some(_) => None,
    }
}

/// Every marker line of `content`, in order. Each run of seven marker characters is looked for
/// with a vectorised search, not line by line: what `sync --check` reads is megabytes of text
/// with no marker in it.
pub fn scan(content: &[u8]) -> Vec<Marker> {
    let runs = [
        MarkerKind::Ours,
        MarkerKind::Base,
        MarkerKind::Separator,
        MarkerKind::Theirs,
    ];
    let mut starts: Vec<usize> = (runs.iter())
        .flat_map(|kind| memchr::memmem::find_iter(content, kind.text().as_bytes()))
        .filter(|&at| at == 0 || content[at - 1] == b'\n')
        .collect();
    starts.sort_unstable();
    let (mut line, mut counted) = (1, 0);
    let mut markers = Vec::new();
    for at in starts {
        line += memchr::memchr_iter(b'\n', &content[counted..at]).count();
        counted = at;
        let end = memchr::memchr(b'\n', &content[at..]).map_or(content.len(), |n| at + n);
        if let Some(kind) = marker_kind(&content[at..end]) {
            markers.push(Marker { line, kind });
        }
    }
    markers
}

/// A conflict region: from its `<<<<<<<` line to its `>>>>>>>` line (`None`: never closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Region {
    pub start: usize,
    pub end: Option<usize>,
}

/// The regions of `content`, and the marker lines that belong to none (a stray `=======`).
pub fn regions(content: &[u8]) -> (Vec<Region>, Vec<Marker>) {
    let mut regions = Vec::new();
    let mut stray = Vec::new();
    let mut open: Option<usize> = None;
    for marker in scan(content) {
        match (marker.kind, open) {
            (MarkerKind::Ours, Some(start)) => {
                regions.push(Region { start, end: None });
                open = Some(marker.line);
            }
            (MarkerKind::Ours, None) => open = Some(marker.line),
            (MarkerKind::Theirs, Some(start)) => {
                regions.push(Region {
                    start,
                    end: Some(marker.line),
                });
                open = None;
            }
            (_, Some(_)) => {}
            (_, None) => stray.push(marker),
        }
    }
    if let Some(start) = open {
        regions.push(Region { start, end: None });
    }
    (regions, stray)
}

/// `content` with each conflict region taken at its first side (between `<<<<<<<` and
/// `|||||||` or `=======`: the pin's in a retarget) and every marker line left out, a stray
/// one too. What a build reads to see past the markers, not a resolution anyone chose.
pub fn first_side(content: &[u8]) -> Vec<u8> {
    let mut kept = Vec::with_capacity(content.len());
    // Inside a region: whether the lines are still its first side.
    let mut region: Option<bool> = None;
    for line in content.split_inclusive(|&b| b == b'\n') {
        let bare = line.strip_suffix(b"\n").unwrap_or(line);
        match (marker_kind(bare), region) {
            (Some(MarkerKind::Ours), _) => region = Some(true),
            (Some(MarkerKind::Theirs), _) => region = None,
            (Some(_), Some(_)) => region = Some(false),
            (Some(_), None) => {}
            (None, None | Some(true)) => kept.extend_from_slice(line),
            (None, Some(false)) => {}
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_markers_as_git_does() {
        assert_eq!(marker_kind(b"<<<<<<< pin 846d176"), Some(MarkerKind::Ours));
        assert_eq!(marker_kind(b"<<<<<<<"), Some(MarkerKind::Ours));
        assert_eq!(marker_kind(b"|||||||"), Some(MarkerKind::Base));
        assert_eq!(marker_kind(b"======="), Some(MarkerKind::Separator));
        assert_eq!(marker_kind(b"=======\r"), Some(MarkerKind::Separator));
        assert_eq!(
            marker_kind(b">>>>>>> fork 7591590"),
            Some(MarkerKind::Theirs)
        );
        assert_eq!(marker_kind(b"========"), None, "eight is a heading rule");
        assert_eq!(marker_kind(b"======"), None);
        assert_eq!(marker_kind(b"<<<<<<<x"), None);
        assert_eq!(marker_kind(b" <<<<<<< indented"), None);
        assert_eq!(marker_kind(b"std::cout <<<<<<< x"), None);
    }

    #[test]
    fn regions_pair_start_and_end_and_keep_strays() {
        let text =
            b"a\n=======\n<<<<<<< ours\nx\n|||||||\ny\n=======\nz\n>>>>>>> theirs\n<<<<<<< open\n";
        let (regions, stray) = regions(text);
        assert_eq!(
            regions,
            [
                Region {
                    start: 3,
                    end: Some(9)
                },
                Region {
                    start: 10,
                    end: None
                }
            ]
        );
        assert_eq!(
            stray,
            [Marker {
                line: 2,
                kind: MarkerKind::Separator
            }]
        );
    }

    #[test]
    fn first_side_keeps_the_first_side_of_each_region_and_drops_every_marker() {
        let diff3 = b"a\n<<<<<<< pin\nx\n|||||||\nb\n=======\ny\n>>>>>>> fork\nc\n";
        assert_eq!(first_side(diff3), b"a\nx\nc\n");
        let merge = b"<<<<<<< pin\nx1\nx2\n=======\ny\n>>>>>>> fork\nc";
        assert_eq!(first_side(merge), b"x1\nx2\nc");
        assert_eq!(
            first_side(b"a\n=======\nb\n"),
            b"a\nb\n",
            "a stray marker alone is left out"
        );
        assert_eq!(first_side(b"a\n========\nb\n"), b"a\n========\nb\n");
    }

    #[test]
    fn scan_finds_what_a_line_by_line_reading_finds() {
        let text =
            b"<<<<<<< a\nx=======\n=======\n========\n|||||||\r\n>>>>>>>\n<<<<<<<x\n\n>>>>>>> b";
        let by_line: Vec<Marker> = (text.split(|&b| b == b'\n').enumerate())
            .filter_map(|(i, l)| marker_kind(l).map(|kind| Marker { line: i + 1, kind }))
            .collect();
        assert_eq!(scan(text), by_line);
        let lines: Vec<usize> = by_line.iter().map(|m| m.line).collect();
        assert_eq!(lines, [1, 3, 5, 6, 9]);
    }
}
