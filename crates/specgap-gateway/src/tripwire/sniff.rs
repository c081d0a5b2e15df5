//! What the first bytes of a trapped connection say about where it meant to go: the TLS
//! ClientHello's server name (RFC 8446 §4.1.2, RFC 6066 §3) or the HTTP request's `Host`
//! (RFC 9112 §3.2).

/// What was read from a connection so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Sniffed {
    /// More bytes could still tell something.
    NeedMore,
    /// Nothing more to learn: the server name or host, if the bytes held one.
    Done { sni: Option<String>, http_host: Option<String> },
}

/// The most bytes read from one connection.
pub(super) const MAX_BYTES: usize = 16 * 1024;

/// Reads `bytes` (everything received so far; `closed` when the peer sent its last).
pub(super) fn sniff(bytes: &[u8], closed: bool) -> Sniffed {
    let done = |sni, http_host| Sniffed::Done { sni, http_host };
    if bytes.is_empty() {
        return if closed { done(None, None) } else { Sniffed::NeedMore };
    }
    let finished = closed || bytes.len() >= MAX_BYTES;
    if bytes[0] == 0x16 {
        return match client_hello_sni(bytes) {
            Some(found) => done(found, None),
            None if finished => done(None, None),
            None => Sniffed::NeedMore,
        };
    }
    if bytes[0].is_ascii_uppercase() {
        let head_end = memchr::memmem::find(bytes, b"\r\n\r\n");
        if head_end.is_some() || finished {
            let head = &bytes[..head_end.unwrap_or(bytes.len())];
            return done(None, http_host(head));
        }
        return Sniffed::NeedMore;
    }
    done(None, None)
}

/// `Some(name)` once the whole ClientHello is there (`Some(None)` when it names no server),
/// `None` while it is incomplete.
fn client_hello_sni(bytes: &[u8]) -> Option<Option<String>> {
    let record_len = usize::from(u16::from_be_bytes([*bytes.get(3)?, *bytes.get(4)?]));
    let record = bytes.get(5..5 + record_len)?;
    let mut r = Reader { bytes: record, at: 0 };
    if r.u8()? != 1 {
        return Some(None); // not a ClientHello
    }
    let mut parse = || -> Option<Option<String>> {
        r.take(3 + 2 + 32)?; // handshake length, legacy version, random
        let session = usize::from(r.u8()?);
        r.take(session)?;
        let suites = usize::from(r.u16()?);
        r.take(suites)?;
        let compression = usize::from(r.u8()?);
        r.take(compression)?;
        let extensions = usize::from(r.u16()?);
        let mut ext = Reader { bytes: r.take(extensions)?, at: 0 };
        while let (Some(kind), Some(len)) = (ext.u16(), ext.u16()) {
            let body = ext.take(usize::from(len))?;
            if kind == 0 {
                let mut names = Reader { bytes: body, at: 2 };
                if names.u8()? == 0 {
                    let len = usize::from(names.u16()?);
                    return Some(Some(String::from_utf8_lossy(names.take(len)?).to_ascii_lowercase()));
                }
            }
        }
        Some(None)
    };
    // A ClientHello split over several records is rare; what the first holds is enough.
    Some(parse().unwrap_or(None))
}

/// The `Host` header of a request head.
fn http_host(head: &[u8]) -> Option<String> {
    String::from_utf8_lossy(head).lines().skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim().eq_ignore_ascii_case("host").then(|| value.trim().to_ascii_lowercase())
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let slice = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(slice)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ClientHello naming `name`, as one TLS record.
    fn client_hello(name: &str) -> Vec<u8> {
        let mut sni = vec![0, 0]; // server_name extension
        let list_len = 3 + name.len();
        sni.extend_from_slice(&((list_len + 2) as u16).to_be_bytes());
        sni.extend_from_slice(&(list_len as u16).to_be_bytes());
        sni.push(0);
        sni.extend_from_slice(&(name.len() as u16).to_be_bytes());
        sni.extend_from_slice(name.as_bytes());
        let mut hello = vec![3, 3];
        hello.extend_from_slice(&[7; 32]);
        hello.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
        hello.extend_from_slice(&(sni.len() as u16).to_be_bytes());
        hello.extend_from_slice(&sni);
        let mut handshake = vec![1, 0];
        handshake.extend_from_slice(&(hello.len() as u16).to_be_bytes());
        handshake.extend_from_slice(&hello);
        let mut record = vec![0x16, 3, 1];
        record.extend_from_slice(&(handshake.len() as u16).to_be_bytes());
        record.extend_from_slice(&handshake);
        record
    }

    #[test]
    fn a_client_hello_names_its_server_once_complete() {
        let hello = client_hello("API.openai.com");
        assert_eq!(sniff(&hello[..20], false), Sniffed::NeedMore);
        assert_eq!(sniff(&hello, false), Sniffed::Done { sni: Some("api.openai.com".into()), http_host: None });
        assert_eq!(sniff(&hello[..20], true), Sniffed::Done { sni: None, http_host: None });
    }

    #[test]
    fn an_http_request_names_its_host_once_its_head_is_there() {
        let request = b"GET /v1/models HTTP/1.1\r\nUser-Agent: x\r\nHost: Registry.npmjs.org\r\n\r\n";
        assert_eq!(sniff(&request[..30], false), Sniffed::NeedMore);
        assert_eq!(sniff(request, false), Sniffed::Done { sni: None, http_host: Some("registry.npmjs.org".into()) });
    }

    #[test]
    fn other_bytes_and_silence_tell_nothing() {
        assert_eq!(sniff(b"SSH-2.0-x\r\n", true), Sniffed::Done { sni: None, http_host: None });
        assert_eq!(sniff(b"\x00\x01", false), Sniffed::Done { sni: None, http_host: None });
        assert_eq!(sniff(b"", false), Sniffed::NeedMore);
        assert_eq!(sniff(b"", true), Sniffed::Done { sni: None, http_host: None });
    }
}
