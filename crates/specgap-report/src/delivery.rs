//! Measures of seed 002 (FDE-Bench): Quality, DSR, pass@k and pass^k over validity (§4.2),
//! the clarification measures Recall, Precision, Ask-F1, KQC1, ATC and Redund. with the
//! undefined-value rules of App. A.3, zero-score signatures (App. A.7) and oracle-coverage
//! curves (App. A.6, Table 13).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use specgap_store::Judgement;

use crate::ReportError;
use crate::episode::{Episode, indicator, mean, offers_ask, oracle_ratio, per_task_means};
use crate::judge::{COVERED, QuestionUnit, question_units};

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
    /// k: the fewest scored repeats of any case of the group (3 in seed 002).
    pub k: u32,
    /// Mean over cases of pass@k, in [0, 1].
    pub pass_at_k: f64,
    /// Mean over cases of pass^k, in [0, 1].
    pub pass_hat_k: f64,
}

/// Delivery measures of the scored delivery-scored episodes of a group (seed 002 §4.2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeliveryMeasures {
    /// Cases (tasks).
    pub cases: usize,
    /// Runs (scored episodes).
    pub runs: usize,
    /// Quality: delivery scores (0 for invalid runs) averaged over repeats within a case, then
    /// over cases. A score is x/R or R/x of the reference, so 1 is the reference.
    pub quality: f64,
    /// DSR: fraction of runs that attain the reference (Success).
    pub dsr: f64,
    /// Fraction of runs whose delivery is valid (hard constraints hold).
    pub valid: f64,
    /// pass@k / pass^k over validity; absent when a case has no scored repeat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_k: Option<PassK>,
}

/// [`DeliveryMeasures`]; `None` without scored delivery episodes.
///
/// # Errors
/// [`ReportError::Stats`] if the pass@k estimator rejects the counts (cannot happen for
/// counts built here; reported rather than hidden).
pub fn delivery_measures(
    episodes: &[&Episode<'_>],
) -> Result<Option<DeliveryMeasures>, ReportError> {
    let runs = scored_deliveries(episodes);
    if runs.is_empty() {
        return Ok(None);
    }
    let case_quality = per_task_means(runs.iter().copied(), |e| Some(e.final_score()));
    let quality = case_macro(&case_quality.values().copied().collect::<Vec<_>>()).unwrap_or(0.0);
    let mut validity: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for e in &runs {
        let slot = validity.entry(e.row.task.as_str()).or_insert((0, 0));
        slot.0 += 1;
        slot.1 += u64::from(e.final_valid());
    }
    let k = validity.values().map(|(n, _)| *n).min().unwrap_or(0);
    let pass_k = if k >= 1 {
        let stats = |f: fn(u64, u64, u64) -> Result<f64, specgap_stats::StatsError>| -> Result<f64, ReportError> {
            let values: Result<Vec<f64>, _> = validity.values().map(|(n, c)| f(*n, *c, k)).collect();
            let values = values.map_err(|source| ReportError::Stats { measure: "pass@k".into(), source })?;
            Ok(mean(values).unwrap_or(0.0))
        };
        Some(PassK {
            k: k as u32,
            pass_at_k: stats(specgap_stats::pass_at_k)?,
            pass_hat_k: stats(specgap_stats::pass_hat_k)?,
        })
    } else {
        None
    };
    Ok(Some(DeliveryMeasures {
        cases: case_quality.len(),
        runs: runs.len(),
        quality,
        dsr: mean(runs.iter().map(|e| indicator(e.final_success()))).unwrap_or(0.0),
        valid: mean(runs.iter().map(|e| indicator(e.final_valid()))).unwrap_or(0.0),
        pass_k,
    }))
}

/// The clarification measures of one run (seed 002 §4.2), each `None` where App. A.3 leaves
/// it undefined. Fractions in [0, 1]; ATC in interaction turns; Redund. in question units.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClarificationValues {
    /// Question units asked (|Q|).
    pub units: usize,
    /// Recall = |G_cov| / |G|; 0 without questions.
    pub recall: Option<f64>,
    /// Precision = |Q_rel| / |Q|; undefined without questions.
    pub precision: Option<f64>,
    /// Ask-F1 = 2PR / (P + R); undefined without questions, 0 when P = R = 0.
    pub ask_f1: Option<f64>,
    /// KQC1 = |G_cov,1| / |G|: targets covered by units of the first interaction turn.
    pub kqc1: Option<f64>,
    /// ATC: mean first covering turn over covered targets with a matched unit; undefined when
    /// there is none.
    pub atc: Option<f64>,
    /// Redund. = |Q| − |Q_rel|.
    pub redund: Option<f64>,
}

/// [`ClarificationValues`] of a run with question `units` ([`question_units`]), clarification
/// targets `targets` (ids, |G| > 0) and one judge's `judgements`.
///
/// Undefined-value rules (seed 002 App. A.3): with no question, Recall, KQC1 and Redund. are
/// 0 and Precision, Ask-F1 and ATC undefined; with questions but no judgement at all (the
/// judge failed or never ran), every measure is unavailable. A target without a judgement
/// counts as not covered; matched indices outside the units are ignored.
pub fn clarification_values(
    units: &[QuestionUnit],
    targets: &[String],
    judgements: &[&Judgement],
) -> ClarificationValues {
    let g = targets.len();
    if g == 0 {
        return ClarificationValues::default();
    }
    if units.is_empty() {
        return ClarificationValues {
            units: 0,
            recall: Some(0.0),
            kqc1: Some(0.0),
            redund: Some(0.0),
            ..Default::default()
        };
    }
    if judgements.is_empty() {
        return ClarificationValues {
            units: units.len(),
            ..Default::default()
        };
    }
    let wanted: BTreeSet<&str> = targets.iter().map(String::as_str).collect();
    let covered: Vec<&&Judgement> = judgements
        .iter()
        .filter(|j| j.verdict == COVERED && wanted.contains(j.target.as_str()))
        .collect();
    let turn_of = |index: u32| units.get(index as usize).map(|u| u.turn);
    let relevant: BTreeSet<u32> = covered
        .iter()
        .flat_map(|j| j.matched_question_indices.iter().copied())
        .filter(|i| (*i as usize) < units.len())
        .collect();
    let first_turns: Vec<u32> = covered
        .iter()
        .filter_map(|j| {
            j.matched_question_indices
                .iter()
                .filter_map(|i| turn_of(*i))
                .min()
        })
        .collect();
    let recall = covered.len() as f64 / g as f64;
    let precision = relevant.len() as f64 / units.len() as f64;
    let ask_f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    ClarificationValues {
        units: units.len(),
        recall: Some(recall),
        precision: Some(precision),
        ask_f1: Some(ask_f1),
        kqc1: Some(first_turns.iter().filter(|t| **t == 1).count() as f64 / g as f64),
        atc: mean(first_turns.iter().map(|t| f64::from(*t))),
        redund: Some((units.len() - relevant.len()) as f64),
    }
}

/// A run-level measure averaged over the runs where it is defined (seed 002 §4.2
/// "averaged over runs for which each metric is defined").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DefinedMean {
    /// The mean.
    pub mean: f64,
    /// Runs where the measure is defined.
    pub n: usize,
}

fn defined_mean(values: impl Iterator<Item = Option<f64>>) -> Option<DefinedMean> {
    let defined: Vec<f64> = values.flatten().collect();
    let n = defined.len();
    mean(defined).map(|mean| DefinedMean { mean, n })
}

/// Clarification measures of a group: run-level values averaged over the runs where each is
/// defined. Runs: scored episodes of tasks with clarification targets, under a condition that
/// offers `ask_user`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClarificationSummary {
    /// Runs considered.
    pub runs: usize,
    /// Mean question units per run.
    pub mean_units: f64,
    /// Recall.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall: Option<DefinedMean>,
    /// Precision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<DefinedMean>,
    /// Ask-F1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ask_f1: Option<DefinedMean>,
    /// KQC1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kqc1: Option<DefinedMean>,
    /// ATC (interaction turns; lower is better).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub atc: Option<DefinedMean>,
    /// Redund. (question units; lower is better).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redund: Option<DefinedMean>,
}

/// The clarification values of one episode under `judge`, or `None` when they do not apply
/// (no task package, no targets, `ask_user` not offered, not scored).
pub fn episode_clarification(e: &Episode<'_>, judge: &str) -> Option<ClarificationValues> {
    let context = e.context?;
    if !e.is_scored() || context.targets.is_empty() || !offers_ask(&e.row.condition) {
        return None;
    }
    let units = question_units(&e.questions);
    let targets: Vec<String> = context.targets.iter().map(|t| t.id.clone()).collect();
    Some(clarification_values(
        &units,
        &targets,
        &e.judgements_of(judge),
    ))
}

/// [`ClarificationSummary`] of a group; `None` when no run applies.
pub fn clarification_summary(
    episodes: &[&Episode<'_>],
    judge: &str,
) -> Option<ClarificationSummary> {
    let values: Vec<ClarificationValues> = episodes
        .iter()
        .filter_map(|e| episode_clarification(e, judge))
        .collect();
    if values.is_empty() {
        return None;
    }
    Some(ClarificationSummary {
        runs: values.len(),
        mean_units: mean(values.iter().map(|v| v.units as f64)).unwrap_or(0.0),
        recall: defined_mean(values.iter().map(|v| v.recall)),
        precision: defined_mean(values.iter().map(|v| v.precision)),
        ask_f1: defined_mean(values.iter().map(|v| v.ask_f1)),
        kqc1: defined_mean(values.iter().map(|v| v.kqc1)),
        atc: defined_mean(values.iter().map(|v| v.atc)),
        redund: defined_mean(values.iter().map(|v| v.redund)),
    })
}

/// Signature precedence for zero-score runs (seed 002 App. A.7, Table 14).
pub const SIGNATURE_ORDER: [&str; 6] = [
    "constraint",
    "fatal",
    "schema",
    "execution",
    "quality",
    "none",
];

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
    let delivery = e
        .final_k()
        .or_else(|| e.submissions.last().map(|s| s.k))
        .and_then(|k| e.deliveries.get(&k));
    match delivery {
        Some(d) => match d.signature {
            Some(sig) => serde_json::to_value(sig)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "none".into()),
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
    let zeros: Vec<&Episode> = runs
        .iter()
        .copied()
        .filter(|e| e.final_score() == 0.0)
        .collect();
    let mut signatures = BTreeMap::new();
    for e in &zeros {
        *signatures.entry(zero_signature(e)).or_insert(0) += 1;
    }
    let invalid = zeros.iter().filter(|e| !e.final_valid()).count();
    Some(ZeroScores {
        runs: runs.len(),
        zero: zeros.len(),
        invalid,
        valid_zero: zeros.len() - invalid,
        signatures,
    })
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
    for e in episodes.iter().copied().filter(|e| e.is_scored()) {
        if oracle_ratio(&e.row.condition).is_some() {
            levels.entry(e.row.condition.clone()).or_default().push(e);
        }
    }
    let mut out: Vec<OracleLevel> = levels
        .into_iter()
        .filter_map(|(condition, eps)| {
            let mut by_task: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for e in eps {
                by_task
                    .entry(e.row.task.clone())
                    .or_default()
                    .push(e.final_score());
            }
            let cases: Vec<OracleCase> = by_task
                .into_iter()
                .map(|(task, scores)| OracleCase {
                    task,
                    repeats: scores.len(),
                    mean: mean(scores.iter().copied()).unwrap_or(0.0),
                    sd: specgap_stats::sample_sd(&scores)
                        .ok()
                        .filter(|s| s.is_finite()),
                })
                .collect();
            let macro_mean = case_macro(&cases.iter().map(|c| c.mean).collect::<Vec<_>>())?;
            Some(OracleLevel {
                ratio: oracle_ratio(&condition)?,
                condition,
                cases,
                macro_mean,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        a.ratio
            .total_cmp(&b.ratio)
            .then_with(|| a.condition.cmp(&b.condition))
    });
    out
}

/// The scored delivery runs among `episodes` (errors and interruptions never count).
fn scored_deliveries<'a, 'b>(episodes: &[&'a Episode<'b>]) -> Vec<&'a Episode<'b>> {
    episodes.iter().copied().filter(|e| e.is_scored() && e.is_delivery()).collect()
}
