//! Rubrics: what raters judge about a unit, the labels they may give, and which private
//! information the unit's page shows.
//!
//! A rubric is a TOML file (the built-in ones are `src/rubrics/*.toml`, read by the same
//! parser as a user's; docs/audits.md "Rubrics"):
//!
//! ```toml
//! name = "seed002-coverage"                 # lowercase letters, digits and hyphens
//! title = "Clarification coverage"
//! source = "seed 002 §4.3, App. A.8"        # where the criteria come from (free text)
//! units = ["question"]                      # the unit kinds it applies to
//! shows = ["targets"]                       # private information its pages show (below)
//! instructions = "What to judge, in words for the rater."
//!
//! [[label]]                                 # one sheet column per label, in this order
//! name = "coverage"                         # the column name: lowercase, digits, _ and -
//! question = "Would answering a recorded question reveal the target?"
//! uncertain = ["uncertain"]                 # values agreement is also reported without
//! values = [
//!   { name = "covered", meaning = "..." },
//!   { name = "uncovered", meaning = "..." },
//!   { name = "uncertain", meaning = "..." },
//! ]
//! ```
//!
//! Unknown keys are errors. A page always shows what the agent saw and did (the opening
//! message, its turns, tool calls and results, the messages it got, its diffs) and hides
//! everything else unless `shows` names it: [`Disclosure`] lists the kinds.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::AuditError;
use crate::unit::UnitKind;

/// Private information a page may show when its rubric asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Disclosure {
    /// `requirements.toml`: requirement ids, descriptions, where each can be discovered.
    Requirements,
    /// `observations.toml`: scenes, incidents, details, owner requests.
    Observations,
    /// Evaluation results: scores, success, per-requirement outcomes, failing tests,
    /// delivery verdicts.
    Evaluation,
    /// The evaluator's source files.
    Evaluator,
    /// `NOTES.md`, the authors' private notes.
    Notes,
    /// `instruction.full.md`, the complete specification.
    FullInstruction,
    /// What the simulated user knows: `user.toml`, `information.md`, and the user model's
    /// prompts (its system prompt and latest item, from a recorded request).
    UserKnowledge,
    /// Clarification targets: descriptions and trigger questions.
    Targets,
    /// The registered answers of the clarification targets.
    TargetAnswers,
    /// Which agent (model) and which user model made the episode.
    Identity,
    /// Automatic judges' verdicts on the unit (a coverage panel, the offline rule).
    Judgements,
}

impl Disclosure {
    /// Every kind, in the order docs/audits.md lists them.
    pub const ALL: [Disclosure; 11] = [
        Disclosure::Requirements,
        Disclosure::Observations,
        Disclosure::Evaluation,
        Disclosure::Evaluator,
        Disclosure::Notes,
        Disclosure::FullInstruction,
        Disclosure::UserKnowledge,
        Disclosure::Targets,
        Disclosure::TargetAnswers,
        Disclosure::Identity,
        Disclosure::Judgements,
    ];

    /// The kebab-case name used in rubric files.
    pub fn name(self) -> &'static str {
        match self {
            Disclosure::Requirements => "requirements",
            Disclosure::Observations => "observations",
            Disclosure::Evaluation => "evaluation",
            Disclosure::Evaluator => "evaluator",
            Disclosure::Notes => "notes",
            Disclosure::FullInstruction => "full-instruction",
            Disclosure::UserKnowledge => "user-knowledge",
            Disclosure::Targets => "targets",
            Disclosure::TargetAnswers => "target-answers",
            Disclosure::Identity => "identity",
            Disclosure::Judgements => "judgements",
        }
    }
}

/// One value a label may take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelValue {
    /// The value as written in the sheet (case-insensitive on import).
    pub name: String,
    /// What it means, for the rater.
    pub meaning: String,
}

/// One label column of a sheet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelColumn {
    /// The column's name.
    pub name: String,
    /// What the rater decides, in words.
    pub question: String,
    /// The values allowed, in order (the confusion tables' order).
    pub values: Vec<LabelValue>,
    /// Values that mean the rater could not decide: agreement is reported with every label
    /// and again without the items either side marked so (seed 002 A.8 Table 16).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncertain: Vec<String>,
}

impl LabelColumn {
    /// The canonical value matching `text` (trimmed, case-insensitive).
    pub fn value(&self, text: &str) -> Option<&str> {
        let text = text.trim();
        self.values.iter().find(|v| v.name.eq_ignore_ascii_case(text)).map(|v| v.name.as_str())
    }

    /// The value names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.values.iter().map(|v| v.name.as_str()).collect()
    }
}

/// A rubric (module guide).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rubric {
    /// Its name.
    pub name: String,
    /// A title for pages.
    pub title: String,
    /// Where its criteria come from.
    #[serde(default)]
    pub source: String,
    /// The unit kinds it applies to.
    pub units: Vec<UnitKind>,
    /// Private information its pages show.
    #[serde(default)]
    pub shows: BTreeSet<Disclosure>,
    /// What to judge, for the rater.
    pub instructions: String,
    /// The label columns, in sheet order.
    #[serde(rename = "label")]
    pub labels: Vec<LabelColumn>,
}

/// The built-in rubrics' files: (name, TOML text).
const BUILTIN: &[(&str, &str)] = &[
    ("seed000-task", include_str!("rubrics/seed000-task.toml")),
    ("seed000-failure", include_str!("rubrics/seed000-failure.toml")),
    ("seed000-resample", include_str!("rubrics/seed000-resample.toml")),
    ("seed001-review", include_str!("rubrics/seed001-review.toml")),
    ("seed001-continuation", include_str!("rubrics/seed001-continuation.toml")),
    ("seed002-customer", include_str!("rubrics/seed002-customer.toml")),
    ("seed002-extraction", include_str!("rubrics/seed002-extraction.toml")),
    ("seed002-coverage", include_str!("rubrics/seed002-coverage.toml")),
];

/// Columns every sheet has besides the labels.
pub const FIXED_COLUMNS: [&str; 4] = ["sample", "item", "page", "note"];

impl Rubric {
    /// The names of the built-in rubrics.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(name, _)| *name).collect()
    }

    /// A built-in rubric by name.
    ///
    /// # Errors
    /// [`AuditError::Rubric`] for an unknown name (listing the built-in ones).
    pub fn builtin(name: &str) -> Result<Rubric, AuditError> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name).ok_or_else(|| AuditError::Rubric {
            name: name.to_string(),
            message: format!("no such built-in rubric; the built-in rubrics are {}", Rubric::builtin_names().join(", ")),
        })?;
        Rubric::parse(name, text)
    }

    /// A rubric named on the command line: a built-in name, or a path to a TOML file
    /// (anything ending in `.toml`).
    ///
    /// # Errors
    /// [`AuditError::Rubric`] and I/O errors.
    pub fn named(spec: &str) -> Result<Rubric, AuditError> {
        if spec.ends_with(".toml") { Rubric::read(Path::new(spec)) } else { Rubric::builtin(spec) }
    }

    /// Reads a rubric file.
    ///
    /// # Errors
    /// I/O errors naming the file; [`AuditError::Rubric`] for a malformed rubric.
    pub fn read(path: &Path) -> Result<Rubric, AuditError> {
        let text = fs_err::read_to_string(path)?;
        Rubric::parse(&path.display().to_string(), &text)
    }

    /// Parses and checks a rubric's TOML text; `origin` names it in errors.
    ///
    /// # Errors
    /// [`AuditError::Rubric`] for TOML errors, unknown keys, and the checks of
    /// [`Rubric::check`].
    pub fn parse(origin: &str, text: &str) -> Result<Rubric, AuditError> {
        let rubric: Rubric =
            toml::from_str(text).map_err(|e| AuditError::Rubric { name: origin.to_string(), message: e.to_string().trim().to_string() })?;
        rubric.check().map_err(|message| AuditError::Rubric { name: origin.to_string(), message })?;
        Ok(rubric)
    }

    /// Checks names and values: a name of lowercase letters, digits and hyphens; at least
    /// one unit kind and one label; label names unique, not a fixed column, of lowercase
    /// letters, digits, `_` and `-`; each label with at least two distinct values (compared
    /// case-insensitively, without commas or line breaks) and `uncertain` values among them.
    ///
    /// # Errors
    /// The first problem, in words.
    pub fn check(&self) -> Result<(), String> {
        let plain = |s: &str, extra: &[char]| {
            !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || extra.contains(&c))
        };
        if !plain(&self.name, &['-']) {
            return Err(format!("name `{}` must be lowercase letters, digits and hyphens", self.name));
        }
        if self.units.is_empty() {
            return Err("`units` names no unit kind".into());
        }
        if self.labels.is_empty() {
            return Err("the rubric has no [[label]]".into());
        }
        let mut seen = BTreeSet::new();
        for label in &self.labels {
            if !plain(&label.name, &['_', '-']) {
                return Err(format!("label name `{}` must be lowercase letters, digits, `_` and `-`", label.name));
            }
            if FIXED_COLUMNS.contains(&label.name.as_str()) {
                return Err(format!("label name `{}` is a column every sheet has already", label.name));
            }
            if !seen.insert(label.name.as_str()) {
                return Err(format!("label `{}` is defined twice", label.name));
            }
            let mut values = BTreeSet::new();
            for value in &label.values {
                let name = value.name.trim();
                if name.is_empty() || name.contains([',', '\n', '\r', '"']) {
                    return Err(format!(
                        "label `{}` has a value `{}` that is empty or holds a comma, quote or line break",
                        label.name, value.name
                    ));
                }
                if !values.insert(name.to_ascii_lowercase()) {
                    return Err(format!("label `{}` lists the value `{name}` twice", label.name));
                }
            }
            if values.len() < 2 {
                return Err(format!("label `{}` needs at least two values", label.name));
            }
            if let Some(stray) = label.uncertain.iter().find(|u| label.value(u).is_none()) {
                return Err(format!("label `{}`: uncertain value `{stray}` is not one of its values", label.name));
            }
        }
        Ok(())
    }

    /// The label column named `name`.
    pub fn label(&self, name: &str) -> Option<&LabelColumn> {
        self.labels.iter().find(|l| l.name == name)
    }

    /// Whether its pages show `disclosure`.
    pub fn shows(&self, disclosure: Disclosure) -> bool {
        self.shows.contains(&disclosure)
    }

    /// Whether it applies to `unit`.
    pub fn applies_to(&self, unit: UnitKind) -> bool {
        self.units.contains(&unit)
    }

    /// The sheet's header: the fixed columns, then the labels before `note`.
    pub fn header(&self) -> Vec<String> {
        let mut header: Vec<String> = FIXED_COLUMNS[..3].iter().map(|c| (*c).to_string()).collect();
        header.extend(self.labels.iter().map(|l| l.name.clone()));
        header.push(FIXED_COLUMNS[3].to_string());
        header
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_rubric_parses_and_is_named_as_its_file() {
        for name in Rubric::builtin_names() {
            let rubric = Rubric::builtin(name).unwrap();
            assert_eq!(rubric.name, name);
        }
    }

    #[test]
    fn bad_rubrics_are_refused_with_the_reason() {
        let base = "name = \"r\"\ntitle = \"t\"\nunits = [\"episode\"]\ninstructions = \"i\"\n";
        let one = format!("{base}[[label]]\nname = \"x\"\nquestion = \"q\"\nvalues = [{{ name = \"a\", meaning = \"m\" }}]\n");
        let err = Rubric::parse("r.toml", &one).unwrap_err().to_string();
        assert_eq!(err, "rubric r.toml: label `x` needs at least two values");
        let note = format!(
            "{base}[[label]]\nname = \"note\"\nquestion = \"q\"\nvalues = [{{ name = \"a\", meaning = \"m\" }}, {{ name = \"b\", meaning = \"m\" }}]\n"
        );
        assert_eq!(
            Rubric::parse("r.toml", &note).unwrap_err().to_string(),
            "rubric r.toml: label name `note` is a column every sheet has already"
        );
        let unknown = format!("{base}colour = 1\n");
        assert!(Rubric::parse("r.toml", &unknown).unwrap_err().to_string().contains("unknown field `colour`"));
        assert!(Rubric::builtin("nope").unwrap_err().to_string().contains("the built-in rubrics are seed000-task"));
    }
}
