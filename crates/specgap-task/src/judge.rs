//! Judging one state of a package's workspace with its evaluator: the [`Judge`] seam.
//!
//! `check` and `eval` describe *what* to evaluate ([`Submission`]) and leave *how* to a
//! [`Judge`]: [`crate::SandboxJudge`] materializes the state and runs the real evaluator in the
//! sandbox; tests can substitute a judge that returns prepared results.

use std::path::Path;
use std::time::Duration;

use specgap_protocol::result::{EvalResult, ResultProblem, Scored, ScoringKind};

use crate::heard::Heard;
use crate::package::{Overlay, ResidualState, TaskPackage};

/// A state of the workspace to evaluate.
#[derive(Debug, Clone, Copy)]
pub enum Submission<'a> {
    /// The unchanged starter workspace.
    Starter,
    /// The starter workspace with a solution overlay applied; the string names it
    /// (`gold`, `literal`, `mutant:<id>`).
    Overlay(&'a str, &'a Overlay),
    /// The starter workspace with a residual state's patch applied.
    Residual(&'a ResidualState),
    /// Any directory, evaluated as the submitted workspace (`specgap eval`).
    Directory(&'a Path),
    /// A staged task's state at stage `stage` (1-based), scored as that stage
    /// (`SPECGAP_STAGE`): the starter with the files of stages 1..=`stage` applied in order
    /// and, when `solved`, each of those stages' own gold after its files (a package without
    /// stage golds: `solutions/gold/` last).
    Stage {
        /// The stage, 1-based.
        stage: u32,
        /// Whether the golds are applied (the oracle) or not (an agent that does nothing).
        solved: bool,
    },
}

impl Submission<'_> {
    /// A short label: `starter`, `gold`, `mutant:<id>`, `residual:<id>` or the directory.
    pub fn label(&self) -> String {
        match self {
            Submission::Starter => "starter".into(),
            Submission::Overlay(name, _) => (*name).to_owned(),
            Submission::Residual(state) => format!("residual:{}", state.id),
            Submission::Directory(dir) => dir.display().to_string(),
            Submission::Stage { stage, solved } => format!("{}@stage-{stage}", if *solved { "gold" } else { "starter" }),
        }
    }

    /// The stage the evaluator is told it scores (`SPECGAP_STAGE`), if any.
    pub fn stage(&self) -> Option<u32> {
        match self {
            Submission::Stage { stage, .. } => Some(*stage),
            _ => None,
        }
    }
}

/// Why a submission could not be judged. None of these is a verdict on the submission: they
/// are evaluation errors (DESIGN §2) or failures to prepare the workspace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvaluateError {
    /// The workspace could not be materialized, or an overlay applied.
    #[error("could not prepare the {what} workspace")]
    Prepare {
        /// Which submission.
        what: String,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A residual state's `state.patch` does not apply to the clean workspace.
    #[error("state.patch of residual state `{state}` does not apply to the clean workspace")]
    PatchDoesNotApply {
        /// The state id.
        state: String,
        /// The cause (the patch tool's complaint).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The task's `[environment]` cannot be provided in the sandbox (a command not on the host
    /// `PATH`, an unusable bind).
    #[error("cannot provide the task's [environment]")]
    Environment {
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The evaluator runner failed: non-zero exit, timeout, no or malformed `result.json`, a
    /// sandbox failure (DESIGN §2 evaluation errors).
    #[error("evaluation error")]
    Evaluator {
        /// The runner's error, with the evaluator's stderr tail.
        #[source]
        source: Box<specgap_sandbox::EvalError>,
    },
    /// A command could not be run in the sandbox ([`Judge::run_on_starter`]).
    #[error("the sandbox could not run the command")]
    Command {
        /// The sandbox's error.
        #[source]
        source: Box<specgap_sandbox::SandboxError>,
    },
    /// An evaluation error described in words (for judges other than the sandbox's).
    #[error("evaluation error: {reason}")]
    Evaluation {
        /// What went wrong, lowercase.
        reason: String,
        /// The last lines of the evaluator's stderr.
        stderr_tail: String,
    },
    /// `result.json` parsed but breaks the protocol for this task (unknown or missing
    /// requirement, non-finite number, missing delivery, unusable objective).
    #[error("evaluation error: {problem}")]
    InvalidResult {
        /// The protocol rule broken.
        problem: ResultProblem,
        /// The last lines of the evaluator's stderr.
        stderr_tail: String,
    },
}

impl EvaluateError {
    /// The evaluator's stderr tail, when the evaluator ran.
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            EvaluateError::Evaluation { stderr_tail, .. } | EvaluateError::InvalidResult { stderr_tail, .. } => Some(stderr_tail),
            EvaluateError::Evaluator { source } => Some(source.stderr_tail()),
            _ => None,
        }
    }
}

/// Runs a package's evaluator on a submission.
pub trait Judge: Sync {
    /// Evaluates `submission` of `package` and returns the evaluator's `result.json`, parsed
    /// but not yet validated against the task (see [`Outcome::new`]).
    ///
    /// # Errors
    /// [`EvaluateError`] when the submission could not be prepared or the evaluator failed.
    fn evaluate(&self, package: &TaskPackage, submission: Submission<'_>) -> Result<Judged, EvaluateError>;

    /// Runs the shell `command` on a fresh copy of `package`'s unchanged starter workspace, as
    /// an agent's command runs (the task's `[environment]`, the workspace as working directory),
    /// for at most `timeout`, and returns what it printed ([`crate::heard`]). A failing exit
    /// status or a timeout is not an error.
    ///
    /// # Errors
    /// [`EvaluateError::Prepare`], [`EvaluateError::Environment`] or
    /// [`EvaluateError::Command`] when the command could not be run at all.
    fn run_on_starter(&self, package: &TaskPackage, command: &str, timeout: Duration) -> Result<Heard, EvaluateError>;
}

/// What the evaluator produced for one submission.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The parsed `result.json`.
    pub result: EvalResult,
    /// The last lines of the evaluator's stderr (kept for error reports).
    pub stderr_tail: String,
}

/// A validated evaluation and what it means under the task's scoring kind.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The validated `result.json`.
    pub result: EvalResult,
    /// The scoring kind (DESIGN §2).
    pub kind: ScoringKind,
    /// Score and Success; `None` when the result has nothing the kind needs (a reward-scored
    /// task whose evaluator reports no reward: "nothing to score").
    pub scored: Option<Scored>,
    /// The last lines of the evaluator's stderr.
    pub stderr_tail: String,
}

impl Outcome {
    /// Validates a judged result against the task and scores it.
    ///
    /// # Errors
    /// [`EvaluateError::InvalidResult`] for every [`ResultProblem`] except "nothing to score".
    pub fn new(package: &TaskPackage, judged: Judged) -> Result<Outcome, EvaluateError> {
        let ctx = package.scoring_context();
        let invalid = |problem| EvaluateError::InvalidResult { problem, stderr_tail: judged.stderr_tail.clone() };
        judged.result.validate(&ctx).map_err(invalid)?;
        let kind = judged.result.kind(&ctx);
        let scored = match judged.result.score(&ctx) {
            Ok(scored) => Some(scored),
            Err(ResultProblem::NothingToScore(_)) => None,
            Err(problem) => return Err(invalid(problem)),
        };
        Ok(Outcome { result: judged.result, kind, scored, stderr_tail: judged.stderr_tail })
    }

    /// Requirement ids that fail, in the task's priority order.
    pub fn failing_requirements<'p>(&self, package: &'p TaskPackage) -> Vec<&'p str> {
        let reported = self.result.requirements.as_ref();
        package
            .requirement_ids()
            .iter()
            .filter(|id| reported.and_then(|m| m.get(*id)).is_some_and(|o| !o.pass))
            .map(String::as_str)
            .collect()
    }

    /// Test ids reported `fail` or `error`, sorted.
    pub fn failing_tests(&self) -> Vec<&str> {
        use specgap_protocol::result::TestOutcome;
        self.result
            .tests
            .iter()
            .flatten()
            .filter(|(_, t)| matches!(t, TestOutcome::Fail | TestOutcome::Error))
            .map(|(id, _)| id.as_str())
            .collect()
    }

    /// Whether the submission succeeds under the task's scoring kind.
    pub fn success(&self) -> bool {
        self.scored.is_some_and(|s| s.success)
    }
}

/// Judges and validates in one step.
pub(crate) fn judge_outcome(judge: &dyn Judge, package: &TaskPackage, submission: Submission<'_>) -> Result<Outcome, EvaluateError> {
    Outcome::new(package, judge.evaluate(package, submission)?)
}
