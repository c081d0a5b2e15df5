//! Run-to-run noise of a report's groups (issue 28): how much repeats of the same task under
//! the same agent and condition disagree.
//!
//! Per group (the main table's groups) and task with two or more scored episodes (repeats):
//! the **flip rate** — the share of pairs of repeats that disagree on success
//! ([`specgap_stats::flip_rate`]) — and the **within-task sd** of the score (`ddof = 1`). Per
//! group: the mean of both over its repeated tasks, the tasks that flip at all, and the split
//! of the score's variance between tasks and repeats by the ANOVA estimator of the one-way
//! random-effects model (Searle, Casella & McCulloch 1992 §3.5–3.6,
//! [`specgap_stats::variance_components`]).
//!
//! The score and success of an episode are those of its measure family: Score@1 / Success@1
//! (seed 000 §4.1: the first submission, the headline measure) for requirement-, test- and
//! reward-scored tasks, the delivery score / success (seed 002 §4.2: Quality / DSR) for
//! delivery tasks (episodes whose extraction was unavailable are left out, as in Quality).
//!
//! A group without a task run twice has no noise estimate: the report says so (`estimable:
//! false` with the reason), never prints 0.

use std::collections::BTreeMap;

use serde::Serialize;
use specgap_stats::{flip_rate, variance_components, within_task_sd};

use crate::episode::{Dim, Episode, GroupKey, mean};
use crate::render::{ABSENT, Section, Table, key_label};
use crate::report::{KeyMap, Report};

/// One task's repeats in one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskNoise {
    /// Task name.
    pub task: String,
    /// Scored episodes (repeats), ≥ 2.
    pub repeats: usize,
    /// Successful repeats.
    pub successes: usize,
    /// Share of repeat pairs that disagree on success, in [0, 1].
    pub flip_rate: f64,
    /// Sample sd of the repeats' scores.
    pub within_sd: f64,
}

/// The variance split of one group's scores (score² units).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VarianceSplit {
    /// σ̂²_τ, between tasks (truncated at 0).
    pub between_tasks: f64,
    /// σ̂²_e, between repeats of a task.
    pub within_tasks: f64,
    /// σ̂²_τ / (σ̂²_τ + σ̂²_e) (ICC(1)); absent when both are 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_share: Option<f64>,
    /// The unbalanced design's mean repeats per task, n₀.
    pub n0: f64,
    /// Whether the between-task estimate was negative and set to 0.
    pub truncated: bool,
}

/// The noise of one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupNoise {
    /// The group's key.
    pub key: KeyMap,
    /// The score / success the noise is measured on: `Score@1 / Success@1`, `Quality / DSR`,
    /// or both joined by `; ` for a group with both kinds of task.
    pub measures: String,
    /// Tasks with a scored episode.
    pub tasks: usize,
    /// Tasks with two or more.
    pub repeated_tasks: usize,
    /// Whether noise could be estimated (some task has two scored repeats).
    pub estimable: bool,
    /// Why not, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Mean flip rate over the repeated tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_flip_rate: Option<f64>,
    /// Repeated tasks whose repeats disagree at least once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flipping_tasks: Option<usize>,
    /// Mean within-task sd over the repeated tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_within_sd: Option<f64>,
    /// The variance split, with two or more tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variance: Option<VarianceSplit>,
    /// Per repeated task.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_task: Vec<TaskNoise>,
}

/// The score and success of an episode for noise, `None` when it does not enter (module
/// guide).
pub fn score_and_success(e: &Episode<'_>) -> Option<(f64, bool)> {
    if !e.is_scored() {
        return None;
    }
    if e.is_delivery() {
        if e.extraction_unavailable() {
            return None;
        }
        return Some((e.delivery_score(), e.delivery_success()));
    }
    Some((e.score_at(1), e.success_at(1)))
}

/// The noise of every group of `grouped` (keyed by `dims`) with a scored episode.
pub fn group_noise(grouped: &BTreeMap<GroupKey, Vec<&Episode<'_>>>, dims: &[Dim]) -> Vec<GroupNoise> {
    grouped.iter().filter_map(|(key, members)| one_group(dims.iter().copied().zip(key.iter().cloned()).collect(), members)).collect()
}

fn one_group(key: KeyMap, members: &[&Episode<'_>]) -> Option<GroupNoise> {
    let mut by_task: BTreeMap<&str, Vec<(f64, bool)>> = BTreeMap::new();
    let (mut delivery, mut other) = (false, false);
    for e in members {
        if let Some(point) = score_and_success(e) {
            if e.is_delivery() {
                delivery = true;
            } else {
                other = true;
            }
            by_task.entry(e.row.task.as_str()).or_default().push(point);
        }
    }
    if by_task.is_empty() {
        return None;
    }
    let measures = match (other, delivery) {
        (true, true) => "Score@1 / Success@1; Quality / DSR",
        (false, true) => "Quality / DSR",
        _ => "Score@1 / Success@1",
    }
    .to_string();
    let per_task: Vec<TaskNoise> = by_task
        .iter()
        .filter(|(_, points)| points.len() >= 2)
        .filter_map(|(task, points)| {
            let scores: Vec<f64> = points.iter().map(|p| p.0).collect();
            let successes: Vec<bool> = points.iter().map(|p| p.1).collect();
            Some(TaskNoise {
                task: task.to_string(),
                repeats: points.len(),
                successes: successes.iter().filter(|s| **s).count(),
                flip_rate: flip_rate(&successes).ok()?,
                within_sd: within_task_sd(&scores).ok()?,
            })
        })
        .collect();
    let tasks = by_task.len();
    if per_task.is_empty() {
        return Some(GroupNoise {
            key,
            measures,
            tasks,
            repeated_tasks: 0,
            estimable: false,
            reason: Some("no task has two scored repeats in this group".into()),
            mean_flip_rate: None,
            flipping_tasks: None,
            mean_within_sd: None,
            variance: None,
            per_task,
        });
    }
    let scores: Vec<Vec<f64>> = by_task.values().map(|points| points.iter().map(|p| p.0).collect()).collect();
    let slices: Vec<&[f64]> = scores.iter().map(Vec::as_slice).collect();
    let variance = variance_components(&slices).ok().map(|c| VarianceSplit {
        between_tasks: c.between_tasks,
        within_tasks: c.within_tasks,
        task_share: c.task_share.is_finite().then_some(c.task_share),
        n0: c.n0,
        truncated: c.truncated,
    });
    Some(GroupNoise {
        key,
        measures,
        tasks,
        repeated_tasks: per_task.len(),
        estimable: true,
        reason: None,
        mean_flip_rate: mean(per_task.iter().map(|t| t.flip_rate)),
        flipping_tasks: Some(per_task.iter().filter(|t| t.flip_rate > 0.0).count()),
        mean_within_sd: mean(per_task.iter().map(|t| t.within_sd)),
        variance,
        per_task,
    })
}

/// The report's noise section: one row per group; a group without repeats says that noise
/// cannot be estimated. `None` when the report has no scored episode.
pub fn section(report: &Report) -> Option<Section> {
    if report.noise.is_empty() {
        return None;
    }
    let cell = |v: Option<f64>, digits: usize| v.map_or_else(|| ABSENT.to_string(), |v| format!("{v:.digits$}"));
    let rows: Vec<Vec<String>> = report
        .noise
        .iter()
        .map(|g| {
            if !g.estimable {
                let why = format!("cannot be estimated: {}", g.reason.as_deref().unwrap_or("no repeats"));
                return vec![
                    key_label(&g.key),
                    g.measures.clone(),
                    g.tasks.to_string(),
                    "0".into(),
                    why,
                    ABSENT.into(),
                    ABSENT.into(),
                    ABSENT.into(),
                    ABSENT.into(),
                ];
            }
            let v = g.variance.as_ref();
            vec![
                key_label(&g.key),
                g.measures.clone(),
                g.tasks.to_string(),
                g.repeated_tasks.to_string(),
                format!("{} ({} tasks flip)", cell(g.mean_flip_rate, 3), g.flipping_tasks.unwrap_or(0)),
                cell(g.mean_within_sd, 4),
                cell(v.map(|v| v.between_tasks), 4),
                cell(v.map(|v| v.within_tasks), 4),
                cell(v.and_then(|v| v.task_share), 3),
            ]
        })
        .collect();
    let mut text = vec![
        "Run-to-run noise (issue 28): per task with two or more scored repeats, the flip rate is the share of repeat pairs that disagree on success, the within-task sd the sample sd of the repeats' scores; the group's variance is split between tasks (σ²_task) and repeats (σ²_repeat) by the ANOVA estimator of the one-way random-effects model (Searle, Casella & McCulloch 1992 §3.5–3.6), σ²_task truncated at 0. Scores are Score@1 / Success@1, or Quality / DSR for delivery tasks.".to_string(),
    ];
    // A table of nothing but "cannot be estimated" rows says no more than this sentence.
    if report.noise.iter().all(|g| !g.estimable) {
        text.push("Noise cannot be estimated for this report: no task was run more than once in any group. Run each task more than once (`specgap run --repeats N`, stored as `repeats` in run.toml) to measure it.".into());
        return Some(Section { id: "noise", title: "Run-to-run noise".into(), text, tables: vec![], chart: None });
    }
    Some(Section {
        id: "noise",
        title: "Run-to-run noise".into(),
        text,
        tables: vec![Table {
            caption: "Noise per group.".into(),
            headers: ["group", "measures", "tasks", "repeated", "mean flip rate", "within-task sd", "σ²_task", "σ²_repeat", "task share"]
                .map(String::from)
                .to_vec(),
            numeric: vec![false, false, true, true, true, true, true, true, true],
            rows,
        }],
        chart: None,
    })
}
