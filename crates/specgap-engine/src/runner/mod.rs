//! Run orchestration (DESIGN §3 "Infrastructure failures", §4, §6): plan the episodes of a
//! run, run them on a bounded pool of worker threads, retry failed attempts, and record
//! everything in the run store.
//!
//! ## Shape
//!
//! 1. [`plan()`](plan::plan) takes tasks × agents × conditions × starts × repeats in that
//!    fixed order. Each combination the task cannot support becomes a not-applicable record
//!    (never run); each other one becomes `repeats` [`PlannedEpisode`]s keyed by
//!    [`EpisodeKey`](specgap_protocol::run::EpisodeKey). `--shard i/n` keeps the episodes
//!    whose 0-based position among all applicable episodes is `i − 1` mod `n`; `--shard auto`
//!    reads `i/n` from a batch scheduler's environment ([`Shard::from_scheduler`]). The plan's
//!    hash (`run.toml` `plan_hash`) lets a merge tell shards of different plans apart.
//! 2. [`execute`](exec::execute) runs the planned episodes that still need running (never
//!    begun, or left running / interrupted / failed by an earlier process) on `jobs` threads.
//!    Each attempt begins the episode in the store, materializes a fresh workspace under a
//!    per-episode temporary directory (removed afterwards; never inside the store), and calls
//!    the episode engine.
//! 3. An attempt that fails with an infrastructure error is retried from a fresh
//!    materialization up to the run's retry limit. An evaluation error is not: the engine has
//!    already re-evaluated the frozen state up to the same limit ([`crate::evaluation`]), and
//!    running the agent again would judge another state. A failure is *deterministic* — and not
//!    retried again — when the agent or user says so, or when it repeats the previous
//!    attempt's failure (same class, message and stderr tail equal once numbers and temporary
//!    names are masked), for evaluation and infrastructure errors of every role alike: an
//!    evaluator that always crashes or a user model that always answers HTTP 500 costs two
//!    attempts, not `1 + retries`. The episode then ends as `infra_error` or `eval_error` and
//!    is never scored.
//! 4. A stop request (Ctrl-C) stops new episodes from starting; running ones end as
//!    `interrupted` (the engine kills their sandboxed commands), so `--resume` picks them up.
//!    A stop also abandons model requests in flight (the episode's deadline carries it).
//!    A spending limit ([`RunOptions::max_cost_usd`], [`RunOptions::max_tokens`];
//!    [`SpendingLimit`]) is not a stop request: once the store's summed model cost or prompt +
//!    completion tokens — written as each request completes, so running episodes count —
//!    pass it no episode starts, and running ones finish normally.
//!
//! The runner knows agents only through [`AgentFactory`], so this crate does not depend on
//! `specgap-agents`; progress goes to a [`RunObserver`].

pub mod exec;
pub mod plan;
pub mod shard;

pub use exec::{
    AgentFactory, CpuPerSandbox, EpisodeReport, RelayUsers, RunInputs, RunObserver, RunOptions, RunSummary, Silent, SpendingLimit,
    UserFactory, execute, record_not_applicable,
};
pub use plan::{AgentApplicability, AllAgentsApply, Plan, PlanInput, PlannedEpisode, Skipped, plan, unknown_residual_states};
pub use shard::{ScheduledShard, Scheduler, Shard, ShardEnvError};

/// Why a run cannot be planned or carried out. Failures of single episodes are not
/// `RunnerError`s: they are recorded in the store and counted in [`RunSummary`].
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// `--shard` is not `i/n` with `1 <= i <= n`.
    #[error("bad shard `{0}`; expected i/n with 1 <= i <= n, e.g. 2/4")]
    BadShard(String),
    /// `--shard auto` cannot read the shard from the scheduler's environment.
    #[error(transparent)]
    ShardEnvironment(#[from] ShardEnvError),
    /// A condition or start does not parse.
    #[error(transparent)]
    Condition(#[from] crate::condition::ConditionError),
    /// No combination of the run applies (DESIGN §4).
    #[error(
        "nothing to run: none of the task × agent × condition × start combinations applies ({not_applicable} not applicable{})",
        reason_summary(.reasons)
    )]
    NothingApplies {
        /// Combinations recorded as not applicable.
        not_applicable: usize,
        /// The distinct reasons they do not apply, in first-seen order.
        reasons: Vec<String>,
    },
    /// The run store failed.
    #[error("run store error")]
    Store(#[from] specgap_store::StoreError),
    /// The temporary directory for workspaces could not be made.
    #[error("cannot create a temporary directory for episode workspaces under {path}")]
    WorkDir {
        /// The parent directory.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A worker thread could not be started.
    #[error("cannot start a worker thread")]
    Thread(#[source] std::io::Error),
}

/// How many distinct not-applicable reasons [`RunnerError::NothingApplies`] names before
/// summarising the rest as "and N more".
const REASONS_SHOWN: usize = 5;

/// Formats the distinct not-applicable reasons as `: a; b; and N more`, or nothing when there
/// are none, so a user sees why nothing applies without opening a store.
fn reason_summary(reasons: &[String]) -> String {
    if reasons.is_empty() {
        return String::new();
    }
    let mut shown: Vec<&str> = reasons.iter().take(REASONS_SHOWN).map(String::as_str).collect();
    let more = reasons.len().saturating_sub(REASONS_SHOWN);
    let more_text = format!("and {more} more");
    if more > 0 {
        shown.push(&more_text);
    }
    format!(": {}", shown.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_applies_names_up_to_five_distinct_reasons() {
        let none = RunnerError::NothingApplies { not_applicable: 0, reasons: vec![] };
        assert_eq!(
            none.to_string(),
            "nothing to run: none of the task × agent × condition × start combinations applies (0 not applicable)"
        );
        let one = RunnerError::NothingApplies {
            not_applicable: 28,
            reasons: vec!["agent scripted:mutant:nope needs solutions/mutants/nope/".into()],
        };
        assert_eq!(
            one.to_string(),
            "nothing to run: none of the task × agent × condition × start combinations applies \
             (28 not applicable: agent scripted:mutant:nope needs solutions/mutants/nope/)"
        );
        let seven = RunnerError::NothingApplies { not_applicable: 7, reasons: (1..=7).map(|i| format!("r{i}")).collect() };
        assert_eq!(
            seven.to_string(),
            "nothing to run: none of the task × agent × condition × start combinations applies \
             (7 not applicable: r1; r2; r3; r4; r5; and 2 more)"
        );
    }
}
