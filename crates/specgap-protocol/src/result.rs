//! The evaluator protocol's `result.json` (DESIGN §2) and the scoring kinds.
//!
//! [`parse_result`] reads the bytes (every section optional; each error names the JSON path
//! of the value it is about), and [`EvalResult::validate`] checks the meaning against the task:
//! non-finite numbers, a reward outside [0, 1] and unknown or missing requirement ids are
//! evaluation errors, never scores.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::package::Direction;

mod parse;

pub use parse::{ResultParseError, parse_result};

/// The only `result.json` version this crate reads.
pub const RESULT_VERSION: u32 = 1;

/// Tolerance for "reference attained" / "reward is full" (DESIGN §2 scoring table).
pub const SUCCESS_EPSILON: f64 = 1e-9;

/// `$SPECGAP_OUT/result.json` as written by an evaluator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalResult {
    /// Must equal [`RESULT_VERSION`].
    pub version: u32,
    /// Per-requirement outcomes, keyed by requirement id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirements: Option<BTreeMap<String, RequirementOutcome>>,
    /// Per-test outcomes, keyed by test id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<BTreeMap<String, TestOutcome>>,
    /// Delivery-case verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<DeliveryOutcome>,
    /// Reward in [0, 1] (DESIGN §2; the score of reward-scored tasks). Any other value,
    /// whatever the task's kind, fails [`EvalResult::validate`] with
    /// [`ResultProblem::RewardOutOfRange`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
    /// The reward's components by name (an imported Harbor task's `reward.json` keys),
    /// finite numbers of any range. Not scored: a stage's `min_reward` table compares them
    /// with its per-key minimums (docs/writing-tasks.md "Stages"); otherwise only recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewards: Option<BTreeMap<String, f64>>,
}

/// One requirement's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequirementOutcome {
    /// Whether the requirement holds.
    pub pass: bool,
    /// Which failure mode was seen (an `observations.toml` failure_mode), if any.
    #[serde(default)]
    pub failure_mode: Option<String>,
    /// Measured values; fill `{key}` placeholders of observation details.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub measured: BTreeMap<String, serde_json::Value>,
    /// Free text for task authors (never shown to agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One test's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestOutcome {
    /// Passed.
    Pass,
    /// Failed.
    Fail,
    /// Errored; counts as failed.
    Error,
    /// Skipped; left out of the denominator.
    Skip,
}

/// A delivery case's verdict (seed 002 §3.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryOutcome {
    /// False when a hard constraint is violated or the artifact is unusable.
    pub valid: bool,
    /// Raw objective value; required when `valid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<f64>,
    /// Hard-constraint violations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
    /// Zero-score signature (seed 002 §5.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signature>,
}

/// One violated hard constraint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Violation {
    /// Rule identifier.
    pub rule: String,
    /// How many times it was violated.
    #[serde(default)]
    pub count: u64,
    /// Free text.
    #[serde(default)]
    pub detail: String,
}

/// Why a delivery scored zero (or `none`), seed 002 §5.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Signature {
    /// A hard constraint was violated.
    Constraint,
    /// The deliverable is fatally wrong (e.g. infeasible).
    Fatal,
    /// The deliverable does not follow the extraction contract.
    Schema,
    /// The submitted code failed to run.
    Execution,
    /// Valid but low quality.
    Quality,
    /// No zero-score cause.
    None,
}

/// How a task is scored (DESIGN §2 "Scoring kind").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScoringKind {
    /// `requirements.toml` exists.
    Requirement,
    /// The evaluator reports `tests`.
    Test,
    /// `[delivery]` exists.
    Delivery,
    /// Only `reward`.
    Reward,
}

impl ScoringKind {
    /// Decides the kind as DESIGN §2 orders it: requirements, then tests, then delivery,
    /// then reward.
    pub fn decide(has_requirements: bool, reports_tests: bool, has_delivery: bool) -> Self {
        if has_requirements {
            ScoringKind::Requirement
        } else if reports_tests {
            ScoringKind::Test
        } else if has_delivery {
            ScoringKind::Delivery
        } else {
            ScoringKind::Reward
        }
    }

    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            ScoringKind::Requirement => "requirement",
            ScoringKind::Test => "test",
            ScoringKind::Delivery => "delivery",
            ScoringKind::Reward => "reward",
        }
    }
}

/// Score in [0, 1] (delivery scores may exceed 1 when the reference is beaten) and Success.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    /// The kind used.
    pub kind: ScoringKind,
    /// Score as DESIGN §2's table defines it.
    pub score: f64,
    /// Success as DESIGN §2's table defines it.
    pub success: bool,
}

/// Why a `result.json` cannot be scored: an evaluation error (DESIGN §2), never a score.
#[derive(Debug, Clone, PartialEq)]
pub enum ResultProblem {
    /// `version` is not [`RESULT_VERSION`].
    Version(u32),
    /// A number is NaN or infinite; the string names where.
    NonFinite(String),
    /// `reward` is outside [0, 1] (DESIGN §2 scoring table: the score of a reward-scored task
    /// is the reward itself, so 5.0 would be a score of 500%).
    RewardOutOfRange(f64),
    /// A requirement id the task does not have.
    UnknownRequirement(String),
    /// A requirement of the task the result does not report.
    MissingRequirement(String),
    /// A delivery case without `delivery`.
    MissingDelivery,
    /// A valid delivery without an objective, or with a zero / negative one under `min`.
    BadObjective(String),
    /// Nothing the scoring kind needs is there.
    NothingToScore(ScoringKind),
}

impl std::fmt::Display for ResultProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResultProblem::Version(v) => write!(f, "result.json has version {v}, expected {RESULT_VERSION}"),
            ResultProblem::NonFinite(at) => write!(f, "result.json has a non-finite number at {at}"),
            ResultProblem::RewardOutOfRange(reward) => {
                write!(f, "result.json reports reward {reward}, outside [0, 1]; a reward is a fraction from 0 (nothing) to 1 (full)")
            }
            ResultProblem::UnknownRequirement(id) => {
                write!(f, "result.json reports requirement `{id}`, which the task does not have")
            }
            ResultProblem::MissingRequirement(id) => {
                write!(f, "result.json does not report requirement `{id}`")
            }
            ResultProblem::MissingDelivery => write!(f, "result.json of a delivery case has no `delivery`"),
            ResultProblem::BadObjective(why) => write!(f, "result.json delivery objective: {why}"),
            ResultProblem::NothingToScore(kind) => {
                write!(f, "result.json has nothing a {}-scored task needs", kind.as_str())
            }
        }
    }
}

impl std::error::Error for ResultProblem {}

/// What [`EvalResult::validate`] and [`EvalResult::score`] need to know about the task.
#[derive(Debug, Clone, Copy)]
pub struct ScoringContext<'a> {
    /// The task's requirement ids (empty when not requirement-scored).
    pub requirement_ids: &'a [String],
    /// The task's `[delivery]` reference and direction, if a delivery case.
    pub delivery: Option<(f64, Direction)>,
}

impl EvalResult {
    /// Checks the result against the task: version, finite numbers, a reward in [0, 1],
    /// requirement ids exactly the task's, `delivery` present on delivery cases.
    ///
    /// # Errors
    /// The first [`ResultProblem`] found.
    pub fn validate(&self, ctx: &ScoringContext<'_>) -> Result<(), ResultProblem> {
        if self.version != RESULT_VERSION {
            return Err(ResultProblem::Version(self.version));
        }
        self.check_finite()?;
        if let Some(reward) = self.reward.filter(|r| !(0.0..=1.0).contains(r)) {
            return Err(ResultProblem::RewardOutOfRange(reward));
        }
        if !ctx.requirement_ids.is_empty() {
            let reported = self.requirements.as_ref();
            for id in reported.into_iter().flat_map(|m| m.keys()) {
                if !ctx.requirement_ids.contains(id) {
                    return Err(ResultProblem::UnknownRequirement(id.clone()));
                }
            }
            for id in ctx.requirement_ids {
                if !reported.is_some_and(|m| m.contains_key(id)) {
                    return Err(ResultProblem::MissingRequirement(id.clone()));
                }
            }
        } else if let Some(id) = self.requirements.as_ref().and_then(|map| map.keys().next()) {
            return Err(ResultProblem::UnknownRequirement(id.clone()));
        }
        if ctx.delivery.is_some() && self.delivery.is_none() && self.tests.is_none() && ctx.requirement_ids.is_empty() {
            return Err(ResultProblem::MissingDelivery);
        }
        Ok(())
    }

    fn check_finite(&self) -> Result<(), ResultProblem> {
        if self.reward.is_some_and(|r| !r.is_finite()) {
            return Err(ResultProblem::NonFinite("reward".into()));
        }
        if let Some((key, _)) = self.rewards.iter().flatten().find(|(_, value)| !value.is_finite()) {
            return Err(ResultProblem::NonFinite(format!("rewards.{key}")));
        }
        if self.delivery.as_ref().and_then(|d| d.objective).is_some_and(|obj| !obj.is_finite()) {
            return Err(ResultProblem::NonFinite("delivery.objective".into()));
        }
        for (id, outcome) in self.requirements.iter().flatten() {
            for (key, value) in &outcome.measured {
                if value.as_f64().is_some_and(|n| !n.is_finite()) {
                    return Err(ResultProblem::NonFinite(format!("requirements.{id}.measured.{key}")));
                }
            }
        }
        Ok(())
    }

    /// The scoring kind this result falls under for a task.
    pub fn kind(&self, ctx: &ScoringContext<'_>) -> ScoringKind {
        ScoringKind::decide(!ctx.requirement_ids.is_empty(), self.tests.is_some(), ctx.delivery.is_some())
    }

    /// Score and Success by DESIGN §2's table. Call [`EvalResult::validate`] first.
    ///
    /// # Errors
    /// [`ResultProblem::NothingToScore`] when the kind's section is absent (e.g. a
    /// reward-scored task without `reward`), [`ResultProblem::BadObjective`] for a valid
    /// delivery without a usable objective.
    pub fn score(&self, ctx: &ScoringContext<'_>) -> Result<Scored, ResultProblem> {
        let kind = self.kind(ctx);
        let (score, success) = match kind {
            ScoringKind::Requirement => {
                let map = self.requirements.as_ref().ok_or(ResultProblem::NothingToScore(kind))?;
                let total = ctx.requirement_ids.len();
                let passed = ctx.requirement_ids.iter().filter(|id| map.get(*id).is_some_and(|o| o.pass)).count();
                (passed as f64 / total as f64, passed == total)
            }
            ScoringKind::Test => {
                let tests = self.tests.as_ref().ok_or(ResultProblem::NothingToScore(kind))?;
                test_score(tests)
            }
            ScoringKind::Delivery => {
                let delivery = self.delivery.as_ref().ok_or(ResultProblem::MissingDelivery)?;
                let (reference, direction) = ctx.delivery.ok_or(ResultProblem::NothingToScore(kind))?;
                delivery_score(delivery, reference, direction)?
            }
            ScoringKind::Reward => {
                let reward = self.reward.ok_or(ResultProblem::NothingToScore(kind))?;
                (reward, reward >= 1.0 - SUCCESS_EPSILON)
            }
        };
        Ok(Scored { kind, score, success })
    }
}

/// Test-scored: passed / (total − skipped), `error` counting as failed; success when no test
/// fails or errors. With every test skipped the score is 0 and success is false (nothing was
/// shown to work) — a decision of this project, recorded in docs/decisions.md.
fn test_score(tests: &BTreeMap<String, TestOutcome>) -> (f64, bool) {
    let counted = tests.values().filter(|t| **t != TestOutcome::Skip).count();
    let passed = tests.values().filter(|t| **t == TestOutcome::Pass).count();
    if counted == 0 {
        return (0.0, false);
    }
    (passed as f64 / counted as f64, passed == counted)
}

/// Delivery-scored: 0 if not valid, else x/R (max) or R/x (min); success when valid and the
/// reference is attained.
fn delivery_score(d: &DeliveryOutcome, reference: f64, direction: Direction) -> Result<(f64, bool), ResultProblem> {
    if !d.valid {
        return Ok((0.0, false));
    }
    let x = d.objective.ok_or_else(|| ResultProblem::BadObjective("a valid delivery must report `objective`".into()))?;
    let score = match direction {
        Direction::Max => x / reference,
        Direction::Min => {
            if x <= 0.0 {
                return Err(ResultProblem::BadObjective(format!("{x} cannot be scored under direction min")));
            }
            reference / x
        }
    };
    Ok((score, score >= 1.0 - SUCCESS_EPSILON))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn requirement_score_is_passed_over_total() {
        let r: EvalResult = serde_json::from_str(
            r#"{"version":1,"requirements":{"a":{"pass":true},"b":{"pass":false,"failure_mode":"x"},"c":{"pass":true}}}"#,
        )
        .unwrap();
        let req = ids(&["a", "b", "c"]);
        let ctx = ScoringContext { requirement_ids: &req, delivery: None };
        r.validate(&ctx).unwrap();
        let s = r.score(&ctx).unwrap();
        assert_eq!(s.kind, ScoringKind::Requirement);
        assert!((s.score - 2.0 / 3.0).abs() < 1e-15);
        assert!(!s.success);
    }

    #[test]
    fn test_score_skips_and_errors() {
        let r: EvalResult = serde_json::from_str(r#"{"version":1,"tests":{"a":"pass","b":"error","c":"skip","d":"pass"}}"#).unwrap();
        let ctx = ScoringContext { requirement_ids: &[], delivery: None };
        let s = r.score(&ctx).unwrap();
        assert_eq!(s.kind, ScoringKind::Test);
        assert!((s.score - 2.0 / 3.0).abs() < 1e-15);
        assert!(!s.success);
    }

    #[test]
    fn delivery_min_and_invalid() {
        let ok: EvalResult = serde_json::from_str(r#"{"version":1,"delivery":{"valid":true,"objective":200.0}}"#).unwrap();
        let ctx = ScoringContext { requirement_ids: &[], delivery: Some((100.0, Direction::Min)) };
        let s = ok.score(&ctx).unwrap();
        assert_eq!(s.score, 0.5);
        assert!(!s.success);
        let bad: EvalResult =
            serde_json::from_str(r#"{"version":1,"delivery":{"valid":false,"objective":50.0,"signature":"constraint"}}"#).unwrap();
        assert_eq!(bad.score(&ctx).unwrap().score, 0.0);
    }

    #[test]
    fn unknown_and_missing_requirement_ids_are_errors() {
        let r: EvalResult = serde_json::from_str(r#"{"version":1,"requirements":{"a":{"pass":true},"z":{"pass":true}}}"#).unwrap();
        let req = ids(&["a", "b"]);
        let ctx = ScoringContext { requirement_ids: &req, delivery: None };
        assert_eq!(r.validate(&ctx), Err(ResultProblem::UnknownRequirement("z".into())));
        let r2: EvalResult = serde_json::from_str(r#"{"version":1,"requirements":{"a":{"pass":true}}}"#).unwrap();
        assert_eq!(r2.validate(&ctx), Err(ResultProblem::MissingRequirement("b".into())));
    }

    /// Issue 10 item 4: a reward-scored evaluator reporting 5.0 or -3 was accepted as is.
    #[test]
    fn reward_outside_zero_to_one_is_an_evaluation_error_naming_the_value() {
        let ctx = ScoringContext { requirement_ids: &[], delivery: None };
        for (text, reward, message) in [
            (
                r#"{"version":1,"reward":5.0}"#,
                5.0,
                "result.json reports reward 5, outside [0, 1]; a reward is a fraction from 0 (nothing) to 1 (full)",
            ),
            (
                r#"{"version":1,"reward":-3}"#,
                -3.0,
                "result.json reports reward -3, outside [0, 1]; a reward is a fraction from 0 (nothing) to 1 (full)",
            ),
            (
                r#"{"version":1,"reward":1.0000001}"#,
                1.0000001,
                "result.json reports reward 1.0000001, outside [0, 1]; a reward is a fraction from 0 (nothing) to 1 (full)",
            ),
        ] {
            let result = parse_result(text.as_bytes()).unwrap();
            let problem = result.validate(&ctx).unwrap_err();
            assert_eq!(problem, ResultProblem::RewardOutOfRange(reward));
            assert_eq!(problem.to_string(), message);
        }
        // The range holds whatever the kind: a test-scored result with a reward of 2 is rejected too.
        let tests = parse_result(br#"{"version":1,"tests":{"t":"pass"},"reward":2}"#).unwrap();
        assert_eq!(tests.validate(&ctx), Err(ResultProblem::RewardOutOfRange(2.0)));
        for edge in ["0", "1", "0.0", "1.0", "-0.0"] {
            let result = parse_result(format!(r#"{{"version":1,"reward":{edge}}}"#).as_bytes()).unwrap();
            assert_eq!(result.validate(&ctx), Ok(()), "{edge}");
        }
    }

    #[test]
    fn nothing_to_score_names_the_kind_without_a_stray_space() {
        assert_eq!(ResultProblem::NothingToScore(ScoringKind::Reward).to_string(), "result.json has nothing a reward-scored task needs");
    }
}
