//! Delivery measures of seed 002 (FDE-Bench): Quality, DSR, validity and pass@k / pass^k over
//! the *planned* runs (§4.2, App. A.3), with 95% case-bootstrap intervals (App. A.4), the
//! scored-only values as a robustness column, zero-score signatures (App. A.7) and
//! oracle-coverage curves (App. A.6, Table 13). The clarification measures are in
//! [`crate::clarification`]; which runs are planned and why one has no score, in
//! [`crate::plan`].

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ReportError;
use crate::cases::{CaseValues, IntervalSettings};
use crate::episode::{Episode, indicator, mean, oracle_ratio};
use crate::plan::{PlannedRun, UnscoredRun};
use crate::run::RunData;

/// Mean of per-case means (seed 002 §4.2 "Quality … then averages across cases with equal
/// weight"; Table 13 "Four-case mean"). `None` for no cases.
pub fn case_macro(case_means: &[f64]) -> Option<f64> {
    mean(case_means.iter().copied())
}

/// pass@k and pass^k over validity across the repeats of each case (seed 002 §4.2: "cases with
/// at least one and all three valid runs" for k = 3), with the unbiased estimators of
/// [`specgap_stats::pass_at_k`] / [`specgap_stats::pass_hat_k`] averaged over cases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassK {
    /// k: over planned runs, the fewest planned runs of any case of the group (the planned
    /// repeats, 3 in seed 002); in [`ScoredOnly`], the fewest scored runs.
    pub k: u32,
    /// Mean over cases of pass@k, in [0, 1].
    pub pass_at_k: f64,
    /// Mean over cases of pass^k, in [0, 1].
    pub pass_hat_k: f64,
}

/// The delivery measures over the scored runs only: the robustness column of a group whose
/// planned runs are not all scored (and equal to the planned-run values when they are).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoredOnly {
    /// Scored runs.
    pub runs: usize,
    /// Cases with a scored run.
    pub cases: usize,
    /// Quality over the scored runs.
    pub quality: f64,
    /// DSR over the scored runs.
    pub dsr: f64,
    /// Validity over the scored runs.
    pub valid: f64,
    /// pass@k / pass^k with k = the fewest scored runs of any case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_k: Option<PassK>,
}

/// Delivery measures of a group's planned delivery runs (seed 002 §4.2, App. A.3, A.4).
///
/// When every planned run is scored (`complete`), Quality, DSR, validity and pass@k / pass^k
/// count every planned run (a delivery the agent failed scores 0) and carry case-bootstrap
/// intervals. When some planned run has no score — a harness failure, an interruption, an
/// episode never run — those cells are left out (incomplete, never computed over fewer runs)
/// and the runs are listed in `unscored`; `scored_only` holds the values over the scored runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeliveryMeasures {
    /// Cases (tasks) with a planned run.
    pub cases: usize,
    /// Planned runs.
    pub planned_runs: usize,
    /// Scored runs among them.
    pub runs: usize,
    /// Whether every planned run is scored.
    pub complete: bool,
    /// k of pass@k / pass^k: the fewest planned runs of any case (the planned repeats; 3 in
    /// seed 002), whether or not they were all scored.
    pub k: u32,
    /// Quality over planned runs: delivery scores (0 for invalid runs) averaged over a case's
    /// runs, then over cases. A score is x/R or R/x of the reference, so 1 is the reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<f64>,
    /// DSR: the fraction of planned runs that attain the reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dsr: Option<f64>,
    /// The fraction of planned runs whose delivery is valid (hard constraints hold).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid: Option<f64>,
    /// pass@k / pass^k over validity, k the planned repeats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_k: Option<PassK>,
    /// 95% case-bootstrap intervals by cell (`quality`, `dsr`, `valid`, `pass_at_k`,
    /// `pass_hat_k`); a cell without one is left out.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub intervals: BTreeMap<String, [f64; 2]>,
    /// Planned runs without a score, listed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unscored: Vec<UnscoredRun>,
    /// The values over the scored runs only; absent without a scored run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scored_only: Option<ScoredOnly>,
    /// Mean wall-clock time of the scored runs, in seconds (seed 002 §5.2 "runtime").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_wall_sec: Option<f64>,
    /// Per cell, the case-level data behind it (for the associations across groups).
    #[serde(skip)]
    pub case_values: BTreeMap<String, CaseValues>,
}

/// Display names of the planned-run delivery cells (seed 002 Table 6(a)), with their keys in
/// [`DeliveryMeasures::intervals`].
pub const DELIVERY_MEASURES: [(&str, &str); 5] =
    [("quality", "Quality"), ("dsr", "DSR"), ("valid", "valid"), ("pass_at_k", "pass@k"), ("pass_hat_k", "pass^k")];

/// Scored runs of one case among its planned runs.
struct CaseRuns<'e, 'a> {
    planned: usize,
    scored: Vec<&'e Episode<'a>>,
}

/// [`DeliveryMeasures`] of a group's planned delivery runs; `None` without any.
///
/// # Errors
/// [`ReportError::Stats`] if a pass@k estimator or a bootstrap rejects its input (cannot
/// happen for counts and settings built here; reported rather than hidden).
pub fn delivery_measures(
    planned: &[&PlannedRun<'_, '_>],
    runs: &[RunData],
    settings: &IntervalSettings,
) -> Result<Option<DeliveryMeasures>, ReportError> {
    if planned.is_empty() {
        return Ok(None);
    }
    let mut by_case: BTreeMap<&str, CaseRuns> = BTreeMap::new();
    for run in planned {
        let slot = by_case.entry(run.key.task.as_str()).or_insert(CaseRuns { planned: 0, scored: Vec::new() });
        slot.planned += 1;
        slot.scored.extend(run.scored());
    }
    let unscored: Vec<UnscoredRun> = planned.iter().filter_map(|p| UnscoredRun::of(p, runs)).collect();
    let scored: Vec<&Episode> = by_case.values().flat_map(|c| c.scored.iter().copied()).collect();
    let complete = unscored.is_empty();
    let k = by_case.values().map(|c| c.planned).min().unwrap_or(0) as u64;
    let mut measures = DeliveryMeasures {
        cases: by_case.len(),
        planned_runs: planned.len(),
        runs: scored.len(),
        complete,
        k: k as u32,
        quality: None,
        dsr: None,
        valid: None,
        pass_k: None,
        intervals: BTreeMap::new(),
        unscored,
        scored_only: scored_only(&by_case)?,
        mean_wall_sec: mean(scored.iter().map(|e| e.row.wall_ms as f64 / 1000.0)),
        case_values: BTreeMap::new(),
    };
    if complete {
        let cells = planned_cells(&by_case, k)?;
        for ((field, display), values) in DELIVERY_MEASURES.iter().zip(&cells) {
            if let Some(interval) = values.interval(settings, display)? {
                measures.intervals.insert(field.to_string(), interval);
            }
        }
        let [quality, dsr, valid, pass_at, pass_hat] = cells;
        measures.quality = quality.value();
        measures.dsr = dsr.value();
        measures.valid = valid.value();
        measures.pass_k = match (pass_at.value(), pass_hat.value()) {
            (Some(pass_at_k), Some(pass_hat_k)) if k >= 1 => Some(PassK { k: k as u32, pass_at_k, pass_hat_k }),
            _ => None,
        };
        for ((_, display), values) in DELIVERY_MEASURES.iter().zip([quality, dsr, valid, pass_at, pass_hat]) {
            measures.case_values.insert(display.to_string(), values);
        }
    }
    Ok(Some(measures))
}

/// The five cells' case data over the planned runs of a complete group (every planned run is
/// scored): Quality (case mean, 1), DSR (successes, runs), validity (valid runs, runs),
/// pass@k and pass^k (the case's estimate, 1).
fn planned_cells(by_case: &BTreeMap<&str, CaseRuns>, k: u64) -> Result<[CaseValues; 5], ReportError> {
    let mut columns: [Vec<(String, f64, f64)>; 5] = Default::default();
    for (task, case) in by_case {
        let n = case.scored.len() as f64;
        let valid = case.scored.iter().filter(|e| e.delivery_valid()).count() as u64;
        let task = task.to_string();
        let quality = mean(case.scored.iter().map(|e| e.delivery_score())).unwrap_or(0.0);
        let successes: f64 = case.scored.iter().map(|e| indicator(e.delivery_success())).sum();
        columns[0].push((task.clone(), quality, 1.0));
        columns[1].push((task.clone(), successes, n));
        columns[2].push((task.clone(), valid as f64, n));
        if k >= 1 {
            columns[3].push((task.clone(), pass_estimate(specgap_stats::pass_at_k, case.scored.len() as u64, valid, k)?, 1.0));
            columns[4].push((task, pass_estimate(specgap_stats::pass_hat_k, case.scored.len() as u64, valid, k)?, 1.0));
        }
    }
    Ok(columns.map(CaseValues::new))
}

fn pass_estimate(f: fn(u64, u64, u64) -> Result<f64, specgap_stats::StatsError>, n: u64, c: u64, k: u64) -> Result<f64, ReportError> {
    f(n, c, k).map_err(|source| ReportError::Stats { measure: "pass@k".into(), source })
}

/// The values over the scored runs only, or `None` without one.
fn scored_only(by_case: &BTreeMap<&str, CaseRuns>) -> Result<Option<ScoredOnly>, ReportError> {
    let cases: Vec<&CaseRuns> = by_case.values().filter(|c| !c.scored.is_empty()).collect();
    if cases.is_empty() {
        return Ok(None);
    }
    let runs: Vec<&Episode> = cases.iter().flat_map(|c| c.scored.iter().copied()).collect();
    let case_quality: Vec<f64> = cases.iter().map(|c| mean(c.scored.iter().map(|e| e.delivery_score())).unwrap_or(0.0)).collect();
    let k = cases.iter().map(|c| c.scored.len()).min().unwrap_or(0) as u64;
    let pass_k = if k >= 1 {
        let mut at = Vec::new();
        let mut hat = Vec::new();
        for c in &cases {
            let n = c.scored.len() as u64;
            let valid = c.scored.iter().filter(|e| e.delivery_valid()).count() as u64;
            at.push(pass_estimate(specgap_stats::pass_at_k, n, valid, k)?);
            hat.push(pass_estimate(specgap_stats::pass_hat_k, n, valid, k)?);
        }
        Some(PassK { k: k as u32, pass_at_k: mean(at).unwrap_or(0.0), pass_hat_k: mean(hat).unwrap_or(0.0) })
    } else {
        None
    };
    Ok(Some(ScoredOnly {
        runs: runs.len(),
        cases: cases.len(),
        quality: case_macro(&case_quality).unwrap_or(0.0),
        dsr: mean(runs.iter().map(|e| indicator(e.delivery_success()))).unwrap_or(0.0),
        valid: mean(runs.iter().map(|e| indicator(e.delivery_valid()))).unwrap_or(0.0),
        pass_k,
    }))
}

/// Signature precedence for zero-score runs (seed 002 App. A.7, Table 14).
pub const SIGNATURE_ORDER: [&str; 6] = ["constraint", "fatal", "schema", "execution", "quality", "none"];

/// Zero-score runs of a group by evaluator signature (seed 002 App. A.7, Table 14).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ZeroScores {
    /// Scored delivery runs.
    pub runs: usize,
    /// Runs with delivery score 0.
    pub zero: usize,
    /// Of those, invalid (a hard constraint broken, or no valid artifact).
    pub invalid: usize,
    /// Of those, valid but scoring 0.
    pub valid_zero: usize,
    /// Zero-score runs per signature, keyed in [`SIGNATURE_ORDER`].
    pub signatures: BTreeMap<String, usize>,
}

/// The signature of a zero-score run: the evaluator's, else `constraint` for an invalid
/// delivery with violations, else `none` (no explicit message).
pub fn zero_signature(e: &Episode<'_>) -> String {
    if let Some(x) = e.extraction.filter(|x| x.status == specgap_store::ExtractionStatus::Scored) {
        return match x.signature {
            Some(sig) => serde_json::to_value(sig).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_else(|| "none".into()),
            None if x.valid == Some(false) => "constraint".into(),
            None => "none".into(),
        };
    }
    let delivery = e.final_k().or_else(|| e.submissions.last().map(|s| s.k)).and_then(|k| e.deliveries.get(&k));
    match delivery {
        Some(d) => match d.signature {
            Some(sig) => serde_json::to_value(sig).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_else(|| "none".into()),
            None if !d.valid && !d.violations.is_empty() => "constraint".into(),
            None => "none".into(),
        },
        None => "none".into(),
    }
}

/// [`ZeroScores`]; `None` without scored delivery runs.
pub fn zero_scores(episodes: &[&Episode<'_>]) -> Option<ZeroScores> {
    let runs = scored_deliveries(episodes);
    if runs.is_empty() {
        return None;
    }
    let zeros: Vec<&Episode> = runs.iter().copied().filter(|e| e.delivery_score() == 0.0).collect();
    let mut signatures = BTreeMap::new();
    for e in &zeros {
        *signatures.entry(zero_signature(e)).or_insert(0) += 1;
    }
    let invalid = zeros.iter().filter(|e| !e.delivery_valid()).count();
    Some(ZeroScores { runs: runs.len(), zero: zeros.len(), invalid, valid_zero: zeros.len() - invalid, signatures })
}

/// One case at one oracle coverage level: Quality mean ± sd over repeats (seed 002 Table 13).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OracleCase {
    /// Task name.
    pub task: String,
    /// Scored repeats.
    pub repeats: usize,
    /// Mean delivery score over repeats.
    pub mean: f64,
    /// Sample standard deviation over repeats (`ddof = 1`); absent for one repeat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sd: Option<f64>,
}

/// One oracle coverage level R (condition `oracle:R`, DESIGN §4): per-case Quality and the
/// case-macro mean (seed 002 App. A.6, Figure 5, Table 13 "Four-case mean").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OracleLevel {
    /// R in [0, 1].
    pub ratio: f64,
    /// The condition string.
    pub condition: String,
    /// Cases, by task name.
    pub cases: Vec<OracleCase>,
    /// [`case_macro`] of the case means.
    pub macro_mean: f64,
}

/// Oracle levels of the scored episodes under `oracle:R` conditions, by R.
pub fn oracle_curve(episodes: &[&Episode<'_>]) -> Vec<OracleLevel> {
    let mut levels: BTreeMap<String, Vec<&Episode>> = BTreeMap::new();
    for e in episodes.iter().copied().filter(|e| e.is_scored() && !e.extraction_unavailable()) {
        if oracle_ratio(&e.row.condition).is_some() {
            levels.entry(e.row.condition.clone()).or_default().push(e);
        }
    }
    let mut out: Vec<OracleLevel> = levels
        .into_iter()
        .filter_map(|(condition, eps)| {
            let mut by_task: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for e in eps {
                by_task.entry(e.row.task.clone()).or_default().push(e.delivery_score());
            }
            let cases: Vec<OracleCase> = by_task
                .into_iter()
                .map(|(task, scores)| OracleCase {
                    task,
                    repeats: scores.len(),
                    mean: mean(scores.iter().copied()).unwrap_or(0.0),
                    sd: specgap_stats::sample_sd(&scores).ok().filter(|s| s.is_finite()),
                })
                .collect();
            let macro_mean = case_macro(&cases.iter().map(|c| c.mean).collect::<Vec<_>>())?;
            Some(OracleLevel { ratio: oracle_ratio(&condition)?, condition, cases, macro_mean })
        })
        .collect();
    out.sort_by(|a, b| a.ratio.total_cmp(&b.ratio).then_with(|| a.condition.cmp(&b.condition)));
    out
}

/// The scored delivery runs among `episodes` (errors and interruptions never count).
fn scored_deliveries<'a, 'b>(episodes: &[&'a Episode<'b>]) -> Vec<&'a Episode<'b>> {
    episodes.iter().copied().filter(|e| e.is_scored() && e.is_delivery() && !e.extraction_unavailable()).collect()
}
