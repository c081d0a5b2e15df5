//! The first report of a run: per agent × condition × start, how many episodes ran, Score@1..@4
//! and Success@1..@4, why episodes ended, and what could not be scored or was not applicable.
//!
//! ## Definitions (seed 000 §4.1, DESIGN §7)
//!
//! - **Score@k** of an episode: the Score (DESIGN §2 scoring table, in [0, 1]; delivery
//!   scores may exceed 1) of its k-th submission. An episode that ended after fewer than k
//!   submissions (accepted, out of submissions, budget or loop end) *carries its last values
//!   forward*: Score@k is the Score of its last submission. An episode that ended without any
//!   submission has Score@k = 0 and Success@k = false for every k (nothing was delivered; a
//!   decision of this project, recorded in docs/decisions.md).
//! - **Success@k** of an episode: the Success of its k-th submission, carried forward the same
//!   way. Since an episode with feedback ends at its first success, Success@k is also "some
//!   submission up to k succeeded" for such episodes.
//! - A group's Score@k and Success@k are means over its *scored* episodes (end reason with
//!   [`EndReason::is_scored`]); Success@k is therefore a fraction in [0, 1]. Episodes that
//!   ended in an evaluation or infrastructure error, were interrupted or never finished are
//!   counted apart and never enter these means.
//!
//! Means are taken over episodes, so tasks with more repeats weigh more; with the same number
//! of repeats per task (every `specgap run`), this equals the mean over tasks of per-task means.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use specgap_protocol::run::EndReason;

/// Submissions reported by Score@k / Success@k: k = 1..=`MAX_K` (seed 000 uses four).
pub const MAX_K: usize = 4;

/// One submission's private evaluation, as the store keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SubmissionScore {
    /// 1-based submission number.
    pub k: u32,
    /// Score by the task's scoring kind.
    pub score: f64,
    /// Success by the task's scoring kind.
    pub success: bool,
}

/// One episode of a run, as the first report needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRow {
    /// Episode id.
    pub id: String,
    /// Task name.
    pub task: String,
    /// Agent spec.
    pub agent: String,
    /// Canonical condition string.
    pub condition: String,
    /// `clean` or `residual:<id>`.
    pub start: String,
    /// 0-based repeat.
    pub repeat: u32,
    /// Store status (`finished`, `running`, `interrupted`, `infra_error`, `eval_error`, …).
    pub status: String,
    /// snake_case end reason, once the episode ended.
    pub end_reason: Option<String>,
    /// Evaluated submissions, in any order (they are sorted by `k` where it matters).
    pub submissions: Vec<SubmissionScore>,
}

impl EpisodeRow {
    /// The end reason parsed, if it is one this version knows.
    pub fn parsed_end_reason(&self) -> Option<EndReason> {
        let reason = self.end_reason.as_deref()?;
        serde_json::from_value(serde_json::Value::String(reason.to_owned())).ok()
    }

    /// Whether the episode enters Score@k / Success@k: it ended, for a reason other than an
    /// error or an interruption.
    pub fn is_scored(&self) -> bool {
        self.parsed_end_reason().is_some_and(EndReason::is_scored)
    }
}

/// A (task, agent, condition, start) the run skipped because the task cannot support it
/// (DESIGN §4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotApplicableRow {
    /// Task name.
    pub task: String,
    /// Agent spec.
    pub agent: String,
    /// Canonical condition string.
    pub condition: String,
    /// Start.
    pub start: String,
    /// Why it does not apply.
    pub reason: String,
}

/// Score@k of one episode (1-based `k`), carried forward; 0 without submissions.
///
/// `submissions` may be in any order; a `k` of 0 is treated as 1.
pub fn score_at_k(submissions: &[SubmissionScore], k: u32) -> f64 {
    submission_at_k(submissions, k).map_or(0.0, |s| s.score)
}

/// Success@k of one episode (1-based `k`), carried forward; false without submissions.
pub fn success_at_k(submissions: &[SubmissionScore], k: u32) -> bool {
    submission_at_k(submissions, k).is_some_and(|s| s.success)
}

/// The submission whose values hold at `k`: the one numbered `k`, else the last one before it.
fn submission_at_k(submissions: &[SubmissionScore], k: u32) -> Option<&SubmissionScore> {
    let k = k.max(1);
    submissions.iter().filter(|s| s.k <= k).max_by_key(|s| s.k)
}

/// The measures of one agent × condition × start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Agent spec.
    pub agent: String,
    /// Canonical condition string.
    pub condition: String,
    /// Start.
    pub start: String,
    /// Episodes in the store for this group, whatever their status.
    pub episodes: u32,
    /// Episodes that enter the measures.
    pub scored: u32,
    /// Mean Score@k over scored episodes, k = 1..=4; `None` without scored episodes.
    pub score_at: [Option<f64>; MAX_K],
    /// Fraction of scored episodes with Success@k, k = 1..=4; `None` without scored episodes.
    pub success_at: [Option<f64>; MAX_K],
    /// Mean number of submissions over scored episodes.
    pub mean_submissions: Option<f64>,
    /// Count of episodes per end reason (every ended episode, scored or not).
    pub end_reasons: BTreeMap<String, u32>,
    /// Episodes that ended in an evaluation error after retries.
    pub evaluation_errors: u32,
    /// Episodes that ended in an infrastructure error after retries.
    pub infrastructure_errors: u32,
    /// Episodes interrupted or never finished.
    pub unfinished: u32,
    /// Tasks for which this agent × condition × start was not applicable.
    pub not_applicable: u32,
}

/// The whole first report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstReport {
    /// One entry per agent × condition × start, sorted by agent, condition, start.
    pub groups: Vec<GroupSummary>,
    /// Every not-applicable record, as stored.
    pub not_applicable: Vec<NotApplicableRow>,
}

type GroupKey = (String, String, String);

/// Builds the first report from a run's episodes and not-applicable records.
pub fn summarize(episodes: &[EpisodeRow], not_applicable: &[NotApplicableRow]) -> FirstReport {
    let mut members: BTreeMap<GroupKey, Vec<&EpisodeRow>> = BTreeMap::new();
    for episode in episodes {
        let key = (episode.agent.clone(), episode.condition.clone(), episode.start.clone());
        members.entry(key).or_default().push(episode);
    }
    let mut skipped: BTreeMap<GroupKey, u32> = BTreeMap::new();
    for row in not_applicable {
        *skipped.entry((row.agent.clone(), row.condition.clone(), row.start.clone())).or_default() += 1;
        members.entry((row.agent.clone(), row.condition.clone(), row.start.clone())).or_default();
    }
    let groups = members
        .into_iter()
        .map(|(key, rows)| {
            let skipped_here = skipped.get(&key).copied().unwrap_or(0);
            summarize_group(key, &rows, skipped_here)
        })
        .collect();
    FirstReport { groups, not_applicable: not_applicable.to_vec() }
}

fn summarize_group((agent, condition, start): GroupKey, rows: &[&EpisodeRow], not_applicable: u32) -> GroupSummary {
    let scored: Vec<&EpisodeRow> = rows.iter().copied().filter(|e| e.is_scored()).collect();
    let mut score_at = [None; MAX_K];
    let mut success_at = [None; MAX_K];
    for (slot, k) in (1..=MAX_K as u32).enumerate() {
        score_at[slot] = mean(scored.iter().map(|e| score_at_k(&e.submissions, k)));
        success_at[slot] = mean(scored.iter().map(|e| f64::from(u8::from(success_at_k(&e.submissions, k)))));
    }
    let mut end_reasons = BTreeMap::new();
    for reason in rows.iter().filter_map(|e| e.end_reason.clone()) {
        *end_reasons.entry(reason).or_insert(0) += 1;
    }
    let count_reason = |wanted: EndReason| -> u32 {
        let n = rows.iter().filter(|e| e.parsed_end_reason() == Some(wanted)).count();
        u32::try_from(n).unwrap_or(u32::MAX)
    };
    let unfinished = rows.iter().filter(|e| e.end_reason.is_none()).count();
    GroupSummary {
        agent,
        condition,
        start,
        episodes: u32::try_from(rows.len()).unwrap_or(u32::MAX),
        scored: u32::try_from(scored.len()).unwrap_or(u32::MAX),
        score_at,
        success_at,
        mean_submissions: mean(scored.iter().map(|e| e.submissions.len() as f64)),
        end_reasons,
        evaluation_errors: count_reason(EndReason::EvaluationError),
        infrastructure_errors: count_reason(EndReason::InfrastructureError),
        unfinished: u32::try_from(unfinished).unwrap_or(u32::MAX) + count_reason(EndReason::Interrupted),
        not_applicable,
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0u32), |(sum, n), v| (sum + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}

/// Builds the first report from every row of a run store: episodes with their validly
/// evaluated submissions, and the not-applicable records.
pub fn from_store_rows(rows: &specgap_store::RunRows) -> FirstReport {
    let mut submissions: BTreeMap<&str, Vec<SubmissionScore>> = BTreeMap::new();
    for s in &rows.submissions {
        if let (true, Some(score), Some(success)) = (s.valid_evaluation, s.score, s.success) {
            submissions.entry(s.episode.as_str()).or_default().push(SubmissionScore { k: s.k, score, success });
        }
    }
    let episodes: Vec<EpisodeRow> = rows
        .episodes
        .iter()
        .map(|e| EpisodeRow {
            id: e.id.clone(),
            task: e.task.clone(),
            agent: e.agent.clone(),
            condition: e.condition.clone(),
            start: e.start.clone(),
            repeat: e.repeat,
            status: e.status.as_str().to_string(),
            end_reason: e.end_reason.map(|r| r.as_str().to_string()),
            submissions: submissions.remove(e.id.as_str()).unwrap_or_default(),
        })
        .collect();
    let not_applicable: Vec<NotApplicableRow> = rows
        .not_applicable
        .iter()
        .map(|n| NotApplicableRow {
            task: n.task.clone(),
            agent: n.agent.clone(),
            condition: n.condition.clone(),
            start: n.start.clone(),
            reason: n.reason.clone(),
        })
        .collect();
    summarize(&episodes, &not_applicable)
}

/// Renders the report as Markdown: one table of measures (percentages with one decimal, as
/// seed 000 reports them), one of end reasons and errors, and the not-applicable list.
pub fn render_markdown(report: &FirstReport, title: &str) -> String {
    let mut out = format!("# {title}\n\n");
    out.push_str("Score@k and Success@k in percent over scored episodes; an episode that ended after fewer than k submissions carries its last values forward.\n\n");
    out.push_str("| agent | condition | start | episodes | scored | Score@1 | Score@2 | Score@3 | Score@4 | Success@1 | Success@2 | Success@3 | Success@4 |\n");
    out.push_str("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for g in &report.groups {
        let scores: Vec<String> = g.score_at.iter().map(|v| percent(*v)).collect();
        let successes: Vec<String> = g.success_at.iter().map(|v| percent(*v)).collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            g.agent,
            g.condition,
            g.start,
            g.episodes,
            g.scored,
            scores.join(" | "),
            successes.join(" | ")
        ));
    }
    out.push_str("\n## End reasons and errors\n\n");
    out.push_str("| agent | condition | start | end reasons | evaluation errors | infrastructure errors | unfinished | not applicable |\n");
    out.push_str("| --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n");
    for g in &report.groups {
        let reasons: Vec<String> = g.end_reasons.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let reasons = if reasons.is_empty() { "—".to_owned() } else { reasons.join(", ") };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            g.agent, g.condition, g.start, reasons, g.evaluation_errors, g.infrastructure_errors, g.unfinished, g.not_applicable
        ));
    }
    if !report.not_applicable.is_empty() {
        out.push_str("\n## Not applicable\n\n| task | agent | condition | start | why |\n| --- | --- | --- | --- | --- |\n");
        for na in &report.not_applicable {
            out.push_str(&format!("| {} | {} | {} | {} | {} |\n", na.task, na.agent, na.condition, na.start, na.reason));
        }
    }
    out
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_owned(), |v| format!("{:.1}", v * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(k: u32, score: f64, success: bool) -> SubmissionScore {
        SubmissionScore { k, score, success }
    }

    fn episode(agent: &str, end: Option<&str>, subs: Vec<SubmissionScore>) -> EpisodeRow {
        EpisodeRow {
            id: format!("{agent}-{}", subs.len()),
            task: "t".into(),
            agent: agent.into(),
            condition: "partial".into(),
            start: "clean".into(),
            repeat: 0,
            status: if end.is_some() { "finished".into() } else { "running".into() },
            end_reason: end.map(str::to_owned),
            submissions: subs,
        }
    }

    #[test]
    fn values_carry_forward_after_the_last_submission() {
        // Seed 000 Table 11, Luna under Partial: 0.2, 0.6, 0.8, 1.0.
        let luna = [sub(1, 0.2, false), sub(2, 0.6, false), sub(3, 0.8, false), sub(4, 1.0, true)];
        assert_eq!(score_at_k(&luna, 1), 0.2);
        assert_eq!(score_at_k(&luna, 3), 0.8);
        assert!(!success_at_k(&luna, 3));
        assert!(success_at_k(&luna, 4));
        // Full: accepted at the first submission, carried to @4.
        let full = [sub(1, 1.0, true)];
        assert_eq!(score_at_k(&full, 4), 1.0);
        assert!(success_at_k(&full, 4));
        // Out of order input, ended after two.
        let two = [sub(2, 0.5, false), sub(1, 0.25, false)];
        assert_eq!(score_at_k(&two, 1), 0.25);
        assert_eq!(score_at_k(&two, 4), 0.5);
    }

    #[test]
    fn no_submission_scores_zero() {
        assert_eq!(score_at_k(&[], 1), 0.0);
        assert!(!success_at_k(&[], 4));
    }

    #[test]
    fn groups_exclude_errors_from_means_and_count_them() {
        let rows = vec![
            episode("a", Some("accepted"), vec![sub(1, 1.0, true)]),
            episode("a", Some("submission_budget"), vec![sub(1, 0.0, false), sub(2, 0.5, false)]),
            episode("a", Some("evaluation_error"), vec![sub(1, 1.0, true)]),
            episode("a", None, vec![]),
        ];
        let na = vec![NotApplicableRow {
            task: "u".into(),
            agent: "a".into(),
            condition: "partial".into(),
            start: "clean".into(),
            reason: "no observations".into(),
        }];
        let report = summarize(&rows, &na);
        assert_eq!(report.groups.len(), 1);
        let g = &report.groups[0];
        assert_eq!((g.episodes, g.scored), (4, 2));
        assert_eq!(g.score_at, [Some(0.5), Some(0.75), Some(0.75), Some(0.75)]);
        assert_eq!(g.success_at, [Some(0.5); 4]);
        assert_eq!(g.evaluation_errors, 1);
        assert_eq!(g.unfinished, 1);
        assert_eq!(g.not_applicable, 1);
        assert_eq!(g.end_reasons.get("accepted"), Some(&1));
        assert_eq!(g.mean_submissions, Some(1.5));
        let md = render_markdown(&report, "run");
        assert!(md.contains("| a | partial | clean | 4 | 2 | 50.0 | 75.0 | 75.0 | 75.0 | 50.0 | 50.0 | 50.0 | 50.0 |"), "{md}");
    }

    #[test]
    fn a_group_with_only_not_applicable_has_no_means() {
        let na = vec![NotApplicableRow {
            task: "u".into(),
            agent: "b".into(),
            condition: "full".into(),
            start: "clean".into(),
            reason: "no instruction.full.md".into(),
        }];
        let report = summarize(&[], &na);
        assert_eq!(report.groups[0].score_at, [None; 4]);
        assert_eq!(report.groups[0].episodes, 0);
    }
}
