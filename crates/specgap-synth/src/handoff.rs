//! The structured hand-offs passed between the roles (seed 000 §4.2, Figure 3, App. E.1–E.4).
//!
//! Each role answers with one JSON document; [`parse`] reads it into the role's type and then
//! runs that type's [`Validate`] rules, so a malformed hand-off is a [`HandoffError`] naming the
//! offending field by its JSON path (`requirements[2].discovery`). The published shape of every
//! type is in `docs/synthesize.md`; unknown fields are refused so a typo never passes silently.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Version of the hand-off shapes described in `docs/synthesize.md`.
pub const HANDOFF_FORMAT: u32 = 1;

/// Why a role's answer is not a usable hand-off.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandoffError {
    /// The answer is not JSON, or a field is missing, unknown or of the wrong type.
    #[error("the {role} hand-off does not match its schema at `{field}`: {problem}")]
    Schema {
        /// The role whose answer it was (`planner`, ...).
        role: &'static str,
        /// JSON path of the field (`.` for the whole document).
        field: String,
        /// What serde reported.
        problem: String,
    },
    /// The answer has the right shape but breaks a rule of its role's contract.
    #[error("the {role} hand-off breaks a rule at `{field}`: {problem}")]
    Rule {
        /// The role whose answer it was.
        role: &'static str,
        /// JSON path of the field.
        field: String,
        /// The rule broken, in words.
        problem: String,
    },
}

/// What the Planner is asked to respect; the brief is validated against these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct BriefLimits {
    /// How many requirements the brief must have (the paper's `$NUM_REQUIREMENTS`; default 5).
    pub requirements: usize,
    /// The fewest requirements the partial instruction must withhold (`$NUM_REQUIREMENTS_GAP`,
    /// unnamed in the paper; default 3).
    pub min_withheld: usize,
}

impl Default for BriefLimits {
    fn default() -> Self {
        BriefLimits { requirements: 5, min_withheld: 3 }
    }
}

/// A hand-off type's own rules, checked after the JSON shape.
pub trait Validate {
    /// The role name used in messages.
    const ROLE: &'static str;
    /// Checks the rules of the role's contract.
    ///
    /// # Errors
    /// [`HandoffError::Rule`] naming the first field that breaks one.
    fn validate(&self, limits: &BriefLimits) -> Result<(), HandoffError>;
}

/// Parses `text` as the hand-off `T` and validates it.
///
/// # Errors
/// [`HandoffError::Schema`] when the JSON is malformed or does not fit `T` (the error names the
/// field's path), [`HandoffError::Rule`] when it fits but breaks one of `T`'s rules.
pub fn parse<T: DeserializeOwned + Validate>(text: &str, limits: &BriefLimits) -> Result<T, HandoffError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(&mut deserializer).map_err(|err| HandoffError::Schema {
        role: T::ROLE,
        field: err.path().to_string(),
        problem: err.inner().to_string(),
    })?;
    deserializer.end().map_err(|err| HandoffError::Schema { role: T::ROLE, field: ".".into(), problem: err.to_string() })?;
    value.validate(limits)?;
    Ok(value)
}

/// Every key of a hand-off's `files` is a relative path inside the working directory: not
/// empty, not absolute, no `..`, no `.` component, no empty component.
fn check_file_paths(role: &'static str, files: &BTreeMap<String, String>) -> Result<(), HandoffError> {
    for path in files.keys() {
        let inside = !path.is_empty()
            && !path.starts_with('/')
            && !path.contains('\\')
            && path.split('/').all(|part| !part.is_empty() && part != "." && part != "..");
        if !inside {
            return Err(rule(
                role,
                format!("files.{path}"),
                "a file path must be relative to the working directory, without `..`, `.` or empty components (e.g. `workspace/shop/checkout.py`)",
            ));
        }
    }
    Ok(())
}

/// Writes a hand-off's `files` under `dir` (paths already checked by [`Validate`]), creating
/// parent directories.
///
/// # Errors
/// The first write error, naming the file.
pub fn write_files(dir: &std::path::Path, files: &BTreeMap<String, String>) -> std::io::Result<()> {
    for (path, content) in files {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::write(&target, content)?;
    }
    Ok(())
}

fn rule(role: &'static str, field: impl Into<String>, problem: impl Into<String>) -> HandoffError {
    HandoffError::Rule { role, field: field.into(), problem: problem.into() }
}

fn require_text(role: &'static str, field: &str, text: &str) -> Result<(), HandoffError> {
    if text.trim().is_empty() { Err(rule(role, field, "must not be blank")) } else { Ok(()) }
}

/// The Planner's design brief (seed 000 App. E.1): everything the Builder needs to construct the
/// task without making design decisions of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannerBrief {
    /// What the finished project must do, in one sentence.
    pub terminal_outcome: String,
    /// The true requirements, in priority order (first = priority 1).
    pub requirements: Vec<BriefRequirement>,
    /// The simulated owner.
    pub persona: BriefPersona,
    /// Requirement ids the partial instruction states.
    pub stated: Vec<String>,
    /// Requirement ids the partial instruction must not mention.
    pub withheld: Vec<String>,
    /// Ways each requirement can fail, each with the two contexts of its observation.
    pub failure_modes: Vec<BriefFailureMode>,
    /// Ways the task could leak a requirement or be solved without discovering it.
    pub leak_risks: Vec<LeakRisk>,
}

/// One true requirement of a brief.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BriefRequirement {
    /// Lowercase, hyphenated id (the package's `requirements.toml` id).
    pub id: String,
    /// The requirement as a predicate on the delivered workspace that an evaluator can check.
    pub predicate: String,
    /// The file, record or experiment through which an agent learns it before submitting.
    pub discovery: String,
}

/// The persona the partial instruction speaks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BriefPersona {
    /// Who they are and their role in the project.
    pub role: String,
    /// What they believe: partial, with a plausible but mistaken or incomplete hypothesis.
    pub understanding: String,
    /// The mistaken hypothesis on its own (what the starter implements).
    pub mistaken_hypothesis: String,
}

/// One failure mode of a requirement and its observation's two contexts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BriefFailureMode {
    /// The requirement it belongs to.
    pub requirement: String,
    /// The failure mode id the evaluator reports.
    pub id: String,
    /// First context: the incident a person meets.
    pub incident: String,
    /// Second context: one measured, actionable detail.
    pub detail: String,
}

/// A leak or shortcut risk and its countermeasure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeakRisk {
    /// What could leak or be gamed.
    pub risk: String,
    /// How the package avoids it.
    pub countermeasure: String,
}

impl Validate for PlannerBrief {
    const ROLE: &'static str = "planner";

    fn validate(&self, limits: &BriefLimits) -> Result<(), HandoffError> {
        let role = Self::ROLE;
        require_text(role, "terminal_outcome", &self.terminal_outcome)?;
        if self.requirements.len() != limits.requirements {
            return Err(rule(
                role,
                "requirements",
                format!("has {} requirements; the brief must have exactly {}", self.requirements.len(), limits.requirements),
            ));
        }
        let mut ids = BTreeSet::new();
        for (index, requirement) in self.requirements.iter().enumerate() {
            let at = |field: &str| format!("requirements[{index}].{field}");
            if !specgap_task::is_requirement_id(&requirement.id) {
                return Err(rule(role, at("id"), format!("`{}` is not a lowercase, hyphenated id", requirement.id)));
            }
            if !ids.insert(requirement.id.as_str()) {
                return Err(rule(role, at("id"), format!("`{}` appears twice", requirement.id)));
            }
            require_text(role, &at("predicate"), &requirement.predicate)?;
            require_text(role, &at("discovery"), &requirement.discovery)?;
        }
        require_text(role, "persona.role", &self.persona.role)?;
        require_text(role, "persona.understanding", &self.persona.understanding)?;
        require_text(role, "persona.mistaken_hypothesis", &self.persona.mistaken_hypothesis)?;
        self.validate_partition(&ids)?;
        self.validate_withheld(limits)?;
        self.validate_failure_modes(&ids)?;
        if self.leak_risks.is_empty() {
            return Err(rule(role, "leak_risks", "names no risk; the brief must name at least one with its countermeasure"));
        }
        for (index, risk) in self.leak_risks.iter().enumerate() {
            require_text(role, &format!("leak_risks[{index}].risk"), &risk.risk)?;
            require_text(role, &format!("leak_risks[{index}].countermeasure"), &risk.countermeasure)?;
        }
        Ok(())
    }
}

impl PlannerBrief {
    /// Checks that `stated` and `withheld` split the requirement ids and enough are withheld.
    fn validate_partition(&self, ids: &BTreeSet<&str>) -> Result<(), HandoffError> {
        let role = Self::ROLE;
        let mut seen = BTreeSet::new();
        for (field, list) in [("stated", &self.stated), ("withheld", &self.withheld)] {
            for (index, id) in list.iter().enumerate() {
                if !ids.contains(id.as_str()) {
                    return Err(rule(role, format!("{field}[{index}]"), format!("`{id}` is not a requirement id of the brief")));
                }
                if !seen.insert(id.as_str()) {
                    return Err(rule(role, format!("{field}[{index}]"), format!("`{id}` is listed twice in stated and withheld")));
                }
            }
        }
        if let Some(missing) = ids.iter().find(|id| !seen.contains(*id)) {
            return Err(rule(role, "stated", format!("requirement `{missing}` is neither stated nor withheld")));
        }
        Ok(())
    }

    fn validate_failure_modes(&self, ids: &BTreeSet<&str>) -> Result<(), HandoffError> {
        let role = Self::ROLE;
        for (index, mode) in self.failure_modes.iter().enumerate() {
            let at = |field: &str| format!("failure_modes[{index}].{field}");
            if !ids.contains(mode.requirement.as_str()) {
                return Err(rule(role, at("requirement"), format!("`{}` is not a requirement id of the brief", mode.requirement)));
            }
            require_text(role, &at("id"), &mode.id)?;
            require_text(role, &at("incident"), &mode.incident)?;
            require_text(role, &at("detail"), &mode.detail)?;
        }
        if let Some(bare) = ids.iter().find(|id| !self.failure_modes.iter().any(|m| m.requirement == **id)) {
            return Err(rule(role, "failure_modes", format!("requirement `{bare}` has no failure mode")));
        }
        Ok(())
    }

    /// Checks the withheld minimum (`--min-withheld`).
    fn validate_withheld(&self, limits: &BriefLimits) -> Result<(), HandoffError> {
        if self.withheld.len() < limits.min_withheld {
            return Err(rule(
                Self::ROLE,
                "withheld",
                format!(
                    "withholds {} requirements; at least {} must be withheld (--min-withheld)",
                    self.withheld.len(),
                    limits.min_withheld
                ),
            ));
        }
        Ok(())
    }
}

/// The Builder's report (seed 000 App. E.2): where it wrote the package and what it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuilderHandoff {
    /// The package directory, relative to the Builder's working directory (`.` for the
    /// working directory itself). It must stay inside the working directory.
    pub package: PathBuf,
    /// What was built or changed, for the Auditor.
    pub summary: String,
    /// Files to write into the working directory before the package is looked at: path
    /// relative to the working directory → full UTF-8 content. How a role without tools (a
    /// `chat:` Builder) writes; empty (and left out of the JSON) for a role that wrote its
    /// files itself.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
}

impl Validate for BuilderHandoff {
    const ROLE: &'static str = "builder";

    fn validate(&self, _limits: &BriefLimits) -> Result<(), HandoffError> {
        require_text(Self::ROLE, "summary", &self.summary)?;
        check_file_paths(Self::ROLE, &self.files)?;
        let escapes = self.package.is_absolute()
            || self.package.components().any(|c| matches!(c, std::path::Component::ParentDir | std::path::Component::Prefix(_)));
        if escapes {
            return Err(rule(
                Self::ROLE,
                "package",
                format!("`{}` leaves the working directory; give a relative path inside it", self.package.display()),
            ));
        }
        Ok(())
    }
}

/// The sufficiency episode's report (seed 000 App. E.3 item 4): it implemented the full
/// instruction in its working directory, a copy of the package's workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImplementerHandoff {
    /// What it implemented.
    pub summary: String,
    /// Files to write into its working directory, as [`BuilderHandoff::files`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
}

impl Validate for ImplementerHandoff {
    const ROLE: &'static str = "implementer";

    fn validate(&self, _limits: &BriefLimits) -> Result<(), HandoffError> {
        require_text(Self::ROLE, "summary", &self.summary)?;
        check_file_paths(Self::ROLE, &self.files)
    }
}

/// The Auditor's decision (seed 000 App. E.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditDecision {
    /// The package is sound.
    Pass,
    /// The Builder must apply the numbered fixes.
    Fix,
    /// The design is unsound: back to the Planner.
    Redesign,
}

/// The Auditor's verdict with its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditorVerdict {
    /// pass, fix or redesign.
    pub verdict: AuditDecision,
    /// Required fixes, in order (numbered 1.. when handed to the Builder); only with `fix`.
    #[serde(default)]
    pub fixes: Vec<String>,
    /// Why the design must change; only with `redesign`.
    #[serde(default)]
    pub reason: Option<String>,
    /// For each requirement, the evidence that reveals it before the first submission.
    pub evidence: Vec<RequirementEvidence>,
}

/// The Auditor's discovery finding for one requirement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequirementEvidence {
    /// The requirement id.
    pub requirement: String,
    /// The file, record or experiment that reveals it.
    pub source: String,
    /// The quoted text or output.
    pub quote: String,
}

impl Validate for AuditorVerdict {
    const ROLE: &'static str = "auditor";

    fn validate(&self, _limits: &BriefLimits) -> Result<(), HandoffError> {
        let role = Self::ROLE;
        match self.verdict {
            AuditDecision::Fix if self.fixes.is_empty() => return Err(rule(role, "fixes", "verdict `fix` needs at least one fix")),
            AuditDecision::Redesign if self.reason.as_deref().is_none_or(|r| r.trim().is_empty()) => {
                return Err(rule(role, "reason", "verdict `redesign` needs a reason"));
            }
            _ => {}
        }
        for (index, fix) in self.fixes.iter().enumerate() {
            require_text(role, &format!("fixes[{index}]"), fix)?;
        }
        for (index, item) in self.evidence.iter().enumerate() {
            require_text(role, &format!("evidence[{index}].requirement"), &item.requirement)?;
            require_text(role, &format!("evidence[{index}].source"), &item.source)?;
            require_text(role, &format!("evidence[{index}].quote"), &item.quote)?;
        }
        Ok(())
    }
}

/// The Calibrator's decision (seed 000 App. E.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CalibrationDecision {
    /// The pair separates full from partial specification.
    Ready,
    /// The Builder must apply the fixes.
    Fix,
}

/// The run condition a rollout was made under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RolloutCondition {
    /// Full instruction.
    Full,
    /// Partial instruction.
    Partial,
    /// Partial instruction, literal prompting.
    Literal,
}

impl RolloutCondition {
    /// `full`, `partial` or `literal`, as the run store writes the condition.
    pub fn as_str(self) -> &'static str {
        match self {
            RolloutCondition::Full => "full",
            RolloutCondition::Partial => "partial",
            RolloutCondition::Literal => "literal",
        }
    }
}

/// How the Calibrator explains one rollout's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RolloutClass {
    /// A Full failure caused by the package (silent or ambiguous specification, evaluator
    /// contradicting it, misleading workspace).
    EnvironmentDefect,
    /// A Full failure that is the agent's own.
    AgentLimitation,
    /// A Partial early success from evidence the agent read.
    LegitimateInference,
    /// A Partial early success that did not come from discovering the requirement.
    Gaming,
}

/// The Calibrator's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibratorVerdict {
    /// ready or fix.
    pub verdict: CalibrationDecision,
    /// Required fixes; only with `fix`.
    #[serde(default)]
    pub fixes: Vec<String>,
    /// One classification per Full failure and per Partial early success.
    pub rollouts: Vec<RolloutFinding>,
}

/// The Calibrator's reading of one rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolloutFinding {
    /// Which rollout (an episode id or a label the Calibrator was given).
    pub rollout: String,
    /// Its condition.
    pub condition: RolloutCondition,
    /// The classification.
    pub class: RolloutClass,
    /// The turns (1-based) the classification rests on; at least one.
    pub turns: Vec<u32>,
    /// Why, in a sentence.
    pub note: String,
}

impl Validate for CalibratorVerdict {
    const ROLE: &'static str = "calibrator";

    fn validate(&self, _limits: &BriefLimits) -> Result<(), HandoffError> {
        let role = Self::ROLE;
        if self.verdict == CalibrationDecision::Fix && self.fixes.is_empty() {
            return Err(rule(role, "fixes", "verdict `fix` needs at least one fix"));
        }
        for (index, finding) in self.rollouts.iter().enumerate() {
            let at = |field: &str| format!("rollouts[{index}].{field}");
            require_text(role, &at("rollout"), &finding.rollout)?;
            if finding.turns.is_empty() {
                return Err(rule(role, at("turns"), "cites no turn; every classification must cite the turns it rests on"));
            }
            let under_full = matches!(finding.class, RolloutClass::EnvironmentDefect | RolloutClass::AgentLimitation);
            if under_full != (finding.condition == RolloutCondition::Full) {
                return Err(rule(
                    role,
                    at("class"),
                    "environment-defect and agent-limitation classify Full failures; legitimate-inference and gaming classify Partial or Literal successes",
                ));
            }
            require_text(role, &at("note"), &finding.note)?;
        }
        Ok(())
    }
}
