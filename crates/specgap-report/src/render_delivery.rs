//! The seed 002 sections of a rendered report: delivery over planned runs and clarification
//! (Table 6 with 95% case-bootstrap intervals, Tables 9 and 12), planned runs without a score,
//! and the associations across groups (Figure 4, Table 8(a), §5.2).
//!
//! A cell prints as `value [low, high]` when it has an interval. A planned-run cell of a group
//! whose planned runs are not all scored prints [`INCOMPLETE`]: it is not computed over fewer
//! runs; the scored-only columns beside it are the robustness values.

use std::collections::BTreeSet;

use crate::associations::{Association, KindAssociation};
use crate::clarification::{CLARIFICATION_MEASURES, ClarificationSummary, DefinedMean};
use crate::delivery::DeliveryMeasures;
use crate::render::{ABSENT, Section, Table, fixed, key_cells, key_label, percent, table};
use crate::report::Report;
use crate::svg::{self, Axis};

/// The marker of a planned-run cell whose group has planned runs without a score.
pub const INCOMPLETE: &str = "incomplete";

/// How a measure is printed: percent with one decimal, or fixed with some digits.
#[derive(Clone, Copy)]
enum Style {
    Percent,
    Fixed(usize),
}

fn number(v: f64, style: Style) -> String {
    match style {
        Style::Percent => format!("{:.1}", v * 100.0),
        Style::Fixed(digits) => format!("{v:.digits$}"),
    }
}

/// `value [low, high]`, `value` without an interval, `—` without a value.
fn with_interval(value: Option<f64>, interval: Option<&[f64; 2]>, style: Style) -> String {
    match (value, interval) {
        (None, _) => ABSENT.to_string(),
        (Some(v), None) => number(v, style),
        (Some(v), Some([low, high])) => {
            format!("{} [{}, {}]", number(v, style), number(*low, style), number(*high, style))
        }
    }
}

/// A planned-run cell: [`INCOMPLETE`] for an incomplete group.
fn planned_cell(d: &DeliveryMeasures, value: Option<f64>, field: &str, style: Style) -> String {
    if !d.complete {
        return INCOMPLETE.to_string();
    }
    with_interval(value, d.intervals.get(field), style)
}

fn clarification_cell(c: &ClarificationSummary, value: &Option<DefinedMean>, field: &str, style: Style) -> String {
    with_interval(value.as_ref().map(|d| d.mean), c.intervals.get(field), style)
}

/// The seed 002 sections, in reading order; sections without content are left out.
pub fn sections(report: &Report) -> Vec<Section> {
    let mut out = Vec::new();
    if let Some(section) = delivery_section(report) {
        out.push(section);
    }
    if let Some(section) = agreement_section(report) {
        out.push(section);
    }
    if let Some(section) = association_section(report) {
        out.push(section);
    }
    out.extend(crate::render_analyses::section(report));
    out
}

/// The coverage panel's judges: ballots per judge, κ between judges and with the offline rule
/// (seed 002 A.8 Table 16(b)).
fn agreement_section(report: &Report) -> Option<Section> {
    let a = report.judge_agreement.as_ref()?;
    let kappa = |k: Option<f64>| fixed(k, 4);
    let seats = Table {
        caption: "Ballots per judge over the items (dropped: malformed after the repair retry, or the service failed).".into(),
        headers: ["seat", "model", "ballots", "covered", "malformed", "failed"].map(String::from).to_vec(),
        numeric: vec![true, false, true, true, true, true],
        rows: a
            .seats
            .iter()
            .map(|s| {
                vec![
                    s.seat.to_string(),
                    s.model.clone(),
                    s.ballots.to_string(),
                    s.covered.to_string(),
                    s.malformed.to_string(),
                    s.failed.to_string(),
                ]
            })
            .collect(),
    };
    let mut rows: Vec<Vec<String>> = a
        .pairs
        .iter()
        .chain(std::iter::once(&a.offline))
        .map(|p| vec![p.a.clone(), p.b.clone(), p.items.to_string(), percent(p.agreement), kappa(p.kappa)])
        .collect();
    // The panel against the offline rule first: it is the comparison a reader looks for.
    rows.rotate_right(1);
    let pairs = Table {
        caption:
            "Agreement (percent of items with the same label) and unweighted Cohen's κ; — where κ is undefined (one label throughout)."
                .into(),
        headers: ["a", "b", "items", "agreement", "κ"].map(String::from).to_vec(),
        numeric: vec![false, false, true, true, true],
        rows,
    };
    Some(Section {
        id: "judge-agreement",
        title: format!("Coverage judges of {} (seed 002 A.8)", a.panel),
        text: vec![format!(
            "{} items ((episode, target) pairs of runs that asked something): {} covered, {} missed, {} unavailable (no judge answered).",
            a.items, a.covered, a.missed, a.unavailable
        )],
        tables: vec![seats, pairs],
        chart: None,
    })
}

fn delivery_section(report: &Report) -> Option<Section> {
    let dims = &report.group_by;
    let delivery_rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .filter_map(|g| {
            let d = g.delivery.as_ref()?;
            let mut row = key_cells(dims, &g.key);
            row.extend([
                d.cases.to_string(),
                d.planned_runs.to_string(),
                d.runs.to_string(),
                planned_cell(d, d.quality, "quality", Style::Fixed(4)),
                planned_cell(d, d.dsr, "dsr", Style::Percent),
                planned_cell(d, d.valid, "valid", Style::Percent),
                d.k.to_string(),
                planned_cell(d, d.pass_k.as_ref().map(|p| p.pass_at_k), "pass_at_k", Style::Percent),
                planned_cell(d, d.pass_k.as_ref().map(|p| p.pass_hat_k), "pass_hat_k", Style::Percent),
                fixed(d.scored_only.as_ref().map(|s| s.quality), 4),
                percent(d.scored_only.as_ref().map(|s| s.dsr)),
                fixed(d.mean_wall_sec, 1),
            ]);
            Some(row)
        })
        .collect();
    let clarification_rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .filter_map(|g| {
            let c = g.clarification.as_ref()?;
            let mut row = key_cells(dims, &g.key);
            row.extend([c.runs.to_string(), percent(Some(c.ask_rate)), format!("{:.1}", c.mean_units)]);
            let styles = [Style::Percent, Style::Percent, Style::Percent, Style::Percent, Style::Fixed(2), Style::Fixed(1)];
            let values = [&c.recall, &c.precision, &c.ask_f1, &c.kqc1, &c.atc, &c.redund];
            for (((field, _), value), style) in CLARIFICATION_MEASURES.iter().zip(values).zip(styles) {
                row.push(clarification_cell(c, value, field, style));
            }
            Some(row)
        })
        .collect();
    if delivery_rows.is_empty() && clarification_rows.is_empty() {
        return None;
    }
    let settings = &report.intervals;
    let mut text = vec![
        "Delivery cells count every planned run (seed 002 §4.2, App. A.3): a delivery the agent failed — no artifact, an invalid one, an evaluator failing on the delivered artifact (signature `execution`) — scores 0 and is counted; a planned run without a score (a harness failure, an interruption, an episode never run) makes its group's planned-run cells `incomplete`, and the scored-only columns give the values over the scored runs. k is the planned number of repeats.".to_string(),
        "With no question, Recall is 0 and Precision, Ask-F1 and ATC are undefined (seed 002 App. A.3); clarification measures are means over the runs where each is defined. KQC1 and ATC count clarification rounds: one agent turn of questions is one round.".to_string(),
    ];
    if let Some(panel) = &report.extraction {
        text.push(format!(
            "Runs of cases with a submission schema are scored by extraction panel {panel}: the score a strict majority of its extractors (3 of 5) agree on to 4 decimal places replaces the direct artifact's; extractions that wrote nothing or name no file the agent made are rejected and never vote; without a majority the run is unscored (`extraction_unavailable`, seed 002 §4.1, A.3), and a run whose delivery holds no answer of the agent's (no artifact) scores 0."
        ));
        text.push(match report.extraction_check_output {
            Some(true) => "Its extractors could run the case evaluator on their output (`check_output`, seed 002 A.9.4's verification block), hearing only whether it could be read, never a score.".to_string(),
            _ => "Its extractors could not run the case evaluator on their output: a deviation from seed 002 A.9.4, whose extractors check their normalization with it; structural mismatches they would have fixed may remain.".to_string(),
        });
    }
    let never: usize = report.groups.iter().filter_map(|g| g.scoring_source.as_ref()).map(|s| s.never_extracted).sum();
    if never > 0 {
        text.push(format!(
            "{never} scored run(s) of cases with a submission schema were never extracted: their scores come from the direct artifact, where seed 002 scores every run by extraction (the `never extracted` column)."
        ));
    }
    if settings.resamples > 0 {
        text.push(format!(
            "Brackets: {:.0}% case-bootstrap percentile intervals ({} resamples, seed {}; cases resampled with all their runs; seed 002 App. A.4).",
            settings.confidence * 100.0,
            settings.resamples,
            settings.seed
        ));
    }
    let mut tables = Vec::new();
    if !delivery_rows.is_empty() {
        tables.push(table(
            "Quality (case-macro, 1 = the reference), DSR and validity in percent; pass@k and pass^k over validity across repeats; scored-only columns over the scored runs; mean wall time of the scored runs in seconds.",
            dims,
            &["cases", "planned", "scored", "Quality", "DSR", "valid", "k", "pass@k", "pass^k", "Quality (scored only)", "DSR (scored only)", "wall s"],
            delivery_rows,
        ));
    }
    if !clarification_rows.is_empty() {
        tables.push(table(
            &format!("Clarification by judge `{}`: ask rate (runs with a question) and means over the runs where each is defined (percent; units per run; ATC in clarification rounds, Redund. in question units).", report.judge),
            dims,
            &["runs", "ask rate", "units", "Recall", "Precision", "Ask-F1", "KQC1", "ATC", "Redund."],
            clarification_rows,
        ));
    }
    tables.extend(scoring_source_table(report));
    tables.extend(registry_table(report));
    tables.extend(kind_tables(report));
    tables.extend(domain_mix_table(report));
    if let Some(t) = unscored_table(report) {
        tables.push(t);
    }
    let points: Vec<(String, f64, f64)> = report
        .groups
        .iter()
        .filter_map(|g| {
            Some((
                key_label(&g.key),
                g.clarification.as_ref()?.recall.as_ref()?.mean * 100.0,
                g.delivery.as_ref().filter(|d| d.complete)?.quality?,
            ))
        })
        .collect();
    let chart = (!points.is_empty()).then(|| {
        let max_quality = points.iter().map(|p| p.2).fold(1.0_f64, f64::max);
        svg::scatter(
            &points,
            &Axis { label: "Recall (%)".into(), min: 0.0, max: 100.0 },
            &Axis { label: "Quality".into(), min: 0.0, max: max_quality },
            "Recall against Quality per group",
        )
    });
    Some(Section { id: "delivery", title: "Delivery and clarification (seed 002)".into(), text, tables, chart })
}

/// Type- and domain-specific Recall per group (seed 002 Table 9, App. A.5).
fn kind_tables(report: &Report) -> Vec<Table> {
    let dims = &report.group_by;
    let mut out = Vec::new();
    for (caption, pick) in [
        (
            "Recall by issue type (seed 002 Table 9): per case the share of its targets of the type that are covered, averaged over repeats, then over the cases holding the type; percent.",
            true,
        ),
        ("Recall by content domain (seed 002 App. A.5), computed as by issue type; percent.", false),
    ] {
        let kinds: BTreeSet<&String> = report
            .groups
            .iter()
            .filter_map(|g| g.clarification.as_ref())
            .flat_map(|c| if pick { c.by_issue_type.keys() } else { c.by_domain.keys() })
            .collect();
        if kinds.is_empty() {
            continue;
        }
        let rows = report
            .groups
            .iter()
            .filter_map(|g| {
                let c = g.clarification.as_ref()?;
                let map = if pick { &c.by_issue_type } else { &c.by_domain };
                let mut row = key_cells(dims, &g.key);
                row.push(percent(c.recall.as_ref().map(|r| r.mean)));
                row.extend(kinds.iter().map(|k| percent(map.get(*k).map(|r| r.recall))));
                Some(row)
            })
            .collect();
        let mut columns = vec!["Overall"];
        columns.extend(kinds.iter().map(|k| k.as_str()));
        out.push(table(caption, dims, &columns, rows));
    }
    out
}

/// Where each group's delivery scores came from, with Table 17's extraction failures when the
/// report uses a panel.
fn scoring_source_table(report: &Report) -> Option<Table> {
    let dims = &report.group_by;
    let with_panel = report.extraction.is_some();
    let rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .filter_map(|g| {
            let s = g.scoring_source.as_ref()?;
            let mut row = key_cells(dims, &g.key);
            row.extend([s.runs, s.extracted, s.no_artifact, s.unavailable, s.never_extracted, s.without_schema].map(|n| n.to_string()));
            if let Some(f) = &s.failures {
                row.extend([format!("{}/{}", f.failures, f.slots), percent(f.rate), f.no_artifact.to_string()]);
            } else if with_panel {
                row.extend([ABSENT.to_string(), ABSENT.to_string(), ABSENT.to_string()]);
            }
            Some(row)
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut columns = vec!["scored runs", "extracted", "no artifact", "unavailable", "never extracted", "no schema"];
    let mut caption = "Where the delivery scores came from (seed 002 A.3): the extraction panel's agreed score, no artifact (scored 0), no majority (unscored), never extracted (scored from the direct artifact), or a case without a submission schema (direct by design).".to_string();
    if with_panel {
        columns.extend(["failures / slots", "rate", "no artifact (Table 17)"]);
        caption.push_str(" Table 17: extractor sessions without a numeric score over the sessions run, in percent.");
    }
    Some(table(&caption, dims, &columns, rows))
}

/// The composition of the clarification targets (seed 002 Table 7).
fn registry_table(report: &Report) -> Option<Table> {
    let r = report.clarification_registry.as_ref()?;
    Some(Table {
        caption: format!("Clarification targets of the report's cases (seed 002 Table 7): {} targets in {} cases.", r.points, r.cases),
        headers: ["annotation", "kind", "points", "share", "cases"].map(String::from).to_vec(),
        numeric: vec![false, false, true, true, true],
        rows: r
            .rows
            .iter()
            .map(|row| {
                vec![
                    row.annotation.replace('_', " "),
                    row.kind.clone(),
                    row.points.to_string(),
                    percent(Some(row.share)),
                    row.cases.to_string(),
                ]
            })
            .collect(),
    })
}

/// The domain mix of matched questions per group (seed 002 Table 10).
fn domain_mix_table(report: &Report) -> Option<Table> {
    let dims = &report.group_by;
    let domains: BTreeSet<&String> =
        report.groups.iter().filter_map(|g| g.clarification.as_ref()).flat_map(|c| c.matched_domains.keys()).collect();
    if domains.is_empty() {
        return None;
    }
    let rows = report
        .groups
        .iter()
        .filter_map(|g| {
            let c = g.clarification.as_ref().filter(|c| !c.matched_domains.is_empty())?;
            let mut row = key_cells(dims, &g.key);
            row.extend(domains.iter().map(|d| percent(Some(c.matched_domains.get(*d).copied().unwrap_or(0.0)))));
            Some(row)
        })
        .collect();
    let columns: Vec<&str> = domains.iter().map(|d| d.as_str()).collect();
    Some(table(
        "Domain mix of matched questions (seed 002 Table 10): each domain's share of the matched question units, pooled over runs; a unit matched to targets of several domains is split equally; percent.",
        dims,
        &columns,
        rows,
    ))
}

/// Planned runs without a score, per group.
fn unscored_table(report: &Report) -> Option<Table> {
    let dims = &report.group_by;
    let rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .filter_map(|g| Some((g, g.delivery.as_ref()?)))
        .flat_map(|(g, d)| {
            d.unscored.iter().map(move |u| {
                let mut row = key_cells(dims, &g.key);
                row.extend([
                    u.task.clone(),
                    u.repeat.to_string(),
                    u.episode.clone(),
                    u.reason.clone(),
                    u.error.clone().unwrap_or_else(|| ABSENT.to_string()),
                    u.run.clone(),
                ]);
                row
            })
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut t = table(
        "Planned delivery runs without a score: never the agent's failure, and the reason their group's planned-run cells are incomplete.",
        dims,
        &["task", "repeat", "episode", "reason", "error", "run"],
        rows,
    );
    for i in [dims.len(), dims.len() + 2, dims.len() + 3, dims.len() + 4, dims.len() + 5] {
        t.numeric[i] = false;
    }
    Some(t)
}

fn rho_cell(a: Option<&Association>) -> String {
    a.map_or_else(
        || ABSENT.to_string(),
        |a| match a.holm_p {
            Some(q) => format!("{:.2} (Holm p {:.3})", a.rho, q),
            None => format!("{:.2}", a.rho),
        },
    )
}

fn demeaned_cell(a: Option<&Association>) -> String {
    match a.and_then(|a| Some((a.demeaned_rho?, a.demeaned_p))) {
        Some((rho, Some(p))) => format!("{rho:.2} (p {p:.3})"),
        Some((rho, None)) => format!("{rho:.2}"),
        None => ABSENT.to_string(),
    }
}

fn association_section(report: &Report) -> Option<Section> {
    let a = &report.associations;
    let mut tables = Vec::new();
    let mut text = Vec::new();
    let columns = crate::associations::MATRIX_DELIVERY;
    let find = |x: &str, y: &str| a.clarification_delivery.iter().find(|c| c.x == x && c.y == y);
    if !a.clarification_delivery.is_empty() {
        let groups = a.clarification_delivery.iter().map(|c| c.groups).max().unwrap_or(0);
        let tests = a.clarification_delivery.iter().filter(|c| c.holm_p.is_some()).count();
        text.push(format!(
            "Spearman ρ across groups (up to {groups}) between each clarification and each delivery measure (seed 002 §5.3, Figure 4); Holm over the {tests} cells with a p-value. Groups with incomplete delivery cells are left out. Model-demeaned: each value minus the mean of the groups with the same model (the agent's `model` in run.toml) and the same other key values (App. A.4)."
        ));
        let rows = |cell: fn(Option<&Association>) -> String| -> Vec<Vec<String>> {
            CLARIFICATION_MEASURES
                .iter()
                .map(|(_, x)| {
                    let mut row = vec![x.to_string()];
                    row.extend(columns.iter().map(|y| cell(find(x, y))));
                    row
                })
                .collect()
        };
        let headers: Vec<String> = std::iter::once("clarification".to_string()).chain(columns.iter().map(|c| c.to_string())).collect();
        let numeric: Vec<bool> = (0..headers.len()).map(|i| i > 0).collect();
        tables.push(Table {
            caption: "Spearman ρ (Holm-adjusted p).".into(),
            headers: headers.clone(),
            numeric: numeric.clone(),
            rows: rows(rho_cell),
        });
        if a.clarification_delivery.iter().any(|c| c.demeaned_rho.is_some()) {
            tables.push(Table { caption: "Model-demeaned Spearman ρ (p).".into(), headers, numeric, rows: rows(demeaned_cell) });
        }
    }
    for (label, kinds) in [("issue type", &a.issue_type_recall), ("content domain", &a.domain_recall)] {
        if kinds.is_empty() {
            continue;
        }
        tables.push(kind_association_table(label, kinds));
    }
    match (&a.runtime_quality, a.timing) {
        (Some(r), _) => text.push(format!(
            "Mean run time against Quality over {} groups (seed 002 §5.2): Spearman ρ = {:.2} (p = {:.3}). Timing-dependent: wall-clock times vary with the machine's load, so runs of the same episodes can disagree.",
            r.groups, r.rho, r.p_value
        )),
        (None, crate::associations::Timing::LeftOut) => text.push(
            "Mean run time against Quality is left out: every agent is scripted or replayed, so run times measure the machine, not the agents (`specgap report --show-timing` shows it).".into(),
        ),
        (None, crate::associations::Timing::TimingDependent) => {}
    }
    if let Some(c) = &a.cost_quality {
        text.push(match &c.quality {
            Some(r) => format!(
                "Mean agent cost per run against Quality over the {} of {} groups with a known cost (seed 002 App. A.4): Spearman ρ = {:.2} (p = {:.3}).",
                c.priced, c.groups, r.rho, r.p_value
            ),
            None => format!(
                "Agent cost against Quality (seed 002 App. A.4): {} of {} groups have a known cost; three are needed for a correlation.",
                c.priced, c.groups
            ),
        });
    }
    if !a.domain_share_quality.is_empty() {
        tables.push(share_association_table(&a.domain_share_quality));
    }
    if tables.is_empty() && text.is_empty() {
        return None;
    }
    Some(Section {
        id: "associations",
        title: "Clarification and delivery across groups (seed 002 §5.2–5.3, App. A.4–A.5)".into(),
        text,
        tables,
        chart: None,
    })
}

fn kind_association_table(label: &str, kinds: &[KindAssociation]) -> Table {
    let rows = kinds
        .iter()
        .map(|k| {
            let q = k.quality.as_ref();
            vec![
                k.kind.clone(),
                k.groups.to_string(),
                percent(Some(k.mean_recall)),
                q.map_or_else(|| ABSENT.to_string(), |a| format!("{:.3}", a.rho)),
                q.and_then(|a| a.interval).map_or_else(|| ABSENT.to_string(), |[l, h]| format!("[{l:.3}, {h:.3}]")),
                q.and_then(|a| a.holm_p).map_or_else(|| ABSENT.to_string(), |p| format!("{p:.3}")),
                demeaned_cell(q),
            ]
        })
        .collect();
    Table {
        caption: format!(
            "Recall by {label} against Quality (seed 002 Table 8(a)): Spearman ρ across groups, 95% case-bootstrap interval, Holm over the {label}s."
        ),
        headers: ["kind", "groups", "mean Recall", "ρ with Quality", "95% CI", "Holm p", "demeaned ρ"].map(String::from).to_vec(),
        numeric: vec![false, true, true, true, true, true, true],
        rows,
    }
}

/// Table 10's correlations: each domain's matched-question share against Quality.
fn share_association_table(shares: &[crate::associations::ShareAssociation]) -> Table {
    let rows = shares
        .iter()
        .map(|k| {
            let q = k.quality.as_ref();
            vec![
                k.domain.clone(),
                k.groups.to_string(),
                percent(Some(k.mean_share)),
                q.map_or_else(|| ABSENT.to_string(), |a| format!("{:.3}", a.rho)),
                q.and_then(|a| a.interval).map_or_else(|| ABSENT.to_string(), |[l, h]| format!("[{l:.3}, {h:.3}]")),
                q.and_then(|a| a.holm_p).map_or_else(|| ABSENT.to_string(), |p| format!("{p:.3}")),
            ]
        })
        .collect();
    Table {
        caption: "Domain mix of matched questions against Quality (seed 002 App. A.5, Table 10): Spearman ρ across groups of each domain's share, 95% case-bootstrap interval, Holm over the domains.".into(),
        headers: ["domain", "groups", "mean share", "ρ with Quality", "95% CI", "Holm p"].map(String::from).to_vec(),
        numeric: vec![false, true, true, true, true, true],
        rows,
    }
}
