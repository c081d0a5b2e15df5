//! Reading `result.json` bytes into an [`EvalResult`] with messages an evaluator's author can
//! act on.
//!
//! serde alone says where in the text a problem is, not what value it is about, and it reads
//! a top-level list as a struct written positionally ("invalid type: map, expected u32"). So
//! [`parse_result`] first says what the top level is when it is not an object, then
//! deserializes with the JSON path of every value tracked (`serde_path_to_error`), so each
//! error names the value it is about (`requirements.fee-cap.measured.open_rows`), and tells
//! a `NaN` / `Infinity` token (which JSON does not have, though Python's `json.dumps` writes
//! it) and a number too large for a 64-bit float apart from other syntax errors.

use std::fmt;

use super::EvalResult;

/// An example of the smallest valid result, quoted by messages.
const SMALLEST_RESULT: &str = r#"{"version": 1, "reward": 1.0}"#;

/// Why bytes are not a `result.json` of DESIGN §2. Every variant's message is written to
/// follow "malformed result.json: ".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultParseError {
    /// The top level is not a JSON object (a list, a string, a number, ..., or nothing).
    NotAnObject {
        /// What was found: "a list", "a string", "a number", "a boolean", "null", "nothing
        /// (the file is empty)".
        found: &'static str,
    },
    /// A `NaN` or `Infinity` token, which JSON does not allow.
    NonFiniteNumber {
        /// The token as written (`NaN`, `-Infinity`, ...).
        token: String,
        /// JSON path of the value (`requirements.fee-cap.measured.open_rows`); empty at the
        /// top level.
        path: String,
        /// 1-based line of the token.
        line: usize,
        /// 1-based column of the token.
        column: usize,
    },
    /// A number beyond the range of a 64-bit float (`1e400`).
    NumberOutOfRange {
        /// JSON path of the value; empty at the top level.
        path: String,
        /// 1-based line where serde stopped.
        line: usize,
        /// 1-based column where serde stopped.
        column: usize,
    },
    /// Any other syntax or shape error: serde_json's message (with line and column) and the
    /// path of the value it is about.
    Json {
        /// JSON path of the value; empty at the top level.
        path: String,
        /// serde_json's message.
        message: String,
    },
}

impl fmt::Display for ResultParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResultParseError::NotAnObject { found } => write!(
                f,
                "result.json must be a JSON object with `version` and the fields of DESIGN §2 \
                 (`requirements`, `tests`, `delivery`, `reward`), such as {SMALLEST_RESULT}; found {found}"
            ),
            ResultParseError::NonFiniteNumber { token, path, line, column } => write!(
                f,
                "{token}{} (line {line}, column {column}) is not a JSON number; report a finite number or leave the value out",
                at_path(path)
            ),
            ResultParseError::NumberOutOfRange { path, line, column } => {
                write!(f, "number out of range{} (line {line}, column {column}): it does not fit a 64-bit float", at_path(path))
            }
            ResultParseError::Json { path, message } if path.is_empty() => write!(f, "{message}"),
            ResultParseError::Json { path, message } => write!(f, "at `{path}`: {message}"),
        }
    }
}

impl std::error::Error for ResultParseError {}

fn at_path(path: &str) -> String {
    if path.is_empty() { String::new() } else { format!(" at `{path}`") }
}

/// Parses `result.json` bytes. Shape only: call [`EvalResult::validate`] for the rules that
/// need the task (version, requirement ids, reward range, ...).
///
/// # Errors
/// [`ResultParseError`]: a top level that is not an object, a `NaN` / `Infinity` token, a
/// number out of range, or any other syntax or shape error, each naming the JSON path of the
/// value it is about.
pub fn parse_result(bytes: &[u8]) -> Result<EvalResult, ResultParseError> {
    if let Some(found) = non_object_top_level(bytes) {
        return Err(ResultParseError::NotAnObject { found });
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let result = serde_path_to_error::deserialize::<_, EvalResult>(&mut deserializer)
        .map_err(|err| classify(bytes, err.path().to_string(), err.into_inner()))?;
    deserializer.end().map_err(|err| classify(bytes, String::new(), err))?;
    Ok(result)
}

/// What the top level is, when its first byte shows it is not an object.
fn non_object_top_level(bytes: &[u8]) -> Option<&'static str> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        None => Some("nothing (the file is empty)"),
        Some(b'[') => Some("a list"),
        Some(b'"') => Some("a string"),
        Some(b'0'..=b'9' | b'-') => Some("a number"),
        Some(b't' | b'f') => Some("a boolean"),
        Some(b'n') => Some("null"),
        _ => None,
    }
}

fn classify(bytes: &[u8], path: String, err: serde_json::Error) -> ResultParseError {
    // serde_path_to_error writes the top level as ".".
    let path = if path == "." { String::new() } else { path };
    let (line, column) = (err.line(), err.column());
    if err.is_syntax()
        && let Some((token, column)) = non_finite_token(bytes, line, column)
    {
        return ResultParseError::NonFiniteNumber { token, path, line, column };
    }
    if err.is_syntax() && err.to_string().starts_with("number out of range") {
        return ResultParseError::NumberOutOfRange { path, line, column };
    }
    ResultParseError::Json { path, message: err.to_string() }
}

/// The `NaN` / `Infinity` token (optionally signed) that serde stopped on at 1-based
/// `line`:`column`, with the 1-based column where it starts. serde reports the column of the
/// byte it could not read: the token's first letter, or for `-Infinity` the letter after the
/// sign.
fn non_finite_token(bytes: &[u8], line: usize, column: usize) -> Option<(String, usize)> {
    let line_start = if line <= 1 {
        0
    } else {
        let newline = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(line - 2)?.0;
        newline + 1
    };
    let at = line_start + column.checked_sub(1)?;
    let signed = at > line_start && matches!(bytes.get(at - 1), Some(b'-' | b'+'));
    let start = if signed { at - 1 } else { at };
    let word_len = bytes.get(at..)?.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let word = std::str::from_utf8(&bytes[at..at + word_len]).ok()?;
    if !matches!(word.to_ascii_lowercase().as_str(), "nan" | "infinity" | "inf") {
        return None;
    }
    let token = std::str::from_utf8(&bytes[start..at + word_len]).ok()?;
    Some((token.to_owned(), start - line_start + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> String {
        parse_result(text.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn a_top_level_list_says_result_json_must_be_an_object() {
        assert_eq!(
            message(r#"[{"version": 1, "reward": 1.0}]"#),
            "result.json must be a JSON object with `version` and the fields of DESIGN §2 (`requirements`, \
             `tests`, `delivery`, `reward`), such as {\"version\": 1, \"reward\": 1.0}; found a list"
        );
        assert!(message("  \n").ends_with("; found nothing (the file is empty)"));
        assert!(message("0.5").ends_with("; found a number"));
        assert!(message("-1").ends_with("; found a number"));
        assert!(message("\"ok\"").ends_with("; found a string"));
        assert!(message("true").ends_with("; found a boolean"));
        assert!(message("null").ends_with("; found null"));
    }

    #[test]
    fn a_nan_is_reported_with_the_full_json_path_of_the_value() {
        let text = "{\"version\": 1, \"requirements\": {\"fee-cap\": {\"pass\": false,\n  \"measured\": {\"open_rows\": NaN}}}}";
        assert_eq!(
            parse_result(text.as_bytes()),
            Err(ResultParseError::NonFiniteNumber {
                token: "NaN".into(),
                path: "requirements.fee-cap.measured.open_rows".into(),
                line: 2,
                column: 29,
            })
        );
        assert_eq!(
            message(text),
            "NaN at `requirements.fee-cap.measured.open_rows` (line 2, column 29) is not a JSON number; \
             report a finite number or leave the value out"
        );
    }

    #[test]
    fn signed_and_unsigned_infinity_name_their_token_and_path() {
        assert_eq!(
            parse_result(br#"{"version": 1, "reward": Infinity}"#),
            Err(ResultParseError::NonFiniteNumber { token: "Infinity".into(), path: "reward".into(), line: 1, column: 26 })
        );
        assert_eq!(
            parse_result(br#"{"version": 1, "delivery": {"valid": true, "objective": -Infinity}}"#),
            Err(ResultParseError::NonFiniteNumber { token: "-Infinity".into(), path: "delivery.objective".into(), line: 1, column: 57 })
        );
        assert_eq!(
            parse_result(br#"{"version": 1, "requirements": {"a": {"pass": true, "measured": {"x": [1, {"y": NaN}]}}}}"#),
            Err(ResultParseError::NonFiniteNumber {
                token: "NaN".into(),
                path: "requirements.a.measured.x[1].y".into(),
                line: 1,
                column: 81,
            })
        );
    }

    #[test]
    fn a_number_out_of_range_names_its_path() {
        assert_eq!(
            message(r#"{"version": 1, "reward": 1e400}"#),
            "number out of range at `reward` (line 1, column 30): it does not fit a 64-bit float"
        );
    }

    #[test]
    fn shape_errors_name_the_path_of_the_value() {
        assert_eq!(
            message(r#"{"version": 1, "requirements": {"fee-cap": {"pass": "yes"}}}"#),
            "at `requirements.fee-cap.pass`: invalid type: string \"yes\", expected a boolean at line 1 column 57"
        );
        assert_eq!(
            message(r#"{"version": 1, "score": 1}"#),
            "at `score`: unknown field `score`, expected one of `version`, `requirements`, `tests`, `delivery`, `reward`, `rewards` at line 1 column 22"
        );
        assert_eq!(
            message(r#"{"version": 1, "rewards": 1}"#),
            "at `rewards`: invalid type: integer `1`, expected a map at line 1 column 27"
        );
        assert_eq!(message(r#"{"reward": 1}"#), "missing field `version` at line 1 column 13");
    }

    #[test]
    fn trailing_text_after_the_object_is_an_error() {
        assert_eq!(message(r#"{"version": 1} {"version": 1}"#), "trailing characters at line 1 column 16");
    }

    #[test]
    fn a_valid_result_parses() {
        let result = parse_result(br#"{"version": 1, "reward": 0.25}"#).unwrap();
        assert_eq!(result.reward, Some(0.25));
    }
}
