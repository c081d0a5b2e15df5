//! Associations across *cases* (seed 002 §5.2 and App. A.5 Table 8(b)), per slice of groups
//! that differ only in their agent (the systems compared under one condition, start and so on).
//!
//! * **Case-level ranking** ([`CaseRanking`], §5.2: "case-level Quality rankings are similar
//!   across systems, mean pairwise Spearman ρ = 0.71"): for every pair of the slice's groups
//!   with complete delivery cells, Spearman ρ of their per-case Quality over the cases both
//!   have (three or more, ρ defined); the mean, least and greatest ρ over the pairs.
//! * **Issue-type share and delivery** ([`TypeShare`], Table 8(b): "each case's share of points
//!   of a type with its delivery, averaged over configurations, across all 49 cases"): for
//!   every case of the slice with clarification targets, x = the share of its targets of the
//!   issue type (0 when it has none), y = its Quality averaged over the slice's groups, and its
//!   DSR (the share of its runs attaining the reference) averaged likewise; Spearman ρ across
//!   the cases, with a 95% case-bootstrap percentile interval (the cases resampled, 2,000
//!   resamples, seed 12345 by default; a resample where ρ is undefined makes the interval
//!   absent, scipy's rule). "Cases with type" counts the cases holding the type.
//!
//! Groups whose planned runs are not all scored carry no case data and are left out.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use specgap_stats::{bootstrap_indices, spearman};

use crate::ReportError;
use crate::cases::{CaseValues, IntervalSettings};
use crate::clarification::issue_type_name;
use crate::context::TaskContext;
use crate::episode::Dim;
use crate::report::{GroupReport, KeyMap};

/// Spearman ρ across cases with its two-sided p and 95% case-bootstrap interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseRho {
    /// Spearman ρ.
    pub rho: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// 95% case-bootstrap percentile interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
}

/// One issue type's share against delivery across cases (Table 8(b)).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeShare {
    /// The issue type.
    pub kind: String,
    /// Cases holding the type.
    pub cases_with: usize,
    /// ρ of the share with case Quality.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<CaseRho>,
    /// ρ of the share with case DSR.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dsr: Option<CaseRho>,
}

/// Pairwise case-level Quality rankings of a slice's groups (§5.2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseRanking {
    /// Pairs of groups with a defined ρ.
    pub pairs: usize,
    /// Mean ρ over the pairs.
    pub mean_rho: f64,
    /// Least ρ.
    pub min_rho: f64,
    /// Greatest ρ.
    pub max_rho: f64,
}

/// The case associations of one slice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseAssociations {
    /// The slice: the grouping dimensions other than `agent` and their values.
    pub key: KeyMap,
    /// Groups of the slice with case data.
    pub groups: usize,
    /// Cases with clarification targets and delivery data.
    pub cases: usize,
    /// §5.2, with two or more groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranking: Option<CaseRanking>,
    /// Table 8(b), by issue type (the types of the slice's cases).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub issue_type_share: Vec<TypeShare>,
}

/// Per slice of `groups` (module guide); `tasks` gives each case's targets. Slices without any
/// result are left out.
///
/// # Errors
/// [`ReportError::Stats`] if a bootstrap rejects its settings.
pub fn case_associations(
    groups: &[GroupReport],
    tasks: &BTreeMap<&str, &TaskContext>,
    settings: &IntervalSettings,
) -> Result<Vec<CaseAssociations>, ReportError> {
    let mut slices: BTreeMap<KeyMap, Vec<&GroupReport>> = BTreeMap::new();
    for g in groups {
        let complete = g.delivery.as_ref().is_some_and(|d| d.complete && d.case_values.contains_key("Quality"));
        if complete {
            let slice: KeyMap = g.key.iter().filter(|(d, _)| **d != Dim::Agent).map(|(d, v)| (*d, v.clone())).collect();
            slices.entry(slice).or_default().push(g);
        }
    }
    let mut out = Vec::new();
    for (key, members) in slices {
        let column = |g: &&GroupReport, name: &str| -> Option<CaseValues> { g.delivery.as_ref()?.case_values.get(name).cloned() };
        let quality: Vec<CaseValues> = members.iter().filter_map(|g| column(g, "Quality")).collect();
        let dsr: Vec<CaseValues> = members.iter().filter_map(|g| column(g, "DSR")).collect();
        let ranking = ranking(&quality)?;
        let (cases, issue_type_share) = type_shares(&quality, &dsr, tasks, settings)?;
        if ranking.is_none() && issue_type_share.is_empty() {
            continue;
        }
        out.push(CaseAssociations { key, groups: members.len(), cases, ranking, issue_type_share });
    }
    Ok(out)
}

fn stats_error(measure: &str) -> impl FnOnce(specgap_stats::StatsError) -> ReportError + '_ {
    move |source| ReportError::Stats { measure: measure.to_string(), source }
}

/// Mean pairwise ρ of the groups' case Quality (module guide).
fn ranking(quality: &[CaseValues]) -> Result<Option<CaseRanking>, ReportError> {
    let mut rhos = Vec::new();
    for (i, a) in quality.iter().enumerate() {
        for b in &quality[i + 1..] {
            let shared: Vec<(f64, f64)> = a.entries().iter().filter_map(|(task, q, _)| Some((*q, b.get(task)?.0))).collect();
            if shared.len() < 3 {
                continue;
            }
            let (xs, ys): (Vec<f64>, Vec<f64>) = shared.into_iter().unzip();
            let c = spearman(&xs, &ys).map_err(stats_error("case-level Quality ranking"))?;
            if c.rho.is_finite() {
                rhos.push(c.rho);
            }
        }
    }
    if rhos.is_empty() {
        return Ok(None);
    }
    Ok(Some(CaseRanking {
        pairs: rhos.len(),
        mean_rho: rhos.iter().sum::<f64>() / rhos.len() as f64,
        min_rho: rhos.iter().copied().fold(f64::INFINITY, f64::min),
        max_rho: rhos.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    }))
}

/// Per case, the mean over the groups that have it of their ratio for the case.
fn case_means(columns: &[CaseValues]) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for column in columns {
        for (task, numerator, denominator) in column.entries() {
            if *denominator > 0.0 {
                let slot = sums.entry(task.clone()).or_default();
                slot.0 += numerator / denominator;
                slot.1 += 1.0;
            }
        }
    }
    sums.into_iter().map(|(task, (sum, n))| (task, sum / n)).collect()
}

/// Table 8(b) of one slice: the number of cases and one row per issue type.
fn type_shares(
    quality: &[CaseValues],
    dsr: &[CaseValues],
    tasks: &BTreeMap<&str, &TaskContext>,
    settings: &IntervalSettings,
) -> Result<(usize, Vec<TypeShare>), ReportError> {
    let quality = case_means(quality);
    let dsr = case_means(dsr);
    let cases: Vec<(&str, &TaskContext, f64, f64)> = quality
        .iter()
        .filter_map(|(task, q)| {
            let context = tasks.get(task.as_str()).filter(|c| !c.targets.is_empty())?;
            Some((task.as_str(), *context, *q, *dsr.get(task)?))
        })
        .collect();
    let kinds: BTreeSet<&'static str> = cases.iter().flat_map(|c| c.1.targets.iter().map(|t| issue_type_name(t.issue_type))).collect();
    let mut rows = Vec::new();
    for kind in kinds {
        let share: Vec<f64> = cases
            .iter()
            .map(|(_, c, _, _)| c.targets.iter().filter(|t| issue_type_name(t.issue_type) == kind).count() as f64 / c.targets.len() as f64)
            .collect();
        let q: Vec<f64> = cases.iter().map(|c| c.2).collect();
        let d: Vec<f64> = cases.iter().map(|c| c.3).collect();
        rows.push(TypeShare {
            kind: kind.to_string(),
            cases_with: share.iter().filter(|s| **s > 0.0).count(),
            quality: case_rho(&share, &q, settings, "issue-type share and Quality")?,
            dsr: case_rho(&share, &d, settings, "issue-type share and DSR")?,
        });
    }
    Ok((cases.len(), rows))
}

/// Spearman ρ of `x` with `y` across cases with its case-bootstrap interval; `None` with fewer
/// than three cases or an undefined ρ.
fn case_rho(x: &[f64], y: &[f64], settings: &IntervalSettings, measure: &str) -> Result<Option<CaseRho>, ReportError> {
    if x.len() < 3 {
        return Ok(None);
    }
    let c = spearman(x, y).map_err(stats_error(measure))?;
    if !c.rho.is_finite() {
        return Ok(None);
    }
    let interval = match settings.bootstrap() {
        Some(config) => {
            let statistic = |idx: &[usize]| -> f64 {
                let xs: Vec<f64> = idx.iter().map(|i| x[*i]).collect();
                let ys: Vec<f64> = idx.iter().map(|i| y[*i]).collect();
                spearman(&xs, &ys).map_or(f64::NAN, |c| c.rho)
            };
            let b = bootstrap_indices(x.len(), statistic, &config).map_err(stats_error(measure))?;
            (b.low.is_finite() && b.high.is_finite()).then_some([b.low, b.high])
        }
        None => None,
    };
    Ok(Some(CaseRho { rho: c.rho, p_value: c.p_value, interval }))
}
