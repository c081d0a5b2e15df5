//! Custom protocol files (`specgap run --protocol FILE`; schema in docs/run-config.md
//! "Custom protocols").
//!
//! A custom protocol lists every rule itself, so nothing about a combination no paper runs is
//! implicit: `format = 1`, `description`, `conditions`, `starts`, `repeats`, optional
//! `measures`, and the tables `[budgets]`, `[end_rules]` (every key of [`BudgetRules`] and
//! [`EndRules`], `0` for off) and optional `[roles.<role>]` (`models`, `agree`). Unknown keys
//! are errors; every error names the file and the key.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::{BudgetRules, CUSTOM, EndRules, Paper, Protocol, Roles};

/// The format of custom protocol files this release reads.
pub const FILE_FORMAT: u32 = 1;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CustomFile {
    format: u32,
    description: String,
    conditions: Vec<String>,
    starts: Vec<String>,
    repeats: u32,
    #[serde(default)]
    measures: Vec<String>,
    budgets: BudgetRules,
    end_rules: EndRules,
    #[serde(default)]
    roles: Roles,
}

/// Why a custom protocol file does not load; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolFileError {
    /// The file cannot be read.
    #[error("cannot read protocol file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Not TOML of the schema: the parser's message names the key and its line.
    #[error("protocol file {}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (key, line, what was expected).
        message: String,
    },
    /// A value outside what the key allows.
    #[error("protocol file {}: `{key}` {problem}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key (`budgets.submissions`, `conditions`, `roles.customer.agree`).
        key: String,
        /// What is wrong, in words.
        problem: String,
    },
}

/// Reads and checks a custom protocol file.
///
/// # Errors
/// [`ProtocolFileError`] naming `path` and the key at fault.
pub fn load_custom(path: &Path) -> Result<Protocol, ProtocolFileError> {
    let text = fs_err::read_to_string(path).map_err(|source| ProtocolFileError::Read { path: path.to_path_buf(), source })?;
    parse_custom(&text, path)
}

/// Parses and checks the text of a custom protocol file read from `path` (named in errors).
///
/// # Errors
/// [`ProtocolFileError::Parse`] or [`ProtocolFileError::Invalid`].
pub fn parse_custom(text: &str, path: &Path) -> Result<Protocol, ProtocolFileError> {
    let file: CustomFile = toml::from_str(text)
        .map_err(|e| ProtocolFileError::Parse { path: path.to_path_buf(), message: e.to_string().trim_end().to_string() })?;
    let invalid = |key: &str, problem: String| ProtocolFileError::Invalid { path: path.to_path_buf(), key: key.into(), problem };
    if file.format != FILE_FORMAT {
        return Err(invalid("format", format!("is {}; this specgap reads format {FILE_FORMAT}", file.format)));
    }
    if file.conditions.is_empty() {
        return Err(invalid("conditions", "lists no condition".into()));
    }
    if let Some(bad) = file.conditions.iter().find(|c| Paper::of_preset(c).is_none()) {
        return Err(invalid(
            "conditions",
            format!("has `{bad}`; expected partial, full, literal, plan, blind, hidden, interact, interact-req, full-info or oracle"),
        ));
    }
    if file.starts.is_empty() {
        return Err(invalid("starts", "lists no start".into()));
    }
    if let Some(bad) = file.starts.iter().find(|s| !matches!(s.as_str(), "clean" | "residual")) {
        return Err(invalid("starts", format!("has `{bad}`; expected clean or residual")));
    }
    if file.repeats == 0 {
        return Err(invalid("repeats", "is 0; expected at least 1".into()));
    }
    if file.budgets.submissions == 0 {
        return Err(invalid("budgets.submissions", "is 0; expected at least 1".into()));
    }
    for (role, panel) in file.roles_named() {
        if panel.models == 0 {
            return Err(invalid(&format!("roles.{role}.models"), "is 0; expected at least 1".into()));
        }
        if panel.agree == 0 || panel.agree > panel.models {
            return Err(invalid(&format!("roles.{role}.agree"), format!("is {}; expected 1 to {}", panel.agree, panel.models)));
        }
    }
    Ok(Protocol {
        name: CUSTOM.into(),
        source: format!("custom protocol file {}: {}", path.display(), file.description.trim()),
        conditions: file.conditions,
        starts: file.starts,
        budgets: file.budgets,
        end_rules: file.end_rules,
        roles: file.roles,
        repeats: file.repeats,
        measures: file.measures,
    })
}

impl CustomFile {
    fn roles_named(&self) -> Vec<(&'static str, crate::Panel)> {
        let r = &self.roles;
        [
            ("owner", r.owner),
            ("customer", r.customer),
            ("coverage_judge", r.coverage_judge),
            ("question_detector", r.question_detector),
            ("extractors", r.extractors),
        ]
        .into_iter()
        .filter_map(|(name, panel)| panel.map(|p| (name, p)))
        .collect()
    }
}
