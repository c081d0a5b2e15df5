//! Planned runs: the denominators of seed 002's delivery measures.
//!
//! Seed 002 counts every planned run in Quality, DSR, validity and pass@k / pass^k ("each main
//! configuration contributes three scored runs on each of 49 cases, with all 147 runs included
//! in DSR", App. A.3; §4.2 divides by 147 and by 3). The report rebuilds each run's plan from
//! `run.toml` ([`crate::inputs::planned_episodes`]) and joins it with the store:
//!
//! - a planned run with a scored episode enters the measures; a delivery the agent failed —
//!   no artifact, an invalid one, an evaluator that failed on the delivered artifact (recorded
//!   as a scored submission with signature `execution`) — scores 0 and is counted;
//! - a planned run whose episode ended in an infrastructure or evaluation error (a failure of
//!   the harness, never the agent's: DESIGN §2, §3), was interrupted, is still running, or is
//!   absent from the store has no score: it is listed ([`UnscoredRun`]) and its group's
//!   planned-run cells are incomplete rather than computed over fewer runs.
//!
//! Attribution: the report trusts the store. An episode ended by `evaluation_error` is a
//! harness failure whatever the evaluator met; an evaluator failure the engine attributes to the
//! delivered artifact (the same evaluator succeeds on the gold artifact) is recorded as a scored
//! submission with signature `execution` and counts as the agent's 0.
//!
//! Stored episodes the plan does not name (a store written by other means, or a plan that
//! cannot be rebuilt because a package is unreadable) are planned runs too: the plan is the
//! union of `run.toml`'s plan and the store.

use std::collections::BTreeMap;

use serde::Serialize;
use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::{EndReason, EpisodeKey};
use specgap_store::Status;

use crate::episode::{Dim, Episode, GroupKey};
use crate::keyed::{KeyedMap, KeyedSet};
use crate::run::RunData;

/// One planned run of a delivery case, with its episode when the store has one.
#[derive(Debug, Clone)]
pub struct PlannedRun<'e, 'a> {
    /// Index of the run (in the report's run order).
    pub run: usize,
    /// The episode key the plan gives.
    pub key: EpisodeKey,
    /// Its id ([`EpisodeKey::id`]).
    pub id: String,
    /// Task family (from the package, else a stored episode of the task, else `unknown`).
    pub family: String,
    /// The stored episode, if any.
    pub episode: Option<&'e Episode<'a>>,
}

impl<'e, 'a> PlannedRun<'e, 'a> {
    /// The episode when it is scored (it enters the measures).
    pub fn scored(&self) -> Option<&'e Episode<'a>> {
        self.episode.filter(|e| e.is_scored() && !e.extraction_unavailable())
    }

    /// Why the run has no score, or `None` when it has one: `infrastructure_error`,
    /// `evaluation_error`, `interrupted`, `running`, `absent`, or `extraction_unavailable` (the
    /// extraction panel found no majority, seed 002 A.3).
    pub fn unscored_reason(&self) -> Option<&'static str> {
        let Some(episode) = self.episode else {
            return Some("absent");
        };
        if episode.extraction_unavailable() {
            return Some("extraction_unavailable");
        }
        if episode.is_scored() {
            return None;
        }
        Some(match (episode.row.status, episode.row.end_reason) {
            (_, Some(EndReason::InfrastructureError)) | (Status::InfraError, _) => "infrastructure_error",
            (_, Some(EndReason::EvaluationError)) | (Status::EvalError, _) => "evaluation_error",
            (Status::Running, _) => "running",
            _ => "interrupted",
        })
    }

    /// The run's value on a grouping dimension.
    pub fn value(&self, dim: Dim) -> &str {
        match dim {
            Dim::Agent => &self.key.agent,
            Dim::Condition => &self.key.condition,
            Dim::Start => &self.key.start,
            Dim::Task => &self.key.task,
            Dim::Family => &self.family,
        }
    }
}

/// A planned run without a score, as the report lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnscoredRun {
    /// Run directory.
    pub run: String,
    /// Episode id.
    pub episode: String,
    /// Task.
    pub task: String,
    /// 0-based repeat.
    pub repeat: u32,
    /// `infrastructure_error`, `evaluation_error`, `interrupted`, `running`, `absent` or
    /// `extraction_unavailable`.
    pub reason: String,
    /// The episode's recorded error message, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl UnscoredRun {
    /// The listing of `planned`, or `None` when it is scored.
    pub fn of(planned: &PlannedRun<'_, '_>, runs: &[RunData]) -> Option<UnscoredRun> {
        let reason = planned.unscored_reason()?;
        Some(UnscoredRun {
            run: runs.get(planned.run).map(|r| r.dir.display().to_string()).unwrap_or_default(),
            episode: planned.id.clone(),
            task: planned.key.task.clone(),
            repeat: planned.key.repeat,
            reason: reason.to_string(),
            error: planned.episode.and_then(|e| e.row.error.clone()),
        })
    }
}

/// Every planned run of a delivery case in `runs` (module guide), in run order and then plan
/// order, stored-only episodes last. `episodes` are [`crate::episode::index_episodes`] of
/// the same runs.
pub fn planned_delivery_runs<'e, 'a>(runs: &[RunData], episodes: &'e [Episode<'a>]) -> Vec<PlannedRun<'e, 'a>> {
    let mut out = Vec::new();
    for (index, run) in runs.iter().enumerate() {
        // Kind and family of each task as its stored episodes give them (the last one wins, as
        // collecting them into a map would), for tasks whose package could not be read.
        let mut stored_kind: KeyedMap<&str, (ScoringKind, &'static str)> = KeyedMap::default();
        for e in episodes.iter().filter(|e| e.run == index) {
            stored_kind.insert(e.row.task.as_str(), (e.row.scoring_kind, e.row.family.as_str()));
        }
        let is_delivery = |task: &str| match run.tasks.get(task) {
            Some(context) => context.delivery,
            None => stored_kind.get(task).is_some_and(|(kind, _)| *kind == ScoringKind::Delivery),
        };
        let family = |task: &str| -> String {
            run.tasks
                .get(task)
                .map(|c| c.family.as_str())
                .or_else(|| stored_kind.get(task).map(|(_, f)| *f))
                .unwrap_or("unknown")
                .to_string()
        };
        // Only delivery episodes are looked up (a study's other episodes can be most of them).
        let stored: KeyedMap<&str, &'e Episode<'a>> =
            episodes.iter().filter(|e| e.run == index && is_delivery(&e.row.task)).map(|e| (e.row.id.as_str(), e)).collect();
        let mut planned_ids: KeyedSet<String> = KeyedSet::default();
        for key in crate::inputs::planned_episodes(run).unwrap_or_default() {
            if !is_delivery(&key.task) {
                continue;
            }
            let id = key.id();
            if !planned_ids.insert(id.clone()) {
                continue;
            }
            out.push(PlannedRun { run: index, family: family(&key.task), episode: stored.get(id.as_str()).copied(), id, key });
        }
        // Stored episodes the plan does not name: planned too (their ids are the rows'), each
        // once.
        let mut stored_seen: KeyedSet<&str> = KeyedSet::default();
        for e in episodes.iter().filter(|e| e.run == index) {
            let id = e.row.id.as_str();
            if !is_delivery(&e.row.task) || planned_ids.contains(id) || !stored_seen.insert(id) {
                continue;
            }
            out.push(PlannedRun { run: index, family: family(&e.row.task), episode: Some(e), id: e.row.id.clone(), key: e.row.key() });
        }
    }
    out
}

/// Planned runs grouped by `dims`, keys sorted (the same keys as
/// [`crate::episode::group_by`] gives the runs' episodes).
pub fn group_planned<'p, 'e, 'a>(planned: &'p [PlannedRun<'e, 'a>], dims: &[Dim]) -> BTreeMap<GroupKey, Vec<&'p PlannedRun<'e, 'a>>> {
    crate::episode::group_sorted(planned, dims, |run, dim| run.value(dim))
}
