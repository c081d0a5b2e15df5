//! Bounded capture of a command's output and the one rendering of a cut (DESIGN §3.2 "output
//! (head and tail kept, the cut stated)").
//!
//! A [`Capture`] keeps the first and last bytes of a stream and counts all of it (bytes and
//! line breaks), so a [`Captured`] stream knows exactly what it no longer holds. Every text
//! cut specgap shows — a command stream in a tool result, any other tool result that is too
//! long — is made by [`Captured::render`], which cuts once, within a budget, and states the
//! true size of what it removed with [`cut_marker`].
//!
//! Rendering rules: the shown text never splits a UTF-8 character (bytes that are not UTF-8
//! show as U+FFFD; a character that the capture itself cut in two is counted as removed); the
//! head gets half of the budget left after the marker and the tail the rest; a cut moves to a
//! line boundary when one lies in the last quarter of the shown head (or the first quarter of
//! the shown tail), so the removed part is usually whole lines. The marker is a line of its
//! own, `[... N bytes (L lines) cut ...]`: N stream bytes and L line breaks (`\n`) were
//! removed.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Keeps the first `head_max` and the last `tail_max` bytes of a stream and counts the rest.
#[derive(Debug)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_max: usize,
    tail_max: usize,
    total: u64,
    lines: u64,
    /// The stream byte just before the tail's first byte, once bytes were dropped there.
    before_tail: Option<u8>,
}

/// A captured stream: its kept head and tail and the exact size of the whole stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Captured {
    /// The first bytes of the stream (all of it when nothing was cut).
    head: Vec<u8>,
    /// The last bytes of the stream, disjoint from `head` (empty when nothing was cut).
    tail: Vec<u8>,
    /// Bytes the stream produced in total.
    total_bytes: u64,
    /// Line breaks (`\n`) the stream produced in total.
    total_lines: u64,
    /// Whether the removed byte just before `tail` is a line break (the tail starts a line).
    tail_starts_line: bool,
}

/// The marker line that stands for a cut: `[... N bytes (L lines) cut ...]`, N the stream
/// bytes and L the line breaks removed (singular forms for 1).
pub fn cut_marker(bytes: u64, lines: u64) -> String {
    let bytes_word = if bytes == 1 { "byte" } else { "bytes" };
    let lines_word = if lines == 1 { "line" } else { "lines" };
    format!("[... {bytes} {bytes_word} ({lines} {lines_word}) cut ...]")
}

fn count_lines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

impl Capture {
    /// A capture keeping at most `limit` bytes: the first `limit / 2` and the last
    /// `limit - limit / 2`.
    pub(crate) fn new(limit: usize) -> Self {
        let head_max = limit / 2;
        Capture { head: Vec::new(), tail: VecDeque::new(), head_max, tail_max: limit - head_max, total: 0, lines: 0, before_tail: None }
    }

    /// Adds bytes.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.lines += count_lines(bytes);
        let room = self.head_max - self.head.len();
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.is_empty() {
            return;
        }
        if bytes.len() >= self.tail_max {
            let start = bytes.len() - self.tail_max;
            let before = if start > 0 { Some(bytes[start - 1]) } else { self.tail.back().or(self.head.last()).copied() };
            if start > 0 || !self.tail.is_empty() {
                self.before_tail = before;
            }
            self.tail.clear();
            self.tail.extend(&bytes[start..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_max);
        if overflow > 0 {
            self.before_tail = self.tail.get(overflow - 1).copied();
        }
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// What was captured.
    pub(crate) fn finish(&self) -> Captured {
        let mut head = self.head.clone();
        let mut tail: Vec<u8> = self.tail.iter().copied().collect();
        if (head.len() + tail.len()) as u64 == self.total {
            head.append(&mut tail);
        }
        let tail_starts_line = self.before_tail == Some(b'\n');
        Captured { head, tail, total_bytes: self.total, total_lines: self.lines, tail_starts_line }
    }
}

/// One character of shown text and how many stream bytes it stands for (1–4; an invalid
/// sequence shows as one U+FFFD).
#[derive(Debug, Clone, Copy)]
struct Unit {
    ch: char,
    raw: u8,
}

fn units(bytes: &[u8]) -> Vec<Unit> {
    let mut out = Vec::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.extend(chunk.valid().chars().map(|ch| Unit { ch, raw: ch.len_utf8() as u8 }));
        if !chunk.invalid().is_empty() {
            out.push(Unit { ch: char::REPLACEMENT_CHARACTER, raw: chunk.invalid().len() as u8 });
        }
    }
    out
}

/// Shown text, stream bytes and line breaks of `units`.
fn measure(units: &[Unit]) -> (String, u64, u64) {
    let text: String = units.iter().map(|u| u.ch).collect();
    let raw = units.iter().map(|u| u64::from(u.raw)).sum();
    let lines = units.iter().filter(|u| u.ch == '\n').count() as u64;
    (text, raw, lines)
}

/// How many leading `units` fit in `budget` bytes of text.
fn fitting_prefix(units: &[Unit], budget: usize) -> usize {
    let mut used = 0;
    units
        .iter()
        .take_while(|u| {
            used += u.ch.len_utf8();
            used <= budget
        })
        .count()
}

/// How many trailing `units` fit in `budget` bytes of text.
fn fitting_suffix(units: &[Unit], budget: usize) -> usize {
    let mut used = 0;
    units
        .iter()
        .rev()
        .take_while(|u| {
            used += u.ch.len_utf8();
            used <= budget
        })
        .count()
}

/// Length of an incomplete UTF-8 sequence at the end of `bytes` (a character the capture cut
/// in two), 0 when there is none.
fn incomplete_end(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return 0,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

/// Continuation bytes at the start of `bytes` (the end of a character the capture cut in two).
fn continuation_start(bytes: &[u8]) -> usize {
    bytes.iter().take(3).take_while(|&&b| b & 0xC0 == 0x80).count()
}

impl Captured {
    /// A stream that was kept whole: `bytes` is all of it.
    pub fn whole(bytes: &[u8]) -> Self {
        Captured {
            head: bytes.to_vec(),
            tail: Vec::new(),
            total_bytes: bytes.len() as u64,
            total_lines: count_lines(bytes),
            tail_starts_line: false,
        }
    }

    /// What a capture of `limit` bytes keeps of the stream `bytes` (the first `limit / 2`
    /// and the last `limit - limit / 2` bytes), as a command's capture would.
    pub fn of(bytes: &[u8], limit: usize) -> Self {
        let mut capture = Capture::new(limit);
        capture.push(bytes);
        capture.finish()
    }

    /// Whether the capture left bytes out.
    pub fn is_cut(&self) -> bool {
        (self.head.len() + self.tail.len()) as u64 != self.total_bytes
    }

    /// Whether the stream produced nothing.
    pub fn is_empty(&self) -> bool {
        self.total_bytes == 0
    }

    /// Bytes the stream produced in total.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Line breaks (`\n`) the stream produced in total.
    pub fn total_lines(&self) -> u64 {
        self.total_lines
    }

    /// The kept bytes exactly, with the cut marker line between head and tail when the
    /// capture cut (the candidate launcher relays these to the evaluator).
    pub fn to_bytes(&self) -> Vec<u8> {
        if !self.is_cut() {
            return self.head.clone();
        }
        let removed = self.total_bytes - (self.head.len() + self.tail.len()) as u64;
        let lines = self.total_lines - count_lines(&self.head) - count_lines(&self.tail);
        let mut out = self.head.clone();
        out.push(b'\n');
        out.extend_from_slice(cut_marker(removed, lines).as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&self.tail);
        out
    }

    /// All that was kept, as text ([`Captured::render`] without a budget).
    pub fn text(&self) -> String {
        self.render(usize::MAX)
    }

    /// The stream as text of at most `budget` bytes (module guide): the whole stream when it
    /// was kept and fits, else head, marker line and tail. A budget smaller than the marker
    /// gives the marker alone.
    pub fn render(&self, budget: usize) -> String {
        if !self.is_cut() {
            let text = String::from_utf8_lossy(&self.head);
            if text.len() <= budget {
                return text.into_owned();
            }
        }
        let (head, tail, tail_starts_line) = self.cut_sides();
        let skipped = continuation_start(tail);
        let head = units(&head[..head.len() - incomplete_end(head)]);
        let tail = units(&tail[skipped..]);
        let marker_room = cut_marker(self.total_bytes, self.total_lines).len() + 2;
        let room = budget.saturating_sub(marker_room);
        let head_len = fitting_prefix(&head, room / 2);
        let head_used: usize = head[..head_len].iter().map(|u| u.ch.len_utf8()).sum();
        let tail_len = fitting_suffix(&tail, room - head_used);
        let head_len = snap_head(&head[..head_len]);
        let tail_len = snap_tail(&tail, tail_len, tail_starts_line && skipped == 0);
        let (head_text, head_raw, head_lines) = measure(&head[..head_len]);
        let (tail_text, tail_raw, tail_lines) = measure(&tail[tail.len() - tail_len..]);
        let removed = self.total_bytes - head_raw - tail_raw;
        let removed_lines = self.total_lines - head_lines - tail_lines;
        let mut out = head_text;
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&cut_marker(removed, removed_lines));
        out.push('\n');
        out.push_str(&tail_text);
        out
    }

    /// The head and tail to cut from, and whether the tail starts a line: the capture's own,
    /// or for a stream kept whole its two halves (split before a character, not inside one).
    fn cut_sides(&self) -> (&[u8], &[u8], bool) {
        if self.is_cut() {
            return (&self.head, &self.tail, self.tail_starts_line);
        }
        let mut middle = self.head.len() / 2;
        let mut steps = 0;
        while middle > 0 && steps < 3 && self.head[middle] & 0xC0 == 0x80 {
            middle -= 1;
            steps += 1;
        }
        let (head, tail) = self.head.split_at(middle);
        (head, tail, head.last() == Some(&b'\n'))
    }
}

/// The shown head, ended after its last line break when that lies in its last quarter.
fn snap_head(shown: &[Unit]) -> usize {
    let len = shown.len();
    match shown.iter().rposition(|u| u.ch == '\n') {
        Some(at) if len - (at + 1) <= len / 4 => at + 1,
        _ => len,
    }
}

/// The shown tail (the last `len` units of `tail`), started after its first line break when
/// that lies in its first quarter and the tail does not already start a line (`starts_line`
/// tells whether the byte before all of `tail` is a line break).
fn snap_tail(tail: &[Unit], len: usize, starts_line: bool) -> usize {
    let start = tail.len() - len;
    let at_line_start = if start > 0 { tail[start - 1].ch == '\n' } else { starts_line };
    if at_line_start {
        return len;
    }
    match tail[start..].iter().position(|u| u.ch == '\n') {
        Some(at) if at < len / 4 => len - (at + 1),
        _ => len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_streams_are_kept_whole() {
        let mut c = Capture::new(10);
        c.push(b"abc");
        c.push(b"de\nfgh");
        let got = c.finish();
        assert_eq!(got, Captured::whole(b"abcde\nfgh"));
        assert_eq!((got.total_bytes(), got.total_lines()), (9, 1));
        assert!(!got.is_cut());
        assert_eq!(got.text(), "abcde\nfgh");
    }

    #[test]
    fn exactly_the_limit_is_not_cut() {
        let got = Captured::of(b"0123456789", 10);
        assert!(!got.is_cut());
        assert_eq!(got.to_bytes(), b"0123456789");
    }

    #[test]
    fn long_streams_keep_head_and_tail_in_any_chunking() {
        let data: Vec<u8> = (0..100u8).map(|i| b'a' + i % 26).collect();
        for chunk in [1, 3, 7, 100] {
            let mut c = Capture::new(11);
            for piece in data.chunks(chunk) {
                c.push(piece);
            }
            let got = c.finish();
            assert!(got.is_cut());
            assert_eq!(got.total_bytes(), 100);
            let expected = format!("abcde\n[... 89 bytes (0 lines) cut ...]\n{}", String::from_utf8_lossy(&data[94..]));
            assert_eq!(String::from_utf8(got.to_bytes()).unwrap(), expected, "chunk {chunk}");
        }
    }

    #[test]
    fn output_cut_marker_counts_the_true_bytes_removed() {
        // 1000 lines "line NNNN\n" (10 bytes each); the capture keeps 100 bytes, the render
        // shows at most 80: the marker counts every byte and line break not shown.
        let stream: String = (0..1000).map(|i| format!("line {i:04}\n")).collect();
        let captured = Captured::of(stream.as_bytes(), 100);
        assert_eq!(captured.text(), format!("{}[... 9900 bytes (990 lines) cut ...]\n{}", &stream[..50], &stream[9950..]));
        let shown = captured.render(80);
        assert_eq!(shown, "line 0000\nline 0001\n[... 9960 bytes (996 lines) cut ...]\nline 0998\nline 0999\n");
        assert!(shown.len() <= 80);
    }

    #[test]
    fn cuts_never_split_a_character() {
        // "é" is two bytes; a capture of 7 keeps 3 + 4 bytes and so cuts one in two on the
        // head side: that half counts as removed.
        let stream = "é".repeat(10);
        let captured = Captured::of(stream.as_bytes(), 7);
        assert_eq!(captured.text(), "é\n[... 14 bytes (0 lines) cut ...]\néé");
        // Bytes that are not UTF-8 show as U+FFFD and count as the bytes they are.
        let mut stream = b"\xff\xfe".to_vec();
        stream.extend_from_slice(&[b'-'; 100]);
        stream.extend_from_slice(b"\xffz");
        let invalid = Captured::of(&stream, 8);
        assert_eq!(invalid.text(), "\u{fffd}\u{fffd}--\n[... 96 bytes (0 lines) cut ...]\n--\u{fffd}z");
        assert_eq!(Captured::whole(b"ab\xffc").text(), "ab\u{fffd}c");
    }

    #[test]
    fn a_whole_stream_longer_than_the_budget_is_cut_once() {
        let captured = Captured::whole(&[b'x'; 200]);
        assert_eq!(captured.render(60), format!("{}\n[... 175 bytes (0 lines) cut ...]\n{}", "x".repeat(12), "x".repeat(13)));
        assert_eq!(captured.render(10), "[... 200 bytes (0 lines) cut ...]\n", "a budget below the marker shows the marker");
        assert_eq!(cut_marker(1, 1), "[... 1 byte (1 line) cut ...]");
    }
}
