//! Package format 2 (DESIGN §2): the keys it adds to format 1 and their rules.
//!
//! Format 2 only adds optional keys ([`specgap_protocol::package::FORMAT_2_KEYS`]); a
//! format-1 package loads exactly as before, and a format-1 package that uses one of the
//! additions is rejected at that key, saying it needs `format = 2` (an old specgap would have
//! rejected the key as unknown, so the package must say which format it is written for).
//!
//! | key | rule |
//! | --- | --- |
//! | `[task].tags` | lowercase words of letters and digits joined by single hyphens, at most 64 characters each, no tag twice |
//! | `[task].subfamily` | one such word |
//! | `[delivery].schema` | a path relative to the package root, outside `workspace/` (the schema is private), naming a regular file that parses as JSON and is a schema: an object, or `true` / `false` |
//! | `[[observation]].request` | not blank |
//! | `[project].probes` | a list of shell commands, none blank (`specgap check` runs each on the starter and scans its output: [`crate::heard`]) |

use std::collections::HashSet;
use std::path::{Component, Path};

use specgap_protocol::package::{FORMAT_2, TaskInfo};

use crate::error::{LoadError, Location};
use crate::package::DeliverySchema;
use crate::tree;

/// Longest tag or sub-family, in characters.
pub const LABEL_MAX_CHARS: usize = 64;

/// Rejects a format-2 key in a package of an earlier format.
pub(crate) fn require_format_2(format: u32, at: Location, key: &'static str) -> Result<(), LoadError> {
    if format >= FORMAT_2 {
        return Ok(());
    }
    Err(LoadError::NeedsFormat2 { at, key, format })
}

/// Whether `label` is usable as a tag or sub-family: lowercase letters and digits in words
/// joined by single hyphens, at most [`LABEL_MAX_CHARS`] characters.
pub fn is_label(label: &str) -> bool {
    label.len() <= LABEL_MAX_CHARS
        && label.split('-').all(|word| !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
}

/// Checks `[task].tags` and `[task].subfamily` (already known to be allowed by the format).
pub(crate) fn check_labels(info: &TaskInfo, tags_at: Location, subfamily_at: Location) -> Result<(), LoadError> {
    let mut seen = HashSet::new();
    for tag in &info.tags {
        if !is_label(tag) {
            return Err(bad_label(tags_at, "[task].tags entry", tag));
        }
        if !seen.insert(tag.as_str()) {
            return Err(LoadError::Invalid { at: tags_at, message: format!("[task].tags lists `{tag}` twice; expected each tag once") });
        }
    }
    if let Some(subfamily) = &info.subfamily
        && !is_label(subfamily)
    {
        return Err(bad_label(subfamily_at, "[task].subfamily", subfamily));
    }
    Ok(())
}

fn bad_label(at: Location, what: &str, label: &str) -> LoadError {
    LoadError::Invalid {
        at,
        message: format!(
            "{what} `{label}` is not usable; expected lowercase letters and digits in words joined by single hyphens, \
             at most {LABEL_MAX_CHARS} characters (e.g. `ml-experiment`)"
        ),
    }
}

/// Reads and checks `[delivery].schema`, written as `rel` at `at` in task.toml. Runs after the
/// tree walk, so any symlink on the way is known to stay inside the package.
pub(crate) fn load_schema(root: &Path, rel: &str, at: Location) -> Result<DeliverySchema, LoadError> {
    let invalid = |message: String| LoadError::Invalid { at: at.clone(), message };
    if Path::new(rel).is_absolute() {
        return Err(invalid(format!("[delivery].schema `{rel}` is absolute; expected a path relative to the package root")));
    }
    let normal = match tree::normalize_relative(Path::new(rel)) {
        Some(normal) if !normal.as_os_str().is_empty() => normal,
        _ => return Err(invalid(format!("[delivery].schema `{rel}` does not name a file inside the package"))),
    };
    let path = root.join(&normal);
    let inside_workspace =
        normal.components().next() == Some(Component::Normal("workspace".as_ref())) || resolves_into(&path, &root.join("workspace"));
    if inside_workspace {
        return Err(invalid(format!(
            "[delivery].schema `{rel}` is inside workspace/, which the agent sees; keep the schema outside it (it is private)"
        )));
    }
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(invalid(format!("[delivery].schema `{rel}` is not a regular file"))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(invalid(format!("[delivery].schema `{rel}`: no such file in the package")));
        }
        Err(_) => {
            fs_err::metadata(&path)?;
        }
    }
    let text = crate::load::read_text(&path)?;
    let schema: serde_json::Value = serde_json::from_str(&text).map_err(|err| LoadError::Invalid {
        at: Location { path: path.clone(), line_column: Some((err.line(), err.column().max(1))) },
        message: format!("not JSON, so not a JSON Schema: {}", without_position(&err)),
    })?;
    if !(schema.is_object() || schema.is_boolean()) {
        return Err(LoadError::Invalid {
            at: Location::path(&path),
            message: format!("a JSON Schema is an object (or `true` / `false`); found {}", json_kind(&schema)),
        });
    }
    Ok(DeliverySchema { path, schema })
}

/// Whether `path`, resolved, lies in `dir`, resolved (false when either cannot be resolved).
fn resolves_into(path: &Path, dir: &Path) -> bool {
    match (std::fs::canonicalize(path), std::fs::canonicalize(dir)) {
        (Ok(path), Ok(dir)) => path.starts_with(dir),
        _ => false,
    }
}

/// serde_json's message without its " at line L column C" suffix (the location says it).
fn without_position(err: &serde_json::Error) -> String {
    let message = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    message.strip_suffix(&suffix).unwrap_or(&message).to_owned()
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        for ok in ["ml-experiment", "a", "2024", "x1-y2", "online-system"] {
            assert!(is_label(ok), "{ok}");
        }
        for bad in ["", "ML", "a_b", "a--b", "-a", "a-", "a b", "é", &"a".repeat(65)] {
            assert!(!is_label(bad), "{bad}");
        }
        assert!(is_label(&"a".repeat(64)));
    }
}
