//! Seed 002's clarification measures (§4.2, App. A.3, A.5, A.6): Recall, Precision, Ask-F1,
//! KQC1, ATC and Redund. per run, averaged over the runs where each is defined, with
//! case-bootstrap intervals; the ask rate; type- and domain-specific Recall.
//!
//! **Rounds.** KQC1 and ATC count *clarification rounds*: one agent turn of questions is one
//! round however many questions it holds — an `ask_user` with a `questions` array, one message
//! with several questions, or a `## Questions for the client` block, each recorded as rows of
//! the `questions` table with the turn that asked them. A unit's round is the rank of its
//! agent turn among the turns that asked anything, counting from 1 ([`QuestionUnit::turn`]).
//! Asking everything in the first round gives KQC1 = Recall; asking one question per turn
//! legitimately spreads the same coverage over several rounds.
//!
//! **Units.** Q is the episode's question units ([`crate::judge::question_units`], the shared
//! rule of `specgap_task::matching`): every recorded question is split at question marks,
//! whatever the condition, so a closing "I have what I need" that reaches the customer counts
//! as one (unmatched) unit under `interact` and `interact-req` alike.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use specgap_protocol::package::{ClarificationTarget, Domain, IssueType};
use specgap_store::Judgement;

use crate::ReportError;
use crate::cases::{CaseValues, IntervalSettings};
use crate::episode::{Episode, mean, offers_ask};
use crate::judge::{COVERED, QuestionUnit, UNAVAILABLE, question_units};

/// The clarification measures of one run (seed 002 §4.2), each `None` where App. A.3 leaves
/// it undefined. Fractions in [0, 1]; ATC in clarification rounds; Redund. in question units.
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
    /// KQC1 = |G_cov,1| / |G|: targets covered by units of the first clarification round.
    pub kqc1: Option<f64>,
    /// ATC: mean first covering round over covered targets with a matched unit; undefined when
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
/// judge failed or never ran), or with a target whose verdict is
/// [`crate::judge::UNAVAILABLE`] (no panel judge answered), every measure is
/// unavailable. A target without a judgement counts as not covered; matched indices outside
/// the units are ignored.
pub fn clarification_values(units: &[QuestionUnit], targets: &[String], judgements: &[&Judgement]) -> ClarificationValues {
    let g = targets.len();
    if g == 0 {
        return ClarificationValues::default();
    }
    if units.is_empty() {
        return ClarificationValues { units: 0, recall: Some(0.0), kqc1: Some(0.0), redund: Some(0.0), ..Default::default() };
    }
    // No verdict at all, or a target a panel could not decide: every measure is unavailable
    // (seed 002 A.3; counting the target as missed would impute a 0).
    let undecided = judgements.iter().any(|j| j.verdict == UNAVAILABLE && targets.contains(&j.target));
    if judgements.is_empty() || undecided {
        return ClarificationValues { units: units.len(), ..Default::default() };
    }
    let covered = covered_judgements(targets, judgements);
    let round_of = |index: u32| units.get(index as usize).map(|u| u.turn);
    let relevant: BTreeSet<u32> =
        covered.iter().flat_map(|j| j.matched_question_indices.iter().copied()).filter(|i| (*i as usize) < units.len()).collect();
    let first_rounds: Vec<u32> =
        covered.iter().filter_map(|j| j.matched_question_indices.iter().filter_map(|i| round_of(*i)).min()).collect();
    let recall = covered.len() as f64 / g as f64;
    let precision = relevant.len() as f64 / units.len() as f64;
    let ask_f1 = if precision + recall > 0.0 { 2.0 * precision * recall / (precision + recall) } else { 0.0 };
    ClarificationValues {
        units: units.len(),
        recall: Some(recall),
        precision: Some(precision),
        ask_f1: Some(ask_f1),
        kqc1: Some(first_rounds.iter().filter(|t| **t == 1).count() as f64 / g as f64),
        atc: mean(first_rounds.iter().map(|t| f64::from(*t))),
        redund: Some((units.len() - relevant.len()) as f64),
    }
}

/// The judgements that cover one of `targets`, one per target (the first).
fn covered_judgements<'j>(targets: &[String], judgements: &[&'j Judgement]) -> Vec<&'j Judgement> {
    let wanted: BTreeSet<&str> = targets.iter().map(String::as_str).collect();
    let mut seen = BTreeSet::new();
    judgements
        .iter()
        .copied()
        .filter(|j| j.verdict == COVERED && wanted.contains(j.target.as_str()))
        .filter(|j| seen.insert(j.target.as_str()))
        .collect()
}

/// One run's clarification: its values and which targets it covered (for the type- and
/// domain-specific Recall).
#[derive(Debug, Clone, PartialEq)]
pub struct RunClarification {
    /// The values.
    pub values: ClarificationValues,
    /// Ids of the covered targets; meaningful where Recall is defined.
    pub covered: BTreeSet<String>,
    /// Matched question units by content domain (seed 002 Table 10): each unit matched to a
    /// covered target counts 1, split equally among the distinct domains of the covered targets
    /// it matches.
    pub matched_domains: BTreeMap<&'static str, f64>,
}

/// The clarification values of one episode under `judge`, or `None` when they do not apply
/// (no task package, no targets, `ask_user` not offered, not scored).
pub fn episode_clarification(e: &Episode<'_>, judge: &str) -> Option<ClarificationValues> {
    run_clarification(e, judge).map(|r| r.values)
}

/// [`episode_clarification`] with the covered targets.
pub fn run_clarification(e: &Episode<'_>, judge: &str) -> Option<RunClarification> {
    let context = e.context?;
    if !e.is_scored() || context.targets.is_empty() || !offers_ask(&e.row.condition) {
        return None;
    }
    let units = question_units(&e.questions);
    let targets: Vec<String> = context.targets.iter().map(|t| t.id.clone()).collect();
    let judgements = e.judgements_of(judge);
    let values = clarification_values(&units, &targets, &judgements);
    let covering = if units.is_empty() { Vec::new() } else { covered_judgements(&targets, &judgements) };
    let covered: BTreeSet<String> = covering.iter().map(|j| j.target.clone()).collect();
    let domain_of: BTreeMap<&str, &'static str> = context.targets.iter().map(|t| (t.id.as_str(), domain_name(t.domain))).collect();
    let mut unit_domains: BTreeMap<u32, BTreeSet<&'static str>> = BTreeMap::new();
    for j in &covering {
        let Some(domain) = domain_of.get(j.target.as_str()) else {
            continue;
        };
        for index in j.matched_question_indices.iter().filter(|i| (**i as usize) < units.len()) {
            unit_domains.entry(*index).or_default().insert(domain);
        }
    }
    let mut matched_domains: BTreeMap<&'static str, f64> = BTreeMap::new();
    for domains in unit_domains.values() {
        for domain in domains {
            *matched_domains.entry(domain).or_default() += 1.0 / domains.len() as f64;
        }
    }
    Some(RunClarification { values, covered, matched_domains })
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

/// Recall over the targets of one issue type or content domain (seed 002 App. A.5): per run the
/// share of the case's targets of that kind that are covered, averaged over the case's runs
/// where Recall is defined, then over the cases holding the kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KindRecall {
    /// Cases holding targets of the kind (with a run where Recall is defined).
    pub cases: usize,
    /// The Recall, in [0, 1].
    pub recall: f64,
}

/// Clarification measures of a group: run-level values averaged over the runs where each is
/// defined. Runs: scored episodes of tasks with clarification targets, under a condition that
/// offers `ask_user`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClarificationSummary {
    /// Runs considered.
    pub runs: usize,
    /// Mean question units per run (#Q of seed 002 Table 12).
    pub mean_units: f64,
    /// Ask rate: the share of runs with at least one question unit (seed 002 App. A.6,
    /// Table 12).
    pub ask_rate: f64,
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
    /// ATC (clarification rounds; lower is better).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub atc: Option<DefinedMean>,
    /// Redund. (question units; lower is better).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redund: Option<DefinedMean>,
    /// 95% case-bootstrap intervals (seed 002 App. A.4) by measure name (`recall`,
    /// `precision`, `ask_f1`, `kqc1`, `atc`, `redund`); a measure without one is left out.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub intervals: BTreeMap<String, [f64; 2]>,
    /// Type-specific Recall by issue type (`missing`, `ambiguous`, `invalidated`,
    /// `conflicting`; seed 002 Table 9), for the types the group's cases hold.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_issue_type: BTreeMap<String, KindRecall>,
    /// Domain-specific Recall by content domain (`scoring-convention`, `constraint-rule`,
    /// `computation-convention`, `data-semantics`; seed 002 App. A.5).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_domain: BTreeMap<String, KindRecall>,
    /// The domain mix of the matched questions (seed 002 Table 10): per domain, its share of
    /// the group's matched question units, pooled over runs, a unit matched to targets of
    /// several domains split equally among them. Absent without a matched unit.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub matched_domains: BTreeMap<String, f64>,
    /// Per measure, the case-level data behind it (for the associations across groups).
    #[serde(skip)]
    pub cases: BTreeMap<String, CaseValues>,
}

/// Names of the six clarification measures of seed 002 Table 6(b), as [`ClarificationSummary`]
/// fields and `intervals` keys, with their display names.
pub const CLARIFICATION_MEASURES: [(&str, &str); 6] =
    [("recall", "Recall"), ("precision", "Precision"), ("ask_f1", "Ask-F1"), ("kqc1", "KQC1"), ("atc", "ATC"), ("redund", "Redund.")];

/// The name of an issue type in reports (its `clarifications.toml` spelling).
pub fn issue_type_name(kind: IssueType) -> &'static str {
    match kind {
        IssueType::Missing => "missing",
        IssueType::Ambiguous => "ambiguous",
        IssueType::Invalidated => "invalidated",
        IssueType::Conflicting => "conflicting",
    }
}

/// The name of a content domain in reports (its `clarifications.toml` spelling).
pub fn domain_name(domain: Domain) -> &'static str {
    match domain {
        Domain::ScoringConvention => "scoring-convention",
        Domain::ConstraintRule => "constraint-rule",
        Domain::ComputationConvention => "computation-convention",
        Domain::DataSemantics => "data-semantics",
    }
}

/// [`ClarificationSummary`] of a group with its case-bootstrap intervals; `None` when no run
/// applies.
///
/// # Errors
/// [`ReportError::Stats`] if a bootstrap rejects its settings.
pub fn clarification_summary(
    episodes: &[&Episode<'_>],
    judge: &str,
    settings: &IntervalSettings,
) -> Result<Option<ClarificationSummary>, ReportError> {
    let runs: Vec<(&Episode, RunClarification)> = episodes.iter().filter_map(|e| run_clarification(e, judge).map(|r| (*e, r))).collect();
    if runs.is_empty() {
        return Ok(None);
    }
    let task = |e: &Episode| e.row.task.clone();
    let measure = |pick: fn(&ClarificationValues) -> Option<f64>| -> CaseValues {
        CaseValues::new(runs.iter().filter_map(|(e, r)| pick(&r.values).map(|v| (task(e), v, 1.0))))
    };
    let picks: [fn(&ClarificationValues) -> Option<f64>; 6] =
        [|v| v.recall, |v| v.precision, |v| v.ask_f1, |v| v.kqc1, |v| v.atc, |v| v.redund];
    let mut cases: BTreeMap<String, CaseValues> = BTreeMap::new();
    let mut means: Vec<Option<DefinedMean>> = Vec::new();
    let mut intervals = BTreeMap::new();
    for ((field, display), pick) in CLARIFICATION_MEASURES.iter().zip(picks) {
        let values = measure(pick);
        means.push(values.value().map(|mean| DefinedMean { mean, n: values.weight() as usize }));
        if let Some(interval) = values.interval(settings, display)? {
            intervals.insert(field.to_string(), interval);
        }
        cases.insert(display.to_string(), values);
    }
    let by_issue_type = kind_recalls(&runs, |t| issue_type_name(t.issue_type), &mut cases, "type");
    let by_domain = kind_recalls(&runs, |t| domain_name(t.domain), &mut cases, "domain");
    let mut mix: BTreeMap<String, f64> = BTreeMap::new();
    // Per task: each domain's matched weight and the total, for the share's case data.
    let mut by_task: BTreeMap<String, (BTreeMap<&'static str, f64>, f64)> = BTreeMap::new();
    for (e, r) in &runs {
        let slot = by_task.entry(task(e)).or_default();
        for (domain, weight) in &r.matched_domains {
            *mix.entry(domain.to_string()).or_default() += weight;
            *slot.0.entry(domain).or_default() += weight;
            slot.1 += weight;
        }
    }
    for domain in mix.keys() {
        let values = CaseValues::new(
            by_task
                .iter()
                .filter(|(_, (_, total))| *total > 0.0)
                .map(|(task, (weights, total))| (task.clone(), weights.get(domain.as_str()).copied().unwrap_or(0.0), *total)),
        );
        cases.insert(crate::associations::share_key(domain), values);
    }
    let matched: f64 = mix.values().sum();
    let matched_domains = if matched > 0.0 { mix.into_iter().map(|(d, w)| (d, w / matched)).collect() } else { BTreeMap::new() };
    let [recall, precision, ask_f1, kqc1, atc, redund]: [Option<DefinedMean>; 6] =
        means.try_into().unwrap_or_else(|_| std::array::from_fn(|_| None));
    Ok(Some(ClarificationSummary {
        runs: runs.len(),
        mean_units: mean(runs.iter().map(|(_, r)| r.values.units as f64)).unwrap_or(0.0),
        ask_rate: mean(runs.iter().map(|(_, r)| if r.values.units > 0 { 1.0 } else { 0.0 })).unwrap_or(0.0),
        recall,
        precision,
        ask_f1,
        kqc1,
        atc,
        redund,
        intervals,
        by_issue_type,
        by_domain,
        matched_domains,
        cases,
    }))
}

/// The case-level data key of a kind's Recall in [`ClarificationSummary::cases`]:
/// `Recall[type:missing]`, `Recall[domain:constraint-rule]`.
pub fn kind_key(family: &str, kind: &str) -> String {
    format!("Recall[{family}:{kind}]")
}

/// Type- or domain-specific Recall of the runs (App. A.5), kinds named by `kind_of`; their
/// case data go into `cases` under [`kind_key`].
fn kind_recalls(
    runs: &[(&Episode<'_>, RunClarification)],
    kind_of: fn(&ClarificationTarget) -> &'static str,
    cases: &mut BTreeMap<String, CaseValues>,
    family: &str,
) -> BTreeMap<String, KindRecall> {
    // kind → task → (sum of per-run shares, runs)
    let mut shares: BTreeMap<&'static str, BTreeMap<String, (f64, f64)>> = BTreeMap::new();
    for (e, r) in runs {
        let (Some(context), Some(_)) = (e.context, r.values.recall) else {
            continue;
        };
        let mut per_kind: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
        for target in &context.targets {
            let slot = per_kind.entry(kind_of(target)).or_default();
            slot.1 += 1;
            slot.0 += usize::from(r.covered.contains(&target.id));
        }
        for (kind, (covered, total)) in per_kind {
            let slot = shares.entry(kind).or_default().entry(e.row.task.clone()).or_default();
            slot.0 += covered as f64 / total as f64;
            slot.1 += 1.0;
        }
    }
    let mut out = BTreeMap::new();
    for (kind, by_task) in shares {
        // Case-macro: each case's mean share, denominator 1.
        let values = CaseValues::new(by_task.into_iter().map(|(task, (sum, runs))| (task, sum / runs, 1.0)));
        if let Some(recall) = values.value() {
            out.insert(kind.to_string(), KindRecall { cases: values.len(), recall });
        }
        cases.insert(kind_key(family, kind), values);
    }
    out
}

/// One row of the clarification-target registry (seed 002 Table 7).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegistryRow {
    /// `issue_type` or `domain`.
    pub annotation: &'static str,
    /// The type or domain.
    pub kind: String,
    /// Targets of this kind.
    pub points: usize,
    /// Their share of all targets, in [0, 1].
    pub share: f64,
    /// Cases with at least one.
    pub cases: usize,
}

/// The composition of the clarification targets of the report's cases (seed 002 Table 7).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Registry {
    /// Targets over all cases.
    pub points: usize,
    /// Cases with targets.
    pub cases: usize,
    /// By issue type, then by domain, each most points first (ties by name).
    pub rows: Vec<RegistryRow>,
}

/// The [`Registry`] of the cases in `contexts` (each once); `None` when none has targets.
pub fn registry<'c>(contexts: impl IntoIterator<Item = &'c crate::context::TaskContext>) -> Option<Registry> {
    let cases: Vec<&crate::context::TaskContext> = contexts.into_iter().filter(|c| !c.targets.is_empty()).collect();
    let points: usize = cases.iter().map(|c| c.targets.len()).sum();
    if points == 0 {
        return None;
    }
    let mut rows = Vec::new();
    type KindOf = fn(&ClarificationTarget) -> &'static str;
    let kinds: [(&'static str, KindOf); 2] = [("issue_type", |t| issue_type_name(t.issue_type)), ("domain", |t| domain_name(t.domain))];
    for (annotation, kind_of) in kinds {
        let mut counts: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
        for case in &cases {
            let mut seen = BTreeSet::new();
            for target in &case.targets {
                let kind = kind_of(target);
                let slot = counts.entry(kind).or_default();
                slot.0 += 1;
                if seen.insert(kind) {
                    slot.1 += 1;
                }
            }
        }
        let mut part: Vec<RegistryRow> = counts
            .into_iter()
            .map(|(kind, (n, with))| RegistryRow {
                annotation,
                kind: kind.to_string(),
                points: n,
                share: n as f64 / points as f64,
                cases: with,
            })
            .collect();
        part.sort_by(|a, b| b.points.cmp(&a.points).then_with(|| a.kind.cmp(&b.kind)));
        rows.extend(part);
    }
    Some(Registry { points, cases: cases.len(), rows })
}
