//! A run's progress as its pages show it (`run/{r}/progress`, and each entry of `runs`):
//! planned, finished, running, failed and interrupted episodes, what is left, and an
//! estimate of the time left.
//!
//! - **planned** is the plan `run.toml` describes, rebuilt the way the report rebuilds it
//!   ([`specgap_report::inputs::planned_episode_ids`]), joined with the stored episodes (a
//!   stored episode the plan does not name counts too). When the plan cannot be rebuilt (a
//!   package unreadable under `residual:all`, a changed package), `planned` is `null` and
//!   `planned_error` says why.
//! - **running** counts episodes in status `running` only while a runner holds the store;
//!   without one they were left by a runner that is gone and count as **interrupted**
//!   (`specgap run --resume` runs them again). **failed** is infrastructure and evaluation
//!   errors.
//! - **state** is `done` when no episode is left to run (none unstarted, running or
//!   interrupted), `running` while a runner is alive, `stopped` otherwise.
//! - **eta_ms** comes from the ended episodes' wall-clock durations ([`estimate_ms`]); `null`
//!   before the first episode ends, when nothing is left, and when no runner is alive.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};
use specgap_store::{EpisodeFilter, EpisodeOrder, Status};

use crate::error::ViewError;
use crate::runs::{RunEntry, lock};

/// Running episodes looked at for the estimate (more than any runner runs at once).
const RUNNING_ROWS: u64 = 1_000;

/// The rebuilt plan of a run, cached until the store's not-applicable records change.
#[derive(Debug, Clone)]
pub(crate) struct PlanCache {
    /// Not-applicable records the plan was rebuilt with.
    not_applicable: usize,
    /// The planned ids, or why the plan cannot be rebuilt.
    ids: Result<Arc<BTreeSet<String>>, String>,
}

/// The time left, in milliseconds, for `not_started` episodes and the running ones (each
/// `elapsed` ms into its attempt) when an episode takes `mean_ms` and the runner runs
/// `max(running, 1)` at once: every episode not started takes the mean, a running one the
/// part of the mean it has not used yet (none once past it).
pub fn estimate_ms(mean_ms: f64, not_started: u64, running_elapsed: &[u64]) -> u64 {
    let left_of_running: f64 = running_elapsed.iter().map(|&e| (mean_ms - e as f64).max(0.0)).sum();
    let work = not_started as f64 * mean_ms + left_of_running;
    let parallel = running_elapsed.len().max(1) as f64;
    (work / parallel).round() as u64
}

/// `run/{r}/progress` at `now_ms` (ms since the Unix epoch).
pub(crate) fn progress_json(run: &RunEntry, now_ms: u64) -> Result<Value, ViewError> {
    let facets = run.store.episode_facets()?;
    let status = |s: Status| facets.statuses.get(s.as_str()).copied().unwrap_or(0);
    let live = specgap_store::runner_alive(&run.dir).unwrap_or(false);
    let running_rows = if live { status(Status::Running) } else { 0 };
    let interrupted = status(Status::Interrupted) + if live { 0 } else { status(Status::Running) };
    let stored = facets.episodes - status(Status::NotApplicable);
    let (planned, planned_error) = match planned(run)? {
        Ok(n) => (Some(n.max(stored)), None),
        Err(why) => (None, Some(why)),
    };
    let not_started = planned.map(|p| p.saturating_sub(stored));
    // Interrupted episodes are left too: `--resume` runs them again.
    let left = not_started.unwrap_or(0) + running_rows + interrupted;
    let state = if left == 0 && planned.is_some() {
        "done"
    } else if live {
        "running"
    } else {
        "stopped"
    };
    let (ended, ended_ms) = run.store.ended_wall_ms()?;
    let eta_ms = if live && left > 0 && ended > 0 {
        let running = run.store.episode_page(
            &EpisodeFilter { status: Some(Status::Running), ..EpisodeFilter::default() },
            EpisodeOrder::Key,
            0,
            RUNNING_ROWS,
        )?;
        let elapsed: Vec<u64> = running.rows.iter().map(|r| now_ms.saturating_sub(r.started_ts)).collect();
        Some(estimate_ms(ended_ms as f64 / ended as f64, not_started.unwrap_or(0), &elapsed))
    } else {
        None
    };
    Ok(json!({
        "planned": planned,
        "planned_error": planned_error,
        "finished": status(Status::Finished),
        "running": running_rows,
        "failed": status(Status::InfraError) + status(Status::EvalError),
        "interrupted": interrupted,
        "not_started": not_started,
        "live": live,
        "state": state,
        "ended": ended,
        "eta_ms": eta_ms,
    }))
}

/// Episodes planned: the rebuilt plan joined with the stored episodes, or why the plan cannot
/// be rebuilt.
fn planned(run: &RunEntry) -> Result<Result<u64, String>, ViewError> {
    let not_applicable = run.store.not_applicable()?;
    let cached = lock(&run.plan).clone().filter(|c| c.not_applicable == not_applicable.len());
    let cache = match cached {
        Some(c) => c,
        None => {
            let count = not_applicable.len();
            let fresh = PlanCache { not_applicable: count, ids: rebuild_plan(run, not_applicable).map(Arc::new) };
            *lock(&run.plan) = Some(fresh.clone());
            fresh
        }
    };
    let ids = match cache.ids {
        Ok(ids) => ids,
        Err(why) => return Ok(Err(why)),
    };
    let stored = run.store.episode_ids(&EpisodeFilter::default(), EpisodeOrder::Key, 0, u64::MAX)?;
    let outside = stored.iter().filter(|id| !ids.contains(id.as_str())).count() as u64;
    Ok(Ok(ids.len() as u64 + outside))
}

/// The plan of `run.toml` with these not-applicable records, as the report rebuilds it.
fn rebuild_plan(run: &RunEntry, not_applicable: Vec<specgap_store::NotApplicableRow>) -> Result<BTreeSet<String>, String> {
    let config = run.store.config().clone();
    let (tasks, _) = specgap_report::run::load_task_contexts(&config);
    let rows = specgap_store::RunRows { not_applicable, ..specgap_store::RunRows::default() };
    let data = specgap_report::RunData {
        dir: run.dir.clone(),
        config,
        rows,
        tasks,
        warnings: Vec::new(),
        judge: specgap_report::judge::JudgeSummary::default(),
    };
    specgap_report::inputs::planned_episode_ids(&data)
}
