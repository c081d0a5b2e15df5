//! `specgap plan-study`: how many tasks and repeats a paired comparison needs to detect a
//! difference with a given power (issue 28), for the measures of each seed — Score@k and
//! Success@k (seed 000 §4.1), the Res / Clean gap (seed 001 §5.2), Quality, DSR and pass^k
//! (seed 002 §4.2, App. A.3) — from a pilot run or from assumed standard deviations.
//!
//! ## The model
//! A study compares two systems (or conditions) A and B on `n` tasks with `r` repeats of each
//! task on each side; the test is the paired t-test on the per-task difference of repeat
//! means, as `compare`'s detectable difference ([`crate::detectable`]). A task's difference is
//! `Δ + u + ē_B − ē_A`: `u` the task-to-task spread of the true difference (sd `task_sd`), `ē`
//! the mean of `r` repeat errors (sd `repeat_sd / √r` per side), so
//! `sd(task difference) = sqrt(task_sd² + 2·repeat_sd²/r)` and the power is statsmodels'
//! `TTestPower().power(Δ / sd, n, α)` ([`specgap_stats::paired_t_power`]); the tasks needed
//! are `ceil(TTestPower().solve_power(effect_size = Δ / sd, α, power))`.
//!
//! ## From a pilot
//! `repeat_sd²` is the pooled within-task variance of the pilot's repeats (the ANOVA
//! estimator's MS_within, Searle, Casella & McCulloch 1992 §3.6). `task_sd²`:
//! * with two selections (`--a`, `--b`: the pilot already holds both sides), the variance of
//!   the per-task mean differences minus the repeat noise in it,
//!   `max(0, var(ȳ_B − ȳ_A) − repeat_sd²·mean(1/n_A + 1/n_B))`;
//! * with one selection, `2·σ²_task` (σ²_task the between-task variance of the one side):
//!   the spread of the difference of two independent task effects, an upper bound when the
//!   systems' task effects correlate positively (decisions.md "plan-study: one-sided pilot").
//!
//! A pilot without repeats cannot separate the two: its whole task-level variance is taken as
//! `task_sd²` and the plan says more repeats do not help (they cannot be shown to).
//! The Res / Clean gap is paired within the pilot: side A its residual-start episodes, side B
//! its clean starts of the same task (Success@1, seed 001's Res and Clean).
//!
//! ## The check
//! The recommended design (fewest episodes) is simulated, seeded: normal task differences for
//! continuous measures ([`specgap_stats::simulated_normal_power`], the closed form's own
//! model: they agree within Monte Carlo error), Bernoulli repeats at the pilot's per-task
//! rates for binary measures and pass^k ([`specgap_stats::simulated_binary_power`]), where
//! the closed form's normal approximation can be off — the plan shows both.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use specgap_stats::{
    BinaryDesign, Simulation, monte_carlo_se, paired_t_nobs, paired_t_power, simulated_binary_power, simulated_normal_power,
    variance_components,
};

use crate::ReportError;
use crate::compare::Selection;
use crate::episode::{Episode, index_episodes, indicator};
use crate::run::RunData;

/// The `schema` field of a JSON plan.
pub const PLAN_SCHEMA: &str = "specgap-plan-study";
/// The JSON plan's version.
pub const PLAN_VERSION: u32 = 1;

/// The measures `plan-study` plans for, with their seed.
pub const PLAN_MEASURES: [(&str, &str); 8] = [
    ("Score@1", "000"),
    ("Score@4", "000"),
    ("Success@1", "000"),
    ("Success@4", "000"),
    ("Res/Clean gap", "001"),
    ("Quality", "002"),
    ("DSR", "002"),
    ("pass^k", "002"),
];

/// Settings of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyOptions {
    /// The difference B − A to detect (a magnitude, in the measure's units).
    pub difference: f64,
    /// Target power, in (alpha, 1).
    pub power: f64,
    /// Two-sided level of one test.
    pub alpha: f64,
    /// Tests of the family the study's comparison belongs to: the level is `alpha / tests`
    /// (Holm's first step), as in `compare`.
    pub tests: usize,
    /// Repeats per task and side considered: 1..=max_repeats.
    pub max_repeats: usize,
    /// The suite's size when it is fixed: the plan then says how many repeats it needs.
    pub tasks: Option<usize>,
    /// k of pass^k (seed 002 uses the planned repeats; default 4).
    pub pass_k: usize,
    /// Simulated designs of the check.
    pub simulations: usize,
    /// Seed of the check.
    pub seed: u64,
    /// Measures to plan; empty: every measure the pilot (or the assumption) has.
    pub measures: Vec<String>,
    /// Side A of the pilot.
    pub select_a: Selection,
    /// Side B of the pilot; `None`: one-sided pilot.
    pub select_b: Option<Selection>,
}

impl Default for StudyOptions {
    fn default() -> Self {
        StudyOptions {
            difference: 0.1,
            power: 0.8,
            alpha: 0.05,
            tests: 1,
            max_repeats: 5,
            tasks: None,
            pass_k: 4,
            simulations: 2000,
            seed: 12345,
            measures: Vec::new(),
            select_a: Selection::default(),
            select_b: None,
        }
    }
}

/// Assumed variances instead of a pilot.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Assumption {
    /// sd across tasks of the true difference.
    pub task_sd: f64,
    /// sd of one episode's value around its task's mean.
    pub repeat_sd: f64,
    /// For binary measures' simulation check: every task's rate (default 0.5).
    pub rate: f64,
}

/// What a measure's plan is based on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variances {
    /// `pilot` or `assumed`.
    pub source: &'static str,
    /// Pilot tasks (0 when assumed).
    pub pilot_tasks: usize,
    /// Pilot episodes (0 when assumed).
    pub pilot_episodes: usize,
    /// sd across tasks of the true difference.
    pub task_sd: f64,
    /// sd of one episode around its task mean; absent when the pilot has no repeats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_sd: Option<f64>,
    /// How `task_sd` was obtained.
    pub task_sd_from: &'static str,
}

/// One design: `repeats` per task and side, the tasks it needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DesignRow {
    /// Repeats per task and side.
    pub repeats: usize,
    /// sd of a task difference with these repeats (closed form only; absent for pass^k, which
    /// is planned by simulation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sd: Option<f64>,
    /// Tasks needed (≥ 2).
    pub tasks: usize,
    /// Episodes: tasks × repeats × 2 sides.
    pub episodes: usize,
    /// Power at these tasks (≥ the target): closed form, or simulated for pass^k.
    pub power: f64,
}

/// The simulation check of the recommended design.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// Tasks.
    pub tasks: usize,
    /// Repeats.
    pub repeats: usize,
    /// `normal` (the closed form's model) or `per-task rates` (Bernoulli repeats).
    pub method: &'static str,
    /// Closed-form power.
    pub planned_power: f64,
    /// Simulated power.
    pub simulated_power: f64,
    /// Its Monte Carlo standard error.
    pub monte_carlo_se: f64,
    /// |simulated − planned| ≤ 3 standard errors.
    pub agrees: bool,
    /// Designs simulated.
    pub simulations: usize,
    /// Seed.
    pub seed: u64,
}

/// The plan of one measure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasurePlan {
    /// Measure name.
    pub measure: String,
    /// Seed paper of the measure (`000`, `001`, `002`).
    pub seed_paper: &'static str,
    /// The variances used.
    pub variances: Variances,
    /// One row per repeats value.
    pub designs: Vec<DesignRow>,
    /// Index into `designs` of the design with the fewest episodes.
    pub recommended: usize,
    /// With a fixed suite (`tasks`), the fewest repeats that suffice; absent when none does
    /// (or no suite size was given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats_for_suite: Option<usize>,
    /// The simulation check of the recommended design.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<Check>,
    /// Remarks (no repeats in the pilot, suite too small, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A whole plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StudyPlan {
    /// Always [`PLAN_SCHEMA`].
    pub schema: &'static str,
    /// [`PLAN_VERSION`].
    pub version: u32,
    /// Difference to detect.
    pub difference: f64,
    /// Target power.
    pub power: f64,
    /// Level of one test before the family division.
    pub alpha: f64,
    /// Tests in the family.
    pub tests: usize,
    /// The pilot runs (empty when assumed).
    pub pilots: Vec<String>,
    /// Per measure.
    pub measures: Vec<MeasurePlan>,
}

/// Per-task values of one side: task → the episodes' values.
type Values = BTreeMap<String, Vec<f64>>;

fn is_binary(measure: &str) -> bool {
    matches!(measure, "Success@1" | "Success@4" | "DSR" | "Res/Clean gap" | "pass^k")
}

/// The value of `measure` for one pilot episode (pass^k plans from the episode's success).
fn episode_value(measure: &str, e: &Episode<'_>) -> Option<f64> {
    match measure {
        "Score@1" => (!e.is_delivery()).then(|| e.score_at(1)),
        "Score@4" => (!e.is_delivery()).then(|| e.score_at(4)),
        "Success@1" | "Res/Clean gap" => (!e.is_delivery()).then(|| indicator(e.success_at(1))),
        "Success@4" => (!e.is_delivery()).then(|| indicator(e.success_at(4))),
        "Quality" => (e.is_delivery() && !e.extraction_unavailable()).then(|| e.delivery_score()),
        "DSR" | "pass^k" => (e.is_delivery() && !e.extraction_unavailable()).then(|| indicator(e.delivery_success())),
        _ => None,
    }
}

fn values_of<'a>(episodes: &[&Episode<'a>], measure: &str, keep: impl Fn(&Episode<'a>) -> bool) -> Values {
    let mut out: Values = BTreeMap::new();
    for e in episodes.iter().filter(|e| keep(e)) {
        if let Some(v) = episode_value(measure, e) {
            out.entry(e.row.task.clone()).or_default().push(v);
        }
    }
    out
}

fn plan_error(reason: impl Into<String>) -> ReportError {
    ReportError::StudyPlan { reason: reason.into() }
}

/// Pooled within-task variance (MS_within) of the tasks with repeats, over every side.
fn repeat_variance(sides: &[&Values]) -> Option<f64> {
    let (mut ss, mut df) = (0.0, 0usize);
    for side in sides {
        for values in side.values().filter(|v| v.len() >= 2) {
            let m = values.iter().sum::<f64>() / values.len() as f64;
            ss += values.iter().map(|v| (v - m) * (v - m)).sum::<f64>();
            df += values.len() - 1;
        }
    }
    (df > 0).then(|| ss / df as f64)
}

fn sample_variance(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let m = values.iter().sum::<f64>() / n;
    values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0)
}

fn means(values: &Values) -> BTreeMap<&str, f64> {
    values.iter().map(|(t, v)| (t.as_str(), v.iter().sum::<f64>() / v.len() as f64)).collect()
}

/// The variances of a measure from its pilot sides (module guide), and the per-task rates of
/// side A (for the binary check).
fn pilot_variances(a: &Values, b: Option<&Values>) -> Result<(Variances, Vec<f64>), String> {
    let episodes = a.values().map(Vec::len).sum::<usize>() + b.map_or(0, |b| b.values().map(Vec::len).sum());
    let rates: Vec<f64> = means(a).values().copied().collect();
    match b {
        Some(b) => {
            let (ma, mb) = (means(a), means(b));
            let paired: Vec<(&str, f64)> = ma.iter().filter_map(|(t, x)| mb.get(t).map(|y| (*t, y - x))).collect();
            if paired.len() < 2 {
                return Err("fewer than two tasks on both sides of the pilot".into());
            }
            let repeat = repeat_variance(&[a, b]);
            let differences: Vec<f64> = paired.iter().map(|p| p.1).collect();
            let noise = repeat.map_or(0.0, |r| {
                r * paired.iter().map(|(t, _)| 1.0 / a[*t].len() as f64 + 1.0 / b[*t].len() as f64).sum::<f64>() / paired.len() as f64
            });
            Ok((
                Variances {
                    source: "pilot",
                    pilot_tasks: paired.len(),
                    pilot_episodes: episodes,
                    task_sd: (sample_variance(&differences) - noise).max(0.0).sqrt(),
                    repeat_sd: repeat.map(f64::sqrt),
                    task_sd_from: "variance of the pilot's per-task differences minus their repeat noise",
                },
                rates,
            ))
        }
        None => {
            if a.len() < 2 {
                return Err("fewer than two tasks in the pilot".into());
            }
            let slices: Vec<&[f64]> = a.values().map(Vec::as_slice).collect();
            let (between, repeat, from) = match variance_components(&slices) {
                Ok(c) => (c.between_tasks, Some(c.within_tasks), "2 × the pilot's between-task variance (one-sided pilot; an upper bound)"),
                Err(_) => {
                    let task_means: Vec<f64> = means(a).values().copied().collect();
                    (sample_variance(&task_means), None, "2 × the variance of the pilot's task values (one-sided pilot without repeats)")
                }
            };
            Ok((
                Variances {
                    source: "pilot",
                    pilot_tasks: a.len(),
                    pilot_episodes: episodes,
                    task_sd: (2.0 * between).sqrt(),
                    repeat_sd: repeat.map(f64::sqrt),
                    task_sd_from: from,
                },
                rates,
            ))
        }
    }
}

/// Plans every measure of `options` from `pilots` (pooled).
///
/// # Errors
/// [`ReportError::StudyPlan`] for an invalid target or when no measure has pilot data (a
/// named measure without data is an error too); [`ReportError::Stats`] from the statistics.
pub fn plan_from_pilot(pilots: &[RunData], options: &StudyOptions) -> Result<StudyPlan, ReportError> {
    check_options(options)?;
    let episodes = index_episodes(&pilots.iter().collect::<Vec<_>>());
    let scored: Vec<&Episode> = episodes.iter().filter(|e| e.is_scored()).collect();
    check_side(&scored, &options.select_a, "--a")?;
    if let Some(select_b) = &options.select_b {
        check_side(&scored, select_b, "--b")?;
    }
    let mut plans = Vec::new();
    for (measure, seed_paper) in PLAN_MEASURES {
        let named = options.measures.iter().any(|m| m == measure);
        if !options.measures.is_empty() && !named {
            continue;
        }
        let (a, b) = if measure == "Res/Clean gap" {
            let keep_a = |e: &Episode| options.select_a.matches(e) && e.valid_state().is_some();
            let keep_b = |e: &Episode| options.select_a.matches(e) && e.is_clean();
            (values_of(&scored, measure, keep_a), Some(values_of(&scored, measure, keep_b)))
        } else {
            let a = values_of(&scored, measure, |e| options.select_a.matches(e));
            let b = options.select_b.as_ref().map(|s| values_of(&scored, measure, |e| s.matches(e)));
            (a, b)
        };
        if a.is_empty() || b.as_ref().is_some_and(BTreeMap::is_empty) {
            if named {
                return Err(plan_error(format!("the pilot has no scored episode with {measure}")));
            }
            continue;
        }
        let (variances, rates) = match pilot_variances(&a, b.as_ref()) {
            Ok(v) => v,
            Err(reason) if named => return Err(plan_error(format!("{measure}: {reason}"))),
            Err(_) => continue,
        };
        plans.push(plan_measure(measure, seed_paper, variances, &rates, options)?);
    }
    if plans.is_empty() {
        return Err(plan_error("no measure of the pilot has two tasks with scored episodes"));
    }
    Ok(StudyPlan {
        schema: PLAN_SCHEMA,
        version: PLAN_VERSION,
        difference: options.difference,
        power: options.power,
        alpha: options.alpha,
        tests: options.tests,
        pilots: pilots.iter().map(|p| p.dir.display().to_string()).collect(),
        measures: plans,
    })
}

/// A pilot side is one agent under one condition: the spread of its episodes of a task is
/// run-to-run noise. A side that matches nothing, or pools several agents or conditions (whose
/// differences would pass for repeat noise and inflate the plan), is refused, naming what to
/// add (a fresh user's `--a condition=partial` over three scripted agents planned 442 tasks).
fn check_side(scored: &[&Episode<'_>], selection: &Selection, flag: &str) -> Result<(), ReportError> {
    let chosen: Vec<&&Episode> = scored.iter().filter(|e| selection.matches(e)).collect();
    if chosen.is_empty() {
        return Err(plan_error(format!("{flag} matches no scored episode of the pilot")));
    }
    for (key, value_of) in
        [("agent", (|e: &Episode<'_>| e.row.agent.clone()) as fn(&Episode<'_>) -> String), ("condition", |e| e.row.condition.clone())]
    {
        let values: std::collections::BTreeSet<String> = chosen.iter().map(|e| value_of(e)).collect();
        if values.len() > 1 {
            let listed: Vec<&str> = values.iter().map(String::as_str).collect();
            return Err(plan_error(format!(
                "{flag} pools {} {key}s ({}): a pilot side is one agent under one condition, whose repeats show the run-to-run noise; add {key}=<one of them> to {flag}",
                values.len(),
                listed.join(", ")
            )));
        }
    }
    Ok(())
}

/// Plans the measures of `options` (default: Score@1) from assumed variances.
///
/// # Errors
/// [`ReportError::StudyPlan`] for an invalid target, assumption or measure name.
pub fn plan_from_assumption(assumption: &Assumption, options: &StudyOptions) -> Result<StudyPlan, ReportError> {
    check_options(options)?;
    let valid = |v: f64| v >= 0.0 && v.is_finite();
    if !valid(assumption.task_sd) || !valid(assumption.repeat_sd) || !(0.0..=1.0).contains(&assumption.rate) {
        return Err(plan_error("assumed sds must be finite and ≥ 0, the rate in [0, 1]"));
    }
    let names: Vec<String> = if options.measures.is_empty() { vec!["Score@1".into()] } else { options.measures.clone() };
    let mut plans = Vec::new();
    for name in &names {
        let Some((measure, seed_paper)) = PLAN_MEASURES.iter().find(|(m, _)| m == name) else {
            return Err(plan_error(format!("unknown measure `{name}`; expected one of {}", PLAN_MEASURES.map(|m| m.0).join(", "))));
        };
        let variances = Variances {
            source: "assumed",
            pilot_tasks: 0,
            pilot_episodes: 0,
            task_sd: assumption.task_sd,
            repeat_sd: Some(assumption.repeat_sd),
            task_sd_from: "assumed",
        };
        let rates = vec![assumption.rate; 2];
        plans.push(plan_measure(measure, seed_paper, variances, &rates, options)?);
    }
    Ok(StudyPlan {
        schema: PLAN_SCHEMA,
        version: PLAN_VERSION,
        difference: options.difference,
        power: options.power,
        alpha: options.alpha,
        tests: options.tests,
        pilots: Vec::new(),
        measures: plans,
    })
}

fn check_options(options: &StudyOptions) -> Result<(), ReportError> {
    if !(options.difference > 0.0 && options.difference.is_finite()) {
        return Err(plan_error(format!("the difference to detect must be > 0, got {}", options.difference)));
    }
    let alpha_ok = options.alpha > 0.0 && options.alpha < 1.0;
    let power_ok = options.power > options.alpha && options.power < 1.0;
    if !alpha_ok || !power_ok {
        return Err(plan_error("alpha must be in (0, 1) and power in (alpha, 1)"));
    }
    if options.tests == 0 || options.max_repeats == 0 || options.simulations == 0 || options.pass_k == 0 {
        return Err(plan_error("tests, max repeats, pass^k's k and simulations must be ≥ 1"));
    }
    Ok(())
}

fn stats(measure: &str) -> impl Fn(specgap_stats::StatsError) -> ReportError + '_ {
    move |source| ReportError::Stats { measure: format!("plan-study {measure}"), source }
}

fn plan_measure(
    measure: &str,
    seed_paper: &'static str,
    variances: Variances,
    rates: &[f64],
    options: &StudyOptions,
) -> Result<MeasurePlan, ReportError> {
    let alpha = options.alpha / options.tests as f64;
    let mut notes = Vec::new();
    let repeat_sd = variances.repeat_sd.unwrap_or(0.0);
    if variances.repeat_sd.is_none() {
        notes.push(
            "the pilot has no repeats: its repeat variance cannot be separated from the task variance, so more repeats are not credited"
                .to_string(),
        );
    }
    let pass_k = measure == "pass^k";
    let first_repeats = if pass_k { options.pass_k } else { 1 };
    if pass_k {
        notes.push(format!(
            "pass^{k} needs at least {k} repeats per task; it is planned by simulation only (no closed form): per-task pass^{k} estimated unbiasedly from the repeats (tau-bench), side B's rates shifted so that the mean pass^{k} rises by the difference",
            k = options.pass_k
        ));
    }
    let max_repeats = options.max_repeats.max(first_repeats);
    let mut designs = Vec::new();
    for repeats in (first_repeats..=max_repeats).filter(|_| pass_k) {
        match pass_k_design(measure, repeats, rates, alpha, options)? {
            Some(design) => designs.push(design),
            None => notes.push(format!("{repeats} repeats: no suite of up to {MAX_SIMULATED_TASKS} tasks reaches the power")),
        }
    }
    for repeats in (first_repeats..=max_repeats).filter(|_| !pass_k) {
        let sd = (variances.task_sd.powi(2) + 2.0 * repeat_sd.powi(2) / repeats as f64).sqrt();
        let (tasks, power) = if sd == 0.0 {
            (2, 1.0)
        } else {
            let effect = options.difference / sd;
            let nobs = paired_t_nobs(effect, alpha, options.power).map_err(stats(measure))?;
            let tasks = (nobs - 1e-9).ceil().max(2.0) as usize;
            (tasks, paired_t_power(effect, tasks as f64, alpha).map_err(stats(measure))?)
        };
        designs.push(DesignRow { repeats, sd: Some(sd), tasks, episodes: tasks * repeats * 2, power });
    }
    if designs.is_empty() {
        return Err(plan_error(format!("{measure}: no design of up to {max_repeats} repeats reaches the power")));
    }
    let recommended = designs.iter().enumerate().min_by_key(|(_, d)| (d.episodes, d.repeats)).map_or(0, |(i, _)| i);
    let repeats_for_suite = options.tasks.and_then(|n| designs.iter().find(|d| d.tasks <= n).map(|d| d.repeats));
    if let (Some(n), None) = (options.tasks, repeats_for_suite) {
        notes.push(format!("{n} tasks are not enough with up to {max_repeats} repeats"));
    }
    let check = check_design(measure, &designs[recommended], &variances, rates, alpha, options)?;
    Ok(MeasurePlan { measure: measure.to_string(), seed_paper, variances, designs, recommended, repeats_for_suite, check, notes })
}

/// The seeded simulation of the recommended design (module guide).
fn check_design(
    measure: &str,
    design: &DesignRow,
    variances: &Variances,
    rates: &[f64],
    alpha: f64,
    options: &StudyOptions,
) -> Result<Option<Check>, ReportError> {
    let simulation = Simulation { simulations: options.simulations, seed: options.seed };
    let (method, simulated) = if is_binary(measure) {
        if rates.is_empty() {
            return Ok(None);
        }
        let cycled: Vec<f64> = (0..design.tasks).map(|i| rates[i % rates.len()]).collect();
        let binary =
            BinaryDesign { rates: cycled, repeats_a: vec![design.repeats; design.tasks], repeats_b: vec![design.repeats; design.tasks] };
        let power = if measure == "pass^k" {
            // A fresh stream: the design was found on `seed`; the check repeats it on `seed + 1`.
            let Some(shift) = shift_for(&binary, options.difference, options.pass_k) else {
                return Ok(None);
            };
            let fresh = Simulation { seed: options.seed.wrapping_add(1), ..simulation };
            specgap_stats::simulated_pass_hat_k_power(&binary, shift, options.pass_k, alpha, &fresh).map_err(stats(measure))?
        } else {
            let Some(shift) = shift_for(&binary, options.difference, 1) else {
                return Ok(None);
            };
            simulated_binary_power(&binary, shift, alpha, &simulation).map_err(stats(measure))?
        };
        ("per-task rates", power)
    } else {
        let power = simulated_normal_power(
            design.tasks,
            design.repeats,
            options.difference,
            variances.task_sd,
            variances.repeat_sd.unwrap_or(0.0),
            alpha,
            &simulation,
        )
        .map_err(stats(measure))?;
        ("normal", power)
    };
    let se = monte_carlo_se(design.power, options.simulations);
    Ok(Some(Check {
        tasks: design.tasks,
        repeats: design.repeats,
        method,
        planned_power: design.power,
        simulated_power: simulated,
        monte_carlo_se: se,
        agrees: (simulated - design.power).abs() <= 3.0 * se.max(1e-12),
        simulations: options.simulations,
        seed: options.seed,
    }))
}

/// The mean over tasks of `(p + shift)^k − p^k` (rates clamped to [0, 1]): the true
/// difference in the mean of pass^k (k = 1: of the success rate) a shift makes.
fn power_difference(design: &BinaryDesign, shift: f64, k: usize) -> f64 {
    let exponent = k as i32;
    let shifted = design.shifted(shift);
    shifted.iter().zip(&design.rates).map(|(b, a)| b.powi(exponent) - a.powi(exponent)).sum::<f64>() / design.rates.len() as f64
}

/// The largest suite `plan-study` simulates for pass^k.
pub const MAX_SIMULATED_TASKS: usize = 2048;

/// The pass^k design with `repeats`: the fewest tasks whose simulated power reaches the
/// target (doubling, then bisection on the task count); `None` beyond
/// [`MAX_SIMULATED_TASKS`] or when no shift gives the difference.
fn pass_k_design(
    measure: &str,
    repeats: usize,
    rates: &[f64],
    alpha: f64,
    options: &StudyOptions,
) -> Result<Option<DesignRow>, ReportError> {
    let simulation = Simulation { simulations: options.simulations, seed: options.seed };
    let power_at = |tasks: usize| -> Result<Option<f64>, ReportError> {
        let design = BinaryDesign {
            rates: (0..tasks).map(|i| rates[i % rates.len()]).collect(),
            repeats_a: vec![repeats; tasks],
            repeats_b: vec![repeats; tasks],
        };
        let Some(shift) = shift_for(&design, options.difference, options.pass_k) else { return Ok(None) };
        specgap_stats::simulated_pass_hat_k_power(&design, shift, options.pass_k, alpha, &simulation).map(Some).map_err(stats(measure))
    };
    let mut high = 2;
    loop {
        match power_at(high)? {
            None => return Ok(None),
            Some(p) if p >= options.power => break,
            Some(_) if high >= MAX_SIMULATED_TASKS => return Ok(None),
            Some(_) => high = (high * 2).min(MAX_SIMULATED_TASKS),
        }
    }
    let mut low = high / 2;
    while high - low > 1 {
        let middle = (low + high) / 2;
        if power_at(middle)?.is_some_and(|p| p >= options.power) {
            high = middle;
        } else {
            low = middle;
        }
    }
    let power = power_at(high)?.unwrap_or(f64::NAN);
    Ok(Some(DesignRow { repeats, sd: None, tasks: high, episodes: high * repeats * 2, power }))
}

/// The additive shift of every rate whose mean pass^k difference ([`power_difference`]) is
/// `difference`; `None` when even a shift of 1 falls short.
fn shift_for(design: &BinaryDesign, difference: f64, k: usize) -> Option<f64> {
    if power_difference(design, 1.0, k) < difference {
        return None;
    }
    let (mut low, mut high) = (0.0_f64, 1.0_f64);
    for _ in 0..60 {
        let middle = 0.5 * (low + high);
        if power_difference(design, middle, k) >= difference {
            high = middle;
        } else {
            low = middle;
        }
    }
    Some(high)
}

/// The plan as Markdown.
pub fn render_plan_markdown(plan: &StudyPlan) -> String {
    let mut out = String::from("# Study plan\n\n");
    let _ = writeln!(
        out,
        "To detect a difference of {} (B − A) with {:.0}% power at two-sided α = {}{}, paired by task (paired t-test on task means; statsmodels `TTestPower`).{}\n",
        plan.difference,
        plan.power * 100.0,
        plan.alpha / plan.tests as f64,
        if plan.tests > 1 { format!(" ({} / {} tests of the family)", plan.alpha, plan.tests) } else { String::new() },
        if plan.pilots.is_empty() { " Variances assumed.".to_string() } else { format!(" Pilot: {}.", plan.pilots.join(", ")) }
    );
    for m in &plan.measures {
        let v = &m.variances;
        let _ = writeln!(out, "## {} (seed {})\n", m.measure, m.seed_paper);
        let _ = writeln!(
            out,
            "task sd {:.4} ({}); repeat sd {}{}.\n",
            v.task_sd,
            v.task_sd_from,
            v.repeat_sd.map_or_else(|| crate::render::ABSENT.to_string(), |s| format!("{s:.4}")),
            if v.source == "pilot" { format!("; pilot: {} tasks, {} episodes", v.pilot_tasks, v.pilot_episodes) } else { String::new() }
        );
        out.push_str("| repeats | sd of a task difference | tasks | episodes | power |\n| ---: | ---: | ---: | ---: | ---: |\n");
        for (i, d) in m.designs.iter().enumerate() {
            let mark = if i == m.recommended { " (fewest episodes)" } else { "" };
            let sd = d.sd.map_or_else(|| "simulated".to_string(), |sd| format!("{sd:.4}"));
            let _ = writeln!(out, "| {}{mark} | {sd} | {} | {} | {:.3} |", d.repeats, d.tasks, d.episodes, d.power);
        }
        if let Some(r) = m.repeats_for_suite {
            let _ = writeln!(out, "\nWith the suite's tasks: {r} repeats per task and side.");
        }
        if let Some(c) = &m.check {
            let _ = writeln!(
                out,
                "\nSimulation check ({}, {} designs, seed {}): {} tasks × {} repeats, planned power {:.3}, simulated {:.3} ± {:.3} — {}.",
                c.method,
                c.simulations,
                c.seed,
                c.tasks,
                c.repeats,
                c.planned_power,
                c.simulated_power,
                c.monte_carlo_se,
                if c.agrees {
                    "agrees within 3 Monte Carlo standard errors"
                } else {
                    "differs by more than 3 Monte Carlo standard errors: trust the simulation for this measure"
                }
            );
        }
        for note in &m.notes {
            let _ = writeln!(out, "\nNote: {note}.");
        }
        out.push('\n');
    }
    out
}

/// The plan as pretty JSON (schema [`PLAN_SCHEMA`]).
///
/// # Errors
/// [`ReportError::Json`].
pub fn render_plan_json(plan: &StudyPlan) -> Result<String, ReportError> {
    let mut text = serde_json::to_string_pretty(plan).map_err(ReportError::Json)?;
    text.push('\n');
    Ok(text)
}
