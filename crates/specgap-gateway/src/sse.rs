//! An incremental server-sent-events reader (the WHATWG event-stream format the four
//! protocols stream in): bytes in any chunking, events out.
//!
//! Lines end with `\n`, `\r\n` or `\r`; `event:` names the event, `data:` lines are joined with
//! `\n`, one leading space after the colon is dropped, lines starting with `:` are comments, a
//! blank line dispatches. An event without data is not dispatched, nor is one left unfinished
//! when the stream ends (as the format says).

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field (`""` when absent, which the format reads as `message`).
    pub(crate) name: String,
    /// The data lines joined with `\n`.
    pub(crate) data: String,
}

/// The reader's state between chunks.
#[derive(Debug, Default)]
pub(crate) struct SseReader {
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    name: String,
    data: String,
    has_data: bool,
}

impl SseReader {
    /// Reads `chunk`, calling `dispatch` for every event it completes.
    pub(crate) fn feed(&mut self, chunk: &[u8], mut dispatch: impl FnMut(SseEvent)) {
        let mut rest = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            self.line.extend_from_slice(&rest[..end]);
            let crlf = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if crlf {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, &mut dispatch);
        }
        self.line.extend_from_slice(rest);
    }

    fn line_done(&mut self, line: &[u8], dispatch: &mut impl FnMut(SseEvent)) {
        if line.is_empty() {
            if self.has_data {
                dispatch(SseEvent { name: std::mem::take(&mut self.name), data: std::mem::take(&mut self.data) });
            }
            self.name.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"event" => self.name = value.into_owned(),
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut reader = SseReader::default();
        let mut out = Vec::new();
        for chunk in chunks {
            reader.feed(chunk, |e| out.push(e));
        }
        out
    }

    fn event(name: &str, data: &str) -> SseEvent {
        SseEvent { name: name.into(), data: data.into() }
    }

    #[test]
    fn events_survive_any_chunking_and_line_ending() {
        let whole: &[u8] = b"event: a\ndata: {\"x\":1}\n\n: comment\ndata:two\ndata: lines\n\nevent: b\r\ndata: 3\r\n\r\ndata: unfinished";
        let expected = vec![event("a", "{\"x\":1}"), event("", "two\nlines"), event("b", "3")];
        assert_eq!(events(&[whole]), expected);
        let bytes: Vec<&[u8]> = whole.chunks(1).collect();
        assert_eq!(events(&bytes), expected);
        // A CR at a chunk's end followed by LF in the next is one line ending.
        assert_eq!(events(&[b"data: x\r", b"\n\r", b"\n"]), vec![event("", "x")]);
        assert_eq!(events(&[b"data: y\r\r"]), vec![event("", "y")]);
        // An event with a name but no data is not dispatched.
        assert_eq!(events(&[b"event: ping\n\n"]), vec![]);
    }
}
