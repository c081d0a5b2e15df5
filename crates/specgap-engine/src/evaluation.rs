//! Evaluating a state the agent can no longer change: a frozen submission or a residual
//! starting state (DESIGN §2 evaluator protocol, §3 "Infrastructure failures").
//!
//! * **Re-evaluation** (seed 001 App. C.1; `docs/decisions.md` "Runner: retries and
//!   deterministic failures"): an evaluation error re-runs the evaluator on the same frozen
//!   state, up to the run's retry limit, instead of running the agent again. Every failed
//!   evaluation but the last is recorded as an `errors` row of the attempt; the last is handed
//!   back as an [`EvalFailure`]. Only a failure the evaluator itself says cannot be retried
//!   ends the re-evaluation early: one that repeats the previous one (once digits and temporary
//!   names are masked) is still re-evaluated up to the limit, as the paper re-runs verification
//!   whenever it fails for infrastructure reasons (issue 24 item 4), and is marked
//!   deterministic in its `errors` row, for the reader.
//! * **Attribution** (seed 002 §4.2, A.3; "Engine: evaluator failures on a delivered
//!   artifact"): when the evaluator still fails on a submission of a delivery-scored task,
//!   the same evaluator is run on the task's gold artifact (the clean workspace with the
//!   `solutions/gold` overlay, as `scripted:gold` would deliver it; once per task per run,
//!   [`GoldChecks`]). If the gold evaluates validly as a delivery, the evaluator works and the
//!   failure is the delivery's: the submission is scored 0 with `valid = false` and signature
//!   `execution` ([`execution_failure`]). Otherwise (no gold, the gold fails too, or the task is
//!   requirement-, test- or reward-scored) it stays an evaluation error, never the agent's.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use specgap_protocol::result::{DeliveryOutcome, EvalResult, RESULT_VERSION, Scored, ScoringKind, Signature};
use specgap_sandbox::HostView;
use specgap_store::{EpisodeWriter, ErrorClass, ErrorRecord};

use crate::episode::{EpisodeContext, EpisodeError};
use crate::lock;
use crate::runner::exec::attempt_independent;
use crate::sandbox_ops;

/// Gold checks of a run, keyed by package content hash: whether the task's evaluator scores
/// its gold artifact validly as a delivery. Only answers that cannot change within the run are
/// kept (a valid gold, no gold); a gold that failed is checked again next time, so one
/// transient failure does not decide later episodes.
pub type GoldChecks = Arc<Mutex<HashMap<String, GoldCheck>>>;

/// What the evaluator made of a task's gold artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoldCheck {
    /// It evaluated validly; the scoring kind of that evaluation.
    Valid(ScoringKind),
    /// The evaluator failed on the gold too.
    Failed,
    /// The task has no `solutions/gold` overlay.
    NoGold,
}

/// An evaluation that failed (DESIGN §2 "evaluation error").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EvalFailure {
    /// What went wrong.
    pub(crate) message: String,
    /// Tail of the evaluator's stderr.
    pub(crate) stderr_tail: String,
    /// Whether another evaluation cannot help.
    pub(crate) deterministic: bool,
}

impl EvalFailure {
    /// Whether `self` repeats `previous` once what differs between runs anyway is masked.
    fn repeats(&self, previous: &EvalFailure) -> bool {
        attempt_independent(&self.message) == attempt_independent(&previous.message)
            && attempt_independent(&self.stderr_tail) == attempt_independent(&previous.stderr_tail)
    }

    /// Records the failure as an `errors` row of this attempt.
    pub(crate) fn record(&self, writer: &mut EpisodeWriter) -> Result<(), EpisodeError> {
        writer.record_error(&ErrorRecord {
            class: ErrorClass::Evaluation,
            message: self.message.clone(),
            stderr_tail: self.stderr_tail.clone(),
            deterministic: self.deterministic,
        })?;
        Ok(())
    }

    /// The episode error for a state that could not be evaluated.
    pub(crate) fn into_error(self) -> EpisodeError {
        EpisodeError::Evaluation { message: self.message, stderr_tail: self.stderr_tail, deterministic: self.deterministic }
    }
}

/// The outcome of evaluating one frozen state.
#[derive(Debug)]
pub(crate) enum Evaluated {
    /// A scorable result.
    Scored(EvalResult, Scored),
    /// Every evaluation failed; the last failure (earlier ones are recorded).
    Failed(EvalFailure),
}

/// Evaluates `state` (never changed in between) up to `1 + ctx.eval_retries` times (module
/// guide), as the submission of `stage` (1-based, `SPECGAP_STAGE`) of a staged task, or as
/// the whole task with `None`.
///
/// # Errors
/// Infrastructure errors of the sandbox and store errors; evaluator failures are
/// [`Evaluated::Failed`].
pub(crate) fn evaluate_with_retries(
    ctx: &EpisodeContext<'_>,
    host: &HostView,
    state: &Path,
    stage: Option<u32>,
    writer: &mut EpisodeWriter,
) -> Result<Evaluated, EpisodeError> {
    let mut previous: Option<EvalFailure> = None;
    let mut evaluations = 0u32;
    loop {
        evaluations += 1;
        let mut failure = match sandbox_ops::evaluate(ctx, host, state, stage) {
            Ok((result, scored)) => return Ok(Evaluated::Scored(result, scored)),
            Err(EpisodeError::Evaluation { message, stderr_tail, deterministic }) => EvalFailure { message, stderr_tail, deterministic },
            Err(other) => return Err(other),
        };
        let final_word = failure.deterministic;
        failure.deterministic |= previous.as_ref().is_some_and(|p| failure.repeats(p));
        if stopping(ctx) || final_word || evaluations > ctx.eval_retries {
            return Ok(Evaluated::Failed(failure));
        }
        failure.record(writer)?;
        previous = Some(failure);
    }
}

/// Whether the run is stopping. A failure then is most likely our own kill of the evaluator
/// (Ctrl-C): it is neither re-evaluated, nor recorded as an `errors` row, nor checked against
/// the gold; the runner records the attempt as interrupted (docs/decisions.md "Runner: Ctrl-C
/// and what survives").
fn stopping(ctx: &EpisodeContext<'_>) -> bool {
    ctx.stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst))
}

/// Whether an evaluator failure on a submission is the delivery's (module guide): the task is
/// delivery-scored and its gold artifact evaluates validly as a delivery. Never while the run
/// is stopping.
///
/// # Errors
/// Infrastructure errors materializing the gold or running the sandbox.
pub(crate) fn failure_is_the_deliverys(ctx: &EpisodeContext<'_>, host: &HostView) -> Result<bool, EpisodeError> {
    let package = ctx.package;
    if stopping(ctx) || !package.is_delivery() || package.is_requirement_scored() {
        return Ok(false);
    }
    Ok(gold_check(ctx, host)? == GoldCheck::Valid(ScoringKind::Delivery))
}

/// The gold check of the episode's task, from the run's cache or run now.
fn gold_check(ctx: &EpisodeContext<'_>, host: &HostView) -> Result<GoldCheck, EpisodeError> {
    let key = ctx.package.hash().to_string();
    if let Some(check) = lock(ctx.gold_checks).get(&key) {
        return Ok(*check);
    }
    let check = run_gold_check(ctx, host)?;
    if check != GoldCheck::Failed {
        lock(ctx.gold_checks).insert(key, check);
    }
    Ok(check)
}

fn run_gold_check(ctx: &EpisodeContext<'_>, host: &HostView) -> Result<GoldCheck, EpisodeError> {
    let Some(overlay) = ctx.package.solution("gold") else {
        return Ok(GoldCheck::NoGold);
    };
    let dir = ctx.workdir.join("gold-check");
    sandbox_ops::materialize_clean(ctx, &dir)?;
    sandbox_ops::apply_overlay(&dir, overlay)?;
    let check = match sandbox_ops::evaluate(ctx, host, &dir, None) {
        Ok((_, scored)) => GoldCheck::Valid(scored.kind),
        Err(EpisodeError::Evaluation { .. }) => GoldCheck::Failed,
        Err(other) => return Err(other),
    };
    sandbox_ops::remove_scratch(&dir);
    Ok(check)
}

/// The result and score of a delivery the evaluator could not run on (module guide): not
/// valid, signature `execution`, Score 0.
///
/// # Errors
/// An evaluation error when the task's scoring context cannot score it (it always can for a
/// delivery-scored task).
pub(crate) fn execution_failure(ctx: &EpisodeContext<'_>) -> Result<(EvalResult, Scored), EpisodeError> {
    let result = EvalResult {
        version: RESULT_VERSION,
        requirements: None,
        tests: None,
        delivery: Some(DeliveryOutcome { valid: false, objective: None, violations: Vec::new(), signature: Some(Signature::Execution) }),
        reward: None,
        rewards: None,
    };
    let scored = result.score(&ctx.package.scoring_context()).map_err(|problem| EpisodeError::Evaluation {
        message: format!("cannot score the execution failure: {problem}"),
        stderr_tail: String::new(),
        deterministic: true,
    })?;
    Ok((result, scored))
}
