//! Small text rules every crate applies the same way: observation placeholders, one-line
//! error chains, and cuts on character boundaries ([`head`], [`tail`]).

use std::collections::BTreeMap;

/// Fills `{key}` placeholders of an observation detail (DESIGN §2 `observations.toml`) from
/// the evaluator's `measured` values: strings bare, other JSON values compact (`3`, `0.25`,
/// `true`). Unknown placeholders are left as written, so a missing value shows instead of
/// vanishing.
pub fn fill_placeholders(template: &str, measured: &BTreeMap<String, serde_json::Value>) -> String {
    let mut out = template.to_string();
    for (key, value) in measured {
        let text = match value {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out = out.replace(&format!("{{{key}}}"), &text);
    }
    out
}

/// An error and its causes on one line, joined by `: `; a cause whose text the line already
/// holds is skipped (many errors repeat their source in their own message).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        let line = line.trim();
        if !text.contains(line) {
            text.push_str(": ");
            text.push_str(line);
        }
        source = cause.source();
    }
    text
}

/// The last `max` bytes of `text` or fewer: the suffix that starts on the first character
/// boundary at or after `text.len() - max` (a cut character is left out whole).
pub fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The first `max` bytes of `text` or fewer: the prefix that ends on the last character
/// boundary at or before `max` (a cut character is left out whole), and how many bytes were
/// left out (0 when `text` fits).
pub fn head(text: &str, max: usize) -> (&str, usize) {
    if text.len() <= max {
        return (text, 0);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_keeps_the_first_bytes_on_a_char_boundary_and_counts_the_rest() {
        assert_eq!(head("abcdef", 3), ("abc", 3));
        assert_eq!(head("ab", 3), ("ab", 0));
        // "é" is two bytes: a cut inside it leaves it out whole.
        assert_eq!(head("aé", 2), ("a", 2));
        assert_eq!(head("éa", 1), ("", 3));
        assert_eq!(head("", 0), ("", 0));
    }

    #[test]
    fn tail_keeps_the_last_bytes_on_a_char_boundary() {
        assert_eq!(tail("abcdef", 3), "def");
        assert_eq!(tail("ab", 3), "ab");
        assert_eq!(tail("aé", 1), "");
        assert_eq!(tail("aéb", 2), "b");
    }

    #[test]
    fn placeholders_take_strings_bare_and_numbers_compact() {
        let mut measured = BTreeMap::new();
        measured.insert("env".to_string(), serde_json::json!("prod"));
        measured.insert("rows".to_string(), serde_json::json!(3));
        assert_eq!(fill_placeholders("{rows} rows in {env}; {missing}", &measured), "3 rows in prod; {missing}");
    }

    #[derive(Debug)]
    struct Outer(std::io::Error);
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot read task.toml")
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn error_chain_joins_causes_once() {
        let err = Outer(std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"));
        assert_eq!(error_chain(&err), "cannot read task.toml: no such file");
    }
}
