//! Statistics of the suite a report covers, as the papers describe their benchmarks: the
//! residual states (seed 001 §4, Table 2, App. A) and the requirements each partial instruction
//! states (seed 000 Table 3). They describe packages, not agents: package facts (`meta.toml`,
//! `state.patch`, `requirements.toml`) joined with the evaluator's verdict on each starting
//! state (k = 0 rows, the same for every episode of a state).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::episode::{Episode, mean};
use crate::run::RunData;

/// One residual state (seed 001 Table 2's rows, per state).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateStats {
    /// Task name.
    pub task: String,
    /// State id.
    pub state: String,
    /// `meta.toml` `predecessor`.
    pub predecessor: String,
    /// `meta.toml` `steps`: the predecessor's recorded agent turns.
    pub steps: u32,
    /// Files `state.patch` touches.
    pub files: usize,
    /// Lines it adds or replaces.
    pub added_lines: usize,
    /// Lines it deletes or replaces.
    pub deleted_lines: usize,
    /// Size of `state.patch`, bytes.
    pub patch_bytes: u64,
    /// Tests (or, for a requirement-scored task, requirements) the evaluator judged on the
    /// state; absent when no episode of the state was evaluated at its start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tests: Option<usize>,
    /// Of them failing (`fail` / `error`, or requirement failing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing: Option<usize>,
    /// Passing share of the non-skipped ones, in [0, 1].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_rate: Option<f64>,
}

/// The residual states of the report's tasks, with Table 2's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResidualBenchmark {
    /// Tasks with residual states.
    pub tasks: usize,
    /// Residual states.
    pub states: usize,
    /// Tasks by their number of states: number of states → tasks (Table 2 "tasks with one /
    /// two / three states").
    pub tasks_by_states: BTreeMap<usize, usize>,
    /// States per predecessor.
    pub by_predecessor: BTreeMap<String, usize>,
    /// Median predecessor steps over states.
    pub median_steps: f64,
    /// Median files changed over states.
    pub median_files: f64,
    /// Median added lines over states.
    pub median_added_lines: f64,
    /// Median `state.patch` size over states, bytes.
    pub median_patch_bytes: f64,
    /// Mean pass rate over the states with a start verdict, equal weight per state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_pass_rate: Option<f64>,
    /// Median of the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_pass_rate: Option<f64>,
    /// States with one to three tests still failing (Table 2's last row).
    pub one_to_three_failing: usize,
    /// Every state.
    pub per_state: Vec<StateStats>,
}

/// Seed 000 Table 3: how many requirements each requirement-scored task's partial instruction
/// states.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatedRequirements {
    /// Requirement-scored tasks.
    pub tasks: usize,
    /// Number stated → tasks (every count from 0 to the largest present).
    pub tasks_by_stated: BTreeMap<usize, usize>,
    /// Number stated → share of tasks, in [0, 1].
    pub share_by_stated: BTreeMap<usize, f64>,
}

/// [`ResidualBenchmark`] of the tasks of `runs` that have residual states; `None` without any.
/// The start verdict of a state comes from the first of its episodes that has k = 0 rows.
pub fn residual_benchmark(runs: &[RunData], episodes: &[Episode<'_>]) -> Option<ResidualBenchmark> {
    // Start verdicts per (task, state): (judged, failing, passing).
    let mut verdicts: BTreeMap<(&str, &str), (usize, usize, usize)> = BTreeMap::new();
    for e in episodes {
        let Some(state) = e.state() else { continue };
        let key = (e.row.task.as_str(), state);
        if verdicts.contains_key(&key) {
            continue;
        }
        if let Some(tests) = e.tests.get(0) {
            use specgap_protocol::result::TestOutcome;
            let judged = tests.values().filter(|o| *o != TestOutcome::Skip).count();
            let failing = tests.values().filter(|o| matches!(o, TestOutcome::Fail | TestOutcome::Error)).count();
            verdicts.insert(key, (tests.len(), failing, judged - failing));
        } else if let Some(reqs) = e.requirements.get(0) {
            let failing = reqs.values().filter(|p| !*p).count();
            verdicts.insert(key, (reqs.len(), failing, reqs.len() - failing));
        }
    }
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut per_state = Vec::new();
    for run in runs {
        for (name, context) in &run.tasks {
            if context.states.is_empty() || !seen.insert(name.as_str()) {
                continue;
            }
            for (id, state) in &context.states {
                let verdict = verdicts.get(&(name.as_str(), id.as_str()));
                per_state.push(StateStats {
                    task: name.clone(),
                    state: id.clone(),
                    predecessor: state.predecessor.clone(),
                    steps: state.steps,
                    files: state.changes.files.len(),
                    added_lines: state.changes.added_lines(),
                    deleted_lines: state.changes.deleted_lines,
                    patch_bytes: state.patch_bytes,
                    tests: verdict.map(|v| v.0),
                    failing: verdict.map(|v| v.1),
                    pass_rate: verdict.filter(|v| v.1 + v.2 > 0).map(|v| v.2 as f64 / (v.1 + v.2) as f64),
                });
            }
        }
    }
    if per_state.is_empty() {
        return None;
    }
    let mut states_per_task: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_predecessor: BTreeMap<String, usize> = BTreeMap::new();
    for s in &per_state {
        *states_per_task.entry(s.task.as_str()).or_default() += 1;
        *by_predecessor.entry(s.predecessor.clone()).or_default() += 1;
    }
    let mut tasks_by_states = BTreeMap::new();
    for n in states_per_task.values() {
        *tasks_by_states.entry(*n).or_default() += 1;
    }
    let median = |values: Vec<f64>| specgap_stats::median(&values).unwrap_or(f64::NAN);
    let pass_rates: Vec<f64> = per_state.iter().filter_map(|s| s.pass_rate).collect();
    Some(ResidualBenchmark {
        tasks: states_per_task.len(),
        states: per_state.len(),
        tasks_by_states,
        by_predecessor,
        median_steps: median(per_state.iter().map(|s| f64::from(s.steps)).collect()),
        median_files: median(per_state.iter().map(|s| s.files as f64).collect()),
        median_added_lines: median(per_state.iter().map(|s| s.added_lines as f64).collect()),
        median_patch_bytes: median(per_state.iter().map(|s| s.patch_bytes as f64).collect()),
        mean_pass_rate: mean(pass_rates.iter().copied()),
        median_pass_rate: specgap_stats::median(&pass_rates).ok(),
        one_to_three_failing: per_state.iter().filter(|s| s.failing.is_some_and(|f| (1..=3).contains(&f))).count(),
        per_state,
    })
}

/// [`StatedRequirements`] over the requirement-scored tasks of `runs`; `None` without any.
pub fn stated_requirements(runs: &[RunData]) -> Option<StatedRequirements> {
    let mut stated: BTreeMap<&str, usize> = BTreeMap::new();
    for run in runs {
        for (name, context) in &run.tasks {
            if context.requirements > 0 {
                stated.entry(name.as_str()).or_insert(context.stated.len());
            }
        }
    }
    let largest = *stated.values().max()?;
    let mut tasks_by_stated: BTreeMap<usize, usize> = (0..=largest).map(|n| (n, 0)).collect();
    for n in stated.values() {
        *tasks_by_stated.entry(*n).or_default() += 1;
    }
    let tasks = stated.len();
    Some(StatedRequirements {
        tasks,
        share_by_stated: tasks_by_stated.iter().map(|(n, t)| (*n, *t as f64 / tasks as f64)).collect(),
        tasks_by_stated,
    })
}
