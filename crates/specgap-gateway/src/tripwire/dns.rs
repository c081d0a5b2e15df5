//! The tripwire's DNS responder: the question of a query, and the answer that sends every
//! IPv4 lookup to the tripwire's address (RFC 1035 §4.1 message format).

use std::net::Ipv4Addr;

/// Record type A (RFC 1035 §3.2.2).
const TYPE_A: u16 = 1;
/// Class IN.
const CLASS_IN: u16 = 1;
/// Response code "format error".
const RCODE_FORMERR: u8 = 1;
/// TTL of the answers, seconds: short, so nothing caches the tripwire's address for long.
const TTL_SEC: u32 = 1;

/// The question of a query: the name (lowercase, without the final dot) and the record type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Question {
    pub(super) name: String,
    pub(super) record_type: u16,
    /// Offset just past the question's class.
    end: usize,
}

/// The record type's mnemonic (`A`, `AAAA`, `HTTPS`, …) or `TYPE<n>` (RFC 3597 §5).
pub(super) fn type_name(record_type: u16) -> String {
    match record_type {
        1 => "A".into(),
        2 => "NS".into(),
        5 => "CNAME".into(),
        6 => "SOA".into(),
        12 => "PTR".into(),
        15 => "MX".into(),
        16 => "TXT".into(),
        28 => "AAAA".into(),
        33 => "SRV".into(),
        64 => "SVCB".into(),
        65 => "HTTPS".into(),
        other => format!("TYPE{other}"),
    }
}

/// The first question of `query`, if it is a standard query with one.
pub(super) fn question(query: &[u8]) -> Option<Question> {
    if query.len() < 12 || query[2] & 0x80 != 0 || u16::from_be_bytes([query[4], query[5]]) == 0 {
        return None;
    }
    let mut labels: Vec<String> = Vec::new();
    let mut at = 12;
    loop {
        let len = usize::from(*query.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        if len > 63 {
            return None; // compression or an extended label type: never in a question we accept
        }
        let label = query.get(at..at + len)?;
        labels.push(String::from_utf8_lossy(label).to_ascii_lowercase());
        at += len;
    }
    let record_type = u16::from_be_bytes([*query.get(at)?, *query.get(at + 1)?]);
    query.get(at + 3)?;
    Some(Question { name: labels.join("."), record_type, end: at + 4 })
}

/// The answer to `query`: for an A question of class IN one record with `address`, for every
/// other type no record (NOERROR, so resolvers fall back to the A answer), and a format error
/// for what is not a query with a question.
pub(super) fn answer(query: &[u8], address: Ipv4Addr) -> Option<Vec<u8>> {
    if query.len() < 12 || query[2] & 0x80 != 0 {
        return None; // a response: never answer one
    }
    let Some(question) = question(query) else {
        let mut reply = query[..12].to_vec();
        reply[2] = 0x80 | (query[2] & 0x79);
        reply[3] = 0x80 | RCODE_FORMERR;
        reply[4..12].fill(0);
        return Some(reply);
    };
    let class = u16::from_be_bytes([query[question.end - 2], query[question.end - 1]]);
    let answers = u16::from(question.record_type == TYPE_A && class == CLASS_IN);
    let mut reply = Vec::with_capacity(question.end + 16);
    reply.extend_from_slice(&query[..2]); // id
    reply.push(0x80 | (query[2] & 0x79)); // QR, the query's opcode and RD
    reply.push(0x80); // RA, NOERROR
    reply.extend_from_slice(&1u16.to_be_bytes());
    reply.extend_from_slice(&answers.to_be_bytes());
    reply.extend_from_slice(&[0, 0, 0, 0]); // no authority, no additional records
    reply.extend_from_slice(&query[12..question.end]);
    if answers == 1 {
        reply.extend_from_slice(&[0xc0, 0x0c]); // the question's name
        reply.extend_from_slice(&TYPE_A.to_be_bytes());
        reply.extend_from_slice(&CLASS_IN.to_be_bytes());
        reply.extend_from_slice(&TTL_SEC.to_be_bytes());
        reply.extend_from_slice(&4u16.to_be_bytes());
        reply.extend_from_slice(&address.octets());
    }
    Some(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query as glibc sends it: id 0x1234, RD, one question.
    fn query(name: &str, record_type: u16) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name.split('.') {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.push(0);
        q.extend_from_slice(&record_type.to_be_bytes());
        q.extend_from_slice(&CLASS_IN.to_be_bytes());
        q
    }

    #[test]
    fn an_a_query_gets_the_tripwire_address() {
        let q = query("Api.Anthropic.com", 1);
        assert_eq!(question(&q), Some(Question { name: "api.anthropic.com".into(), record_type: 1, end: q.len() }));
        let reply = answer(&q, Ipv4Addr::new(127, 0, 0, 2)).unwrap();
        let mut expected = vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0];
        expected.extend_from_slice(&q[12..]);
        expected.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 127, 0, 0, 2]);
        assert_eq!(reply, expected);
    }

    #[test]
    fn an_aaaa_query_gets_no_record() {
        let q = query("api.openai.com", 28);
        let reply = answer(&q, Ipv4Addr::new(127, 0, 0, 2)).unwrap();
        let mut expected = vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0];
        expected.extend_from_slice(&q[12..]);
        assert_eq!(reply, expected);
        assert_eq!(type_name(28), "AAAA");
        assert_eq!(type_name(999), "TYPE999");
    }

    #[test]
    fn truncated_queries_get_a_format_error_and_responses_nothing() {
        let q = query("example.org", 1);
        let cut = &q[..q.len() - 3];
        assert_eq!(question(cut), None);
        assert_eq!(answer(cut, Ipv4Addr::LOCALHOST).unwrap(), vec![0x12, 0x34, 0x81, 0x81, 0, 0, 0, 0, 0, 0, 0, 0]);
        let mut response = q.clone();
        response[2] |= 0x80;
        assert_eq!(answer(&response, Ipv4Addr::LOCALHOST), None);
        assert_eq!(answer(&q[..5], Ipv4Addr::LOCALHOST), None);
    }
}
