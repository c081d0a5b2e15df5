//! Measures of seed 000 (Instructions Are Evidence): Score@k and Success@k per group, the
//! outcome cost against the full specification, and requirement resolution In round / Ahead.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::episode::{Episode, indicator, mean};
use crate::first::MAX_K;
use crate::keyed::KeyedMap;

/// Score@k and Success@k of a set of episodes (seed 000 §4.1, carried forward as in
/// [`crate::first`]): means over its scored episodes, k = 1..=4. Score is a fraction in [0, 1]
/// (delivery scores may exceed 1); Success@k is the fraction of episodes with Success@k.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcomes {
    /// Scored episodes the means are over.
    pub scored: usize,
    /// Mean Score@k, k = 1..=4; `None` without scored episodes.
    pub score_at: [Option<f64>; MAX_K],
    /// Fraction with Success@k, k = 1..=4; `None` without scored episodes.
    pub success_at: [Option<f64>; MAX_K],
    /// Mean number of submissions (valid or not) per scored episode.
    pub mean_submissions: Option<f64>,
}

/// [`Outcomes`] of the scored episodes among `episodes`.
pub fn outcomes(episodes: &[&Episode<'_>]) -> Outcomes {
    let scored: Vec<&&Episode> = episodes.iter().filter(|e| e.is_scored()).collect();
    let mut score_at = [None; MAX_K];
    let mut success_at = [None; MAX_K];
    for (slot, k) in (1..=MAX_K as u32).enumerate() {
        score_at[slot] = mean(scored.iter().map(|e| e.score_at(k)));
        success_at[slot] = mean(scored.iter().map(|e| indicator(e.success_at(k))));
    }
    Outcomes { scored: scored.len(), score_at, success_at, mean_submissions: mean(scored.iter().map(|e| e.submissions.len() as f64)) }
}

/// Outcome cost of seed 000 (Figure 4, Table 7 "Cost"): how far the partial instruction's
/// k-th submission stays below the full specification's first, `Full@1 − Partial@k`, in the
/// units of its inputs. Table 4's subscripts are its negation, `Partial@k − Full@1`.
pub fn outcome_cost(full_at_1: f64, partial_at_k: f64) -> f64 {
    full_at_1 - partial_at_k
}

/// The outcome-cost comparison of one agent (and start, family… per the report's grouping)
/// between conditions `full`, `partial` and `literal` (seed 000 Table 4, Figure 4), over the
/// tasks that have scored episodes under both `full` and `partial`. Each value is a mean of
/// per-task means (equal task weight), a fraction in [0, 1].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostComparison {
    /// Tasks with scored episodes under both `full` and `partial`.
    pub tasks: usize,
    /// Full@1 Score.
    pub full_score_at_1: f64,
    /// Full@1 Success.
    pub full_success_at_1: f64,
    /// Partial@k Score, k = 1..=4.
    pub partial_score_at: [f64; MAX_K],
    /// Partial@k Success, k = 1..=4.
    pub partial_success_at: [f64; MAX_K],
    /// Literal@k Score on the same tasks, when `literal` ran on all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub literal_score_at: Option<[f64; MAX_K]>,
    /// Literal@k Success on the same tasks, likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub literal_success_at: Option<[f64; MAX_K]>,
    /// [`outcome_cost`] of Score: Full@1 − Partial@k, k = 1..=4 (`[0]` is Table 7's Cost).
    pub cost_score_at: [f64; MAX_K],
    /// [`outcome_cost`] of Success: Full@1 − Partial@k.
    pub cost_success_at: [f64; MAX_K],
}

/// Per task: scored episodes and the sums of their Score@k and Success@k.
struct TaskSums {
    n: usize,
    score: [f64; MAX_K],
    success: [f64; MAX_K],
}

/// Per task, the sums over its scored episodes in `episodes` (added in their order). A hash
/// map: its readers only look tasks up, in the order of a sorted set of tasks.
fn task_sums<'a>(episodes: &[&Episode<'a>]) -> KeyedMap<&'a str, TaskSums> {
    let mut out: KeyedMap<&str, TaskSums> = KeyedMap::default();
    for e in episodes.iter().filter(|e| e.is_scored()) {
        let sums = out.entry(e.row.task.as_str()).or_insert(TaskSums { n: 0, score: [0.0; MAX_K], success: [0.0; MAX_K] });
        sums.n += 1;
        for (slot, k) in (1..=MAX_K as u32).enumerate() {
            sums.score[slot] += e.score_at(k);
            sums.success[slot] += indicator(e.success_at(k));
        }
    }
    out
}

/// Mean over `tasks` of the per-task means of Score@k (or Success@k), k = 1..=4; `None` when
/// a task has no scored episode in `sums`.
fn macro_at_k(sums: &KeyedMap<&str, TaskSums>, tasks: &BTreeSet<&str>, success: bool) -> Option<[f64; MAX_K]> {
    let mut out = [0.0; MAX_K];
    for task in tasks {
        let t = sums.get(task)?;
        let values = if success { &t.success } else { &t.score };
        for (slot, v) in out.iter_mut().zip(values) {
            *slot += v / t.n as f64;
        }
    }
    Some(out.map(|v| v / tasks.len() as f64))
}

/// [`CostComparison`] from the episodes of the three conditions; `None` when no task has
/// scored episodes under both `full` and `partial`.
pub fn cost_comparison(full: &[&Episode<'_>], partial: &[&Episode<'_>], literal: &[&Episode<'_>]) -> Option<CostComparison> {
    let (full, partial, literal) = (task_sums(full), task_sums(partial), task_sums(literal));
    let tasks: BTreeSet<&str> = partial.keys().copied().filter(|t| full.contains_key(t)).collect();
    if tasks.is_empty() {
        return None;
    }
    let full_score = macro_at_k(&full, &tasks, false)?;
    let full_success = macro_at_k(&full, &tasks, true)?;
    let partial_score_at = macro_at_k(&partial, &tasks, false)?;
    let partial_success_at = macro_at_k(&partial, &tasks, true)?;
    Some(CostComparison {
        tasks: tasks.len(),
        full_score_at_1: full_score[0],
        full_success_at_1: full_success[0],
        partial_score_at,
        partial_success_at,
        literal_score_at: macro_at_k(&literal, &tasks, false),
        literal_success_at: macro_at_k(&literal, &tasks, true),
        cost_score_at: partial_score_at.map(|p| outcome_cost(full_score[0], p)),
        cost_success_at: partial_success_at.map(|p| outcome_cost(full_success[0], p)),
    })
}

/// Requirement resolution after the first submission (seed 000 §5.3, Table 5), pooled over
/// the episodes of a group. Episodes enter when they are scored, requirement-scored, ran under
/// a condition with consequence feedback ([`crate::episode::gives_feedback`]) and have a first
/// valid submission — also when they never submit again (docs/decisions.md "Report: seed 000
/// measures").
///
/// - **In round**: per *reported requirement* — a requirement named by the observation fed back
///   after a failed submission k, counted once per episode at its first report — whether it
///   passes at the next submission after k. A requirement whose episode never submits again
///   (it stopped, looped or ran out of budget after the report) counts as not fixed: under
///   Algorithm 1 the budget end would submit the unchanged workspace, which still fails it.
/// - The reported requirements split into **fixed at the next submission**, **fixed at the
///   second** (failing at the next, passing at the one after) and **neither** (§5.3: 45% / 15%
///   / 40% over the frontier models); `never` counts those of `neither` that pass at no later
///   submission at all.
/// - **Ahead**: of the *remaining unstated* requirements of every entering episode — failing at
///   its first submission, not stated in the partial instruction, not the one reported after it
///   — the share that pass at some later submission before any observation reports them. An
///   episode with one submission contributes its remaining requirements, none resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolution {
    /// Entering episodes (scored, requirement-scored, feedback on, a first valid submission).
    pub episodes: usize,
    /// Reported requirements (first report per episode).
    pub reported: usize,
    /// Of those, passing at the next submission after the report.
    pub fixed_next: usize,
    /// Failing at the next submission, passing at the one after.
    pub fixed_second: usize,
    /// Fixed in neither of the two submissions after the report (including episodes that never
    /// submitted again).
    pub neither: usize,
    /// Of `neither`, passing at no later submission at all.
    pub never: usize,
    /// `fixed_next / reported`; `None` without reported requirements.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_round: Option<f64>,
    /// Of the `neither` requirements, those whose task ran under `full` for the same agent and
    /// start (the comparison of §5.3: "84% of that last group pass under Full").
    pub neither_with_full: usize,
    /// Mean over those of the share of the agent's `full` episodes on the task whose first
    /// submission passes the requirement; `None` when `neither_with_full` is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neither_pass_under_full: Option<f64>,
    /// Remaining unstated requirements (needs the task package's `stated` flags).
    pub remaining_unstated: usize,
    /// Of those, resolved before any report.
    pub resolved_ahead: usize,
    /// `resolved_ahead / remaining_unstated`; `None` when there were none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ahead: Option<f64>,
}

/// Looks up, for an episode and a requirement, the share of the same agent's `full` episodes
/// (same task and start) whose first submission passes it; `None` without such episodes.
pub type FullPass<'f> = dyn Fn(&Episode<'_>, &str) -> Option<f64> + 'f;

/// [`Resolution`] over the entering episodes among `episodes`; `None` when none enters.
/// `full_pass` gives the Full comparison of the `neither` group.
pub fn resolution(episodes: &[&Episode<'_>], full_pass: &FullPass<'_>) -> Option<Resolution> {
    let mut r = Resolution {
        episodes: 0,
        reported: 0,
        fixed_next: 0,
        fixed_second: 0,
        neither: 0,
        never: 0,
        in_round: None,
        neither_with_full: 0,
        neither_pass_under_full: None,
        remaining_unstated: 0,
        resolved_ahead: 0,
        ahead: None,
    };
    let mut full_shares: Vec<f64> = Vec::new();
    for episode in
        episodes.iter().filter(|e| e.is_scored() && !e.requirements.is_empty() && crate::episode::gives_feedback(&e.row.condition))
    {
        let ks: Vec<u32> = episode.scores.iter().map(|s| s.k).collect();
        let Some(&first) = ks.first() else {
            continue;
        };
        r.episodes += 1;
        let passes = |k: u32, req: &str| episode.requirement_passes(k, req) == Some(true);
        // First report of each requirement, in submission order.
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        for (i, &k) in ks.iter().enumerate() {
            let Some(req) = episode.reported_at(k) else {
                continue;
            };
            if !seen.insert(req) {
                continue;
            }
            r.reported += 1;
            let later = &ks[i + 1..];
            if later.first().is_some_and(|&k| passes(k, req)) {
                r.fixed_next += 1;
            } else if later.get(1).is_some_and(|&k| passes(k, req)) {
                r.fixed_second += 1;
            } else {
                r.neither += 1;
                if !later.iter().any(|&k| passes(k, req)) {
                    r.never += 1;
                }
                if let Some(share) = full_pass(episode, req) {
                    full_shares.push(share);
                }
            }
        }
        // Ahead needs the stated flags; without the package the episode does not enter it.
        let Some(context) = episode.context else {
            continue;
        };
        let Some(at_first) = episode.requirements.get(first) else {
            continue;
        };
        let reported_first = episode.reported_at(first);
        for (req, _) in at_first.iter().filter(|(_, pass)| !*pass) {
            if context.stated.contains(req) || reported_first == Some(req) {
                continue;
            }
            r.remaining_unstated += 1;
            for &k in &ks[1..] {
                if passes(k, req) {
                    r.resolved_ahead += 1;
                    break;
                }
                if episode.reported_at(k) == Some(req) {
                    break;
                }
            }
        }
    }
    if r.episodes == 0 {
        return None;
    }
    r.in_round = (r.reported > 0).then(|| r.fixed_next as f64 / r.reported as f64);
    r.neither_with_full = full_shares.len();
    r.neither_pass_under_full = mean(full_shares.iter().copied());
    r.ahead = (r.remaining_unstated > 0).then(|| r.resolved_ahead as f64 / r.remaining_unstated as f64);
    Some(r)
}

/// Partial as a share of Full (seed 000 §5.2: "deliver 56% to 81% of their Full Score on the SWE
/// tasks but only 30% to 66% on the research tasks", and 87% / 57% after four submissions):
/// on the tasks with scored episodes under both `full` and `partial`, Partial@k Score divided
/// by Full@1 Score, each a mean of per-task means.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartialShare {
    /// Tasks under both conditions.
    pub tasks: usize,
    /// Full@1 Score.
    pub full_score_at_1: f64,
    /// Partial@1 and Partial@4 Score.
    pub partial_score_at: [f64; 2],
    /// Partial@1 / Full@1 and Partial@4 / Full@1; `None` when Full@1 is 0.
    pub share_at: [Option<f64>; 2],
}

/// [`PartialShare`] from the episodes of `full` and `partial`; `None` without shared tasks.
pub fn partial_share(full: &[&Episode<'_>], partial: &[&Episode<'_>]) -> Option<PartialShare> {
    let c = cost_comparison(full, partial, &[])?;
    let share = |p: f64| (c.full_score_at_1 > 0.0).then(|| p / c.full_score_at_1);
    Some(PartialShare {
        tasks: c.tasks,
        full_score_at_1: c.full_score_at_1,
        partial_score_at: [c.partial_score_at[0], c.partial_score_at[3]],
        share_at: [share(c.partial_score_at[0]), share(c.partial_score_at[3])],
    })
}

/// The plan mode against Partial for the same agent (seed 000 §5.4, Table 6): Score@1 and
/// Success@1 on the tasks with scored episodes under both `plan` and `partial`, means of
/// per-task means, and the differences Plan − Partial.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanVsPartial {
    /// Tasks under both conditions.
    pub tasks: usize,
    /// Partial@1 Score and Success.
    pub partial_at_1: [f64; 2],
    /// Plan@1 Score and Success.
    pub plan_at_1: [f64; 2],
    /// Plan − Partial, Score and Success.
    pub difference: [f64; 2],
}

/// [`PlanVsPartial`]; `None` without shared tasks.
pub fn plan_vs_partial(plan: &[&Episode<'_>], partial: &[&Episode<'_>]) -> Option<PlanVsPartial> {
    let (plan, partial) = (task_sums(plan), task_sums(partial));
    let tasks: BTreeSet<&str> = partial.keys().copied().filter(|t| plan.contains_key(t)).collect();
    if tasks.is_empty() {
        return None;
    }
    let at_1 = |sums: &KeyedMap<&str, TaskSums>| -> Option<[f64; 2]> {
        Some([macro_at_k(sums, &tasks, false)?[0], macro_at_k(sums, &tasks, true)?[0]])
    };
    let partial_at_1 = at_1(&partial)?;
    let plan_at_1 = at_1(&plan)?;
    Some(PlanVsPartial {
        tasks: tasks.len(),
        partial_at_1,
        plan_at_1,
        difference: [plan_at_1[0] - partial_at_1[0], plan_at_1[1] - partial_at_1[1]],
    })
}

/// The family an episode's task belongs to for per-family tables: `family`, or
/// `family/subfamily` when the package names a sub-family ([`crate::context::TaskContext`]'s
/// `subfamily`), so research sub-families separate (seed 000 §4.3).
pub fn family_label(episode: &Episode<'_>) -> String {
    match episode.context.and_then(|c| c.subfamily.as_deref()) {
        Some(sub) => format!("{}/{sub}", episode.row.family.as_str()),
        None => episode.row.family.as_str().to_string(),
    }
}
