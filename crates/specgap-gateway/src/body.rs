//! A request body's top level, read without building the whole document: the fields in
//! order with the exact bytes of each value ([`serde_json::value::RawValue`]), so the gateway
//! can check the model, see whether the request streams, count messages and tools, and cut
//! the body into journal segments at the byte offsets of its messages.

use std::fmt;

use serde::Deserializer as _;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;

/// A body's top-level object.
#[derive(Debug)]
pub(crate) struct TopLevel<'a> {
    body: &'a [u8],
    fields: Vec<(String, &'a RawValue)>,
}

/// Why a body cannot be inspected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Not a JSON object.
    NotAnObject(String),
    /// A top-level key occurs twice (upstreams differ on which one wins, so the gateway
    /// cannot know which model would be used).
    DuplicateKey(String),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::NotAnObject(e) => write!(f, "the request body is not a json object: {e}"),
            BodyError::DuplicateKey(key) => write!(f, "the request body names the field {key:?} twice"),
        }
    }
}

/// A byte range of the body.
pub(crate) type Span = std::ops::Range<usize>;

impl<'a> TopLevel<'a> {
    /// Reads `body`'s top level.
    pub(crate) fn read(body: &'a [u8]) -> Result<Self, BodyError> {
        let mut de = serde_json::Deserializer::from_slice(body);
        let fields = (&mut de).deserialize_map(FieldsVisitor).map_err(|e| BodyError::NotAnObject(e.to_string()))?;
        de.end().map_err(|e| BodyError::NotAnObject(e.to_string()))?;
        for (i, (key, _)) in fields.iter().enumerate() {
            if fields[..i].iter().any(|(k, _)| k == key) {
                return Err(BodyError::DuplicateKey(key.clone()));
            }
        }
        Ok(TopLevel { body, fields })
    }

    /// The raw value of `key`.
    pub(crate) fn raw(&self, key: &str) -> Option<&'a RawValue> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// `key`'s value if it is a string (`Some(Err)` when present but not a string).
    pub(crate) fn string(&self, key: &str) -> Option<Result<String, ()>> {
        self.raw(key).map(|raw| serde_json::from_str::<String>(raw.get()).map_err(|_| ()))
    }

    /// Whether `key` is `true`.
    pub(crate) fn is_true(&self, key: &str) -> bool {
        self.raw(key).is_some_and(|raw| raw.get() == "true")
    }

    /// The raw elements of `key` when it is an array.
    pub(crate) fn elements(&self, key: &str) -> Option<Vec<&'a RawValue>> {
        self.raw(key).and_then(|raw| serde_json::from_str::<Vec<&'a RawValue>>(raw.get()).ok())
    }

    /// Where `raw` (a value read from this body) lies in the body.
    pub(crate) fn span(&self, raw: &RawValue) -> Span {
        let start = raw.get().as_ptr() as usize - self.body.as_ptr() as usize;
        start..start + raw.get().len()
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Vec<(String, &'de RawValue)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a json object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value: &'de RawValue = map.next_value()?;
            fields.push((key, value));
        }
        Ok(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_their_exact_bytes_and_offsets() {
        let body = b" { \"messages\" : [ {\"role\":\"user\"} ,\n\t{\"b\":1}],\"model\":\"m\\u0031\", \"stream\":true }\n";
        let top = TopLevel::read(body).unwrap();
        assert_eq!(top.string("model"), Some(Ok("m1".into())));
        assert!(top.is_true("stream"));
        let elements = top.elements("messages").unwrap();
        let spans: Vec<Span> = elements.iter().map(|e| top.span(e)).collect();
        assert_eq!(&body[spans[0].clone()], b"{\"role\":\"user\"}");
        assert_eq!(&body[spans[1].clone()], b"{\"b\":1}");
        assert_eq!(TopLevel::read(b"{\"model\":\"a\",\"model\":\"b\"}").unwrap_err(), BodyError::DuplicateKey("model".into()));
        assert!(matches!(TopLevel::read(b"[1]"), Err(BodyError::NotAnObject(_))));
        assert!(matches!(TopLevel::read(b"{} x"), Err(BodyError::NotAnObject(_))));
        assert_eq!(TopLevel::read(b"{\"model\":3}").unwrap().string("model"), Some(Err(())));
    }
}
