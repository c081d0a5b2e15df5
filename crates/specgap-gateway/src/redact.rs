//! Redaction of the real keys and the sandbox's token from everything the gateway hands back
//! to the agent (and journals): upstream bodies, streamed chunks, header values.
//!
//! A secret is replaced by `[redacted]` wherever its exact bytes occur. In a stream, a chunk
//! whose tail could be the start of a secret split across chunks keeps that tail back until
//! the next chunk shows whether it is; nothing else is delayed, so SSE events (which end with
//! a blank line, never the start of a key) pass at once. Secrets shorter than
//! [`MIN_SECRET_LEN`] bytes are not redacted: replacing every occurrence of a short string
//! would corrupt ordinary text (a local server's key `test` is no secret worth that).

use std::borrow::Cow;

use memchr::memmem;

/// What a secret is replaced by.
pub(crate) const REDACTED: &[u8] = b"[redacted]";

/// Shortest secret redacted, bytes.
pub const MIN_SECRET_LEN: usize = 8;

/// The secrets of one gateway.
#[derive(Debug, Clone)]
pub(crate) struct Redactor {
    secrets: Vec<Vec<u8>>,
}

impl Redactor {
    /// A redactor of `secrets` (shorter ones than [`MIN_SECRET_LEN`] are skipped).
    pub(crate) fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Self {
        let mut secrets: Vec<Vec<u8>> = secrets.into_iter().filter(|s| s.len() >= MIN_SECRET_LEN).map(|s| s.as_bytes().to_vec()).collect();
        // Longest first, so a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `bytes` with every secret replaced.
    pub(crate) fn redact<'b>(&self, bytes: &'b [u8]) -> Cow<'b, [u8]> {
        let mut out: Cow<'b, [u8]> = Cow::Borrowed(bytes);
        for secret in &self.secrets {
            if memmem::find(&out, secret).is_none() {
                continue;
            }
            let mut replaced = Vec::with_capacity(out.len());
            let mut rest: &[u8] = &out;
            while let Some(at) = memmem::find(rest, secret) {
                replaced.extend_from_slice(&rest[..at]);
                replaced.extend_from_slice(REDACTED);
                rest = &rest[at + secret.len()..];
            }
            replaced.extend_from_slice(rest);
            out = Cow::Owned(replaced);
        }
        out
    }

    /// Whether `bytes` holds a secret.
    pub(crate) fn contains_secret(&self, bytes: &[u8]) -> bool {
        self.secrets.iter().any(|s| memmem::find(bytes, s).is_some())
    }

    /// The length of the longest suffix of `bytes` that is a proper prefix of a secret.
    fn held_tail(&self, bytes: &[u8]) -> usize {
        let mut longest = 0;
        for secret in &self.secrets {
            let max = (secret.len() - 1).min(bytes.len());
            for len in (longest + 1..=max).rev() {
                if bytes[bytes.len() - len..] == secret[..len] {
                    longest = len;
                    break;
                }
            }
        }
        longest
    }
}

/// Redaction across the chunks of one stream.
#[derive(Debug, Default)]
pub(crate) struct StreamRedactor {
    held: Vec<u8>,
}

impl StreamRedactor {
    /// The bytes to forward now for the next `chunk`.
    pub(crate) fn push(&mut self, redactor: &Redactor, chunk: &[u8]) -> Vec<u8> {
        let joined: Cow<'_, [u8]> = if self.held.is_empty() {
            Cow::Borrowed(chunk)
        } else {
            let mut joined = std::mem::take(&mut self.held);
            joined.extend_from_slice(chunk);
            Cow::Owned(joined)
        };
        let mut out = redactor.redact(&joined).into_owned();
        let tail = redactor.held_tail(&out);
        self.held = out.split_off(out.len() - tail);
        out
    }

    /// What is still held at the end of the stream (never a whole secret).
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_is_replaced_and_short_secrets_are_skipped() {
        let r = Redactor::new(["sk-canary-0123456789", "abc"]);
        assert_eq!(&*r.redact(b"bad key sk-canary-0123456789, again sk-canary-0123456789."), b"bad key [redacted], again [redacted].");
        assert_eq!(&*r.redact(b"abc is fine"), b"abc is fine");
        assert!(matches!(r.redact(b"nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_secret_split_across_chunks_is_redacted_and_plain_events_are_not_held() {
        let r = Redactor::new(["sk-canary-0123456789"]);
        let mut s = StreamRedactor::default();
        let mut out = Vec::new();
        let first = s.push(&r, b"data: {\"x\":\"sk-can");
        assert_eq!(first, b"data: {\"x\":\"");
        out.extend(first);
        out.extend(s.push(&r, b"ary-0123456789\"}\n\n"));
        out.extend(s.finish());
        assert_eq!(out, b"data: {\"x\":\"[redacted]\"}\n\n");
        // A complete event is forwarded whole, nothing held back.
        assert_eq!(s.push(&r, b"data: {}\n\n"), b"data: {}\n\n");
        // A held tail that turns out not to be a key is forwarded with the next chunk.
        assert_eq!(s.push(&r, b"x sk"), b"x ");
        assert_eq!(s.push(&r, b"y"), b"sky");
        assert_eq!(s.push(&r, b" sk-"), b" ");
        assert_eq!(s.finish(), b"sk-");
    }
}
