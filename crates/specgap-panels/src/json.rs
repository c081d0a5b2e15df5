//! Reading the JSON object a panel model was asked for out of its reply text.
//!
//! Models wrap JSON in Markdown fences or a sentence more often than they get it wrong, so a
//! reply counts as JSON when the whole trimmed text is one object, when one ```` ``` ```` fence
//! holds one, or when the text from its first `{` to its last `}` is one. Anything else is
//! malformed and gets the one repair retry (seed 002 A.9.3, A.9.5).

use serde_json::{Map, Value};

/// The JSON object in `text`, if there is one as the module guide says.
pub fn object_in(text: &str) -> Option<Map<String, Value>> {
    let trimmed = text.trim();
    let candidates = [Some(trimmed), fenced(trimmed), braced(trimmed)];
    candidates.into_iter().flatten().find_map(|candidate| match serde_json::from_str::<Value>(candidate) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    })
}

/// The body of the first ```` ``` ```` fence (language tag dropped).
fn fenced(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let after = &text[start + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.find("```")?;
    Some(body[..end].trim())
}

/// From the first `{` to the last `}`.
fn braced(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (end > start).then(|| &text[start..=end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_found_plain_fenced_and_in_prose() {
        for text in [r#"{"covered": true}"#, "```json\n{\"covered\": true}\n```", "Here it is: {\"covered\": true} -- done."] {
            assert_eq!(object_in(text).unwrap()["covered"], Value::Bool(true), "{text}");
        }
        for text in ["covered", "[1, 2]", "{covered: yes}", ""] {
            assert!(object_in(text).is_none(), "{text}");
        }
    }
}
