//! The journal: every exchange, with each conversation message stored once.
//!
//! A model request re-sends the whole conversation; storing each request whole makes a
//! trajectory quadratic in its length (inspect_ai PR #3374). Here a request body is cut at the
//! byte offsets of its conversation elements (`messages`, `input` items, `contents`) and of
//! its large repeated parts (`tools`, `system`, `instructions`, `systemInstruction`): each
//! piece is a *blob*, stored once under the SHA-256 of its exact bytes, and the request is a
//! *skeleton* of literal text between the pieces and blob references. Concatenating a
//! skeleton's segments gives the body back byte for byte, whatever its key order, spacing or
//! escapes, because nothing is re-serialized; the cut is checked when it is made, and a body
//! that is not a JSON object (or whose cut would not rebuild) is stored as one blob.
//! Response bodies (streamed bytes as forwarded, redacted) are blobs too.
//!
//! # File format (JSON lines, appended, flushed after every exchange)
//!
//! ```text
//! {"kind":"blob","id":"<sha256 hex>","text":"<the bytes, when UTF-8>"}     (or "hex":"...")
//! {"kind":"exchange","seq":0,"method":"POST","path":"/v1/chat/completions",
//!  "upstream_url":"https://api.example/v1/chat/completions","headers":[["content-type","application/json"],...],
//!  "body":[{"text":"{\"model\":\"m\",\"messages\":["},{"blob":"<id>"},{"text":"]}"}],
//!  "status":200,"response_headers":[...],"response_body":"<id>","outcome":{"outcome":"completed"},...}
//! ```
//!
//! A blob line always precedes the first exchange that refers to it. `headers` are the
//! headers sent upstream except the credential, which is written as
//! `["authorization","Bearer [key]"]` (or its header / query parameter with `[key]`), so an
//! audit knows where to put a key when it resends the request ([`Journal::rebuild`]).

use std::collections::HashMap;
use std::fs::File;
use std::hash::BuildHasher as _;
use std::io::{BufRead as _, BufReader, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use specgap_protocol::event::Usage;

use crate::body::{Span, TopLevel};
use crate::config::Protocol;
use crate::endpoint::Endpoint;
use crate::error::GatewayError;
use crate::supervisor::{Outcome, RequestClass};

/// The placeholder written where the real key went.
pub const KEY_PLACEHOLDER: &str = "[key]";

/// A blob's id: the lowercase hex SHA-256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BlobId(pub String);

impl BlobId {
    /// The id of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let digest = Sha256::digest(bytes);
        let mut hex = String::with_capacity(64);
        for byte in digest {
            hex.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
            hex.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
        }
        BlobId(hex)
    }
}

/// A blob and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// Its id.
    pub id: BlobId,
    /// Its bytes.
    pub bytes: Arc<[u8]>,
}

/// One conversation message of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageRef {
    /// The message's blob.
    pub id: BlobId,
    /// Whether this request stored it first (a message the conversation did not have before).
    pub new: bool,
}

/// A piece of a request body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Segment {
    /// Literal text between blobs.
    Text(String),
    /// A blob's bytes.
    Blob(BlobId),
}

/// One exchange as journalled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// Arrival number.
    pub seq: u64,
    /// The method as received.
    pub method: String,
    /// The path as received (no query).
    pub path: String,
    /// The protocol, when routed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// The endpoint, when routed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Endpoint>,
    /// The class.
    pub class: RequestClass,
    /// The model named, when any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The URL the request was (or would have been) sent to, forwarded query included; the
    /// key is never in it (a query-placed key appears as [`KEY_PLACEHOLDER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_url: Option<String>,
    /// Headers sent upstream, in order, the credential as [`KEY_PLACEHOLDER`].
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The request body's skeleton (`None` when the body was never read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Vec<Segment>>,
    /// Whether [`JournalEntry::body`] is only the part of the body received before the
    /// exchange ended (the client had not finished sending it: a stalled upload the wall
    /// budget cut, or a client that went away). Such a body is one blob, never forwarded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub body_incomplete: bool,
    /// The status the client got.
    pub status: u16,
    /// Response headers the client got.
    #[serde(default)]
    pub response_headers: Vec<(String, String)>,
    /// The response body the client got (redacted), as a blob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_body: Option<BlobId>,
    /// How the exchange ended.
    pub outcome: Outcome,
    /// Its usage.
    pub usage: Usage,
    /// Cache-written prompt tokens (Anthropic).
    #[serde(default)]
    pub cache_creation_tokens: u64,
}

/// A request rebuilt from the journal, ready to resend (after putting a key where the
/// placeholder is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebuiltRequest {
    /// Method.
    pub method: String,
    /// Upstream URL.
    pub url: String,
    /// Headers as sent, the credential as [`KEY_PLACEHOLDER`].
    pub headers: Vec<(String, String)>,
    /// The body, byte for byte.
    pub body: Vec<u8>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Blob {
        id: BlobId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hex: Option<String>,
    },
    Exchange(Box<JournalEntry>),
}

/// The journal of one gateway: blobs once each, entries in completion order.
#[derive(Debug, Default)]
pub struct Journal {
    blobs: HashMap<BlobId, Arc<[u8]>>,
    /// Blobs by a fast hash of their bytes (randomly seeded, in memory only): a piece seen
    /// before is found by this hash and a byte comparison, so SHA-256 is computed once per
    /// distinct blob, not once per request that re-sends it.
    seen: HashMap<u64, Vec<BlobId>>,
    fast: foldhash::fast::RandomState,
    entries: Vec<JournalEntry>,
    file: Option<(PathBuf, BufWriter<File>)>,
}

/// A cut body: its skeleton, its messages, and the blobs first stored by it.
#[derive(Debug, Default)]
pub(crate) struct StoredBody {
    pub(crate) segments: Vec<Segment>,
    pub(crate) messages: Vec<MessageRef>,
    pub(crate) new_blobs: Vec<Blob>,
}

impl Journal {
    /// An in-memory journal that also appends to `path` (created or truncated).
    ///
    /// # Errors
    /// [`GatewayError::Journal`] naming the path.
    pub fn create(path: &Path) -> Result<Self, GatewayError> {
        let file = File::create(path).map_err(|source| GatewayError::Journal { path: path.to_path_buf(), source })?;
        Ok(Journal { file: Some((path.to_path_buf(), BufWriter::new(file))), ..Journal::default() })
    }

    /// Reads a journal file.
    ///
    /// # Errors
    /// [`GatewayError::Journal`] when it cannot be read, [`GatewayError::JournalFormat`] for
    /// a line the gateway does not write.
    pub fn read(path: &Path) -> Result<Self, GatewayError> {
        let io = |source| GatewayError::Journal { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io)?;
        let mut journal = Journal::default();
        for (i, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(io)?;
            if line.trim().is_empty() {
                continue;
            }
            let format = |message: String| GatewayError::JournalFormat { path: path.to_path_buf(), line: i + 1, message };
            match serde_json::from_str::<Line>(&line).map_err(|e| format(e.to_string()))? {
                Line::Blob { id, text, hex } => {
                    let bytes = match (text, hex) {
                        (Some(text), None) => text.into_bytes(),
                        (None, Some(hex)) => from_hex(&hex).ok_or_else(|| format("a blob's hex is not hex".into()))?,
                        _ => return Err(format("a blob line needs exactly one of text and hex".into())),
                    };
                    if BlobId::of(&bytes) != id {
                        return Err(format(format!("blob {} does not hash to its id", id.0)));
                    }
                    journal.seen.entry(journal.fast.hash_one(&bytes[..])).or_default().push(id.clone());
                    journal.blobs.insert(id, bytes.into());
                }
                Line::Exchange(entry) => journal.entries.push(*entry),
            }
        }
        Ok(journal)
    }

    /// The bytes of a blob.
    pub fn blob(&self, id: &BlobId) -> Option<&[u8]> {
        self.blobs.get(id).map(|b| &b[..])
    }

    /// How many distinct blobs the journal holds.
    pub fn blob_count(&self) -> usize {
        self.blobs.len()
    }

    /// Every entry, in completion order.
    pub fn entries(&self) -> &[JournalEntry] {
        &self.entries
    }

    /// The entry of request `seq`.
    pub fn entry(&self, seq: u64) -> Option<&JournalEntry> {
        self.entries.iter().find(|e| e.seq == seq)
    }

    /// Request `seq` as it was sent upstream: method, URL, headers and the body byte for
    /// byte. `None` when there is no such entry, its body was never read, or a blob is
    /// missing.
    pub fn rebuild(&self, seq: u64) -> Option<RebuiltRequest> {
        let entry = self.entry(seq)?;
        let mut body = Vec::new();
        for segment in entry.body.as_ref()? {
            match segment {
                Segment::Text(text) => body.extend_from_slice(text.as_bytes()),
                Segment::Blob(id) => body.extend_from_slice(self.blob(id)?),
            }
        }
        Some(RebuiltRequest {
            method: entry.method.clone(),
            url: entry.upstream_url.clone().unwrap_or_default(),
            headers: entry.headers.clone(),
            body,
        })
    }

    /// Stores `bytes` as a blob; the blob is returned when it is new.
    pub(crate) fn store_blob(&mut self, bytes: &[u8]) -> Result<(BlobId, Option<Blob>), GatewayError> {
        let fast = self.fast.hash_one(bytes);
        if let Some(candidates) = self.seen.get(&fast)
            && let Some(id) = candidates.iter().find(|id| self.blobs.get(*id).is_some_and(|b| **b == *bytes))
        {
            return Ok((id.clone(), None));
        }
        let id = BlobId::of(bytes);
        self.seen.entry(fast).or_default().push(id.clone());
        if self.blobs.contains_key(&id) {
            return Ok((id, None));
        }
        let bytes: Arc<[u8]> = bytes.into();
        self.blobs.insert(id.clone(), bytes.clone());
        if let Some((path, file)) = &mut self.file {
            let line = match std::str::from_utf8(&bytes) {
                Ok(text) => Line::Blob { id: id.clone(), text: Some(text.to_string()), hex: None },
                Err(_) => Line::Blob { id: id.clone(), text: None, hex: Some(to_hex(&bytes)) },
            };
            write_line(path, file, &line)?;
        }
        Ok((id.clone(), Some(Blob { id, bytes })))
    }

    /// Cuts a request body into blobs and a skeleton (module guide).
    pub(crate) fn store_body(&mut self, protocol: Protocol, body: &[u8], top: Option<&TopLevel<'_>>) -> Result<StoredBody, GatewayError> {
        let mut stored = StoredBody::default();
        let pieces = top.map(|top| pieces(protocol, top)).unwrap_or_default();
        if !rebuilds(body, &pieces) {
            let (id, new) = self.store_blob(body)?;
            stored.new_blobs.extend(new);
            stored.segments.push(Segment::Blob(id));
            return Ok(stored);
        }
        let mut at = 0;
        for piece in &pieces {
            if piece.span.start > at {
                // `rebuilds` checked that every literal stretch is UTF-8.
                stored.segments.push(Segment::Text(String::from_utf8_lossy(&body[at..piece.span.start]).into_owned()));
            }
            let (id, new) = self.store_blob(&body[piece.span.clone()])?;
            if piece.message {
                stored.messages.push(MessageRef { id: id.clone(), new: new.is_some() });
            }
            stored.new_blobs.extend(new);
            stored.segments.push(Segment::Blob(id));
            at = piece.span.end;
        }
        if at < body.len() || body.is_empty() {
            stored.segments.push(Segment::Text(String::from_utf8_lossy(&body[at..]).into_owned()));
        }
        Ok(stored)
    }

    /// Appends an entry (and flushes the file).
    pub(crate) fn append(&mut self, entry: JournalEntry) -> Result<(), GatewayError> {
        if let Some((path, file)) = &mut self.file {
            write_line(path, file, &Line::Exchange(Box::new(entry.clone())))?;
            file.flush().map_err(|source| GatewayError::Journal { path: path.clone(), source })?;
        }
        self.entries.push(entry);
        Ok(())
    }
}

/// A piece of a body that becomes a blob.
struct Piece {
    span: Span,
    /// A conversation message (listed in the record), not a repeated part.
    message: bool,
}

/// The pieces of a body, in order: the conversation elements and the whole values of the
/// repeated parts, by protocol.
fn pieces(protocol: Protocol, top: &TopLevel<'_>) -> Vec<Piece> {
    let (conversation, parts): (&str, &[&str]) = match protocol {
        Protocol::OpenaiChat => ("messages", &["tools"]),
        Protocol::OpenaiResponses => ("input", &["instructions", "tools"]),
        Protocol::AnthropicMessages => ("messages", &["system", "tools"]),
        Protocol::Gemini => ("contents", &["systemInstruction", "system_instruction", "tools"]),
    };
    let mut pieces: Vec<Piece> = match top.elements(conversation) {
        Some(elements) => elements.iter().map(|e| Piece { span: top.span(e), message: true }).collect(),
        // A string `input` (Responses) is one message.
        None => top.raw(conversation).map(|raw| Piece { span: top.span(raw), message: true }).into_iter().collect(),
    };
    for part in parts {
        if let Some(raw) = top.raw(part) {
            pieces.push(Piece { span: top.span(raw), message: false });
        }
    }
    pieces.sort_by_key(|p| p.span.start);
    pieces
}

/// Whether cutting `body` at `pieces` gives it back: pieces in order, not overlapping, inside
/// the body, and every literal stretch UTF-8 (JSON outside strings is ASCII, so it is).
fn rebuilds(body: &[u8], pieces: &[Piece]) -> bool {
    let mut at = 0;
    for piece in pieces {
        if piece.span.start < at || piece.span.end > body.len() || std::str::from_utf8(&body[at..piece.span.start]).is_err() {
            return false;
        }
        at = piece.span.end;
    }
    !pieces.is_empty() && std::str::from_utf8(&body[at..]).is_ok()
}

fn write_line(path: &Path, file: &mut BufWriter<File>, line: &Line) -> Result<(), GatewayError> {
    let io = |source| GatewayError::Journal { path: path.to_path_buf(), source };
    serde_json::to_writer(&mut *file, line).map_err(|e| io(std::io::Error::other(e)))?;
    file.write_all(b"\n").map_err(io)
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| hex.get(i..i + 2).and_then(|pair| u8::from_str_radix(pair, 16).ok())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(protocol: Protocol, body: &[u8], journal: &mut Journal) -> StoredBody {
        let top = TopLevel::read(body).ok();
        journal.store_body(protocol, body, top.as_ref()).unwrap()
    }

    fn join(journal: &Journal, segments: &[Segment]) -> Vec<u8> {
        let mut out = Vec::new();
        for s in segments {
            match s {
                Segment::Text(t) => out.extend_from_slice(t.as_bytes()),
                Segment::Blob(id) => out.extend_from_slice(journal.blob(id).unwrap()),
            }
        }
        out
    }

    #[test]
    fn a_resent_history_is_stored_once() {
        let mut journal = Journal::default();
        let first = br#"{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"name":"t"}]}"#;
        let second =
            br#"{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"tools":[{"name":"t"}]}"#;
        let a = cut(Protocol::OpenaiChat, first, &mut journal);
        assert_eq!(a.messages.iter().map(|m| m.new).collect::<Vec<_>>(), vec![true]);
        assert_eq!(a.new_blobs.len(), 2);
        let b = cut(Protocol::OpenaiChat, second, &mut journal);
        assert_eq!(b.messages.iter().map(|m| m.new).collect::<Vec<_>>(), vec![false, true]);
        assert_eq!(b.new_blobs.len(), 1, "only the new message");
        assert_eq!(journal.blob_count(), 3);
        assert_eq!(join(&journal, &a.segments), first);
        assert_eq!(join(&journal, &b.segments), second);
    }

    #[test]
    fn bodies_that_cannot_be_cut_are_one_blob() {
        let mut journal = Journal::default();
        for body in [&b"not json \xff"[..], b"{\"model\":\"m\"}", b"", b"[1,2]"] {
            let stored = cut(Protocol::AnthropicMessages, body, &mut journal);
            assert_eq!(stored.segments.len(), 1, "{body:?}");
            assert_eq!(join(&journal, &stored.segments), body);
        }
        assert_eq!(from_hex(&to_hex(b"\x00\xff")), Some(vec![0, 255]));
    }
}
