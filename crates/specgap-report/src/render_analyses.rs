//! The rendered section of seed 002's analyses across cases and repeats: the case-level
//! ranking ρ (§5.2), issue-type share against case delivery (Table 8(b)) and the
//! within-system repeat analyses (§5.3, App. A.5, A.7), one row per slice of groups that
//! differ only in their agent ([`crate::case_associations`], [`crate::repeats`]).

use crate::case_associations::CaseRho;
use crate::render::{ABSENT, Section, Table, fixed, key_label, percent};
use crate::report::Report;

fn p_cell(p: Option<f64>) -> String {
    fixed(p, 3)
}

fn rho_ci(r: Option<&CaseRho>) -> String {
    match r {
        None => ABSENT.to_string(),
        Some(r) => match r.interval {
            Some([low, high]) => format!("{:.3} [{low:.3}, {high:.3}]", r.rho),
            None => format!("{:.3}", r.rho),
        },
    }
}

/// The section, or `None` when no slice has a result.
pub fn section(report: &Report) -> Option<Section> {
    let mut tables = Vec::new();
    let ranking: Vec<Vec<String>> = report
        .case_associations
        .iter()
        .filter_map(|c| {
            let r = c.ranking.as_ref()?;
            Some(vec![
                key_label(&c.key),
                c.groups.to_string(),
                r.pairs.to_string(),
                format!("{:.3}", r.mean_rho),
                format!("{:.3}", r.min_rho),
                format!("{:.3}", r.max_rho),
            ])
        })
        .collect();
    if !ranking.is_empty() {
        tables.push(Table {
            caption: "Case-level Quality rankings across systems (seed 002 §5.2): Spearman ρ of two groups' per-case Quality over the cases both have, for every pair of groups of the slice.".into(),
            headers: ["slice", "groups", "pairs", "mean ρ", "least ρ", "greatest ρ"].map(String::from).to_vec(),
            numeric: vec![false, true, true, true, true, true],
            rows: ranking,
        });
    }
    let shares: Vec<Vec<String>> = report
        .case_associations
        .iter()
        .flat_map(|c| {
            c.issue_type_share.iter().map(move |t| {
                vec![
                    key_label(&c.key),
                    t.kind.clone(),
                    format!("{}/{}", t.cases_with, c.cases),
                    rho_ci(t.quality.as_ref()),
                    rho_ci(t.dsr.as_ref()),
                ]
            })
        })
        .collect();
    if !shares.is_empty() {
        tables.push(Table {
            caption: "Issue-type share and delivery across cases (seed 002 Table 8(b)): Spearman ρ of each case's share of targets of the type with its Quality and its DSR, both averaged over the slice's groups; 95% case-bootstrap intervals.".into(),
            headers: ["slice", "issue type", "cases with type", "Quality ρ [95% CI]", "DSR ρ [95% CI]"].map(String::from).to_vec(),
            numeric: vec![false, false, true, true, true],
            rows: shares,
        });
    }
    let recall: Vec<Vec<String>> = report
        .repeat_analyses
        .iter()
        .filter_map(|a| {
            let r = a.recall.as_ref()?;
            Some(vec![
                key_label(&a.key),
                r.cells.to_string(),
                percent(Some(r.higher)),
                percent(Some(r.lower)),
                format!("{:+.4}", r.mean_difference),
                p_cell(r.p_value),
            ])
        })
        .collect();
    if !recall.is_empty() {
        tables.push(Table {
            caption: "Higher-Recall repeats within systems and cases (seed 002 §5.3): cells (group, case) whose runs differ in Recall; Δ = mean score of the highest-Recall runs − of the lowest; shares of cells with Δ > 0 and Δ < 0 in percent; two-sided Wilcoxon signed-rank p of the Δs.".into(),
            headers: ["slice", "cells", "higher", "lower", "mean Δ", "Wilcoxon p"].map(String::from).to_vec(),
            numeric: vec![false, true, true, true, true, true],
            rows: recall,
        });
    }
    let zero: Vec<Vec<String>> = report
        .repeat_analyses
        .iter()
        .filter_map(|a| {
            let z = a.zero_score.as_ref()?;
            Some(vec![
                key_label(&a.key),
                z.cells.to_string(),
                percent(Some(z.zero_recall)),
                percent(Some(z.nonzero_recall)),
                z.lower.to_string(),
                z.higher.to_string(),
                p_cell(z.p_value),
                format!("{:.1}", z.zero_units),
                format!("{:.1}", z.nonzero_units),
            ])
        })
        .collect();
    if !zero.is_empty() {
        tables.push(Table {
            caption: "Zero-score repeats against the others within systems and cases (seed 002 App. A.7): cells with a run scoring 0 and one scoring more; mean Recall (percent) and question units of each side; cells where the zero side's Recall is lower / higher; Wilcoxon p of the paired Recalls.".into(),
            headers: ["slice", "cells", "Recall (zero)", "Recall (others)", "lower", "higher", "Wilcoxon p", "units (zero)", "units (others)"].map(String::from).to_vec(),
            numeric: vec![false, true, true, true, true, true, true, true, true],
            rows: zero,
        });
    }
    let domains: Vec<Vec<String>> = report
        .repeat_analyses
        .iter()
        .flat_map(|a| {
            a.domains.iter().map(move |d| {
                vec![key_label(&a.key), d.domain.clone(), d.cells.to_string(), format!("{:+.4}", d.mean_difference), p_cell(d.p_value)]
            })
        })
        .collect();
    if !domains.is_empty() {
        tables.push(Table {
            caption: "Covering a target of a domain within systems and cases (seed 002 App. A.5): cells (group, case, target) whose runs both cover and miss the target; Δ = mean score of the covering runs − of the others; Wilcoxon p of the Δs.".into(),
            headers: ["slice", "domain", "cells", "mean Δ", "Wilcoxon p"].map(String::from).to_vec(),
            numeric: vec![false, false, true, true, true],
            rows: domains,
        });
    }
    if tables.is_empty() {
        return None;
    }
    Some(Section {
        id: "cases-and-repeats",
        title: "Across cases and within repeats (seed 002 §5.2–5.3, App. A.5, A.7)".into(),
        text: vec!["A slice is the groups that differ only in their agent (the systems compared under one condition); groups with unscored planned runs are left out of the case-level rows. These comparisons are observational, as in the paper.".into()],
        tables,
        chart: None,
    })
}
