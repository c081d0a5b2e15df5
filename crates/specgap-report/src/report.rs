//! [`Report`]: every measure of one or more runs, grouped, ready to render as Markdown, HTML or
//! JSON (schema [`REPORT_SCHEMA`] version [`REPORT_VERSION`], documented in
//! `docs/report-schema.md`).
//!
//! Grouping: the main table splits episodes by the `--group-by` dimensions (default agent ×
//! condition × start). Tables whose measure compares along one dimension drop it from their
//! key: the outcome cost compares conditions (`full` vs `partial`), the residual table
//! compares starts (clean vs residual), the oracle curve spans `oracle:R` conditions.
//!
//! Several runs: episodes of all runs are pooled for the measures; when two or more runs hold
//! a group, the report adds seed-replicate mean ± sd of Score@k / Success@k and of the outcome
//! cost (seed 000 §5.6, Table 7), one replicate per run.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use specgap_stats::mean_sd;

use crate::ReportError;
pub use crate::associations::Association;
use crate::associations::{Associations, associations};
use crate::benchmark::{ResidualBenchmark, StatedRequirements, residual_benchmark, stated_requirements};
use crate::cases::IntervalSettings;
use crate::clarification::{ClarificationSummary, Registry, clarification_summary, registry};
use crate::delivery::{DeliveryMeasures, OracleLevel, ZeroScores, delivery_measures, oracle_curve, zero_scores};
use crate::episode::{Dim, Episode, GroupKey, group_by, index_episodes, oracle_ratio};
use crate::first::MAX_K;
use crate::judge::OFFLINE_JUDGE;
use crate::outcome::{
    CostComparison, Outcomes, PartialShare, PlanVsPartial, Resolution, cost_comparison, family_label, outcomes, partial_share,
    plan_vs_partial, resolution,
};
use crate::plan::{PlannedRun, group_planned, planned_delivery_runs};
use crate::residual::{InvalidResidualState, RankingReversal, ResidualMeasures, invalid_states, ranking_reversal, residual_measures};
use crate::run::RunData;

/// The `schema` field of every JSON report.
pub const REPORT_SCHEMA: &str = "specgap-report";
/// The JSON report's version; bumped on any incompatible change (docs/report-schema.md).
/// Version 2: seed 002's delivery cells count planned runs and may be incomplete; intervals,
/// ask rate, type- and domain-specific Recall and the associations were added. Version 3:
/// usage `cost_usd` may be null (a model without a price), runs holding one episode are
/// refused, and `-0.0` is written `0.0`.
pub const REPORT_VERSION: u32 = 3;

/// How a report is built.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    /// Grouping dimensions of the main table, in order.
    pub group_by: Vec<Dim>,
    /// Judge whose clarification verdicts feed Recall and the other seed 002 measures:
    /// `offline` (the default), `panel` (the one coverage panel with verdicts in the runs) or a
    /// panel's name ([`crate::judge::resolve_judge`]).
    pub judge: String,
    /// Which delivery score runs of cases with a submission schema get: `auto` (the default:
    /// the one extraction panel with verdicts, else the direct artifacts), `direct` or a
    /// panel's name ([`crate::extraction`]).
    pub extraction: String,
    /// The case-bootstrap intervals of seed 002's cells (App. A.4).
    pub intervals: IntervalSettings,
    /// A user review (`specgap review-user`, its reviewer name, e.g. `rules:1`) whose
    /// episodes with a severe finding are left out of every measure ([`crate::simulator`]).
    pub exclude_user_findings: Option<String>,
    /// Show the wall-clock statistics (run time against Quality) also when every agent is
    /// scripted or replayed, whose run times measure only the machine (`--show-timing`).
    pub show_timing: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            group_by: crate::episode::DEFAULT_GROUP_BY.to_vec(),
            judge: OFFLINE_JUDGE.to_string(),
            extraction: crate::extraction::AUTO.to_string(),
            intervals: IntervalSettings::default(),
            exclude_user_findings: None,
            show_timing: false,
        }
    }
}

/// A run as the report lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// Run directory as given.
    pub dir: String,
    /// Run seed.
    pub seed: u64,
    /// specgap version that made the run.
    pub specgap_version: String,
    /// Episodes in the store.
    pub episodes: usize,
    /// Episodes the offline judge judged while this report was made.
    pub judged_now: usize,
}

/// A group's key: dimension → value.
pub type KeyMap = BTreeMap<Dim, String>;

/// Every measure of one group of the main table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupReport {
    /// The group's values on the grouping dimensions.
    pub key: KeyMap,
    /// Episodes in the store, whatever their status.
    pub episodes: usize,
    /// Episodes ended by an evaluation error (never the agent's failure).
    pub evaluation_errors: usize,
    /// Episodes ended by an infrastructure error.
    pub infrastructure_errors: usize,
    /// Episodes interrupted or not finished.
    pub unfinished: usize,
    /// Not-applicable records of this group (DESIGN §4).
    pub not_applicable: usize,
    /// Episodes per end reason.
    pub end_reasons: BTreeMap<String, usize>,
    /// Score@k / Success@k (seed 000).
    pub outcomes: Outcomes,
    /// In round / Ahead (seed 000 §5.3), for requirement-scored episodes with feedback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    /// Quality, DSR, validity, pass@k, pass^k over the planned runs of delivery cases
    /// (seed 002).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<DeliveryMeasures>,
    /// Recall, Precision, Ask-F1, KQC1, ATC, Redund., ask rate, type- and domain-specific
    /// Recall (seed 002).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clarification: Option<ClarificationSummary>,
    /// Zero-score signatures (seed 002 App. A.7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zero_scores: Option<ZeroScores>,
    /// Where the delivery scores came from — extraction, no artifact, unavailable, never
    /// extracted — and the extraction failures (seed 002 A.3, Table 17).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scoring_source: Option<crate::scoring_source::ScoringSource>,
    /// Seed-replicate mean ± sd over runs, when at least two runs hold the group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicates: Option<Replicates>,
}

/// A mean ± sample sd over replicates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeanSd {
    /// Mean over replicates.
    pub mean: f64,
    /// Sample standard deviation (`ddof = 1`).
    pub sd: f64,
}

/// Seed-replicate statistics of Score@k / Success@k (seed 000 §5.6, Table 7).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replicates {
    /// Runs (replicates) with scored episodes in the group.
    pub runs: usize,
    /// Score@k, k = 1..=4.
    pub score_at: [MeanSd; MAX_K],
    /// Success@k, k = 1..=4.
    pub success_at: [MeanSd; MAX_K],
}

/// One row of the outcome-cost table (seed 000 Table 4 / Figure 4 / Table 7).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostRow {
    /// Key: the grouping dimensions without `condition`.
    pub key: KeyMap,
    /// The comparison over all runs pooled.
    pub comparison: CostComparison,
    /// Cost (Full@1 − Partial@1, Score) mean ± sd over runs, with two or more runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_replicates: Option<MeanSd>,
}

/// One row of the residual table (seed 001).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResidualRow {
    /// Key: the grouping dimensions without `start`.
    pub key: KeyMap,
    /// The measures.
    pub measures: ResidualMeasures,
}

/// Score@k and Success@k of one family (seed 000 §5.2, App. I per-domain tables).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FamilyRow {
    /// Key: the grouping dimensions without `family` and `task`.
    pub key: KeyMap,
    /// `family`, or `family/subfamily` ([`crate::outcome::family_label`]).
    pub family: String,
    /// The outcomes of the family's episodes in the group.
    pub outcomes: Outcomes,
}

/// Partial as a share of Full in one family (seed 000 §5.2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartialShareRow {
    /// Key: the grouping dimensions without `condition`, `family` and `task`.
    pub key: KeyMap,
    /// `family`, or `family/subfamily`.
    pub family: String,
    /// The share.
    pub share: PartialShare,
}

/// The plan mode against Partial (seed 000 §5.4, Table 6).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanRow {
    /// Key: the grouping dimensions without `condition`.
    pub key: KeyMap,
    /// The paired comparison.
    pub comparison: PlanVsPartial,
}

/// Clean against residual rankings of agents (seed 001 §5.2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankingRow {
    /// Key: the grouping dimensions without `start` and `agent`.
    pub key: KeyMap,
    /// The rankings.
    pub ranking: RankingReversal,
}

/// One oracle-coverage curve (seed 002 App. A.6).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OracleRow {
    /// Key: the grouping dimensions without `condition`.
    pub key: KeyMap,
    /// Levels by R.
    pub levels: Vec<OracleLevel>,
}

/// A not-applicable record (DESIGN §4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotApplicable {
    /// Task.
    pub task: String,
    /// Agent.
    pub agent: String,
    /// Condition.
    pub condition: String,
    /// Start.
    pub start: String,
    /// Why.
    pub reason: String,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Always [`REPORT_SCHEMA`].
    pub schema: &'static str,
    /// [`REPORT_VERSION`].
    pub version: u32,
    /// Version of specgap that made the report.
    pub specgap_version: &'static str,
    /// Grouping dimensions of `groups`.
    pub group_by: Vec<Dim>,
    /// The paper protocols of the runs and every deviation from each (issue 24): the report's
    /// first lines.
    pub protocols: Vec<crate::faithful::ProtocolLine>,
    /// Judge behind the clarification measures (`offline:<version>` or `panel:<hash>`).
    pub judge: String,
    /// The coverage panel's agreement between its judges and with the offline rule, when the
    /// report is judged by a panel (seed 002 A.8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_agreement: Option<crate::agreement::JudgeAgreement>,
    /// The extraction panel whose verdicts score the runs of cases with a submission schema;
    /// absent when they are scored from the direct artifacts (seed 002 §4.1, A.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extraction: Option<String>,
    /// Whether the extraction panel's extractors could run the case evaluator on their output
    /// (`check_output`, seed 002 A.9.4's verification block); false for panels recorded
    /// before it existed. Absent without an extraction panel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extraction_check_output: Option<bool>,
    /// The runs.
    pub runs: Vec<RunSummary>,
    /// The main table.
    pub groups: Vec<GroupReport>,
    /// Outcome cost (seed 000).
    pub outcome_costs: Vec<CostRow>,
    /// Residual starts (seed 001).
    pub residual: Vec<ResidualRow>,
    /// Clean against residual rankings over agents (seed 001 §5.2), when `agent` is a grouping
    /// dimension and two or more agents have residual rows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rankings: Vec<RankingRow>,
    /// Residual states that passed the verifier at the start of an episode (seed 001 §3.1):
    /// their episodes are left out of `residual` and `rankings`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub invalid_residual_states: Vec<InvalidResidualState>,
    /// The residual states of the suite (seed 001 Table 2, App. A).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub residual_benchmark: Option<ResidualBenchmark>,
    /// Requirements stated per requirement-scored task (seed 000 Table 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stated_requirements: Option<StatedRequirements>,
    /// Score@k and Success@k per family (seed 000 App. I).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub families: Vec<FamilyRow>,
    /// Partial as a share of Full per family (seed 000 §5.2).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub partial_shares: Vec<PartialShareRow>,
    /// Plan mode against Partial (seed 000 §5.4, Table 6).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plan_vs_partial: Vec<PlanRow>,
    /// Oracle coverage (seed 002).
    pub oracle: Vec<OracleRow>,
    /// Settings of every case-bootstrap interval (seed 002 App. A.4).
    pub intervals: IntervalSettings,
    /// Recall against Quality across groups (seed 002 Figure 4), with three or more groups:
    /// the matrix cell of [`Associations::clarification_delivery`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall_quality: Option<Association>,
    /// Rank associations across groups (seed 002 §5.2, §5.3, App. A.4, A.5).
    pub associations: Associations,
    /// Associations across cases per slice of groups differing only in their agent: the
    /// case-level ranking ρ (seed 002 §5.2) and Table 8(b).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub case_associations: Vec<crate::case_associations::CaseAssociations>,
    /// Within-system repeat analyses per slice (seed 002 §5.3, App. A.5, A.7).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repeat_analyses: Vec<crate::repeats::RepeatAnalysis>,
    /// Run-to-run noise per group: flip rate, within-task sd, variance split between tasks and
    /// repeats ([`crate::noise`]); a group without repeats says noise cannot be estimated.
    pub noise: Vec<crate::noise::GroupNoise>,
    /// The simulated user's reviews and the episodes excluded by one ([`crate::simulator`]);
    /// absent when no run has a review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulator: Option<crate::simulator::SimulatorQuality>,
    /// Composition of the clarification targets of the report's cases (seed 002 Table 7);
    /// absent when no case has targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clarification_registry: Option<Registry>,
    /// Not-applicable records.
    pub not_applicable: Vec<NotApplicable>,
    /// Model usage and cost per group and role ([`crate::usage`]); left out of JSON when no
    /// run recorded usage.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub usage: Vec<crate::usage::UsageSummary>,
    /// Input checks first ([`crate::inputs`]: shards, planned episodes without a result,
    /// replicates differing beyond the seed), then why some measures may be missing, per run.
    pub warnings: Vec<String>,
}

fn key_map(dims: &[Dim], key: &GroupKey) -> KeyMap {
    dims.iter().copied().zip(key.iter().cloned()).collect()
}

/// Builds the report of `runs`. Its warnings start with the input checks of
/// [`crate::inputs`] (shards, episodes without a result, replicates that differ in more than
/// the seed), then each run's own warnings.
///
/// # Errors
/// [`ReportError::NoRuns`] for an empty slice; [`ReportError::DuplicateRun`] when two runs
/// have the same directory ([`crate::inputs::distinct_run_dirs`]); [`ReportError::Stats`] if
/// a statistic fails.
pub fn build_report(runs: &[RunData], options: &ReportOptions) -> Result<Report, ReportError> {
    if runs.is_empty() {
        return Err(ReportError::NoRuns);
    }
    crate::inputs::distinct_run_dirs(&runs.iter().map(|r| r.dir.as_path()).collect::<Vec<_>>())?;
    crate::inputs::distinct_episodes(runs)?;
    let options = &ReportOptions { judge: crate::judge::resolve_judge(runs, &options.judge)?, ..options.clone() };
    let mut episodes = index_episodes(&runs.iter().collect::<Vec<_>>());
    let simulator = crate::simulator::quality(runs, options.exclude_user_findings.as_deref())?;
    if let Some(quality) = &simulator {
        episodes.retain(|e| !quality.excluded.contains(&e.row.id));
    }
    let extraction = crate::extraction::resolve_extraction(runs, &options.extraction)?;
    if let Some(panel) = &extraction {
        crate::extraction::attach(runs, &mut episodes, panel);
    }
    let episodes = episodes;
    let residual_dims: Vec<Dim> = options.group_by.iter().copied().filter(|d| *d != Dim::Start).collect();
    std::thread::scope(|scope| {
        // The seed 001 measures read thousands of diffs and trajectories (with their own
        // reader threads); they run beside the other measures, which use one core.
        let residual = scope.spawn(|| residual_rows(&episodes, &residual_dims));
        let residual = move || joined(residual);
        // The rows comparing conditions need only the episodes: the second core computes them
        // while this thread writes the group reports.
        let conditions = scope.spawn(|| condition_rows(&episodes, &options.group_by, runs.len()));
        let conditions = move || joined(conditions);
        report_with(runs, options, &episodes, extraction, Later { residual, conditions }).map(|report| Report { simulator, ..report })
    })
}

/// What a scoped thread returned; its panic goes on in this thread.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    match handle.join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Rows [`report_with`] waits for, computed on other threads.
struct Later<R, C> {
    /// The seed 001 rows ([`residual_rows`]).
    residual: R,
    /// [`condition_rows`].
    conditions: C,
}

/// The seed 001 rows of the report: one per group of `dims` (the report's dimensions
/// without `start`) that has clean and residual starts.
fn residual_rows(episodes: &[Episode<'_>], dims: &[Dim]) -> Vec<ResidualRow> {
    let mut residual = Vec::new();
    for (key, members) in group_by(episodes, dims, |_| true) {
        let clean: Vec<&Episode> = members.iter().copied().filter(|e| e.is_clean()).collect();
        let res: Vec<&Episode> = members.iter().copied().filter(|e| e.valid_state().is_some()).collect();
        if let Some(measures) = residual_measures(&clean, &res) {
            residual.push(ResidualRow { key: key_map(dims, &key), measures });
        }
    }
    residual
}

/// The rows of [`Report`] that compare conditions or families within wider groups: outcome
/// against cost, the oracle curve, families, Partial as a share of Full, plan against partial.
/// [`build_report`] computes them on a thread of their own, beside the group reports.
struct ConditionRows {
    outcome_costs: Vec<CostRow>,
    oracle: Vec<OracleRow>,
    families: Vec<FamilyRow>,
    partial_shares: Vec<PartialShareRow>,
    plan_rows: Vec<PlanRow>,
}

/// [`ConditionRows`] over `episodes` for the report's dimensions `dims`, from `n_runs` runs.
fn condition_rows(episodes: &[Episode<'_>], dims: &[Dim], n_runs: usize) -> ConditionRows {
    let cost_dims = without_all(dims, &[Dim::Condition]);
    let mut outcome_costs = Vec::new();
    for (key, members) in group_by(episodes, &cost_dims, |_| true) {
        if let Some(row) = cost_row(&cost_dims, &key, &members, n_runs) {
            outcome_costs.push(row);
        }
    }

    let oracle_dims = without_all(dims, &[Dim::Condition]);
    let mut oracle = Vec::new();
    for (key, members) in group_by(episodes, &oracle_dims, |e| oracle_ratio(&e.row.condition).is_some()) {
        let levels = oracle_curve(&members);
        if !levels.is_empty() {
            oracle.push(OracleRow { key: key_map(&oracle_dims, &key), levels });
        }
    }

    let families = family_rows(episodes, &without_all(dims, &[Dim::Family, Dim::Task]));
    let partial_shares = partial_share_rows(episodes, &without_all(dims, &[Dim::Condition, Dim::Family, Dim::Task]));
    let plan_dims = without_all(dims, &[Dim::Condition]);
    let mut plan_rows = Vec::new();
    for (key, members) in group_by(episodes, &plan_dims, |_| true) {
        let of = |condition: &str| -> Vec<&Episode> { members.iter().copied().filter(|e| e.row.condition == condition).collect() };
        if let Some(comparison) = plan_vs_partial(&of("plan"), &of("partial")) {
            plan_rows.push(PlanRow { key: key_map(&plan_dims, &key), comparison });
        }
    }
    ConditionRows { outcome_costs, oracle, families, partial_shares, plan_rows }
}

/// Whether every agent of the runs is scripted or replayed: its run times are the machine's,
/// not the agent's (a merge of the same episodes gave another p for run time against Quality).
fn only_scripted_or_replayed(runs: &[RunData]) -> bool {
    runs.iter().flat_map(|r| &r.config.agents).all(|a| a.spec.starts_with("scripted:") || a.spec.starts_with("replay:"))
}

/// Every other measure of [`build_report`], and the report with the rows that `later` waits
/// for.
fn report_with(
    runs: &[RunData],
    options: &ReportOptions,
    episodes: &[Episode<'_>],
    extraction: Option<String>,
    later: Later<impl FnOnce() -> Vec<ResidualRow>, impl FnOnce() -> ConditionRows>,
) -> Result<Report, ReportError> {
    let dims = &options.group_by;
    let not_applicable = not_applicable_rows(runs);

    let mut groups = Vec::new();
    let mut families: BTreeMap<&str, &str> = BTreeMap::new();
    for e in episodes {
        families.entry(e.row.task.as_str()).or_insert(e.row.family.as_str());
    }
    for run in runs {
        for (name, context) in &run.tasks {
            families.entry(name.as_str()).or_insert(context.family.as_str());
        }
    }
    let mut na_by_key: BTreeMap<GroupKey, usize> = BTreeMap::new();
    for na in &not_applicable {
        *na_by_key.entry(not_applicable_key(dims, na, &families)).or_default() += 1;
    }
    let mut grouped = group_by(episodes, dims, |_| true);
    for key in na_by_key.keys() {
        grouped.entry(key.clone()).or_default();
    }
    let planned = planned_delivery_runs(runs, episodes);
    let planned_groups = group_planned(&planned, dims);
    let full_index = FullIndex::new(episodes);
    // Per group, the runs whose scored episodes make its seed replicates.
    let pooled: Vec<BTreeSet<usize>> = grouped
        .values()
        .map(|members| members.iter().filter(|e| e.is_scored()).map(|e| e.run).collect::<BTreeSet<usize>>())
        .filter(|runs| runs.len() >= 2)
        .collect();
    for (key, members) in &grouped {
        let context = GroupContext {
            not_applicable: na_by_key.get(key).copied().unwrap_or(0),
            planned: planned_groups.get(key).map(Vec::as_slice).unwrap_or_default(),
            runs,
            options,
            full_index: &full_index,
            extraction: extraction.as_deref(),
        };
        groups.push(group_report(dims, key, members, &context)?);
    }

    let mut contexts: BTreeMap<&str, &crate::context::TaskContext> = BTreeMap::new();
    for e in episodes {
        if let Some(context) = e.context {
            contexts.entry(e.row.task.as_str()).or_insert(context);
        }
    }
    let clarification_registry = registry(contexts.values().copied());
    let models = agent_models(runs);
    let usage = crate::usage::usage_summaries(runs, episodes, dims);
    let mut associations = associations(&groups, dims, &models, &usage, &options.intervals)?;
    if !options.show_timing && associations.runtime_quality.is_some() && only_scripted_or_replayed(runs) {
        associations.runtime_quality = None;
        associations.timing = crate::associations::Timing::LeftOut;
    }
    let case_associations = crate::case_associations::case_associations(&groups, &contexts, &options.intervals)?;
    let repeat_analyses = crate::repeats::repeat_analyses(&grouped, dims, &options.judge);
    let noise = crate::noise::group_noise(&grouped, dims);
    let recall_quality = associations.clarification_delivery.iter().find(|a| a.x == "Recall" && a.y == "Quality").cloned();
    let mut warnings = crate::inputs::input_warnings(runs, dims, &pooled);
    warnings.extend(crate::scoring_source::never_extracted_warning(episodes, extraction.as_deref()));
    warnings.extend(runs.iter().flat_map(|r| r.warnings.iter().map(move |w| format!("{}: {w}", r.dir.display()))));
    let residual = (later.residual)();
    let ConditionRows { outcome_costs, oracle, families, partial_shares, plan_rows } = (later.conditions)();
    let rankings = ranking_rows(&residual, dims)?;
    let mut residual_warnings: BTreeSet<&String> = BTreeSet::new();
    for row in &residual {
        residual_warnings.extend(&row.measures.acceptance.warnings);
    }
    warnings.extend(residual_warnings.into_iter().cloned());
    warnings.extend(crate::network::network_warnings(episodes));
    warnings.extend(trusted_workspace_warning(&contexts));
    let invalid_residual_states = invalid_states(episodes);
    if !invalid_residual_states.is_empty() {
        warnings.push(invalid_states_warning(&invalid_residual_states));
    }
    Ok(Report {
        schema: REPORT_SCHEMA,
        version: REPORT_VERSION,
        specgap_version: env!("CARGO_PKG_VERSION"),
        group_by: dims.clone(),
        protocols: crate::faithful::protocol_lines(
            runs,
            crate::faithful::ReportSide {
                judge: &options.judge,
                extraction: extraction.as_deref(),
                extraction_check_output: extraction.as_deref().map(|panel| crate::extraction::check_output_offered(runs, panel)),
            },
        ),
        judge: options.judge.clone(),
        judge_agreement: options
            .judge
            .starts_with("panel:")
            .then(|| crate::agreement::judge_agreement(runs, episodes, &options.judge))
            .flatten(),
        extraction_check_output: extraction.as_deref().map(|panel| crate::extraction::check_output_offered(runs, panel)),
        extraction,
        runs: runs
            .iter()
            .map(|r| RunSummary {
                dir: r.dir.display().to_string(),
                seed: r.config.seed,
                specgap_version: r.config.specgap_version.clone(),
                episodes: r.rows.episodes.len(),
                judged_now: r.judge.judged,
            })
            .collect(),
        groups,
        outcome_costs,
        residual,
        rankings,
        invalid_residual_states,
        residual_benchmark: residual_benchmark(runs, episodes),
        stated_requirements: stated_requirements(runs),
        families,
        partial_shares,
        plan_vs_partial: plan_rows,
        oracle,
        intervals: options.intervals,
        recall_quality,
        associations,
        case_associations,
        repeat_analyses,
        noise,
        simulator: None,
        clarification_registry,
        not_applicable,
        usage,
        warnings,
    })
}

/// The report's line naming the tasks whose verifier trusts the workspace
/// (`[evaluator].trusts_workspace`), or none.
fn trusted_workspace_warning(contexts: &BTreeMap<&str, &crate::context::TaskContext>) -> Option<String> {
    let trusting: Vec<&str> = contexts.iter().filter(|(_, c)| c.trusts_workspace).map(|(name, _)| *name).collect();
    if trusting.is_empty() {
        return None;
    }
    Some(format!(
        "verifier trusts the workspace: {} ({} of {} tasks): their verifiers run the submitted code in their own processes, so a reward the submission forges consistently cannot be told from an earned one (docs/harbor.md, \"Trust model\")",
        trusting.join(", "),
        trusting.len(),
        contexts.len()
    ))
}

/// The warning naming the residual states that passed the verifier at the start.
fn invalid_states_warning(states: &[InvalidResidualState]) -> String {
    let names: Vec<String> = states.iter().map(|s| format!("{}/{} ({} episodes)", s.task, s.state, s.episodes)).collect();
    format!(
        "{} residual states passed the verifier before the first turn and are not valid residual states (seed 001 §3.1); their episodes are left out of the residual measures: {}",
        states.len(),
        names.join(", ")
    )
}

/// What a group's measures need besides its episodes.
struct GroupContext<'c, 'p, 'e, 'a> {
    /// Not-applicable records of the key.
    not_applicable: usize,
    /// The group's planned delivery runs.
    planned: &'c [&'p PlannedRun<'e, 'a>],
    runs: &'c [RunData],
    options: &'c ReportOptions,
    /// `full` episodes by (agent, task), for In round's never-fixed share (seed 000 §5.3).
    full_index: &'c FullIndex<'a>,
    /// The report's extraction panel, if any.
    extraction: Option<&'c str>,
}

fn group_report(
    dims: &[Dim],
    key: &GroupKey,
    members: &[&Episode<'_>],
    context: &GroupContext<'_, '_, '_, '_>,
) -> Result<GroupReport, ReportError> {
    let n_runs = context.runs.len();
    let options = context.options;
    use specgap_protocol::run::EndReason;
    let mut end_reasons = BTreeMap::new();
    for reason in members.iter().filter_map(|e| e.row.end_reason) {
        *end_reasons.entry(reason.as_str().to_string()).or_insert(0) += 1;
    }
    let count = |reason: EndReason| members.iter().filter(|e| e.row.end_reason == Some(reason)).count();
    let unfinished = members.iter().filter(|e| e.row.end_reason.is_none()).count() + count(EndReason::Interrupted);
    Ok(GroupReport {
        key: key_map(dims, key),
        episodes: members.len(),
        evaluation_errors: count(EndReason::EvaluationError),
        infrastructure_errors: count(EndReason::InfrastructureError),
        unfinished,
        not_applicable: context.not_applicable,
        end_reasons,
        outcomes: outcomes(members),
        resolution: resolution(members, &|e, req| context.full_index.pass_share(e, req)),
        delivery: delivery_measures(context.planned, context.runs, &options.intervals)?,
        clarification: clarification_summary(members, &options.judge, &options.intervals)?,
        zero_scores: zero_scores(members),
        scoring_source: crate::scoring_source::scoring_source(members, context.runs, context.extraction),
        replicates: if n_runs >= 2 { replicates(members, n_runs)? } else { None },
    })
}

/// `dims` without any of `drop`.
fn without_all(dims: &[Dim], drop: &[Dim]) -> Vec<Dim> {
    dims.iter().copied().filter(|d| !drop.contains(d)).collect()
}

/// Score@k / Success@k per group of `dims` and family label.
fn family_rows(episodes: &[Episode<'_>], dims: &[Dim]) -> Vec<FamilyRow> {
    let mut rows = Vec::new();
    for (key, members) in group_by(episodes, dims, |_| true) {
        let mut by_family: BTreeMap<String, Vec<&Episode>> = BTreeMap::new();
        for e in members {
            by_family.entry(family_label(e)).or_default().push(e);
        }
        for (family, members) in by_family {
            let outcomes = outcomes(&members);
            if outcomes.scored > 0 {
                rows.push(FamilyRow { key: key_map(dims, &key), family, outcomes });
            }
        }
    }
    rows
}

/// Partial as a share of Full per group of `dims` and family label.
fn partial_share_rows(episodes: &[Episode<'_>], dims: &[Dim]) -> Vec<PartialShareRow> {
    let mut rows = Vec::new();
    for (key, members) in group_by(episodes, dims, |_| true) {
        let mut by_family: BTreeMap<String, Vec<&Episode>> = BTreeMap::new();
        for e in members {
            by_family.entry(family_label(e)).or_default().push(e);
        }
        for (family, members) in by_family {
            let of = |condition: &str| -> Vec<&Episode> { members.iter().copied().filter(|e| e.row.condition == condition).collect() };
            if let Some(share) = partial_share(&of("full"), &of("partial")) {
                rows.push(PartialShareRow { key: key_map(dims, &key), family, share });
            }
        }
    }
    rows
}

/// Rankings over agents of the residual rows, per value of the other dimensions; only when
/// `agent` is a grouping dimension.
fn ranking_rows(residual: &[ResidualRow], dims: &[Dim]) -> Result<Vec<RankingRow>, ReportError> {
    if !dims.contains(&Dim::Agent) {
        return Ok(Vec::new());
    }
    let mut by_key: BTreeMap<KeyMap, Vec<(String, f64, f64)>> = BTreeMap::new();
    for row in residual {
        let mut key = row.key.clone();
        let Some(agent) = key.remove(&Dim::Agent) else {
            continue;
        };
        by_key.entry(key).or_default().push((agent, row.measures.rates.clean, row.measures.rates.res));
    }
    let mut rows = Vec::new();
    for (key, agents) in by_key {
        let ranking =
            ranking_reversal(&agents).map_err(|source| ReportError::Stats { measure: "Spearman rho (Clean, Res)".into(), source })?;
        if let Some(ranking) = ranking {
            rows.push(RankingRow { key, ranking });
        }
    }
    Ok(rows)
}

/// The scored episodes under condition `full`, by (agent, task, start): the Full reference of
/// seed 000 §5.3 for requirements that feedback did not get fixed.
///
/// Each key's pass counts per requirement are summed once here: asking the episodes for every
/// partial episode and requirement made a report quadratic in the repeats per cell (268 s of
/// a 1,000,000-episode report, BENCHMARKS.md "Reports").
pub struct FullIndex<'a> {
    by_key: BTreeMap<(&'a str, &'a str, &'a str), BTreeMap<&'a str, PassCount>>,
}

/// Passes among the `full` episodes with a verdict for one requirement (an entry exists only
/// once one episode has a verdict, so `judged` ≥ 1).
#[derive(Debug, Clone, Copy, Default)]
struct PassCount {
    passed: usize,
    judged: usize,
}

impl<'a> FullIndex<'a> {
    /// Indexes the `full` episodes among `episodes`: for each (agent, task, start) and
    /// requirement, how many first valid submissions have a verdict and how many pass.
    pub fn new(episodes: &[Episode<'a>]) -> Self {
        let mut by_key: BTreeMap<(&str, &str, &str), BTreeMap<&str, PassCount>> = BTreeMap::new();
        for e in episodes.iter().filter(|e| e.is_scored() && e.row.condition == "full") {
            let counts = by_key.entry((e.row.agent.as_str(), e.row.task.as_str(), e.row.start.as_str())).or_default();
            let Some(verdicts) = e.scores.first().and_then(|first| e.requirements.get(first.k)) else {
                continue;
            };
            for (requirement, passes) in verdicts.iter() {
                let count = counts.entry(requirement).or_default();
                count.passed += usize::from(passes);
                count.judged += 1;
            }
        }
        FullIndex { by_key }
    }

    /// Share of the `full` episodes of `episode`'s agent, task and start whose first valid
    /// submission passes `requirement`; `None` when none has a verdict for it.
    pub fn pass_share(&self, episode: &Episode<'_>, requirement: &str) -> Option<f64> {
        let counts = self.by_key.get(&(episode.row.agent.as_str(), episode.row.task.as_str(), episode.row.start.as_str()))?;
        let count = counts.get(requirement)?;
        Some(count.passed as f64 / count.judged as f64)
    }
}

/// Score@k / Success@k per run, then mean ± sd over runs with scored episodes.
fn replicates(members: &[&Episode<'_>], n_runs: usize) -> Result<Option<Replicates>, ReportError> {
    let per_run: Vec<Outcomes> = (0..n_runs)
        .map(|run| outcomes(&members.iter().copied().filter(|e| e.run == run).collect::<Vec<_>>()))
        .filter(|o| o.scored > 0)
        .collect();
    if per_run.len() < 2 {
        return Ok(None);
    }
    let stat = |values: Vec<f64>| -> Result<MeanSd, ReportError> {
        let m = mean_sd(&values).map_err(|source| ReportError::Stats { measure: "seed replicates".into(), source })?;
        Ok(MeanSd { mean: m.mean, sd: m.sd })
    };
    let mut score_at = [MeanSd { mean: 0.0, sd: 0.0 }; MAX_K];
    let mut success_at = score_at;
    for k in 0..MAX_K {
        score_at[k] = stat(per_run.iter().filter_map(|o| o.score_at[k]).collect())?;
        success_at[k] = stat(per_run.iter().filter_map(|o| o.success_at[k]).collect())?;
    }
    Ok(Some(Replicates { runs: per_run.len(), score_at, success_at }))
}

fn cost_row(dims: &[Dim], key: &GroupKey, members: &[&Episode<'_>], n_runs: usize) -> Option<CostRow> {
    let of = |condition: &str, run: Option<usize>| -> Vec<&Episode> {
        members.iter().copied().filter(|e| e.row.condition == condition && run.is_none_or(|r| e.run == r)).collect()
    };
    let comparison = cost_comparison(&of("full", None), &of("partial", None), &of("literal", None))?;
    let per_run: Vec<f64> = (0..n_runs)
        .filter_map(|run| cost_comparison(&of("full", Some(run)), &of("partial", Some(run)), &[]).map(|c| c.cost_score_at[0]))
        .collect();
    let cost_replicates = (per_run.len() >= 2).then(|| mean_sd(&per_run).ok().map(|m| MeanSd { mean: m.mean, sd: m.sd })).flatten();
    Some(CostRow { key: key_map(dims, key), comparison, cost_replicates })
}

/// Each agent spec of the runs with its model: `run.toml`'s `agents[].config.model` when it is
/// a string, else the spec (the model-demeaned ρ, [`crate::associations`]).
fn agent_models(runs: &[RunData]) -> BTreeMap<String, String> {
    let mut models = BTreeMap::new();
    for agent in runs.iter().flat_map(|r| r.config.agents.iter()) {
        let model = agent.config.get("model").and_then(|m| m.as_str()).map_or_else(|| agent.spec.clone(), str::to_string);
        models.entry(agent.spec.clone()).or_insert(model);
    }
    models
}

fn not_applicable_rows(runs: &[RunData]) -> Vec<NotApplicable> {
    let mut out: Vec<NotApplicable> = runs
        .iter()
        .flat_map(|r| r.rows.not_applicable.iter())
        .map(|n| NotApplicable {
            task: n.task.clone(),
            agent: n.agent.clone(),
            condition: n.condition.clone(),
            start: n.start.clone(),
            reason: n.reason.clone(),
        })
        .collect();
    out.sort_by(|a, b| (&a.task, &a.agent, &a.condition, &a.start).cmp(&(&b.task, &b.agent, &b.condition, &b.start)));
    out.dedup();
    out
}

/// The main-table key of a not-applicable record; its family comes from an episode or the
/// package of the same task (or `unknown`).
fn not_applicable_key(dims: &[Dim], na: &NotApplicable, families: &BTreeMap<&str, &str>) -> GroupKey {
    dims.iter()
        .map(|d| match d {
            Dim::Agent => na.agent.clone(),
            Dim::Condition => na.condition.clone(),
            Dim::Start => na.start.clone(),
            Dim::Task => na.task.clone(),
            Dim::Family => families.get(na.task.as_str()).map_or_else(|| "unknown".to_string(), |f| f.to_string()),
        })
        .collect()
}
