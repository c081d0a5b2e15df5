//! Rank associations across the report's groups (seed 002's configurations): the Spearman
//! matrix of clarification × delivery measures with Holm over its cells (§5.3, Figure 4), the
//! model-demeaned ρ across scaffolds (App. A.4), type- and domain-specific Recall against
//! Quality with case-bootstrap intervals and Holm over the kinds (App. A.5, Table 8(a)), and
//! runtime against Quality (§5.2).
//!
//! A group enters a cell when it has both values; delivery values are the planned-run ones, so
//! a group with unscored planned runs (incomplete cells) is left out. A cell needs three groups.
//!
//! **Model-demeaned ρ** (App. A.4: "after subtracting each model's mean over its scaffolds"):
//! a group's *model* is its agent's `model` in `run.toml` (the spec itself when the agent has
//! none), and its scaffold is the agent; within each set of groups with the same model and the
//! same other key values (condition, start, …), each value minus the set's mean; then
//! Spearman over the groups. Absent unless the report groups by agent and some model has two
//! or more agents.
//!
//! **Intervals** of the kind associations (Table 8(a) "Spearman ρ with case-bootstrap 95%
//! intervals"): the union of the groups' cases is resampled (2,000 resamples, seed 12345,
//! percentile), every group's Recall of the kind and Quality are recomputed on the drawn cases
//! it has, and ρ across the groups on each resample.
//!
//! **Domain mix against Quality** (App. A.5, Table 10's correlations: "the scoring share
//! correlates with Quality (ρ = 0.61) … Holm p = 0.028 for both over four domains … the
//! case-bootstrap 95% intervals include zero"): each group's share of its matched question units
//! in a content domain (Table 10's columns; 0 for a domain without a matched unit when the group
//! has some) against Quality, Holm over the domains, intervals as above (the share recomputed as
//! a ratio of per-case sums). The paper pools the systems of each model; a report correlates its
//! groups.
//!
//! **Cost against Quality** (App. A.4 "Compute": "provider cost … showed no detectable
//! association with Quality"): each group's mean model cost of the agent per run with usage
//! (the agent role's priced cost over its episodes; a group with an unpriced model has no cost)
//! against Quality, over the groups with both.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use specgap_stats::{bootstrap_indices, holm_adjust, spearman};

use crate::ReportError;
use crate::cases::{CaseValues, IntervalSettings};
use crate::clarification::{CLARIFICATION_MEASURES, ClarificationSummary, kind_key};
use crate::delivery::DeliveryMeasures;
use crate::episode::Dim;
use crate::report::{GroupReport, KeyMap};

/// Spearman ρ between two group-level measures across groups.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Association {
    /// First measure.
    pub x: String,
    /// Second measure.
    pub y: String,
    /// Groups with both values.
    pub groups: usize,
    /// Spearman ρ.
    pub rho: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Holm-adjusted p-value over the association's family (the matrix's cells, or the kinds
    /// of one table); absent outside a family or when p is undefined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holm_p: Option<f64>,
    /// 95% case-bootstrap interval of ρ (kind associations only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    /// ρ after subtracting each model's mean over its scaffolds (module guide).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demeaned_rho: Option<f64>,
    /// Two-sided p-value of `demeaned_rho`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demeaned_p: Option<f64>,
}

/// Recall of one issue type or content domain across groups, and its association with
/// Quality (seed 002 Table 8(a), Table 9).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KindAssociation {
    /// The type or domain.
    pub kind: String,
    /// Groups with a Recall of this kind.
    pub groups: usize,
    /// Mean over those groups of their Recall of this kind.
    pub mean_recall: f64,
    /// Spearman ρ of this kind's Recall with Quality (three or more groups with both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<Association>,
}

/// One content domain's matched-question share against Quality across groups (Table 10's
/// correlations).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShareAssociation {
    /// The content domain.
    pub domain: String,
    /// Groups with matched question units.
    pub groups: usize,
    /// Mean over those groups of their share of the domain, in [0, 1].
    pub mean_share: f64,
    /// Spearman ρ of the share with Quality, with its interval and Holm p over the domains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<Association>,
}

/// Model cost against Quality across groups (App. A.4 "Compute").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostAssociation {
    /// Groups with a Quality.
    pub groups: usize,
    /// Of those, groups whose agent's cost is known (every model priced).
    pub priced: usize,
    /// Spearman ρ of the mean agent cost per run (US dollars) with Quality, with three or more
    /// priced groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<Association>,
}

/// How a report treats its wall-clock statistics (run time against Quality): they measure the
/// machine as much as the agents, so two runs of the same episodes can disagree (issue 30 item 8).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// Shown and labelled as timing-dependent (some agent calls a model, or `--show-timing`).
    #[default]
    TimingDependent,
    /// Left out: every agent is scripted or replayed, so its run times are the machine's load
    /// (`--show-timing` shows them).
    LeftOut,
}

/// Every association of a report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Associations {
    /// Clarification × delivery cells (Figure 4), clarification measure major, with Holm over
    /// the cells with a p-value.
    pub clarification_delivery: Vec<Association>,
    /// Type-specific Recall against Quality, Holm over the types (Table 8(a)).
    pub issue_type_recall: Vec<KindAssociation>,
    /// Domain-specific Recall against Quality, Holm over the domains.
    pub domain_recall: Vec<KindAssociation>,
    /// Mean run time against Quality (§5.2); absent when [`Associations::timing`] is
    /// [`Timing::LeftOut`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_quality: Option<Association>,
    /// Whether the wall-clock statistics are shown (labelled timing-dependent) or left out.
    pub timing: Timing,
    /// Matched-question domain shares against Quality, Holm over the domains (Table 10).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domain_share_quality: Vec<ShareAssociation>,
    /// Model cost against Quality (App. A.4), when some group has a Quality.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_quality: Option<CostAssociation>,
}

/// The delivery measures of the matrix (Figure 4's columns).
pub const MATRIX_DELIVERY: [&str; 4] = ["Quality", "DSR", "pass@k", "pass^k"];

/// A group's value of a measure by display name: the six clarification measures, the four
/// planned-run delivery cells, `Recall[type:…]` / `Recall[domain:…]`, and `runtime`.
pub fn group_value(group: &GroupReport, measure: &str) -> Option<f64> {
    let delivery = group.delivery.as_ref().filter(|d| d.complete);
    let clarification = group.clarification.as_ref();
    match measure {
        "Quality" => delivery?.quality,
        "DSR" => delivery?.dsr,
        "valid" => delivery?.valid,
        "pass@k" => delivery?.pass_k.as_ref().map(|p| p.pass_at_k),
        "pass^k" => delivery?.pass_k.as_ref().map(|p| p.pass_hat_k),
        "runtime" => delivery?.mean_wall_sec,
        other => clarification_value(clarification?, other),
    }
}

fn clarification_value(c: &ClarificationSummary, measure: &str) -> Option<f64> {
    let defined = match measure {
        "Recall" => &c.recall,
        "Precision" => &c.precision,
        "Ask-F1" => &c.ask_f1,
        "KQC1" => &c.kqc1,
        "ATC" => &c.atc,
        "Redund." => &c.redund,
        kind => {
            if let Some(domain) = kind.strip_prefix("Share[domain:").and_then(|k| k.strip_suffix(']')) {
                // A group with matched units and none in this domain has a share of 0.
                return (!c.matched_domains.is_empty()).then(|| c.matched_domains.get(domain).copied().unwrap_or(0.0));
            }
            let inner = kind.strip_prefix("Recall[")?.strip_suffix(']')?;
            let (family, name) = inner.split_once(':')?;
            let map = if family == "type" { &c.by_issue_type } else { &c.by_domain };
            return map.get(name).map(|k| k.recall);
        }
    };
    defined.as_ref().map(|d| d.mean)
}

/// The case data behind a group's measure, where it has any.
fn group_cases<'g>(group: &'g GroupReport, measure: &str) -> Option<&'g CaseValues> {
    let delivery: Option<&DeliveryMeasures> = group.delivery.as_ref().filter(|d| d.complete);
    delivery.and_then(|d| d.case_values.get(measure)).or_else(|| group.clarification.as_ref()?.cases.get(measure))
}

/// Every association of `groups` (module guide). `models` maps agent specs to their model.
///
/// # Errors
/// [`ReportError::Stats`] if Holm or a bootstrap rejects its input.
pub fn associations(
    groups: &[GroupReport],
    dims: &[Dim],
    models: &BTreeMap<String, String>,
    usage: &[crate::usage::UsageSummary],
    settings: &IntervalSettings,
) -> Result<Associations, ReportError> {
    let demean = Demeaning::new(groups, dims, models);
    let mut matrix = Vec::new();
    for (_, x) in CLARIFICATION_MEASURES {
        for y in MATRIX_DELIVERY {
            if let Some(a) = associate(groups, x, y, &demean)? {
                matrix.push(a);
            }
        }
    }
    holm_family(&mut matrix)?;
    let kinds = |family: &str| -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for c in groups.iter().filter_map(|g| g.clarification.as_ref()) {
            let map = if family == "type" { &c.by_issue_type } else { &c.by_domain };
            names.extend(map.keys().cloned());
        }
        names
    };
    let issue_type_recall = kind_associations(groups, "type", &kinds("type"), &demean, settings)?;
    let domain_recall = kind_associations(groups, "domain", &kinds("domain"), &demean, settings)?;
    Ok(Associations {
        clarification_delivery: matrix,
        issue_type_recall,
        domain_recall,
        runtime_quality: associate(groups, "runtime", "Quality", &demean)?,
        timing: Timing::TimingDependent,
        domain_share_quality: share_associations(groups, &demean, settings)?,
        cost_quality: cost_association(groups, usage)?,
    })
}

/// The measure key of a domain's matched-question share (its case data in
/// [`ClarificationSummary::cases`]).
pub fn share_key(domain: &str) -> String {
    format!("Share[domain:{domain}]")
}

/// Each domain's matched-question share against Quality, with intervals and Holm over the
/// domains (module guide).
fn share_associations(
    groups: &[GroupReport],
    demean: &Demeaning,
    settings: &IntervalSettings,
) -> Result<Vec<ShareAssociation>, ReportError> {
    let domains: Vec<&String> = groups
        .iter()
        .filter_map(|g| g.clarification.as_ref())
        .flat_map(|c| c.matched_domains.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let measures: Vec<(String, String)> = domains.iter().map(|d| (share_key(d), format!("Share ({d})"))).collect();
    let family = quality_family(groups, &measures, demean, settings)?;
    Ok(domains
        .into_iter()
        .zip(family)
        .map(|(domain, (groups, mean_share, quality))| ShareAssociation { domain: domain.clone(), groups, mean_share, quality })
        .collect())
}

/// Per `(measure key, x label)`, the groups with the measure, their mean value and its
/// association with Quality (with its case-bootstrap interval), Holm over the family.
fn quality_family(
    groups: &[GroupReport],
    measures: &[(String, String)],
    demean: &Demeaning,
    settings: &IntervalSettings,
) -> Result<Vec<(usize, f64, Option<Association>)>, ReportError> {
    let mut out = Vec::new();
    for (key, label) in measures {
        let values: Vec<f64> = groups.iter().filter_map(|g| group_value(g, key)).collect();
        let mut quality = associate(groups, key, "Quality", demean)?;
        if let Some(a) = quality.as_mut() {
            a.x = label.clone();
            a.interval = rho_interval(groups, key, "Quality", settings)?;
        }
        out.push((values.len(), values.iter().sum::<f64>() / values.len().max(1) as f64, quality));
    }
    let mut cells: Vec<Association> = out.iter().filter_map(|k| k.2.clone()).collect();
    holm_family(&mut cells)?;
    let mut adjusted = cells.into_iter();
    for k in out.iter_mut() {
        if let Some(a) = k.2.as_mut() {
            a.holm_p = adjusted.next().and_then(|c| c.holm_p);
        }
    }
    Ok(out)
}

/// Mean agent cost per run against Quality (module guide); `None` when no group has a Quality.
fn cost_association(groups: &[GroupReport], usage: &[crate::usage::UsageSummary]) -> Result<Option<CostAssociation>, ReportError> {
    let rows: Vec<(f64, f64)> = groups
        .iter()
        .filter_map(|g| group_value(g, "Quality").map(|q| (g, q)))
        .map(|(g, q)| {
            let cost = usage
                .iter()
                .find(|u| u.key == g.key && u.role == specgap_store::Role::Agent.as_str())
                .and_then(|u| Some(u.cost_usd? / u.episodes.max(1) as f64));
            (cost, q)
        })
        .filter_map(|(cost, q)| Some((cost?, q)))
        .collect();
    let quality_groups = groups.iter().filter(|g| group_value(g, "Quality").is_some()).count();
    if quality_groups == 0 {
        return Ok(None);
    }
    let mut association = None;
    if rows.len() >= 3 {
        let (xs, ys): (Vec<f64>, Vec<f64>) = rows.iter().copied().unzip();
        let c = spearman(&xs, &ys).map_err(|source| ReportError::Stats { measure: "Spearman rho (cost, Quality)".into(), source })?;
        if c.rho.is_finite() {
            association = Some(Association {
                x: "cost per run (USD)".into(),
                y: "Quality".into(),
                groups: rows.len(),
                rho: c.rho,
                p_value: c.p_value,
                holm_p: None,
                interval: None,
                demeaned_rho: None,
                demeaned_p: None,
            });
        }
    }
    Ok(Some(CostAssociation { groups: quality_groups, priced: rows.len(), quality: association }))
}

/// Spearman ρ of `x` with `y` over the groups with both, with the demeaned ρ; `None` with
/// fewer than three groups or an undefined ρ.
fn associate(groups: &[GroupReport], x: &str, y: &str, demean: &Demeaning) -> Result<Option<Association>, ReportError> {
    let rows: Vec<(usize, f64, f64)> =
        groups.iter().enumerate().filter_map(|(i, g)| Some((i, group_value(g, x)?, group_value(g, y)?))).collect();
    if rows.len() < 3 {
        return Ok(None);
    }
    let xs: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let ys: Vec<f64> = rows.iter().map(|r| r.2).collect();
    let c = spearman(&xs, &ys).map_err(|source| ReportError::Stats { measure: format!("Spearman rho ({x}, {y})"), source })?;
    if !c.rho.is_finite() {
        return Ok(None);
    }
    let indices: Vec<usize> = rows.iter().map(|r| r.0).collect();
    let demeaned = demean.correlate(&indices, &xs, &ys);
    Ok(Some(Association {
        x: x.to_string(),
        y: y.to_string(),
        groups: rows.len(),
        rho: c.rho,
        p_value: c.p_value,
        holm_p: None,
        interval: None,
        demeaned_rho: demeaned.map(|d| d.0),
        demeaned_p: demeaned.map(|d| d.1).filter(|p| p.is_finite()),
    }))
}

/// Holm over the family's finite p-values, written into `holm_p`.
fn holm_family(family: &mut [Association]) -> Result<(), ReportError> {
    let finite: Vec<usize> = (0..family.len()).filter(|i| family[*i].p_value.is_finite()).collect();
    let p: Vec<f64> = finite.iter().map(|i| family[*i].p_value).collect();
    let adjusted = holm_adjust(&p).map_err(|source| ReportError::Stats { measure: "Holm adjustment of associations".into(), source })?;
    for (i, q) in finite.into_iter().zip(adjusted) {
        family[i].holm_p = Some(q);
    }
    Ok(())
}

/// Recall of each kind against Quality, with intervals and Holm over the kinds.
fn kind_associations(
    groups: &[GroupReport],
    family: &str,
    kinds: &BTreeSet<String>,
    demean: &Demeaning,
    settings: &IntervalSettings,
) -> Result<Vec<KindAssociation>, ReportError> {
    let measures: Vec<(String, String)> = kinds.iter().map(|k| (kind_key(family, k), format!("Recall ({k})"))).collect();
    let family = quality_family(groups, &measures, demean, settings)?;
    Ok(kinds
        .iter()
        .zip(family)
        .map(|(kind, (groups, mean_recall, quality))| KindAssociation { kind: kind.clone(), groups, mean_recall, quality })
        .collect())
}

/// Case-bootstrap interval of ρ(x, y) across the groups with case data for both (module
/// guide); `None` with intervals off, fewer than three groups or two cases, or NaN endpoints.
fn rho_interval(groups: &[GroupReport], x: &str, y: &str, settings: &IntervalSettings) -> Result<Option<[f64; 2]>, ReportError> {
    let Some(config) = settings.bootstrap() else {
        return Ok(None);
    };
    let pairs: Vec<(&CaseValues, &CaseValues)> = groups
        .iter()
        .filter(|g| group_value(g, x).is_some() && group_value(g, y).is_some())
        .filter_map(|g| Some((group_cases(g, x)?, group_cases(g, y)?)))
        .collect();
    let universe: Vec<&str> = pairs
        .iter()
        .flat_map(|(a, b)| a.entries().iter().chain(b.entries()).map(|e| e.0.as_str()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if pairs.len() < 3 || universe.len() < 2 {
        return Ok(None);
    }
    // Per group and side, each universe case's (numerator, denominator), absent as (0, 0).
    type Column = Vec<(f64, f64)>;
    let column = |values: &CaseValues| -> Column { universe.iter().map(|t| values.get(t).unwrap_or((0.0, 0.0))).collect() };
    let table: Vec<(Column, Column)> = pairs.iter().map(|(a, b)| (column(a), column(b))).collect();
    let ratio = |col: &[(f64, f64)], idx: &[usize]| -> f64 {
        let (n, d) = idx.iter().fold((0.0, 0.0), |(n, d), i| (n + col[*i].0, d + col[*i].1));
        if d > 0.0 { n / d } else { f64::NAN }
    };
    let statistic = |idx: &[usize]| -> f64 {
        let xs: Vec<f64> = table.iter().map(|(a, _)| ratio(a, idx)).collect();
        let ys: Vec<f64> = table.iter().map(|(_, b)| ratio(b, idx)).collect();
        match spearman(&xs, &ys) {
            Ok(c) => c.rho,
            Err(_) => f64::NAN,
        }
    };
    let interval = bootstrap_indices(universe.len(), statistic, &config)
        .map_err(|source| ReportError::Stats { measure: format!("case-bootstrap interval of rho ({x}, {y})"), source })?;
    Ok((interval.low.is_finite() && interval.high.is_finite()).then_some([interval.low, interval.high]))
}

/// Which groups share a model and the other key values (module guide).
struct Demeaning {
    /// Per group, the index of its set; `None` without an agent dimension.
    set_of: Option<Vec<usize>>,
}

impl Demeaning {
    fn new(groups: &[GroupReport], dims: &[Dim], models: &BTreeMap<String, String>) -> Demeaning {
        if !dims.contains(&Dim::Agent) {
            return Demeaning { set_of: None };
        }
        let set_key = |key: &KeyMap| -> Vec<String> {
            key.iter()
                .map(|(dim, value)| match dim {
                    Dim::Agent => models.get(value).cloned().unwrap_or_else(|| value.clone()),
                    _ => value.clone(),
                })
                .collect()
        };
        let mut ids: BTreeMap<Vec<String>, usize> = BTreeMap::new();
        let set_of: Vec<usize> = groups
            .iter()
            .map(|g| {
                let next = ids.len();
                *ids.entry(set_key(&g.key)).or_insert(next)
            })
            .collect();
        Demeaning { set_of: Some(set_of) }
    }

    /// Spearman (ρ, p) of the demeaned values of the groups at `indices`; `None` when no set
    /// has two of them or ρ is undefined.
    fn correlate(&self, indices: &[usize], xs: &[f64], ys: &[f64]) -> Option<(f64, f64)> {
        let set_of = self.set_of.as_ref()?;
        let sets: Vec<usize> = indices.iter().map(|i| set_of[*i]).collect();
        let shared = sets.iter().any(|s| sets.iter().filter(|t| *t == s).count() >= 2);
        if !shared {
            return None;
        }
        let centred = |values: &[f64]| -> Vec<f64> {
            values
                .iter()
                .zip(&sets)
                .map(|(v, s)| {
                    let members: Vec<f64> = values.iter().zip(&sets).filter(|(_, t)| *t == s).map(|(w, _)| *w).collect();
                    v - members.iter().sum::<f64>() / members.len() as f64
                })
                .collect()
        };
        let c = spearman(&centred(xs), &centred(ys)).ok()?;
        c.rho.is_finite().then_some((c.rho, c.p_value))
    }
}
