//! Within-system repeat analyses of seed 002: how the repeats of one system on one case differ
//! (§5.3 "within systems and cases", App. A.7 zero-score repeats, App. A.5 covering a point of a
//! domain).
//!
//! A *cell* is one group (a system: an agent under one condition, start and so on) and one
//! case; its runs are the group's scored delivery runs of that case whose Recall is defined
//! (clarification applies). The three analyses, each pooled over the cells of every group of a
//! *slice* (the groups that differ only in their agent, so that systems are compared under one
//! condition):
//!
//! * **Recall repeats** ([`RecallRepeats`], §5.3: "higher-Recall repeats score higher in 45% and
//!   lower in 37% of 626 cells, mean +0.031, Wilcoxon p = 0.012"): cells whose runs differ in
//!   Recall; per cell Δ = mean delivery score of its highest-Recall runs − mean delivery score
//!   of its lowest-Recall runs; the shares of cells with Δ > 0 and Δ < 0, the mean Δ, and the
//!   two-sided Wilcoxon signed-rank test of the Δs (scipy's defaults: zeros dropped).
//! * **Zero-score repeats** ([`ZeroRepeats`], A.7: "in the 202 cells with both zero and nonzero
//!   repeats, zero-score repeats have Recall 58.6% against 63.6% (lower in 89 cells, higher in
//!   72; Wilcoxon p = 0.021) and ask as many questions (22.8 vs. 23.2)"): cells with a run
//!   scoring 0 and a run scoring more; per cell the mean Recall and mean question units of each
//!   side; their means over cells, the cells where the zero side's Recall is lower / higher,
//!   and the Wilcoxon test of the paired Recalls (zero side − nonzero side).
//! * **Domain coverage** ([`DomainCoverage`], A.5: "runs that cover a constraint-rule point
//!   score 0.059 higher than runs that do not (292 system–case–point cells with mixed
//!   coverage; Wilcoxon p = 0.006)"): per content domain, cells of (system, case, target of the
//!   domain) whose runs both cover and miss the target; per cell Δ = mean score of the covering
//!   runs − mean score of the others; the mean Δ and the Wilcoxon test of the Δs.
//!
//! A p-value is absent where the test is undefined (every Δ zero, no cell).

use std::collections::BTreeMap;

use serde::Serialize;
use specgap_stats::{WilcoxonOptions, wilcoxon};

use crate::clarification::{domain_name, run_clarification};
use crate::episode::{Dim, Episode, GroupKey, mean};
use crate::report::KeyMap;

/// The Recall-repeat analysis of one slice (module guide).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecallRepeats {
    /// Cells whose runs differ in Recall.
    pub cells: usize,
    /// Share of those where the highest-Recall runs score higher, in [0, 1].
    pub higher: f64,
    /// Share where they score lower.
    pub lower: f64,
    /// Mean Δ (delivery score).
    pub mean_difference: f64,
    /// Two-sided Wilcoxon signed-rank p of the Δs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
}

/// The zero-score-repeat analysis of one slice (module guide).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ZeroRepeats {
    /// Cells with a zero-score run and a run scoring more.
    pub cells: usize,
    /// Mean over cells of the zero-score runs' mean Recall.
    pub zero_recall: f64,
    /// Mean over cells of the other runs' mean Recall.
    pub nonzero_recall: f64,
    /// Cells where the zero-score runs' Recall is lower.
    pub lower: usize,
    /// Cells where it is higher.
    pub higher: usize,
    /// Two-sided Wilcoxon signed-rank p of the paired Recalls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// Mean over cells of the zero-score runs' mean question units.
    pub zero_units: f64,
    /// Mean over cells of the other runs' mean question units.
    pub nonzero_units: f64,
}

/// Covering a target of one domain against not covering it, within cells (module guide).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DomainCoverage {
    /// The content domain.
    pub domain: String,
    /// (system, case, target) cells with mixed coverage.
    pub cells: usize,
    /// Mean Δ (delivery score of covering runs − of the others).
    pub mean_difference: f64,
    /// Two-sided Wilcoxon signed-rank p of the Δs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
}

/// The repeat analyses of one slice of groups.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatAnalysis {
    /// The slice: the grouping dimensions other than `agent` and their values.
    pub key: KeyMap,
    /// Groups (systems) with cells.
    pub groups: usize,
    /// §5.3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall: Option<RecallRepeats>,
    /// App. A.7.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zero_score: Option<ZeroRepeats>,
    /// App. A.5, by domain (domains with a cell).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domains: Vec<DomainCoverage>,
}

/// One run of a cell: its delivery score, Recall, question units and covered targets.
struct RunPoint {
    score: f64,
    recall: f64,
    units: f64,
    covered: std::collections::BTreeSet<String>,
}

/// The repeat analyses of `grouped` (the report's groups, keyed by `dims`), one per slice with
/// a cell; empty when no group has two runs of a case with clarification measures.
pub fn repeat_analyses(grouped: &BTreeMap<GroupKey, Vec<&Episode<'_>>>, dims: &[Dim], judge: &str) -> Vec<RepeatAnalysis> {
    // slice key → per group → per case → runs.
    type Cells = BTreeMap<String, Vec<RunPoint>>;
    let mut slices: BTreeMap<Vec<(Dim, String)>, Vec<Cells>> = BTreeMap::new();
    let mut domains_of: BTreeMap<(String, String), &'static str> = BTreeMap::new();
    for (key, members) in grouped {
        let mut cells: Cells = BTreeMap::new();
        for e in members.iter().filter(|e| e.is_delivery()) {
            let Some(run) = run_clarification(e, judge) else { continue };
            let Some(recall) = run.values.recall else { continue };
            if e.extraction_unavailable() {
                continue;
            }
            if let Some(context) = e.context {
                for t in &context.targets {
                    domains_of.insert((e.row.task.clone(), t.id.clone()), domain_name(t.domain));
                }
            }
            cells.entry(e.row.task.clone()).or_default().push(RunPoint {
                score: e.delivery_score(),
                recall,
                units: run.values.units as f64,
                covered: run.covered,
            });
        }
        cells.retain(|_, runs| runs.len() >= 2);
        if cells.is_empty() {
            continue;
        }
        let slice: Vec<(Dim, String)> = dims.iter().copied().zip(key.iter().cloned()).filter(|(d, _)| *d != Dim::Agent).collect();
        slices.entry(slice).or_default().push(cells);
    }
    slices
        .into_iter()
        .map(|(slice, groups)| {
            let cells: Vec<(&str, &[RunPoint])> =
                groups.iter().flat_map(|g| g.iter().map(|(task, runs)| (task.as_str(), runs.as_slice()))).collect();
            RepeatAnalysis {
                key: slice.into_iter().collect(),
                groups: groups.len(),
                recall: recall_repeats(&cells),
                zero_score: zero_repeats(&cells),
                domains: domain_coverage(&cells, &domains_of),
            }
        })
        .collect()
}

fn mean_of(runs: &[&RunPoint], value: fn(&RunPoint) -> f64) -> f64 {
    mean(runs.iter().map(|r| value(r))).unwrap_or(0.0)
}

/// Two-sided Wilcoxon p of `differences` with scipy's defaults; `None` when undefined.
fn wilcoxon_p(differences: &[f64]) -> Option<f64> {
    wilcoxon(differences, &WilcoxonOptions::default()).ok().map(|w| w.p_value).filter(|p| p.is_finite())
}

fn recall_repeats(cells: &[(&str, &[RunPoint])]) -> Option<RecallRepeats> {
    let deltas: Vec<f64> = cells
        .iter()
        .filter_map(|(_, runs)| {
            let high = runs.iter().map(|r| r.recall).fold(f64::NEG_INFINITY, f64::max);
            let low = runs.iter().map(|r| r.recall).fold(f64::INFINITY, f64::min);
            if high == low {
                return None;
            }
            let at = |level: f64| -> Vec<&RunPoint> { runs.iter().filter(|r| r.recall == level).collect() };
            Some(mean_of(&at(high), |r| r.score) - mean_of(&at(low), |r| r.score))
        })
        .collect();
    if deltas.is_empty() {
        return None;
    }
    let share = |keep: fn(&f64) -> bool| deltas.iter().filter(|d| keep(d)).count() as f64 / deltas.len() as f64;
    Some(RecallRepeats {
        cells: deltas.len(),
        higher: share(|d| *d > 0.0),
        lower: share(|d| *d < 0.0),
        mean_difference: mean(deltas.iter().copied()).unwrap_or(0.0),
        p_value: wilcoxon_p(&deltas),
    })
}

fn zero_repeats(cells: &[(&str, &[RunPoint])]) -> Option<ZeroRepeats> {
    // Per cell: (zero-side Recall, other Recall, zero-side units, other units).
    let sides: Vec<(f64, f64, f64, f64)> = cells
        .iter()
        .filter_map(|(_, runs)| {
            let zero: Vec<&RunPoint> = runs.iter().filter(|r| r.score == 0.0).collect();
            let other: Vec<&RunPoint> = runs.iter().filter(|r| r.score > 0.0).collect();
            (!zero.is_empty() && !other.is_empty()).then(|| {
                (mean_of(&zero, |r| r.recall), mean_of(&other, |r| r.recall), mean_of(&zero, |r| r.units), mean_of(&other, |r| r.units))
            })
        })
        .collect();
    if sides.is_empty() {
        return None;
    }
    let column = |pick: fn(&(f64, f64, f64, f64)) -> f64| mean(sides.iter().map(pick)).unwrap_or(0.0);
    let differences: Vec<f64> = sides.iter().map(|s| s.0 - s.1).collect();
    Some(ZeroRepeats {
        cells: sides.len(),
        zero_recall: column(|s| s.0),
        nonzero_recall: column(|s| s.1),
        lower: differences.iter().filter(|d| **d < 0.0).count(),
        higher: differences.iter().filter(|d| **d > 0.0).count(),
        p_value: wilcoxon_p(&differences),
        zero_units: column(|s| s.2),
        nonzero_units: column(|s| s.3),
    })
}

fn domain_coverage(cells: &[(&str, &[RunPoint])], domains_of: &BTreeMap<(String, String), &'static str>) -> Vec<DomainCoverage> {
    let mut deltas: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for (task, runs) in cells {
        for ((case, target), domain) in domains_of.range((task.to_string(), String::new())..) {
            if case != task {
                break;
            }
            let (covering, other): (Vec<&RunPoint>, Vec<&RunPoint>) = runs.iter().partition(|r| r.covered.contains(target));
            if !covering.is_empty() && !other.is_empty() {
                deltas.entry(domain).or_default().push(mean_of(&covering, |r| r.score) - mean_of(&other, |r| r.score));
            }
        }
    }
    deltas
        .into_iter()
        .map(|(domain, d)| DomainCoverage {
            domain: domain.to_string(),
            cells: d.len(),
            mean_difference: mean(d.iter().copied()).unwrap_or(0.0),
            p_value: wilcoxon_p(&d),
        })
        .collect()
}
