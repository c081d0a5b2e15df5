//! Rendering a [`Report`] as Markdown, as one self-contained HTML page (inline CSS and SVG, no
//! script, no external fetch), or as JSON.
//!
//! Both text formats are built from the same [`Section`]s, so they show the same numbers.
//! Percentages carry one decimal (seeds 000 and 001), Quality four (seed 002), ATC two. A
//! measure that does not apply prints as `—`, never as 0.

use std::fmt::Write as _;

use crate::ReportError;
use crate::delivery::SIGNATURE_ORDER;
use crate::episode::Dim;
use crate::report::{KeyMap, MeanSd, Report};
use crate::svg::{self, Axis, SubmissionPanel, escape};

/// A table: caption, column headers (right-aligned when numeric) and text cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// One line above the table.
    pub caption: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Per column, whether it holds numbers (right-aligned).
    pub numeric: Vec<bool>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

/// A part of the report: a title, paragraphs, tables and (HTML only) one chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// Anchor id.
    pub id: &'static str,
    /// Heading.
    pub title: String,
    /// Paragraphs of plain text.
    pub text: Vec<String>,
    /// Tables.
    pub tables: Vec<Table>,
    /// An SVG chart, drawn in HTML only.
    pub chart: Option<String>,
}

/// `—` for a value that does not apply.
pub const ABSENT: &str = "—";

pub(crate) fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |v| format!("{:.1}", v * 100.0))
}

pub(crate) fn fixed(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| ABSENT.to_string(), |v| format!("{v:.digits$}"))
}

fn signed_points(v: f64) -> String {
    let p = v * 100.0;
    if p.abs() < 0.05 { "0.0".to_string() } else { format!("{p:+.1}") }
}

fn mean_sd_percent(m: &MeanSd) -> String {
    format!("{:.1} ± {:.1}", m.mean * 100.0, m.sd * 100.0)
}

pub(crate) fn key_headers(dims: &[Dim]) -> Vec<String> {
    dims.iter().map(|d| d.as_str().to_string()).collect()
}

pub(crate) fn key_cells(dims: &[Dim], key: &KeyMap) -> Vec<String> {
    dims.iter().map(|d| key.get(d).cloned().unwrap_or_default()).collect()
}

pub(crate) fn key_label(key: &KeyMap) -> String {
    if key.is_empty() { "all".to_string() } else { key.values().cloned().collect::<Vec<_>>().join(" · ") }
}

pub(crate) fn table(caption: &str, dims: &[Dim], columns: &[&str], rows: Vec<Vec<String>>) -> Table {
    let mut headers = key_headers(dims);
    let mut numeric = vec![false; headers.len()];
    headers.extend(columns.iter().map(|c| c.to_string()));
    numeric.extend(columns.iter().map(|_| true));
    Table { caption: caption.to_string(), headers, numeric, rows }
}

/// The sections of a report, in reading order; sections without content are left out.
pub fn sections(report: &Report) -> Vec<Section> {
    let dims = &report.group_by;
    let without = |dim: Dim| -> Vec<Dim> { dims.iter().copied().filter(|d| *d != dim).collect() };
    let mut out = Vec::new();

    // The report's first lines: what the runs are faithful to (issue 24).
    out.push(Section {
        id: "protocol",
        title: "Protocol".into(),
        text: report.protocols.iter().map(crate::faithful::ProtocolLine::sentence).collect(),
        tables: vec![],
        chart: None,
    });

    let runs = Table {
        caption: "Runs in this report.".into(),
        headers: vec!["run".into(), "seed".into(), "episodes".into(), "judged now".into()],
        numeric: vec![false, true, true, true],
        rows: report
            .runs
            .iter()
            .map(|r| vec![r.dir.clone(), r.seed.to_string(), r.episodes.to_string(), r.judged_now.to_string()])
            .collect(),
    };
    out.push(Section { id: "runs", title: "Runs".into(), text: vec![], tables: vec![runs], chart: None });

    // Groups that exist only because a combination was not applicable have no outcome to
    // show; they stay in the end-reasons section, which lists them.
    let outcome_rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .filter(|g| g.episodes > 0)
        .map(|g| {
            let mut row = key_cells(dims, &g.key);
            row.push(g.episodes.to_string());
            row.push(g.outcomes.scored.to_string());
            row.extend(g.outcomes.score_at.iter().map(|v| percent(*v)));
            row.extend(g.outcomes.success_at.iter().map(|v| percent(*v)));
            row
        })
        .collect();
    out.push(Section {
        id: "outcomes",
        title: "Outcomes: Score@k and Success@k (seed 000)".into(),
        text: vec!["Percent over scored episodes. An episode that ended after fewer than k submissions carries its last values forward; episodes that ended in an evaluation or infrastructure error, and combinations that were not applicable, are counted apart (last section).".into()],
        tables: vec![table(
            "Score@k and Success@k, k = 1..4.",
            dims,
            &["episodes", "scored", "Score@1", "Score@2", "Score@3", "Score@4", "Success@1", "Success@2", "Success@3", "Success@4"],
            outcome_rows,
        )],
        chart: None,
    });

    if !report.outcome_costs.is_empty() {
        let cost_dims = without(Dim::Condition);
        let rows = report
            .outcome_costs
            .iter()
            .map(|c| {
                let m = &c.comparison;
                let mut row = key_cells(&cost_dims, &c.key);
                row.push(m.tasks.to_string());
                for k in [0, 3] {
                    row.push(percent(m.literal_score_at.map(|l| l[k])));
                    row.push(percent(m.literal_success_at.map(|l| l[k])));
                }
                for k in [0, 3] {
                    row.push(format!("{} ({})", percent(Some(m.partial_score_at[k])), signed_points(-m.cost_score_at[k])));
                    row.push(format!("{} ({})", percent(Some(m.partial_success_at[k])), signed_points(-m.cost_success_at[k])));
                }
                row.push(percent(Some(m.full_score_at_1)));
                row.push(percent(Some(m.full_success_at_1)));
                row.push(format!("{:.1}", m.cost_score_at[0] * 100.0));
                row.push(c.cost_replicates.as_ref().map_or_else(|| ABSENT.to_string(), mean_sd_percent));
                row
            })
            .collect();
        let panels: Vec<SubmissionPanel> = report
            .outcome_costs
            .iter()
            .map(|c| SubmissionPanel {
                label: key_label(&c.key),
                partial: c.comparison.partial_score_at,
                literal: c.comparison.literal_score_at,
                full_at_1: c.comparison.full_score_at_1,
            })
            .collect();
        out.push(Section {
            id: "outcome-cost",
            title: "Outcome cost: partial instruction against full specification (seed 000 Table 4, Figure 4)".into(),
            text: vec!["Means of per-task means over the tasks that ran under both `full` and `partial`, in percent. In parentheses: Partial@k − Full@1 in points (Table 4's subscripts). Cost = Full@1 − Partial@1 in Score points (Table 7); with several runs, its mean ± sd over runs.".into()],
            tables: vec![table(
                "Literal, Partial and Full outcomes.",
                &cost_dims,
                &[
                    "tasks", "Literal@1 Score", "Literal@1 Success", "Literal@4 Score", "Literal@4 Success", "Partial@1 Score", "Partial@1 Success",
                    "Partial@4 Score", "Partial@4 Success", "Full@1 Score", "Full@1 Success", "Cost", "Cost over runs",
                ],
                rows,
            )],
            chart: Some(svg::score_across_submissions(&panels)),
        });
    }

    let replicate_rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .filter_map(|g| {
            let r = g.replicates.as_ref()?;
            let mut row = key_cells(dims, &g.key);
            row.push(r.runs.to_string());
            for k in [0, 3] {
                row.push(mean_sd_percent(&r.score_at[k]));
            }
            for k in [0, 3] {
                row.push(mean_sd_percent(&r.success_at[k]));
            }
            Some(row)
        })
        .collect();
    if !replicate_rows.is_empty() {
        out.push(Section {
            id: "replicates",
            title: "Seed replicates (seed 000 §5.6, Table 7)".into(),
            text: vec!["One replicate per run: mean ± sample standard deviation over the runs that hold the group, in percent.".into()],
            tables: vec![table(
                "Score and Success over replicates.",
                dims,
                &["runs", "Score@1", "Score@4", "Success@1", "Success@4"],
                replicate_rows,
            )],
            chart: None,
        });
    }

    let resolution_rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .filter_map(|g| {
            let r = g.resolution.as_ref()?;
            let mut row = key_cells(dims, &g.key);
            let share = |n: usize| percent((r.reported > 0).then(|| n as f64 / r.reported as f64));
            row.extend([
                r.episodes.to_string(),
                percent(r.in_round),
                format!("{}/{}", r.fixed_next, r.reported),
                share(r.fixed_second),
                share(r.neither),
                share(r.never),
                r.neither_pass_under_full.map_or_else(|| ABSENT.to_string(), |v| format!("{} ({})", percent(Some(v)), r.neither_with_full)),
                percent(r.ahead),
                format!("{}/{}", r.resolved_ahead, r.remaining_unstated),
            ]);
            Some(row)
        })
        .collect();
    if !resolution_rows.is_empty() {
        out.push(Section {
            id: "resolution",
            title: "Requirement resolution after the first submission (seed 000 §5.3, Table 5)".into(),
            text: vec!["In round: of the requirements an observation reported (first report per episode), the share passing at the next submission; an episode that never submits again counts as not fixed. Second and neither: fixed only at the submission after that, or in neither round (never: at no later submission). Neither under Full: of the neither group, the share passing at the first submission of the same agent's `full` episodes on the task (requirements with such episodes in parentheses). Ahead: share of the remaining unstated requirements after the first submission that pass before any report, over every episode with a first submission.".into()],
            tables: vec![table(
                "In round, the report split and Ahead, percent (counts).",
                dims,
                &["episodes", "In round", "fixed next", "fixed second", "neither", "never", "neither under Full", "Ahead", "ahead"],
                resolution_rows,
            )],
            chart: None,
        });
    }

    out.extend(seed_000_tables(report));

    if !report.residual.is_empty() {
        out.push(residual_section(report, &without(Dim::Start)));
    }
    if !report.invalid_residual_states.is_empty() {
        out.push(invalid_states_section(report));
    }
    if let Some(section) = benchmark_section(report) {
        out.push(section);
    }

    // Seed 002: delivery over planned runs, clarification, and associations across groups.
    out.extend(crate::render_delivery::sections(report));

    let zero_rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .filter_map(|g| {
            let z = g.zero_scores.as_ref().filter(|z| z.zero > 0)?;
            let mut row = key_cells(dims, &g.key);
            row.extend([z.runs.to_string(), z.zero.to_string(), z.invalid.to_string(), z.valid_zero.to_string()]);
            row.extend(SIGNATURE_ORDER.iter().map(|s| z.signatures.get(*s).copied().unwrap_or(0).to_string()));
            Some(row)
        })
        .collect();
    if !zero_rows.is_empty() {
        let mut columns = vec!["runs", "zero", "invalid", "valid zero"];
        columns.extend(SIGNATURE_ORDER);
        out.push(Section {
            id: "zero-scores",
            title: "Zero-score signatures (seed 002 App. A.7, Table 14)".into(),
            text: vec!["Runs scoring 0 by the evaluator's recorded signature (precedence constraint, fatal, schema, execution).".into()],
            tables: vec![table("Zero-score runs.", dims, &columns, zero_rows)],
            chart: None,
        });
    }

    if !report.oracle.is_empty() {
        out.push(oracle_section(report));
    }

    let end_rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .map(|g| {
            let reasons: Vec<String> = g.end_reasons.iter().map(|(r, n)| format!("{r} {n}")).collect();
            let mut row = key_cells(dims, &g.key);
            row.extend([
                g.episodes.to_string(),
                if reasons.is_empty() { ABSENT.to_string() } else { reasons.join(", ") },
                g.evaluation_errors.to_string(),
                g.infrastructure_errors.to_string(),
                g.unfinished.to_string(),
                g.not_applicable.to_string(),
            ]);
            row
        })
        .collect();
    let mut end_table = table(
        "End reasons; errors are never counted as the agent's failures.",
        dims,
        &["episodes", "end reasons", "evaluation errors", "infrastructure errors", "unfinished", "not applicable"],
        end_rows,
    );
    let reasons_column = dims.len() + 1;
    end_table.numeric[reasons_column] = false;
    let mut tables = vec![end_table];
    if !report.not_applicable.is_empty() {
        tables.push(not_applicable_table(&report.not_applicable));
    }
    out.push(Section {
        id: "ends",
        title: "End reasons, errors and not-applicable combinations".into(),
        text: vec![],
        tables,
        chart: None,
    });

    out.extend(crate::noise::section(report));
    out.extend(report.simulator.as_ref().and_then(crate::simulator::section));

    if !report.usage.is_empty() {
        out.push(usage_section(report, dims));
    }

    if !report.warnings.is_empty() {
        out.push(Section { id: "warnings", title: "Warnings".into(), text: report.warnings.clone(), tables: vec![], chart: None });
    }
    out
}

/// Model usage and cost per group and role (every attempt, scored or not).
fn usage_section(report: &Report, dims: &[Dim]) -> Section {
    let rows: Vec<Vec<String>> = report
        .usage
        .iter()
        .map(|u| {
            let mut row = key_cells(dims, &u.key);
            row.extend([
                u.role.clone(),
                u.episodes.to_string(),
                u.requests.to_string(),
                u.retries.to_string(),
                u.input_tokens.to_string(),
                u.cached_tokens.to_string(),
                u.output_tokens.to_string(),
                u.reasoning_tokens.to_string(),
                format!("{:.1}", u.latency_ms as f64 / 1000.0),
                cost_cell(&u.cost()),
                u.cost_usd.map_or_else(|| "—".to_string(), |usd| format!("{:.4}", usd / u.episodes.max(1) as f64)),
            ]);
            row
        })
        .collect();
    let columns = [
        "role",
        "episodes",
        "requests",
        "retries",
        "input tokens",
        "cached",
        "output tokens",
        "reasoning",
        "latency s",
        "cost $",
        "$ per episode",
    ];
    let mut usage_table = table(
        "Model usage summed over every attempt; the user is the simulated owner or customer; judge, extractor and detector are the model panels of seed 002.",
        dims,
        &columns,
        rows,
    );
    usage_table.numeric[dims.len()] = false;
    Section { id: "usage", title: "Model usage and cost".into(), text: usage_notes(report), tables: vec![usage_table], chart: None }
}

/// A cost table cell: dollars without the sign (the column says `$`), `unpriced`, or the
/// priced part `+ unpriced` (`crate::pricing`).
fn cost_cell(cost: &crate::pricing::Cost) -> String {
    match (cost.usd(), cost.any_priced) {
        (Some(usd), _) => format!("{usd:.4}"),
        (None, false) => crate::pricing::UNPRICED.to_string(),
        (None, true) => format!("{:.4} + {}", cost.priced_usd, crate::pricing::UNPRICED),
    }
}

/// The usage section's notes: where costs come from, and the models without a price.
fn usage_notes(report: &Report) -> Vec<String> {
    let mut notes = vec![
        "Costs come from the run's price table (`--prices`) and the panel file's prices; a model without a price is `unpriced`, its calls in no total, and `$ per episode` is `—` where a cost is not known in full.".to_string(),
    ];
    let unpriced: std::collections::BTreeSet<String> = report.usage.iter().flat_map(|u| u.unpriced_models.iter().cloned()).collect();
    notes.extend(crate::pricing::unpriced_note(&unpriced));
    notes
}

fn residual_section(report: &Report, dims: &[Dim]) -> Section {
    let rates = report
        .residual
        .iter()
        .map(|r| {
            let m = &r.measures;
            let mut row = key_cells(dims, &r.key);
            row.extend([
                m.rates.tasks.to_string(),
                percent(Some(m.rates.res)),
                percent(Some(m.rates.clean)),
                format!("{:.1}", m.rates.gap_points),
                percent(m.cond_fail.as_ref().map(|c| c.rate)),
                m.cond_fail.as_ref().map_or_else(|| ABSENT.to_string(), |c| c.tasks.to_string()),
            ]);
            row
        })
        .collect();
    let predecessors = report
        .residual
        .iter()
        .flat_map(|r| {
            r.measures.predecessors.iter().map(move |p| {
                let mut row = key_cells(dims, &r.key);
                row.extend([
                    p.predecessor.clone(),
                    p.rates.tasks.to_string(),
                    percent(Some(p.rates.clean)),
                    percent(Some(p.rates.res)),
                    format!("{:.1}", p.rates.gap_points),
                ]);
                row
            })
        })
        .collect();
    let bias = report
        .residual
        .iter()
        .map(|r| {
            let a = &r.measures.acceptance;
            let mut row = key_cells(dims, &r.key);
            row.extend([
                a.continuations.to_string(),
                percent(a.same_failing),
                percent(a.initially_failing_clean),
                percent(a.initially_failing_residual),
                percent(a.repair_rate_failed),
                percent(a.kept_failed),
                percent(a.left_out_clean),
                percent(a.left_out_residual),
                percent(a.left_out_opened),
                fixed(a.steps_ratio, 2),
                percent(a.inspected),
                percent(a.broken_failed),
                percent(a.discarded_all),
                a.kept_split.as_ref().map_or_else(
                    || ABSENT.to_string(),
                    |s| format!("{} vs {}", percent(Some(s.success_high)), percent(Some(s.success_low))),
                ),
            ]);
            row
        })
        .collect();
    let mut predecessor_table = table(
        "Per predecessor (App. C.2): each group on its own tasks, with its own clean reference.",
        dims,
        &["predecessor", "tasks", "Clean", "Residual", "Gap"],
        predecessors,
    );
    predecessor_table.numeric[dims.len()] = false;
    let chart_rows: Vec<(String, f64, f64)> =
        report.residual.iter().map(|r| (key_label(&r.key), r.measures.rates.clean, r.measures.rates.res)).collect();
    let ranking_dims: Vec<Dim> = dims.iter().copied().filter(|d| *d != Dim::Agent).collect();
    let ranking_rows: Vec<Vec<String>> = report
        .rankings
        .iter()
        .flat_map(|r| {
            let ranking_dims = &ranking_dims;
            r.ranking.agents.iter().map(move |a| {
                let mut row = key_cells(ranking_dims, &r.key);
                row.extend([
                    a.agent.clone(),
                    percent(Some(a.clean)),
                    format!("{}", a.clean_rank),
                    percent(Some(a.res)),
                    format!("{}", a.res_rank),
                    fixed(r.ranking.rho, 3),
                    fixed(r.ranking.p_value, 4),
                    format!("{}/{}", r.ranking.reversed_pairs, r.ranking.pairs),
                ]);
                row
            })
        })
        .collect();
    let mut tables = vec![
        table("Res, Clean, Gap and CondFail.", dims, &["tasks", "Res", "Clean", "Gap", "CondFail", "CondFail tasks"], rates),
        predecessor_table,
        table(
            "Acceptance bias.",
            dims,
            &[
                "continuations",
                "Same failing",
                "Init. failing clean",
                "Init. failing residual",
                "Repair (failed)",
                "Kept (failed)",
                "Left-out clean",
                "Left-out residual",
                "Left-out opened",
                "Steps",
                "Inspected",
                "Broken (failed)",
                "Discarded all",
                "Success by Kept",
            ],
            bias,
        ),
    ];
    if !ranking_rows.is_empty() {
        let mut ranking = table(
            "Clean against residual rankings (§5.2): rank 1 is the highest rate; Spearman ρ over agents with its p-value; pairs ordered oppositely.",
            &ranking_dims,
            &["agent", "Clean", "Clean rank", "Res", "Res rank", "ρ", "p", "reversed pairs"],
            ranking_rows,
        );
        ranking.numeric[ranking_dims.len()] = false;
        tables.push(ranking);
    }
    Section {
        id: "residual",
        title: "Residual starts (seed 001)".into(),
        text: vec![
            "Res and Clean: success averaged over repeats and states within a task, then over the tasks that have both starts (App. C eqs. 3–4), in percent; Gap = Clean − Res in points before rounding; CondFail on the tasks whose clean starts all succeeded (eq. 5).".into(),
            "Res, Clean, CondFail and the predecessor groups count a run as a success only when the agent declared the work complete and it passed: runs that exhausted a budget or ended in a loop are failures (App. C.1, D.1).".into(),
            "Acceptance bias (App. D) over normally submitted episodes, task-averaged: Same failing and Kept over failed continuations (Kept from the harness's diff of the state); Initially failing from clean runs and from the state; Left-out files changed from each start and opened in the continuation; Steps as the median over tasks of residual ÷ clean turns; Broken: passing tests of the state failing at the end of failed continuations; Discarded all: continuations keeping none of the predecessor's lines, or resetting every inherited change to the base before rewriting; Success by Kept: the half keeping more vs the half keeping less, split above the median (at the median when it is the maximum).".into(),
        ],
        tables,
        chart: Some(svg::clean_against_residual(&chart_rows)),
    }
}

/// Seed 000's family, Plan and Table 3 tables; each only when it has rows.
fn seed_000_tables(report: &Report) -> Vec<Section> {
    let dims = &report.group_by;
    let drop = |drop: &[Dim]| -> Vec<Dim> { dims.iter().copied().filter(|d| !drop.contains(d)).collect() };
    let mut out = Vec::new();
    if !report.families.is_empty() {
        let family_dims = drop(&[Dim::Family, Dim::Task]);
        let rows = report
            .families
            .iter()
            .map(|f| {
                let mut row = key_cells(&family_dims, &f.key);
                row.push(f.family.clone());
                row.push(f.outcomes.scored.to_string());
                row.extend(f.outcomes.score_at.iter().map(|v| percent(*v)));
                row.extend(f.outcomes.success_at.iter().map(|v| percent(*v)));
                row
            })
            .collect();
        let mut t = table(
            "Score@k and Success@k per family, k = 1..4.",
            &family_dims,
            &["family", "scored", "Score@1", "Score@2", "Score@3", "Score@4", "Success@1", "Success@2", "Success@3", "Success@4"],
            rows,
        );
        t.numeric[family_dims.len()] = false;
        let mut tables = vec![t];
        if !report.partial_shares.is_empty() {
            let share_dims = drop(&[Dim::Condition, Dim::Family, Dim::Task]);
            let rows = report
                .partial_shares
                .iter()
                .map(|p| {
                    let mut row = key_cells(&share_dims, &p.key);
                    row.extend([
                        p.family.clone(),
                        p.share.tasks.to_string(),
                        percent(Some(p.share.full_score_at_1)),
                        percent(Some(p.share.partial_score_at[0])),
                        percent(p.share.share_at[0]),
                        percent(Some(p.share.partial_score_at[1])),
                        percent(p.share.share_at[1]),
                    ]);
                    row
                })
                .collect();
            let mut t = table(
                "Partial as a share of Full (§5.2): Partial@k Score ÷ Full@1 Score on the tasks run under both.",
                &share_dims,
                &["family", "tasks", "Full@1 Score", "Partial@1 Score", "Partial@1 ÷ Full@1", "Partial@4 Score", "Partial@4 ÷ Full@1"],
                rows,
            );
            t.numeric[share_dims.len()] = false;
            tables.push(t);
        }
        out.push(Section {
            id: "families",
            title: "Per family (seed 000 §5.2, App. I)".into(),
            text: vec![
                "Percent over scored episodes, as the outcomes table, per task family (with its sub-family when the package names one)."
                    .into(),
            ],
            tables,
            chart: None,
        });
    }
    if !report.plan_vs_partial.is_empty() {
        let plan_dims = drop(&[Dim::Condition]);
        let rows = report
            .plan_vs_partial
            .iter()
            .map(|p| {
                let c = &p.comparison;
                let mut row = key_cells(&plan_dims, &p.key);
                row.extend([
                    c.tasks.to_string(),
                    format!("{} → {}", percent(Some(c.partial_at_1[0])), percent(Some(c.plan_at_1[0]))),
                    signed_points(c.difference[0]),
                    format!("{} → {}", percent(Some(c.partial_at_1[1])), percent(Some(c.plan_at_1[1]))),
                    signed_points(c.difference[1]),
                ]);
                row
            })
            .collect();
        out.push(Section {
            id: "plan",
            title: "Plan mode against Partial (seed 000 §5.4, Table 6)".into(),
            text: vec!["Means of per-task means over the tasks run under both `plan` and `partial`, in percent; differences Plan − Partial in points.".into()],
            tables: vec![table("Score@1 and Success@1, Partial → Plan.", &plan_dims, &["tasks", "Score@1", "Δ Score", "Success@1", "Δ Success"], rows)],
            chart: None,
        });
    }
    if let Some(stated) = &report.stated_requirements {
        let counts: Vec<String> = stated.tasks_by_stated.keys().map(|n| format!("{n} stated")).collect();
        let mut row = vec![stated.tasks.to_string()];
        row.extend(stated.tasks_by_stated.iter().map(|(n, t)| format!("{} ({t})", percent(stated.share_by_stated.get(n).copied()))));
        let mut headers = vec!["tasks".to_string()];
        headers.extend(counts);
        out.push(Section {
            id: "stated",
            title: "Requirements stated by the partial instruction (seed 000 Table 3)".into(),
            text: vec!["Share of requirement-scored tasks (count) by how many of their requirements the partial instruction states (`requirements.toml` `stated`).".into()],
            tables: vec![Table {
                caption: "Tasks by requirements stated.".into(),
                numeric: vec![true; headers.len()],
                headers,
                rows: vec![row],
            }],
            chart: None,
        });
    }
    out
}

/// Seed 001 Table 2 / App. A: the suite's residual states.
fn invalid_states_section(report: &Report) -> Section {
    let rows = report.invalid_residual_states.iter().map(|s| vec![s.task.clone(), s.state.clone(), s.episodes.to_string()]).collect();
    let mut states = table("States whose starting workspace passed the verifier.", &[], &["task", "state", "episodes left out"], rows);
    states.numeric[..2].fill(false);
    Section {
        id: "invalid-residual-states",
        title: "Invalid residual states (seed 001)".into(),
        text: vec!["A residual state must fail the verifier (seed 001 §3.1). These passed it before the agent's first turn, so their episodes are left out of Res, CondFail, the acceptance-bias measures and the rankings. `specgap check` rejects such a state before a run.".into()],
        tables: vec![states],
        chart: None,
    }
}

fn benchmark_section(report: &Report) -> Option<Section> {
    let b = report.residual_benchmark.as_ref()?;
    let by_states: Vec<String> = b.tasks_by_states.iter().map(|(n, t)| format!("{t} with {n}")).collect();
    let by_predecessor: Vec<String> = b.by_predecessor.iter().map(|(p, n)| format!("{p}: {n}")).collect();
    let summary = Table {
        caption: "Summary (medians over states; pass rates with equal weight per state).".into(),
        headers: [
            "tasks",
            "states",
            "tasks by states",
            "states by predecessor",
            "steps",
            "files",
            "added lines",
            "patch KiB",
            "pass rate mean / median",
            "1–3 failing",
        ]
        .map(String::from)
        .to_vec(),
        numeric: vec![true, true, false, false, true, true, true, true, true, true],
        rows: vec![vec![
            b.tasks.to_string(),
            b.states.to_string(),
            by_states.join(", "),
            by_predecessor.join(", "),
            format!("{}", b.median_steps),
            format!("{}", b.median_files),
            format!("{}", b.median_added_lines),
            format!("{:.1}", b.median_patch_bytes / 1024.0),
            format!("{} / {}", percent(b.mean_pass_rate), percent(b.median_pass_rate)),
            b.one_to_three_failing.to_string(),
        ]],
    };
    let per_state = Table {
        caption: "Per state.".into(),
        headers: ["task", "state", "predecessor", "steps", "files", "added", "deleted", "patch bytes", "tests", "failing", "pass rate"]
            .map(String::from)
            .to_vec(),
        numeric: vec![false, false, false, true, true, true, true, true, true, true, true],
        rows: b
            .per_state
            .iter()
            .map(|s| {
                let opt = |v: Option<usize>| v.map_or_else(|| ABSENT.to_string(), |v| v.to_string());
                vec![
                    s.task.clone(),
                    s.state.clone(),
                    s.predecessor.clone(),
                    s.steps.to_string(),
                    s.files.to_string(),
                    s.added_lines.to_string(),
                    s.deleted_lines.to_string(),
                    s.patch_bytes.to_string(),
                    opt(s.tests),
                    opt(s.failing),
                    percent(s.pass_rate),
                ]
            })
            .collect(),
    };
    Some(Section {
        id: "residual-states",
        title: "Residual states of the suite (seed 001 Table 2, App. A)".into(),
        text: vec!["From each state's `meta.toml` and `state.patch`, and the evaluator's verdict on the state when an episode started from it (tests, or requirements for requirement-scored tasks).".into()],
        tables: vec![summary, per_state],
        chart: None,
    })
}

fn oracle_section(report: &Report) -> Section {
    let mut tables = Vec::new();
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for row in &report.oracle {
        let mut tasks: Vec<String> = row.levels.iter().flat_map(|l| l.cases.iter().map(|c| c.task.clone())).collect();
        tasks.sort();
        tasks.dedup();
        let mut headers = vec!["case".to_string()];
        headers.extend(row.levels.iter().map(|l| format!("{:.0}%", l.ratio * 100.0)));
        let mut rows: Vec<Vec<String>> = tasks
            .iter()
            .map(|task| {
                let mut cells = vec![task.clone()];
                for level in &row.levels {
                    cells.push(level.cases.iter().find(|c| &c.task == task).map_or_else(
                        || ABSENT.to_string(),
                        |c| match c.sd {
                            Some(sd) => format!("{:.4} ± {sd:.4}", c.mean),
                            None => format!("{:.4}", c.mean),
                        },
                    ));
                }
                cells
            })
            .collect();
        let mut macro_row = vec![format!("{}-case mean", tasks.len())];
        macro_row.extend(row.levels.iter().map(|l| format!("{:.4}", l.macro_mean)));
        rows.push(macro_row);
        let n = headers.len();
        tables.push(Table {
            caption: format!("{}: Quality by answer coverage, mean ± sd over repeats.", key_label(&row.key)),
            headers,
            numeric: (0..n).map(|i| i > 0).collect(),
            rows,
        });
        for task in &tasks {
            let points =
                row.levels.iter().filter_map(|l| l.cases.iter().find(|c| &c.task == task).map(|c| (l.ratio * 100.0, c.mean))).collect();
            series.push((format!("{} {task}", key_label(&row.key)), points));
        }
        series.push((format!("{} mean", key_label(&row.key)), row.levels.iter().map(|l| (l.ratio * 100.0, l.macro_mean)).collect()));
    }
    let emphasis = series.last().map(|s| s.0.clone()).unwrap_or_default();
    let max = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(1.0_f64, f64::max);
    Section {
        id: "oracle",
        title: "Oracle answer coverage (seed 002 App. A.6, Table 13, Figure 5)".into(),
        text: vec!["Condition `oracle:R` gives the first R of a seeded permutation of the registered answers, nested across R. Quality per case and the case-macro mean.".into()],
        tables,
        chart: Some(svg::curves(
            &series,
            &Axis { label: "answer coverage (%)".into(), min: 0.0, max: 100.0 },
            &Axis { label: "Quality".into(), min: 0.0, max },
            &emphasis,
            "Quality against oracle answer coverage",
        )),
    }
}

fn md_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The report as Markdown (GitHub tables).
pub fn render_markdown(report: &Report, title: &str) -> String {
    let mut out = format!("# {}\n\n", md_cell(title));
    for section in sections(report) {
        let _ = write!(out, "## {}\n\n", section.title);
        for paragraph in &section.text {
            let _ = write!(out, "{paragraph}\n\n");
        }
        for t in &section.tables {
            if !t.caption.is_empty() {
                let _ = write!(out, "{}\n\n", t.caption);
            }
            let _ = writeln!(out, "| {} |", t.headers.iter().map(|h| md_cell(h)).collect::<Vec<_>>().join(" | "));
            let _ = writeln!(out, "| {} |", t.numeric.iter().map(|n| if *n { "---:" } else { "---" }).collect::<Vec<_>>().join(" | "));
            for row in &t.rows {
                let _ = writeln!(out, "| {} |", row.iter().map(|c| md_cell(c)).collect::<Vec<_>>().join(" | "));
            }
            out.push('\n');
        }
    }
    out
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1a202c;background:#fff;line-height:1.45}\
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2.2rem;border-bottom:1px solid #e2e8f0;padding-bottom:.2rem}\
table{border-collapse:collapse;margin:.4rem 0 1.2rem;font-size:.85rem}caption{text-align:left;caption-side:top;color:#4a5568;padding:.2rem 0}\
th,td{border:1px solid #e2e8f0;padding:.25rem .5rem;vertical-align:top}th{background:#f7fafc;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.scroll{overflow-x:auto;max-width:100%}figure{margin:.5rem 0 1.5rem}svg{max-width:100%;height:auto}nav a{margin-right:.8rem}.meta{color:#4a5568}";

/// HTML-escapes `text` and turns its Markdown code spans (`` `full` ``) into `<code>` elements,
/// since section texts are written once for both renderers. A backtick without a partner stays
/// as it is.
fn escape_with_code(text: &str) -> String {
    let escaped = escape(text);
    let pieces: Vec<&str> = escaped.split('`').collect();
    let mut out = String::with_capacity(escaped.len());
    for (i, piece) in pieces.iter().enumerate() {
        let is_code = i % 2 == 1;
        let has_partner = i + 1 < pieces.len() || !is_code;
        match (is_code, has_partner) {
            (true, true) => {
                let _ = write!(out, "<code>{piece}</code>");
            }
            (true, false) => {
                out.push('`');
                out.push_str(piece);
            }
            (false, _) => out.push_str(piece),
        }
    }
    out
}

/// The report as one self-contained HTML page: inline CSS, inline SVG charts, no script and
/// no external resource.
pub fn render_html(report: &Report, title: &str) -> String {
    let sections = sections(report);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><link rel=\"icon\" href=\"data:,\"><title>{t}</title><style>{CSS}</style></head><body><h1>{t}</h1>",
        t = escape(title)
    );
    let _ =
        write!(out, "<p class=\"meta\">specgap {} · report schema {} v{}</p><nav>", report.specgap_version, report.schema, report.version);
    for s in &sections {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", s.id, escape(s.title.split(" (").next().unwrap_or(&s.title)));
    }
    out.push_str("</nav>");
    for s in &sections {
        let _ = write!(out, "<section id=\"{}\"><h2>{}</h2>", s.id, escape(&s.title));
        for p in &s.text {
            let _ = write!(out, "<p>{}</p>", escape_with_code(p));
        }
        if let Some(chart) = &s.chart {
            let _ = write!(out, "<figure>{chart}</figure>");
        }
        for t in &s.tables {
            out.push_str("<div class=\"scroll\"><table>");
            if !t.caption.is_empty() {
                let _ = write!(out, "<caption>{}</caption>", escape_with_code(&t.caption));
            }
            out.push_str("<thead><tr>");
            for h in &t.headers {
                let _ = write!(out, "<th scope=\"col\">{}</th>", escape(h));
            }
            out.push_str("</tr></thead><tbody>");
            for row in &t.rows {
                out.push_str("<tr>");
                for (i, cell) in row.iter().enumerate() {
                    let class = if t.numeric.get(i).copied().unwrap_or(false) { " class=\"n\"" } else { "" };
                    let _ = write!(out, "<td{class}>{}</td>", escape(cell));
                }
                out.push_str("</tr>");
            }
            out.push_str("</tbody></table></div>");
        }
        out.push_str("</section>");
    }
    out.push_str("</body></html>\n");
    out
}

/// The report as pretty JSON (schema `specgap-report`, documented in docs/report-schema.md).
///
/// # Errors
/// [`ReportError::Json`] if serialization fails (non-finite numbers serialize as null).
pub fn render_json(report: &Report) -> Result<String, ReportError> {
    let mut text = unsigned_zeros(&serde_json::to_string_pretty(report).map_err(ReportError::Json)?);
    text.push('\n');
    Ok(text)
}

/// JSON text with every number `-0.0` written `0.0` (a difference or a rounded negative mean of
/// zero has the sign bit set; a consumer comparing text, or a reader, takes it for a value
/// below zero). Strings are left as they are.
pub(crate) fn unsigned_zeros(json: &str) -> String {
    const NEGATIVE_ZERO: &str = "-0.0";
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = json;
    while let Some(c) = rest.chars().next() {
        if !in_string && c == '-' && rest.starts_with(NEGATIVE_ZERO) {
            let after = rest[NEGATIVE_ZERO.len()..].chars().next();
            let whole_number = !after.is_some_and(|a| a.is_ascii_digit() || a == '.' || a == 'e' || a == 'E');
            let before = out.chars().next_back();
            if whole_number && !before.is_some_and(|b| b.is_ascii_alphanumeric()) {
                out.push_str("0.0");
                rest = &rest[NEGATIVE_ZERO.len()..];
                continue;
            }
        }
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The skipped combinations, one row per task and reason with the agents, conditions and
/// starts it covers (the report's JSON keeps one entry per combination): a run of many agents
/// would otherwise list the same reason once per agent × start.
fn not_applicable_table(skipped: &[crate::report::NotApplicable]) -> Table {
    type Covered = (std::collections::BTreeSet<String>, Vec<String>, Vec<String>, usize);
    let mut by_reason: std::collections::BTreeMap<(String, String), Covered> = std::collections::BTreeMap::new();
    for n in skipped {
        let entry = by_reason.entry((n.task.clone(), n.reason.clone())).or_default();
        entry.0.insert(n.agent.clone());
        push_once(&mut entry.1, &n.condition);
        push_once(&mut entry.2, &n.start);
        entry.3 += 1;
    }
    Table {
        caption: "Combinations the run skipped because the task cannot support them (DESIGN §4), by task and reason.".into(),
        headers: ["task", "why", "agents", "conditions", "starts", "combinations"].map(String::from).to_vec(),
        numeric: vec![false, false, false, false, false, true],
        rows: by_reason
            .into_iter()
            .map(|((task, reason), (agents, conditions, starts, count))| {
                let agents: Vec<String> = agents.into_iter().collect();
                vec![task, reason, agents.join(", "), conditions.join(", "), starts.join(", "), count.to_string()]
            })
            .collect(),
    }
}

/// Appends `value` unless present, keeping first-seen (plan) order.
fn push_once(values: &mut Vec<String>, value: &str) {
    if !values.iter().any(|v| v == value) {
        values.push(value.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_zero_numbers_lose_their_sign_and_strings_keep_theirs() {
        let json = "{\n  \"gap\": -0.0,\n  \"name\": \"t-0.0 \\\" -0.0\",\n  \"xs\": [-0.0, -0.05, -0.0e1, 1e-0.0]\n}";
        assert_eq!(unsigned_zeros(json), "{\n  \"gap\": 0.0,\n  \"name\": \"t-0.0 \\\" -0.0\",\n  \"xs\": [0.0, -0.05, -0.0e1, 1e-0.0]\n}");
    }

    #[test]
    fn code_spans_become_code_elements_after_escaping() {
        assert_eq!(escape_with_code("both `full` and `<partial>`"), "both <code>full</code> and <code>&lt;partial&gt;</code>");
        assert_eq!(escape_with_code("a `lone backtick"), "a `lone backtick");
        assert_eq!(escape_with_code("no code & more"), "no code &amp; more");
    }
}
