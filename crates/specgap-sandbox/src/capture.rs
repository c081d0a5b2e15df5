//! Bounded capture of a command's output: the head and the tail are kept, the middle is
//! counted and replaced by a stated cut (DESIGN §3.2 "output (head and tail kept, the cut
//! stated)").

use std::collections::VecDeque;

/// Keeps the first `head_max` and the last `tail_max` bytes of a stream.
#[derive(Debug)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_max: usize,
    tail_max: usize,
    total: u64,
}

/// A rendered capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Captured {
    /// The kept bytes, with the cut marker when something was cut.
    pub bytes: Vec<u8>,
    /// Whether bytes were cut.
    pub cut: bool,
    /// Bytes the stream produced in total.
    pub total: u64,
}

/// The marker that replaces the cut middle of a stream: `"\n[... N bytes cut ...]\n"`, where
/// N is the number of bytes left out.
pub fn cut_marker(cut: u64) -> String {
    format!("\n[... {cut} bytes cut ...]\n")
}

impl Capture {
    /// A capture keeping at most `limit` bytes: the first `limit / 2` and the last
    /// `limit - limit / 2`.
    pub(crate) fn new(limit: usize) -> Self {
        let head_max = limit / 2;
        Capture { head: Vec::new(), tail: VecDeque::new(), head_max, tail_max: limit - head_max, total: 0 }
    }

    /// Adds bytes.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_max - self.head.len();
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_max {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_max..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_max);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// The kept bytes, with the cut marker between head and tail when the stream was longer
    /// than the limit.
    pub(crate) fn render(&self) -> Captured {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let cut = self.total - kept;
        let mut bytes = Vec::with_capacity(self.head.len() + self.tail.len() + 40);
        bytes.extend_from_slice(&self.head);
        if cut > 0 {
            bytes.extend_from_slice(cut_marker(cut).as_bytes());
        }
        let (front, back) = self.tail.as_slices();
        bytes.extend_from_slice(front);
        bytes.extend_from_slice(back);
        Captured { bytes, cut: cut > 0, total: self.total }
    }
}

impl Captured {
    /// The kept bytes as text, invalid UTF-8 replaced by U+FFFD.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_streams_are_kept_whole() {
        let mut c = Capture::new(10);
        c.push(b"abc");
        c.push(b"defgh");
        assert_eq!(c.render(), Captured { bytes: b"abcdefgh".to_vec(), cut: false, total: 8 });
    }

    #[test]
    fn exactly_the_limit_is_not_cut() {
        let mut c = Capture::new(10);
        c.push(b"0123456789");
        assert_eq!(c.render(), Captured { bytes: b"0123456789".to_vec(), cut: false, total: 10 });
    }

    #[test]
    fn long_streams_keep_head_and_tail_in_any_chunking() {
        let data: Vec<u8> = (0..100u8).map(|i| b'a' + i % 26).collect();
        for chunk in [1, 3, 7, 100] {
            let mut c = Capture::new(11);
            for piece in data.chunks(chunk) {
                c.push(piece);
            }
            let r = c.render();
            let expected = format!("abcde{}{}", cut_marker(89), String::from_utf8_lossy(&data[94..]));
            assert_eq!(r.text(), expected, "chunk {chunk}");
            assert!(r.cut);
            assert_eq!(r.total, 100);
        }
    }
}
