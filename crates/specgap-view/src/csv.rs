//! A filtered episode list as CSV (`run/{r}/episodes.csv?FILTER`): one header line, one line
//! per episode in key order, the columns [`COLUMNS`] of the episode rows the pages show (so a
//! public reader's CSV withholds what its pages withhold). Fields are quoted when they hold a
//! comma, a quote or a line break (RFC 4180); a text field a spreadsheet would read as a
//! formula (starting with `=`, `+`, `-` or `@`) is prefixed with `'`, since error messages
//! may quote what an agent wrote. The static site builds the same file in the page
//! (`assets/run.js`, the same columns).

use serde_json::Value;
use specgap_store::{EpisodeFilter, EpisodeOrder};

use crate::access::Access;
use crate::api::episode_row_json;
use crate::error::ViewError;
use crate::runs::RunEntry;

/// The columns, as the episode rows' keys.
pub const COLUMNS: [&str; 18] = [
    "id",
    "task",
    "agent",
    "user",
    "condition",
    "start",
    "repeat",
    "status",
    "end_reason",
    "attempts",
    "submissions",
    "final_score",
    "final_success",
    "turns",
    "tool_calls",
    "wall_ms",
    "started_ts",
    "error",
];

/// The CSV of the episodes matching `filter`.
pub(crate) fn episodes_csv(run: &RunEntry, filter: &EpisodeFilter, access: Access) -> Result<Vec<u8>, ViewError> {
    let page = run.store.episode_page(filter, EpisodeOrder::Key, 0, u64::MAX)?;
    let mut out = String::new();
    out.push_str(&COLUMNS.join(","));
    out.push('\n');
    for row in &page.rows {
        let value = episode_row_json(row, access);
        let fields: Vec<String> = COLUMNS.iter().map(|c| field(value.get(*c).unwrap_or(&Value::Null))).collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    Ok(out.into_bytes())
}

/// One CSV field: empty for null, numbers and booleans as JSON writes them, text quoted when
/// needed and kept from being read as a formula.
fn field(value: &Value) -> String {
    let text = match value {
        Value::Null => return String::new(),
        Value::String(s) => s.clone(),
        other => return other.to_string(),
    };
    let text = if text.starts_with(['=', '+', '-', '@']) { format!("'{text}") } else { text };
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text }
}

#[cfg(test)]
mod tests {
    use super::field;
    use serde_json::json;

    #[test]
    fn fields_are_quoted_and_kept_from_formulas() {
        assert_eq!(field(&json!(null)), "");
        assert_eq!(field(&json!(0.5)), "0.5");
        assert_eq!(field(&json!(true)), "true");
        assert_eq!(field(&json!("plain")), "plain");
        assert_eq!(field(&json!("a, \"b\"\nc")), "\"a, \"\"b\"\"\nc\"");
        assert_eq!(field(&json!("=HYPERLINK(\"x\")")), "\"'=HYPERLINK(\"\"x\"\")\"");
    }
}
