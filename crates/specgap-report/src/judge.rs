//! The offline clarification-coverage judge (seed 002 §4.1 "Requirement coverage", App. A.3).
//!
//! Seed 002 asks a panel of five models whether answering at least one recorded question
//! would reveal each clarification target. The offline judge replaces the panel by the
//! project's shared matching rule ([`specgap_task::matching`], also used by the `relay`
//! user): the agent's questions are split into question units, a target is **covered** when at
//! least one unit links to it, and its matched questions are the units that link.
//!
//! Verdicts are stored in the store's `judgements` table with judge [`OFFLINE_JUDGE`] (the
//! rule's version included), verdict
//! [`COVERED`] or [`MISSED`], and `matched_question_indices` holding 0-based *question-unit*
//! indices (see [`question_units`]) — the Q of seed 002 §4.2, so that Precision counts units.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use specgap_protocol::package::ClarificationTarget;
use specgap_protocol::result::ScoringKind;
use specgap_store::{Judgement, JudgementRow, QuestionRow, RunRows, Status, Store};
use specgap_task::matching;

use crate::context::TaskContext;

/// Judge name of the offline judge in the `judgements` table: `offline:` and the shared rule's
/// [`matching::RULE_VERSION`], so verdicts of an earlier rule (judge `offline`, version 1, whose
/// question units were numbered differently) are never read as this rule's; a report on an
/// older run judges it again under the current rule.
pub const OFFLINE_JUDGE: &str = "offline:3";
/// Verdict of a target that at least one question unit reaches.
pub const COVERED: &str = "covered";
/// Verdict of a target no question unit reaches.
pub const MISSED: &str = "missed";
/// Verdict of a target a model panel could not decide: none of its judges returned a ballot
/// (seed 002 A.3: never counted as missed). A run with one makes its clarification measures
/// unavailable.
pub const UNAVAILABLE: &str = "unavailable";

/// What `--judge panel` stands for: the one coverage panel with verdicts in the runs.
pub const PANEL_JUDGE: &str = "panel";

/// The judge name a report uses for `requested` (`ReportOptions::judge`): `offline` is the
/// current offline rule ([`OFFLINE_JUDGE`]); `panel` is the one coverage panel
/// (`panels.use = judge`) with verdicts in `runs`; any other name (`panel:<hash>`) must have
/// verdicts in some run.
///
/// # Errors
/// [`ReportError::JudgeChoice`](crate::ReportError::JudgeChoice) when `panel` matches no panel
/// or several, or a named judge has no verdict in any run.
pub fn resolve_judge(runs: &[crate::RunData], requested: &str) -> Result<String, crate::ReportError> {
    let judged_by = |name: &str| runs.iter().any(|r| r.rows.judgements.iter().any(|j| j.judgement.judge == name));
    match requested {
        "offline" | OFFLINE_JUDGE => Ok(OFFLINE_JUDGE.to_string()),
        PANEL_JUDGE => {
            let panels: BTreeSet<&str> = runs
                .iter()
                .flat_map(|r| r.rows.panels.iter())
                .filter(|p| p.use_ == specgap_store::PanelUse::Judge && judged_by(&p.name))
                .map(|p| p.name.as_str())
                .collect();
            match panels.len() {
                1 => Ok(panels.into_iter().next().unwrap_or_default().to_string()),
                0 => Err(crate::ReportError::JudgeChoice(
                    "no coverage panel has judged these runs; run `specgap judge RUN --panel FILE` first, or give --panel FILE to the report".into(),
                )),
                _ => Err(crate::ReportError::JudgeChoice(format!(
                    "several coverage panels judged these runs ({}); name one with --judge panel:<hash>",
                    panels.into_iter().collect::<Vec<_>>().join(", ")
                ))),
            }
        }
        name if judged_by(name) => Ok(name.to_string()),
        name => Err(crate::ReportError::JudgeChoice(format!(
            "judge `{name}` has no verdicts in these runs; expected offline, panel or panel:<hash>"
        ))),
    }
}

/// One question unit of an episode (seed 002 A.3 "Question units").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionUnit {
    /// 0-based index over all units of the episode: units of question 0 first, in order.
    pub index: u32,
    /// `questions.idx` of the message it came from.
    pub question: u32,
    /// 1-based interaction turn: the rank of the agent turn that asked it among the distinct
    /// agent turns that asked anything (seed 002 §4.2 "counting from 1").
    pub turn: u32,
    /// The unit's text.
    pub text: String,
    /// Whether the unit is the text after the last question mark of a message that has one:
    /// it asks only through its request sentences
    /// ([`matching::TargetMatcher::unit_links_after_questions`]).
    pub after_questions: bool,
}

impl QuestionUnit {
    /// The indices of the targets this unit links to under the shared rule.
    pub fn links(&self, matcher: &matching::TargetMatcher<'_>) -> Vec<usize> {
        if self.after_questions { matcher.unit_links_after_questions(&self.text) } else { matcher.unit_links(&self.text) }
    }
}

/// Splits an episode's questions (any order; sorted by `idx` here) into question units with
/// the shared rule [`matching::question_units`], numbering units and interaction turns.
pub fn question_units(questions: &[&QuestionRow]) -> Vec<QuestionUnit> {
    let mut sorted: Vec<&QuestionRow> = questions.to_vec();
    sorted.sort_by_key(|q| q.idx);
    let asking_turns: BTreeSet<u32> = sorted.iter().map(|q| q.question.turn).collect();
    let turn_rank = |turn: u32| asking_turns.range(..=turn).count() as u32;
    let mut units = Vec::new();
    for q in sorted {
        let marked = q.question.text.contains(['?', '？']);
        for text in matching::question_units(&q.question.text) {
            units.push(QuestionUnit {
                index: units.len() as u32,
                question: q.idx,
                turn: turn_rank(q.question.turn),
                text: text.to_string(),
                after_questions: marked && !text.contains(['?', '？']),
            });
        }
    }
    units
}

/// The offline verdict on every target: covered when some unit links to it by the shared rule
/// ([`matching::TargetMatcher::unit_links`] over the task's targets), with the linking units'
/// indices.
pub fn judge_offline(units: &[QuestionUnit], targets: &[ClarificationTarget]) -> Vec<Judgement> {
    let matcher = matching::TargetMatcher::new(targets);
    judge_with(units, targets, &mut |unit| unit.links(&matcher))
}

/// [`judge_offline`] with the unit → linked target indices function passed in (a memo of it,
/// in [`judge_missing`]).
fn judge_with(
    units: &[QuestionUnit],
    targets: &[ClarificationTarget],
    links: &mut dyn FnMut(&QuestionUnit) -> Vec<usize>,
) -> Vec<Judgement> {
    let linked: Vec<Vec<usize>> = units.iter().map(links).collect();
    targets
        .iter()
        .enumerate()
        .map(|(index, target)| {
            let matched: Vec<u32> =
                units.iter().zip(&linked).filter(|(_, targets)| targets.contains(&index)).map(|(u, _)| u.index).collect();
            Judgement {
                judge: OFFLINE_JUDGE.to_string(),
                target: target.id.clone(),
                verdict: if matched.is_empty() { MISSED } else { COVERED }.to_string(),
                matched_question_indices: matched,
            }
        })
        .collect()
}

/// What [`judge_missing`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JudgeSummary {
    /// Episodes judged now (they had no offline judgement).
    pub judged: usize,
    /// Judgements written to the store.
    pub recorded: usize,
    /// Why they were not recorded, if they were not (they are still used in memory).
    pub warning: Option<String>,
}

/// Runs the offline judge on every finished delivery episode whose task has clarification
/// targets and that has no offline judgement yet; adds the verdicts to `rows.judgements` and,
/// when `store` is given, records them there in one transaction
/// ([`Store::record_judgements`]). A store that refuses the write (a read-only copy) leaves a
/// warning, not an error: the report still uses the verdicts.
pub fn judge_missing(store: Option<&Store>, rows: &mut RunRows, tasks: &BTreeMap<String, TaskContext>) -> JudgeSummary {
    let judged: BTreeSet<&str> =
        rows.judgements.iter().filter(|j| j.judgement.judge == OFFLINE_JUDGE).map(|j| j.episode.as_str()).collect();
    let mut questions: HashMap<&str, Vec<&QuestionRow>> = HashMap::new();
    for q in &rows.questions {
        questions.entry(q.episode.as_str()).or_default().push(q);
    }
    let mut new_rows = Vec::new();
    let mut summary = JudgeSummary::default();
    // Repeats and scripted agents ask the same questions again: the rule is a pure function
    // of (unit, whether it follows the message's questions, the task's targets), so each
    // distinct unit of a task is matched once.
    let mut matchers: HashMap<&str, matching::TargetMatcher<'_>> = HashMap::new();
    let mut memo: HashMap<&str, HashMap<(String, bool), Vec<usize>>> = HashMap::new();
    for episode in &rows.episodes {
        let eligible =
            episode.status == Status::Finished && episode.scoring_kind == ScoringKind::Delivery && !judged.contains(episode.id.as_str());
        let Some(context) = tasks.get(&episode.task).filter(|c| eligible && !c.targets.is_empty()) else {
            continue;
        };
        let asked = questions.get(episode.id.as_str()).map(Vec::as_slice).unwrap_or_default();
        summary.judged += 1;
        let matcher = matchers.entry(episode.task.as_str()).or_insert_with(|| matching::TargetMatcher::new(&context.targets));
        let by_unit = memo.entry(episode.task.as_str()).or_default();
        let mut links = |unit: &QuestionUnit| -> Vec<usize> {
            let key = (unit.text.clone(), unit.after_questions);
            if let Some(linked) = by_unit.get(&key) {
                return linked.clone();
            }
            let linked = unit.links(matcher);
            by_unit.insert(key, linked.clone());
            linked
        };
        for judgement in judge_with(&question_units(asked), &context.targets, &mut links) {
            new_rows.push(JudgementRow { episode: episode.id.clone(), judgement });
        }
    }
    if let (Some(store), false) = (store, new_rows.is_empty()) {
        match store.record_judgements(&new_rows) {
            Ok(()) => summary.recorded = new_rows.len(),
            Err(err) => summary.warning = Some(format!("offline judgements not recorded in the store: {err}")),
        }
    }
    rows.judgements.extend(new_rows);
    summary
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_judge_name_carries_the_rule_version() {
        assert_eq!(super::OFFLINE_JUDGE, format!("offline:{}", specgap_task::matching::RULE_VERSION));
    }
}
