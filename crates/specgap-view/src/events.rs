//! Events as pages deliver them: long strings folded to their head (the page says where and
//! how long they were, and the whole event is fetched on demand), the text search looks in,
//! and the compact timeline of a whole episode.

use serde_json::{Map, Value, json};

/// Strings longer than this many characters are folded in a page.
pub const FOLD_CHARS: usize = 2_000;
/// Strings with more lines than this are folded in a page.
pub const FOLD_LINES: usize = 40;
/// Characters of a folded string kept in the page.
const HEAD_CHARS: usize = 1_500;
/// Lines of a folded string kept in the page.
const HEAD_LINES: usize = 30;

/// `event` with every string longer than [`FOLD_CHARS`] characters or [`FOLD_LINES`] lines
/// cut to its head, and the JSON pointers of the cut strings → their full length in
/// characters.
pub fn fold(mut event: Value) -> (Value, Map<String, Value>) {
    let mut folded = Map::new();
    fold_at(&mut event, &mut String::new(), &mut folded);
    (event, folded)
}

fn fold_at(value: &mut Value, pointer: &mut String, folded: &mut Map<String, Value>) {
    match value {
        Value::String(text) => {
            if let Some(head) = head_of(text) {
                folded.insert(pointer.clone(), json!(text.chars().count()));
                *text = head;
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                fold_at(item, pointer, folded);
                pointer.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let len = pointer.len();
                pointer.push('/');
                // RFC 6901 escaping of the key.
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                fold_at(item, pointer, folded);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

/// The head of `text` when it is long enough to fold.
fn head_of(text: &str) -> Option<String> {
    let long_chars = text.len() > FOLD_CHARS && text.chars().count() > FOLD_CHARS;
    let long_lines = text.bytes().filter(|b| *b == b'\n').count() >= FOLD_LINES;
    if !long_chars && !long_lines {
        return None;
    }
    let mut head = String::new();
    for (lines, line) in text.split_inclusive('\n').enumerate() {
        if lines >= HEAD_LINES || head.chars().count() + line.chars().count() > HEAD_CHARS {
            if head.is_empty() {
                head = line.chars().take(HEAD_CHARS).collect();
            }
            break;
        }
        head.push_str(line);
    }
    Some(head)
}

/// The text a search looks in: every string value of the event except its `type`, joined by
/// newlines (keys and numbers are not searched).
pub fn searchable_text(event: &Value) -> String {
    let mut out = String::new();
    collect_strings(event, &mut out, true);
    out
}

fn collect_strings(value: &Value, out: &mut String, top: bool) {
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out, false)),
        Value::Object(map) => {
            for (key, v) in map {
                if top && key == "type" {
                    continue;
                }
                collect_strings(v, out, false);
            }
        }
        _ => {}
    }
}

/// Where `needle` (already lowercased) occurs in `text`, case-insensitively: a snippet of
/// about 120 characters around the first occurrence.
pub fn snippet(text: &str, needle: &str) -> Option<String> {
    if needle.is_empty() {
        return None;
    }
    let lower = text.to_lowercase();
    let at = lower.find(needle)?;
    // Lowercasing can change byte lengths; map the position back by characters.
    let char_at = lower[..at].chars().count();
    let chars: Vec<char> = text.chars().collect();
    let start = char_at.saturating_sub(50);
    let end = (char_at + needle.chars().count() + 70).min(chars.len());
    let mut s: String = chars[start..end].iter().collect();
    s = s.replace('\n', " ⏎ ");
    if start > 0 {
        s.insert(0, '…');
    }
    if end < chars.len() {
        s.push('…');
    }
    Some(s)
}

/// What the timeline reads of an event: every other field (a 64 KiB output) is skipped
/// without being built.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct TimelineEvent {
    /// Sequence number.
    #[serde(default)]
    pub seq: Option<u64>,
    /// Event kind.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Milliseconds since the episode started.
    #[serde(default)]
    pub elapsed_ms: Option<u64>,
    /// Agent turn number, for turns.
    #[serde(default)]
    pub turn: Option<i64>,
    /// Model usage, for turns and user messages.
    #[serde(default)]
    pub usage: Option<TimelineUsage>,
}

/// The token counts of an event's usage.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
pub struct TimelineUsage {
    /// Prompt tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
}

impl TimelineEvent {
    /// The entry: `[seq, type, elapsed_ms, turn or -1, tokens (input + output) or 0]`; a kind
    /// that `visible` says is withheld shows as `withheld`.
    pub fn entry(&self, visible: bool) -> Value {
        let kind = if visible { self.kind.as_str() } else { "withheld" };
        let tokens = self.usage.map_or(0, |u| u.input_tokens + u.output_tokens);
        json!([self.seq, kind, self.elapsed_ms, self.turn.unwrap_or(-1), tokens])
    }
}

/// One timeline entry of a whole event (as [`TimelineEvent::entry`]).
pub fn timeline_entry(event: &Value) -> Value {
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
    let turn = event.get("turn").and_then(Value::as_i64).unwrap_or(-1);
    let tokens = event
        .get("usage")
        .map(|u| u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0) + u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0))
        .unwrap_or(0);
    json!([event.get("seq"), kind, event.get("elapsed_ms"), turn, tokens])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_strings_fold_to_their_head_with_their_pointer_and_length() {
        let long: String = "x".repeat(5_000);
        let many: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let event = json!({"type": "tool_result", "output": long, "nested": {"a/b": [1, many]}, "short": "ok"});
        let (folded_event, folded) = fold(event);
        assert_eq!(folded_event["short"], "ok");
        assert_eq!(folded_event["output"].as_str().unwrap().len(), HEAD_CHARS);
        assert_eq!(folded_event["nested"]["a/b"][1].as_str().unwrap().lines().count(), HEAD_LINES);
        assert_eq!(folded.get("/output"), Some(&json!(5_000)));
        assert_eq!(folded.get("/nested/a~1b/1"), Some(&json!(many.chars().count())));
        assert_eq!(folded.len(), 2);
        // A short text is left whole.
        let (same, none) = fold(json!({"output": "a\nb"}));
        assert_eq!(same["output"], "a\nb");
        assert!(none.is_empty());
    }

    #[test]
    fn search_looks_in_values_not_keys_and_snippets_keep_case() {
        let event =
            json!({"type": "tool_result", "call_id": "c1", "tool": "read_text", "output": "Hello World\nsecond line", "is_error": false});
        let text = searchable_text(&event);
        assert_eq!(text, "c1\nHello World\nsecond line\nread_text\n");
        assert_eq!(snippet(&text, "world"), Some("c1 ⏎ Hello World ⏎ second line ⏎ read_text ⏎ ".to_string()));
        assert_eq!(snippet(&text, "tool_result"), None);
        assert_eq!(snippet(&text, ""), None);
    }
}
