//! The audit report (`specgap audit report RUN`): per-label rates and agreement, each with a
//! case-cluster bootstrap interval.
//!
//! **Rates.** For every rater, label column and value: the share of items given the value,
//! weighted by each item's weight (its stratum's population over its sample size), so a
//! stratified sample estimates the population's share; an unstratified sample's weights are
//! all equal and the share is the plain one.
//!
//! **Agreement** (seed 002 §4.3, A.8 Table 16), for every label column, between every two
//! raters and between every rater and every automatic judge that labelled the column: percent
//! agreement, Cohen's κ (unweighted; [`specgap_stats::cohen_kappa`], sklearn's
//! `cohen_kappa_score`) and the confusion table (rows the first side, columns the second, in
//! the column's value order). A column with `uncertain` values is reported twice: with every
//! item, and without the items either side marked uncertain.
//!
//! **Intervals.** 95% percentile intervals from a case-cluster bootstrap: the cases (tasks)
//! are resampled with replacement and every item of a drawn case comes along (seed 002 A.8:
//! 5,000 resamples). Resample indices are `specgap_stats`' seeded stream
//! ([`specgap_stats::resample_statistics`]) with the sample's seed. A resample whose κ is
//! undefined (both sides used one and the same value) is left out and counted
//! (`undefined_resamples`); scipy would return NaN for the whole interval (docs/decisions.md
//! "Audits"). With fewer than two cases there is no interval.
//!
//! **Resample summaries** (seed 000 §5.6, App. G), for samples of unit `resample` whose
//! rubric has `faithful` and `consistent` columns: per rater, the share of resamples accepted
//! on each, the share accepted on both, and the checkpoints (recorded requests) every one of
//! whose resamples was accepted as consistent (the paper's "28 of the 30 checkpoints"), and on
//! both.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use specgap_stats::{KappaWeighting, cohen_kappa, percentile_interval, resample_statistics};
use specgap_store::{AuditItemRecord, Store};

use crate::error::AuditError;
use crate::import::manifest_of;
use crate::rubric::LabelColumn;
use crate::unit::UnitKind;

/// Bootstrap settings of a report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalConfig {
    /// Resamples (seed 002 A.8: 5,000).
    pub n_resamples: usize,
    /// Two-sided coverage (0.95).
    pub confidence_level: f64,
    /// The seed of the resample stream (the sample's seed).
    pub seed: u64,
}

impl IntervalConfig {
    /// 5,000 resamples, 95%, seed `seed`.
    pub fn new(seed: u64) -> Self {
        IntervalConfig { n_resamples: 5000, confidence_level: 0.95, seed }
    }
}

/// A value with its interval (`None` endpoints: fewer than two cases, or no defined resample).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The statistic on the sample.
    pub value: f64,
    /// Lower endpoint.
    pub low: Option<f64>,
    /// Upper endpoint.
    pub high: Option<f64>,
    /// Resamples left out because the statistic was undefined on them.
    pub undefined_resamples: usize,
}

/// Items grouped by case: `clusters[c]` holds the indices of the items of case `c`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clusters {
    /// Item indices per case, cases in name order.
    pub members: Vec<Vec<usize>>,
}

impl Clusters {
    /// Groups items by their case names.
    pub fn of<S: AsRef<str>>(cases: &[S]) -> Clusters {
        let mut by: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, c) in cases.iter().enumerate() {
            by.entry(c.as_ref()).or_default().push(i);
        }
        Clusters { members: by.into_values().collect() }
    }

    /// The items of the drawn cases, in draw order (an item once per draw of its case).
    fn items_of(&self, drawn: &[usize]) -> Vec<usize> {
        drawn.iter().flat_map(|&c| self.members[c].iter().copied()).collect()
    }
}

/// `statistic` on the sample with its case-cluster bootstrap interval (module guide).
///
/// # Errors
/// Statistics errors (a confidence level outside (0, 1)).
pub fn cluster_estimate(
    clusters: &Clusters,
    mut statistic: impl FnMut(&[usize]) -> f64,
    config: &IntervalConfig,
) -> Result<Estimate, AuditError> {
    let n = clusters.members.len();
    let all: Vec<usize> = (0..n).collect();
    let value = statistic(&clusters.items_of(&all));
    if n < 2 || config.n_resamples == 0 {
        return Ok(Estimate { value, low: None, high: None, undefined_resamples: 0 });
    }
    let distribution = resample_statistics(n, |drawn| statistic(&clusters.items_of(drawn)), config.n_resamples, config.seed)?;
    let defined: Vec<f64> = distribution.iter().copied().filter(|v| !v.is_nan()).collect();
    let undefined_resamples = distribution.len() - defined.len();
    if defined.is_empty() {
        return Ok(Estimate { value, low: None, high: None, undefined_resamples });
    }
    let interval = percentile_interval(&defined, config.confidence_level)?;
    Ok(Estimate { value, low: Some(interval.low), high: Some(interval.high), undefined_resamples })
}

/// The weighted share of `items` whose flag is set: `Σ wᵢ·[flagᵢ] / Σ wᵢ` (NaN for none).
pub fn weighted_share(weights: &[f64], flags: &[bool], items: &[usize]) -> f64 {
    let total: f64 = items.iter().map(|&i| weights[i]).sum();
    let hit: f64 = items.iter().filter(|&&i| flags[i]).map(|&i| weights[i]).sum();
    if total > 0.0 { hit / total } else { f64::NAN }
}

/// The share of `items` on which the two sides agree (NaN for none).
pub fn percent_agreement(a: &[&str], b: &[&str], items: &[usize]) -> f64 {
    if items.is_empty() {
        return f64::NAN;
    }
    items.iter().filter(|&&i| a[i] == b[i]).count() as f64 / items.len() as f64
}

/// Unweighted Cohen's κ over `items` (NaN when undefined or empty).
pub fn kappa_of(a: &[&str], b: &[&str], items: &[usize]) -> f64 {
    let x: Vec<&str> = items.iter().map(|&i| a[i]).collect();
    let y: Vec<&str> = items.iter().map(|&i| b[i]).collect();
    cohen_kappa(&x, &y, KappaWeighting::Unweighted).unwrap_or(f64::NAN)
}

/// One rate of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rate {
    /// The rater.
    pub rater: String,
    /// The label column.
    pub label: String,
    /// The value.
    pub value: String,
    /// Items given it.
    pub count: usize,
    /// Items labelled.
    pub items: usize,
    /// Its share, reweighted to the population, with interval.
    pub share: Estimate,
}

/// One agreement of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    /// The label column.
    pub label: String,
    /// The first side (a rater).
    pub first: String,
    /// The second side (a rater, or `judge:<name>`).
    pub second: String,
    /// Whether items marked uncertain by either side are left out.
    pub without_uncertain: bool,
    /// Items both sides labelled (after exclusions).
    pub items: usize,
    /// Percent agreement (a share in [0, 1]) with interval.
    pub percent: Estimate,
    /// Cohen's κ with interval.
    pub kappa: Estimate,
    /// The values, in the column's order.
    pub values: Vec<String>,
    /// Counts: `confusion[i][j]` items the first side gave `values[i]` and the second `values[j]`.
    pub confusion: Vec<Vec<usize>>,
}

/// Seed 000 App. G's summaries of one rater's resample labels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StabilitySummary {
    /// The rater.
    pub rater: String,
    /// Resamples labelled.
    pub resamples: usize,
    /// Share accepted as faithful.
    pub faithful: f64,
    /// Share accepted as consistent with the original.
    pub consistent: f64,
    /// Share accepted on both.
    pub both: f64,
    /// Checkpoints (recorded requests) labelled.
    pub checkpoints: usize,
    /// Checkpoints every one of whose resamples was accepted as consistent (seed 000 §5.6:
    /// "in 28 of the 30 checkpoints the five … resamples convey the same incident and press
    /// for the same change").
    pub consistent_checkpoints: usize,
    /// Checkpoints every one of whose resamples was accepted on both.
    pub stable_checkpoints: usize,
}

/// The report of one sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleReport {
    /// The sample id.
    pub sample: String,
    /// Its unit kind.
    pub unit: String,
    /// Its rubric.
    pub rubric: String,
    /// Items drawn.
    pub items: usize,
    /// Cases (tasks) they come from.
    pub cases: usize,
    /// Raters whose sheets are stored.
    pub raters: Vec<String>,
    /// Rates per rater, label and value.
    pub rates: Vec<Rate>,
    /// Agreements.
    pub agreements: Vec<Agreement>,
    /// Resample summaries (resample samples only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stability: Vec<StabilitySummary>,
}

/// The report of every sample stored in `store` (module guide).
///
/// # Errors
/// Store, JSON and statistics errors.
pub fn report(store: &Store) -> Result<Vec<SampleReport>, AuditError> {
    let samples = store.audit_samples().map_err(AuditError::store(store.dir()))?;
    samples.iter().map(|s| sample_report(store, &s.id)).collect()
}

/// Labels of one side: item index → value.
type Side = BTreeMap<usize, String>;

/// The report of sample `id`.
///
/// # Errors
/// As [`report`].
pub fn sample_report(store: &Store, id: &str) -> Result<SampleReport, AuditError> {
    let manifest = manifest_of(store, id)?;
    let items = store.audit_items(id).map_err(AuditError::store(store.dir()))?;
    let index: BTreeMap<&str, usize> = items.iter().enumerate().map(|(i, it)| (it.item.as_str(), i)).collect();
    let labels = store.audit_labels(id).map_err(AuditError::store(store.dir()))?;
    let mut raters: BTreeMap<String, BTreeMap<String, Side>> = BTreeMap::new();
    for l in &labels {
        if let Some(&i) = index.get(l.item.as_str()) {
            raters.entry(l.rater.clone()).or_default().entry(l.label.clone()).or_default().insert(i, l.value.clone());
        }
    }
    let judges = judge_sides(&items);
    let config = IntervalConfig::new(manifest.seed);
    let cases: Vec<&str> = items.iter().map(|i| i.cluster.as_str()).collect();
    let weights: Vec<f64> = items.iter().map(|i| i.weight).collect();
    let mut rates = Vec::new();
    let mut agreements = Vec::new();
    for column in &manifest.rubric.labels {
        for (rater, by_label) in &raters {
            let Some(side) = by_label.get(&column.name) else { continue };
            rates.extend(column_rates(rater, column, side, &cases, &weights, &config)?);
        }
        let mut sides: Vec<(String, &Side)> = raters.iter().filter_map(|(r, by)| by.get(&column.name).map(|s| (r.clone(), s))).collect();
        let raters_only = sides.len();
        for (judge, by) in &judges {
            if let Some(side) = by.get(&column.name) {
                sides.push((format!("judge:{judge}"), side));
            }
        }
        for a in 0..raters_only {
            for b in a + 1..sides.len() {
                for without_uncertain in [false, true] {
                    if without_uncertain && column.uncertain.is_empty() {
                        continue;
                    }
                    let first = (sides[a].0.as_str(), sides[a].1);
                    let second = (sides[b].0.as_str(), sides[b].1);
                    agreements.push(agreement(column, first, second, without_uncertain, &cases, &config)?);
                }
            }
        }
    }
    let stability = if manifest.unit == UnitKind::Resample { stability(&items, &raters) } else { Vec::new() };
    Ok(SampleReport {
        sample: id.to_string(),
        unit: manifest.unit.name().to_string(),
        rubric: manifest.rubric.name.clone(),
        items: items.len(),
        cases: cases.iter().collect::<BTreeSet<_>>().len(),
        raters: raters.keys().cloned().collect(),
        rates,
        agreements,
        stability,
    })
}

/// The automatic judges' labels stored with the items: judge → label → side.
fn judge_sides(items: &[AuditItemRecord]) -> BTreeMap<String, BTreeMap<String, Side>> {
    let mut judges: BTreeMap<String, BTreeMap<String, Side>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let Some(by_judge) = item.judges.as_object() else { continue };
        for (judge, labels) in by_judge {
            let Some(labels) = labels.as_object() else { continue };
            for (label, value) in labels {
                if let Some(value) = value.as_str() {
                    judges.entry(judge.clone()).or_default().entry(label.clone()).or_default().insert(i, value.to_string());
                }
            }
        }
    }
    judges
}

fn column_rates(
    rater: &str,
    column: &LabelColumn,
    side: &Side,
    cases: &[&str],
    weights: &[f64],
    config: &IntervalConfig,
) -> Result<Vec<Rate>, AuditError> {
    let labelled: Vec<usize> = side.keys().copied().collect();
    let clusters = Clusters::of(&labelled.iter().map(|&i| cases[i]).collect::<Vec<_>>());
    let w: Vec<f64> = labelled.iter().map(|&i| weights[i]).collect();
    let mut rates = Vec::new();
    for value in column.names() {
        let flags: Vec<bool> = labelled.iter().map(|i| side[i] == value).collect();
        let share = cluster_estimate(&clusters, |items| weighted_share(&w, &flags, items), config)?;
        rates.push(Rate {
            rater: rater.to_string(),
            label: column.name.clone(),
            value: value.to_string(),
            count: flags.iter().filter(|f| **f).count(),
            items: labelled.len(),
            share,
        });
    }
    Ok(rates)
}

fn agreement(
    column: &LabelColumn,
    first: (&str, &Side),
    second: (&str, &Side),
    without_uncertain: bool,
    cases: &[&str],
    config: &IntervalConfig,
) -> Result<Agreement, AuditError> {
    let uncertain = |v: &str| column.uncertain.iter().any(|u| u.eq_ignore_ascii_case(v));
    let shared: Vec<usize> = first
        .1
        .iter()
        .filter_map(|(i, v)| second.1.get(i).map(|w| (i, v, w)))
        .filter(|(_, v, w)| !without_uncertain || !(uncertain(v) || uncertain(w)))
        .map(|(i, _, _)| *i)
        .collect();
    let a: Vec<&str> = shared.iter().map(|i| first.1[i].as_str()).collect();
    let b: Vec<&str> = shared.iter().map(|i| second.1[i].as_str()).collect();
    let clusters = Clusters::of(&shared.iter().map(|&i| cases[i]).collect::<Vec<_>>());
    let percent = cluster_estimate(&clusters, |items| percent_agreement(&a, &b, items), config)?;
    let kappa = cluster_estimate(&clusters, |items| kappa_of(&a, &b, items), config)?;
    let values: Vec<String> = column.names().into_iter().map(str::to_string).collect();
    let position = |v: &str| values.iter().position(|x| x == v);
    let mut confusion = vec![vec![0usize; values.len()]; values.len()];
    for (x, y) in a.iter().zip(&b) {
        if let (Some(i), Some(j)) = (position(x), position(y)) {
            confusion[i][j] += 1;
        }
    }
    Ok(Agreement {
        label: column.name.clone(),
        first: first.0.to_string(),
        second: second.0.to_string(),
        without_uncertain,
        items: shared.len(),
        percent,
        kappa,
        values,
        confusion,
    })
}

/// The checkpoint of a resample item id (`<episode>#request=<r>`).
fn checkpoint_of(item: &str) -> &str {
    item.rsplit_once("#k=").map_or(item, |(c, _)| c)
}

fn stability(items: &[AuditItemRecord], raters: &BTreeMap<String, BTreeMap<String, Side>>) -> Vec<StabilitySummary> {
    let mut summaries = Vec::new();
    for (rater, by) in raters {
        let (Some(faithful), Some(consistent)) = (by.get("faithful"), by.get("consistent")) else { continue };
        let labelled: Vec<usize> = faithful.keys().copied().filter(|i| consistent.contains_key(i)).collect();
        if labelled.is_empty() {
            continue;
        }
        let accept = |side: &Side, i: usize| side.get(&i).is_some_and(|v| v == "accept");
        let n = labelled.len() as f64;
        let share = |f: &dyn Fn(usize) -> bool| labelled.iter().filter(|&&i| f(i)).count() as f64 / n;
        // Per checkpoint: (every resample consistent, every resample accepted on both).
        let mut checkpoints: BTreeMap<&str, (bool, bool)> = BTreeMap::new();
        for &i in &labelled {
            let entry = checkpoints.entry(checkpoint_of(&items[i].item)).or_insert((true, true));
            entry.0 &= accept(consistent, i);
            entry.1 &= accept(faithful, i) && accept(consistent, i);
        }
        summaries.push(StabilitySummary {
            rater: rater.clone(),
            resamples: labelled.len(),
            faithful: share(&|i| accept(faithful, i)),
            consistent: share(&|i| accept(consistent, i)),
            both: share(&|i| accept(faithful, i) && accept(consistent, i)),
            checkpoints: checkpoints.len(),
            consistent_checkpoints: checkpoints.values().filter(|(c, _)| *c).count(),
            stable_checkpoints: checkpoints.values().filter(|(_, both)| *both).count(),
        });
    }
    summaries
}

/// An estimate with its interval, three decimals; a zero that came out negative (`-0.0` from
/// a reweighted or resampled sum) prints as `0.000`.
fn estimate_text(e: &Estimate) -> String {
    let shown = |x: f64| format!("{:.3}", x + 0.0);
    match (e.low, e.high) {
        (Some(l), Some(h)) => format!("{} [{}, {}]", shown(e.value), shown(l), shown(h)),
        _ => format!("{} [no interval]", shown(e.value)),
    }
}

/// The report as text, one block per sample.
pub fn render_text(reports: &[SampleReport]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if reports.is_empty() {
        out.push_str("no audit sample in this run; draw one with `specgap audit sample`\n");
    }
    let interval = |e: &Estimate| estimate_text(e);
    for r in reports {
        let _ = writeln!(
            out,
            "{} — unit {}, rubric {}: {} item{} from {} case{}; raters: {}",
            r.sample,
            r.unit,
            r.rubric,
            r.items,
            if r.items == 1 { "" } else { "s" },
            r.cases,
            if r.cases == 1 { "" } else { "s" },
            if r.raters.is_empty() { "none yet".to_string() } else { r.raters.join(", ") }
        );
        for rate in &r.rates {
            let _ = writeln!(
                out,
                "  rate  {} {}={}: {}/{} labelled, share {}",
                rate.rater,
                rate.label,
                rate.value,
                rate.count,
                rate.items,
                interval(&rate.share)
            );
        }
        for a in &r.agreements {
            let scope = if a.without_uncertain { " (uncertain left out)" } else { "" };
            let _ = writeln!(
                out,
                "  agree {} {} vs {}{scope}: {} items, agreement {}, kappa {}",
                a.label,
                a.first,
                a.second,
                a.items,
                interval(&a.percent),
                interval(&a.kappa)
            );
            let _ = writeln!(out, "        confusion (rows {}, columns {}; {}): {:?}", a.first, a.second, a.values.join(" "), a.confusion);
        }
        for s in &r.stability {
            let _ = writeln!(
                out,
                "  stability {}: {} resamples, faithful {:.3}, consistent {:.3}, both {:.3}; of {} checkpoints, {} with every resample consistent, {} with every resample acceptable",
                s.rater, s.resamples, s.faithful, s.consistent, s.both, s.checkpoints, s.consistent_checkpoints, s.stable_checkpoints
            );
        }
    }
    out
}

#[cfg(test)]
mod text_tests {
    use super::*;

    #[test]
    fn a_negative_zero_estimate_prints_as_zero() {
        let e = Estimate { value: -0.0, low: Some(-0.0), high: Some(0.0678), undefined_resamples: 0 };
        assert_eq!(estimate_text(&e), "0.000 [0.000, 0.068]");
        let open = Estimate { value: -0.0, low: None, high: None, undefined_resamples: 0 };
        assert_eq!(estimate_text(&open), "0.000 [no interval]");
    }
}
