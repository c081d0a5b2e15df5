//! `specgap eval`: evaluate any directory as a submission of a task — the task author's inner
//! loop. The report shows every value the evaluator returned, the derived Score and Success
//! (DESIGN §2 scoring table), and the observation feedback would pick.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use specgap_protocol::result::{DeliveryOutcome, ScoringKind, TestOutcome};

use crate::judge::{EvaluateError, Judge, Submission, judge_outcome};
use crate::package::TaskPackage;

/// Version of the `--json` shape of [`EvalReport`].
pub const EVAL_JSON_VERSION: u32 = 1;

/// One requirement's outcome, with what the task says about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequirementLine {
    /// Requirement id.
    pub id: String,
    /// Priority (1 is the highest).
    pub priority: u32,
    /// Whether the partial instruction states it.
    pub stated: bool,
    /// Whether it passes.
    pub pass: bool,
    /// The failure mode reported, if any.
    pub failure_mode: Option<String>,
    /// Measured values, as reported.
    pub measured: BTreeMap<String, serde_json::Value>,
    /// The evaluator's free-text detail, if any.
    pub detail: Option<String>,
}

/// The observation feedback would give for this submission (DESIGN §3.4): the failing
/// requirement with the highest priority, its registered observation, detail filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FeedbackPreview {
    /// The requirement.
    pub requirement: String,
    /// The observation's failure mode.
    pub failure_mode: String,
    /// First context (sent the first time the mode is reported).
    pub incident: String,
    /// Second context with `{key}` placeholders filled from `measured`.
    pub detail: String,
}

/// What `specgap eval` prints (`--json`: this struct, stable shape [`EVAL_JSON_VERSION`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    /// [`EVAL_JSON_VERSION`].
    pub version: u32,
    /// Task name.
    pub task: String,
    /// The evaluated directory.
    pub submission: PathBuf,
    /// Scoring kind.
    pub kind: ScoringKind,
    /// Score (DESIGN §2), `None` when there is nothing to score.
    pub score: Option<f64>,
    /// Success (DESIGN §2).
    pub success: bool,
    /// Per-requirement outcomes in priority order (empty unless requirement-scored).
    pub requirements: Vec<RequirementLine>,
    /// Per-test outcomes, as reported.
    pub tests: BTreeMap<String, TestOutcome>,
    /// The delivery verdict, as reported.
    pub delivery: Option<DeliveryOutcome>,
    /// The reward, as reported.
    pub reward: Option<f64>,
    /// The observation feedback would choose, when a requirement fails.
    pub feedback: Option<FeedbackPreview>,
}

/// Evaluates `dir` as a submitted workspace of `package`.
///
/// # Errors
/// [`EvaluateError`] when the evaluator fails or its result breaks the protocol.
pub fn eval_dir(package: &TaskPackage, dir: &Path, judge: &dyn Judge) -> Result<EvalReport, EvaluateError> {
    let outcome = judge_outcome(judge, package, Submission::Directory(dir))?;
    let reported = outcome.result.requirements.clone().unwrap_or_default();
    let requirements: Vec<RequirementLine> = package
        .requirements()
        .iter()
        .filter_map(|r| {
            let o = reported.get(&r.id)?;
            Some(RequirementLine {
                id: r.id.clone(),
                priority: r.priority,
                stated: r.stated,
                pass: o.pass,
                failure_mode: o.failure_mode.clone(),
                measured: o.measured.clone(),
                detail: o.detail.clone(),
            })
        })
        .collect();
    let feedback = requirements.iter().find(|line| !line.pass).and_then(|line| {
        let observation = package.observation(&line.id, line.failure_mode.as_deref())?;
        Some(FeedbackPreview {
            requirement: line.id.clone(),
            failure_mode: observation.failure_mode.clone(),
            incident: observation.incident.clone(),
            detail: specgap_protocol::text::fill_placeholders(&observation.detail, &line.measured),
        })
    });
    Ok(EvalReport {
        version: EVAL_JSON_VERSION,
        task: package.name().to_owned(),
        submission: dir.to_path_buf(),
        kind: outcome.kind,
        score: outcome.scored.map(|s| s.score),
        success: outcome.success(),
        requirements,
        tests: outcome.result.tests.clone().unwrap_or_default(),
        delivery: outcome.result.delivery.clone(),
        reward: outcome.result.reward,
        feedback,
    })
}

fn measured_text(measured: &BTreeMap<String, serde_json::Value>) -> String {
    let parts: Vec<String> = measured
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    if parts.is_empty() { "-".to_owned() } else { parts.join(" ") }
}

/// The human-readable report of `specgap eval`.
pub fn render_eval(report: &EvalReport) -> String {
    let score = report.score.map_or_else(|| "nothing to score".to_owned(), |s| format!("{s:.4}"));
    let success = if report.success { "yes" } else { "no" };
    let mut out = format!("{}: {}-scored, score {score}, success {success}\n", report.task, report.kind.as_str());
    if !report.requirements.is_empty() {
        let width = report.requirements.iter().map(|l| l.id.len()).max().unwrap_or(0).max("requirement".len());
        out.push_str(&format!("  {:<width$}  priority  stated  result  failure mode / measured\n", "requirement"));
        for line in &report.requirements {
            let result = if line.pass { "pass" } else { "fail" };
            let stated = if line.stated { "yes" } else { "no" };
            let mode = line.failure_mode.as_deref().unwrap_or("-");
            let tail = if line.pass { String::new() } else { format!("{mode}  {}", measured_text(&line.measured)) };
            let text = format!("  {:<width$}  {:<8}  {stated:<6}  {result:<6}  {tail}", line.id, line.priority);
            out.push_str(text.trim_end());
            out.push('\n');
            if let Some(detail) = line.detail.as_deref().filter(|_| !line.pass) {
                out.push_str(&format!("  {:<width$}  detail: {detail}\n", ""));
            }
        }
    }
    if !report.tests.is_empty() {
        let width = report.tests.keys().map(String::len).max().unwrap_or(0).max("test".len());
        out.push_str(&format!("  {:<width$}  result\n", "test"));
        for (id, outcome) in &report.tests {
            let result = match outcome {
                TestOutcome::Pass => "pass",
                TestOutcome::Fail => "fail",
                TestOutcome::Error => "error",
                TestOutcome::Skip => "skip",
            };
            out.push_str(&format!("  {id:<width$}  {result}\n"));
        }
    }
    if let Some(delivery) = &report.delivery {
        let objective = delivery.objective.map_or_else(|| "-".to_owned(), |x| x.to_string());
        out.push_str(&format!("  delivery: valid {}, objective {objective}\n", delivery.valid));
        for violation in &delivery.violations {
            out.push_str(&format!("    violation {} x{}: {}\n", violation.rule, violation.count, violation.detail));
        }
    }
    if let Some(reward) = report.reward {
        out.push_str(&format!("  reward: {reward}\n"));
    }
    if let Some(feedback) = &report.feedback {
        out.push_str(&format!(
            "  feedback ({}/{}): {}\n    then: {}\n",
            feedback.requirement,
            feedback.failure_mode,
            feedback.incident.trim(),
            feedback.detail.trim()
        ));
    }
    out
}
