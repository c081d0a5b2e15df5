//! One episode with everything the store holds about it, joined from the per-table rows, and
//! the grouping dimensions of a report.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use specgap_protocol::result::{ScoringKind, TestOutcome};
use specgap_store::{DeliveryRow, EpisodeRow, Extraction, ExtractionStatus, Judgement, QuestionRow, Status, SubmissionRow};

use crate::context::TaskContext;
use crate::first::{SubmissionScore, score_at_k, success_at_k};
use crate::keyed::KeyedMap;
use crate::run::RunData;
use crate::verdicts::ByK;

/// An episode joined with its submissions, per-submission outcomes, questions and judgements.
/// Borrowed from the [`RunData`] it came from.
#[derive(Debug, Clone)]
pub struct Episode<'a> {
    /// Index of the run (in the slice given to [`index_episodes`]).
    pub run: usize,
    /// The run directory (for diffs and trajectories).
    pub run_dir: &'a Path,
    /// The `episodes` row.
    pub row: &'a EpisodeRow,
    /// Every submission, by k.
    pub submissions: Vec<&'a SubmissionRow>,
    /// Validly evaluated submissions as Score / Success, by k.
    pub scores: Vec<SubmissionScore>,
    /// Test outcomes by k (0 = the residual starting state) and test id.
    pub tests: ByK<'a, TestOutcome>,
    /// Requirement verdicts by k (0 = starting state) and requirement id.
    pub requirements: ByK<'a, bool>,
    /// Delivery verdicts by k.
    pub deliveries: BTreeMap<u32, &'a DeliveryRow>,
    /// Questions by idx.
    pub questions: Vec<&'a QuestionRow>,
    /// Judgements of every judge.
    pub judgements: Vec<&'a Judgement>,
    /// The report's extraction panel's verdict on the episode's last submission, when the
    /// report scores deliveries by extraction ([`crate::extraction`]).
    pub extraction: Option<&'a Extraction>,
    /// The task package's context, when the package could be read.
    pub context: Option<&'a TaskContext>,
    /// Whether the residual starting state passed the verifier before the first turn
    /// (`start_results.success = 1`): such a state is not a valid residual state (seed 001
    /// §3.1, App. B.3), so the residual measures leave the episode out.
    pub start_passed: bool,
}

/// Joins the rows of every run into episodes, in run order and then by episode id.
pub fn index_episodes<'a>(runs: &[&'a RunData]) -> Vec<Episode<'a>> {
    let mut out = Vec::new();
    for (run_index, run) in runs.iter().enumerate() {
        let rows = &run.rows;
        let first = out.len();
        out.reserve(rows.episodes.len());
        for row in &rows.episodes {
            out.push(Episode {
                run: run_index,
                run_dir: run.dir.as_path(),
                row,
                submissions: Vec::new(),
                scores: Vec::new(),
                tests: ByK::default(),
                requirements: ByK::default(),
                deliveries: BTreeMap::new(),
                questions: Vec::new(),
                judgements: Vec::new(),
                extraction: None,
                context: run.tasks.get(&row.task),
                start_passed: false,
            });
        }
        let mut finder = EpisodeFinder::new(rows.episodes.iter().map(|e| e.id.as_str()).collect());
        let mut slot = |id: &str| finder.position(id).map(|i| first + i);
        for s in &rows.submissions {
            if let Some(i) = slot(&s.episode) {
                out[i].submissions.push(s);
                if let (true, Some(score), Some(success)) = (s.valid_evaluation, s.score, s.success) {
                    out[i].scores.push(SubmissionScore { k: s.k, score, success });
                }
            }
        }
        for t in &rows.tests {
            if let Some(i) = slot(&t.episode) {
                out[i].tests.push(t.k, t.test.as_str(), t.outcome);
            }
        }
        for r in &rows.requirement_outcomes {
            if let Some(i) = slot(&r.episode) {
                out[i].requirements.push(r.k, r.requirement.as_str(), r.pass);
            }
        }
        for d in &rows.deliveries {
            if let Some(i) = slot(&d.episode) {
                out[i].deliveries.insert(d.k, d);
            }
        }
        for q in &rows.questions {
            if let Some(i) = slot(&q.episode) {
                out[i].questions.push(q);
            }
        }
        for j in &rows.judgements {
            if let Some(i) = slot(&j.episode) {
                out[i].judgements.push(&j.judgement);
            }
        }
        for r in &rows.start_results {
            if let (Some(true), Some(i)) = (r.success, slot(&r.episode)) {
                out[i].start_passed = true;
            }
        }
        for episode in &mut out[first..] {
            episode.submissions.sort_by_key(|s| s.k);
            episode.scores.sort_by_key(|s| s.k);
            episode.questions.sort_by_key(|q| q.idx);
            episode.tests.finish();
            episode.requirements.finish();
        }
    }
    out
}

/// Finds the position of an episode among a run's `episodes` rows, for the rows of the other
/// tables. A store returns `episodes` sorted by id and every other table sorted by episode, so
/// the finder keeps a cursor and searches forward from it (galloping: usually the episode at
/// or just after the cursor), back only when a new table starts; this is a merge join, several
/// times faster on 100,000 episodes than hashing every row's id. Rows built in another order
/// fall back to a hash map.
struct EpisodeFinder<'a> {
    ids: Vec<&'a str>,
    /// Whether `ids` increase strictly (sorted, no duplicates); otherwise `by_id` is used.
    sorted: bool,
    cursor: usize,
    by_id: KeyedMap<&'a str, usize>,
}

impl<'a> EpisodeFinder<'a> {
    /// A finder over the ids of a run's `episodes` rows, in their order.
    fn new(ids: Vec<&'a str>) -> Self {
        let sorted = ids.windows(2).all(|w| w[0] < w[1]);
        let by_id = if sorted {
            KeyedMap::default()
        } else {
            // Later rows win, as inserting them one by one would.
            ids.iter().enumerate().map(|(i, id)| (*id, i)).collect()
        };
        EpisodeFinder { ids, sorted, cursor: 0, by_id }
    }

    /// Position of episode `id`, or `None` when the run has no such episode.
    fn position(&mut self, id: &str) -> Option<usize> {
        if !self.sorted {
            return self.by_id.get(id).copied();
        }
        let ids = &self.ids;
        let at = match ids.get(self.cursor) {
            Some(current) if *current == id => return Some(self.cursor),
            Some(current) if *current < id => {
                let start = self.cursor + 1;
                let rest = &ids[start..];
                // Double the window until its last id reaches `id`, then search inside it.
                let mut window = 1;
                while window < rest.len() && rest[window - 1] < id {
                    window *= 2;
                }
                start + rest[..window.min(rest.len())].partition_point(|x| *x < id)
            }
            _ => ids[..self.cursor].partition_point(|x| *x < id),
        };
        self.cursor = at;
        (ids.get(at) == Some(&id)).then_some(at)
    }
}

impl<'a> Episode<'a> {
    /// Whether the episode enters the measures: it finished, for a reason other than an error
    /// or an interruption (DESIGN §3 infrastructure failures; first report's rule).
    pub fn is_scored(&self) -> bool {
        self.row.status == Status::Finished && self.row.end_reason.is_some_and(|r| r.is_scored())
    }

    /// Score@k, carried forward (seed 000 §4.1); 0 without a valid submission.
    pub fn score_at(&self, k: u32) -> f64 {
        score_at_k(&self.scores, k)
    }

    /// Success@k, carried forward (seed 000 §4.1); false without a valid submission.
    pub fn success_at(&self, k: u32) -> bool {
        success_at_k(&self.scores, k)
    }

    /// Score of the last valid submission (0 without one): the delivery score s of seed 002
    /// §4.2 and the run outcome of seed 001.
    pub fn final_score(&self) -> f64 {
        self.score_at(u32::MAX)
    }

    /// Success of the last valid submission (false without one): y of seed 001 App. C.2.
    pub fn final_success(&self) -> bool {
        self.success_at(u32::MAX)
    }

    /// The k of the last valid submission.
    pub fn final_k(&self) -> Option<u32> {
        self.scores.last().map(|s| s.k)
    }

    /// Seed 001 App. D.1 "normally submitted": a scored episode whose last submission the
    /// agent declared itself (`submit`, not an automatic budget or loop submission) and whose
    /// evaluation is valid.
    pub fn normally_submitted(&self) -> bool {
        self.is_scored() && self.submissions.last().is_some_and(|s| s.agent_declared && !s.automatic && s.valid_evaluation)
    }

    /// y of seed 001 (§3.1 eq. 1; App. C.1, D.1): the run succeeds only when the agent declared
    /// the work complete (its last submission is agent-declared, not an automatic budget or loop
    /// submission) and that submission's valid evaluation succeeds. A run that exhausted a budget,
    /// ended in a loop or stopped without submitting counts as a failure, whatever an automatic
    /// submission of its workspace scored; Score@k of seed 000 keeps that submission instead
    /// ([`Episode::score_at`], carried forward).
    pub fn declared_success(&self) -> bool {
        self.normally_submitted() && self.final_success()
    }

    /// Whether the consequence feedback of submission `k` (an observation naming its
    /// `failing_requirement`) reached the owner's next message (seed 000 Alg. 1 lines 11–13).
    /// The engine gives it after every failed agent-declared submission under a feedback
    /// condition except the last one the budget allows; so a failed, agent-declared submission
    /// with a failing requirement reported unless it is the episode's last submission and the
    /// episode ended right there (`submitted`, `submission_budget`). Automatic submissions get
    /// no feedback.
    pub fn reported_at(&self, k: u32) -> Option<&'a str> {
        use specgap_protocol::run::EndReason;
        let position = self.submissions.iter().position(|s| s.k == k)?;
        let s = self.submissions[position];
        if s.automatic || !s.valid_evaluation || s.success != Some(false) {
            return None;
        }
        let last = position + 1 == self.submissions.len();
        let ended_there = matches!(self.row.end_reason, Some(EndReason::Submitted | EndReason::SubmissionBudget | EndReason::Accepted));
        if last && ended_there {
            return None;
        }
        s.failing_requirement.as_deref()
    }

    /// Whether the task is delivery-scored.
    pub fn is_delivery(&self) -> bool {
        self.row.scoring_kind == ScoringKind::Delivery
    }

    /// The residual state id, for a residual start.
    pub fn state(&self) -> Option<&'a str> {
        self.row.start.strip_prefix("residual:")
    }

    /// The residual state id, for a residual start from a valid state (one that failed the
    /// verifier before the first turn, or was not evaluated then); `None` for a clean start and
    /// for an invalid state ([`Episode::start_passed`]).
    pub fn valid_state(&self) -> Option<&'a str> {
        self.state().filter(|_| !self.start_passed)
    }

    /// Whether the episode started from the clean workspace.
    pub fn is_clean(&self) -> bool {
        self.row.start == "clean"
    }

    /// Tests failing (`fail` or `error`) at submission `k` (0 = starting state); `None` when no
    /// test outcome is stored for that k.
    pub fn failing_tests(&self, k: u32) -> Option<BTreeSet<&'a str>> {
        self.tests
            .get(k)
            .map(|tests| tests.iter().filter(|(_, o)| matches!(o, TestOutcome::Fail | TestOutcome::Error)).map(|(t, _)| t).collect())
    }

    /// Whether `test` passes at submission `k`.
    pub fn test_passes(&self, k: u32, test: &str) -> bool {
        self.tests.get(k).and_then(|t| t.get(test)).is_some_and(|o| o == TestOutcome::Pass)
    }

    /// Whether requirement `id` passes at submission `k`, if reported.
    pub fn requirement_passes(&self, k: u32, id: &str) -> Option<bool> {
        self.requirements.get(k).and_then(|r| r.get(id))
    }

    /// Whether the delivery at the last valid submission is valid (hard constraints hold);
    /// false without one.
    pub fn final_valid(&self) -> bool {
        self.final_k().and_then(|k| self.deliveries.get(&k)).is_some_and(|d| d.valid)
    }

    /// The delivery score s of seed 002 §4.2: the extraction panel's agreed score when the
    /// episode has one ([`Episode::extraction`]), else the direct artifact's
    /// ([`Episode::final_score`]; docs/decisions.md "Panels: extraction").
    pub fn delivery_score(&self) -> f64 {
        match self.extraction {
            Some(e) if e.status == ExtractionStatus::Scored => e.score.unwrap_or(0.0),
            _ => self.final_score(),
        }
    }

    /// Whether the delivery reaches the reference, by the same precedence as
    /// [`Episode::delivery_score`].
    pub fn delivery_success(&self) -> bool {
        match self.extraction {
            Some(e) if e.status == ExtractionStatus::Scored => e.success.unwrap_or(false),
            _ => self.final_success(),
        }
    }

    /// Whether the delivery is valid, by the same precedence (the validity of an evaluation
    /// supporting the agreed score, seed 002 §4.1).
    pub fn delivery_valid(&self) -> bool {
        match self.extraction {
            Some(e) if e.status == ExtractionStatus::Scored => e.valid.unwrap_or(false),
            _ => self.final_valid(),
        }
    }

    /// Whether the extraction panel found no majority: the run has no delivery score
    /// ("unavailable", seed 002 A.3) and is listed, never counted as 0.
    pub fn extraction_unavailable(&self) -> bool {
        self.extraction.is_some_and(|e| e.status == ExtractionStatus::Unavailable)
    }

    /// The judgements of one judge.
    pub fn judgements_of(&self, judge: &str) -> Vec<&'a Judgement> {
        self.judgements.iter().copied().filter(|j| j.judge == judge).collect()
    }
}

/// The condition string's preset: the part before the first `+` override (DESIGN §4).
pub fn preset(condition: &str) -> &str {
    condition.split('+').next().unwrap_or(condition)
}

/// R of an `oracle:R` condition.
pub fn oracle_ratio(condition: &str) -> Option<f64> {
    preset(condition).strip_prefix("oracle:").and_then(|r| r.parse().ok())
}

/// Whether `ask_user` is offered under a condition: the preset's column of DESIGN §4,
/// changed by an `ask=on|off` override.
pub fn offers_ask(condition: &str) -> bool {
    if condition.contains("+ask=off") {
        return false;
    }
    condition.contains("+ask=on") || ["partial", "full", "plan", "interact", "interact-req"].contains(&preset(condition))
}

/// Whether a failed submission returns consequence feedback under a condition: the preset's
/// column of DESIGN §4 (`partial`, `literal`), changed by a `feedback=on|off` override.
pub fn gives_feedback(condition: &str) -> bool {
    if condition.contains("+feedback=off") {
        return false;
    }
    condition.contains("+feedback=on") || ["partial", "literal"].contains(&preset(condition))
}

/// A grouping dimension of a report (`--group-by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dim {
    /// Agent spec.
    Agent,
    /// Canonical condition string.
    Condition,
    /// `clean` or `residual:<id>`.
    Start,
    /// Task family (seed 000 per-family breakdowns).
    Family,
    /// Task name.
    Task,
}

impl Dim {
    /// The dimension's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Dim::Agent => "agent",
            Dim::Condition => "condition",
            Dim::Start => "start",
            Dim::Family => "family",
            Dim::Task => "task",
        }
    }

    /// Parses a name.
    ///
    /// # Errors
    /// [`crate::ReportError::UnknownDimension`].
    pub fn parse(name: &str) -> Result<Dim, crate::ReportError> {
        Ok(match name.trim() {
            "agent" => Dim::Agent,
            "condition" => Dim::Condition,
            "start" => Dim::Start,
            "family" => Dim::Family,
            "task" => Dim::Task,
            other => return Err(crate::ReportError::UnknownDimension(other.to_string())),
        })
    }

    /// The episode's value on this dimension.
    pub fn value(self, episode: &Episode<'_>) -> String {
        self.value_str(episode).to_string()
    }

    /// [`Dim::value`], borrowed from the episode row.
    pub fn value_str<'a>(self, episode: &Episode<'a>) -> &'a str {
        match self {
            Dim::Agent => &episode.row.agent,
            Dim::Condition => &episode.row.condition,
            Dim::Start => &episode.row.start,
            Dim::Family => episode.row.family.as_str(),
            Dim::Task => &episode.row.task,
        }
    }
}

/// The default grouping: agent × condition × start.
pub const DEFAULT_GROUP_BY: [Dim; 3] = [Dim::Agent, Dim::Condition, Dim::Start];

/// One group's key: the values on each dimension, in the order of the dimensions.
pub type GroupKey = Vec<String>;

/// Groups episodes by `dims`, keeping only those `keep` accepts; keys sorted.
pub fn group_by<'e, 'a>(
    episodes: &'e [Episode<'a>],
    dims: &[Dim],
    keep: impl Fn(&Episode<'a>) -> bool,
) -> BTreeMap<GroupKey, Vec<&'e Episode<'a>>> {
    group_sorted(episodes.iter().filter(|e| keep(e)), dims, |episode, dim| dim.value_str(episode))
}

/// Groups `items` by their values on `dims` (`value`), each group's items in input order; keys
/// sorted. Shared by [`group_by`] and [`crate::plan::group_planned`].
pub(crate) fn group_sorted<'k, T: Copy>(
    items: impl IntoIterator<Item = T>,
    dims: &[Dim],
    value: impl Fn(T, Dim) -> &'k str,
) -> BTreeMap<GroupKey, Vec<T>> {
    // Keys borrowed from the items, looked up through one reused buffer: no allocation per
    // item (a report groups 10^6 episodes several times). A hash map costs one hash and one
    // comparison per item where a B-tree compares the key with ten or more others; the
    // groups are sorted once at the end. Borrowed and owned keys order the same way, so the
    // result is as if grouped by owned keys into a sorted map.
    let mut groups: KeyedMap<Vec<&'k str>, Vec<T>> = KeyedMap::default();
    let mut key: Vec<&'k str> = Vec::with_capacity(dims.len());
    for item in items {
        key.clear();
        key.extend(dims.iter().map(|d| value(item, *d)));
        match groups.get_mut(key.as_slice()) {
            Some(members) => members.push(item),
            None => {
                groups.insert(key.clone(), vec![item]);
            }
        }
    }
    groups.into_iter().map(|(key, members)| (key.into_iter().map(str::to_string).collect(), members)).collect()
}

/// Mean of per-task means: each task's episodes are averaged first, then the tasks (every
/// task weighs the same; seed 001 App. C eq. 3–4, seed 002 §4.2 Quality). `None` without
/// values.
pub fn task_macro<'e, 'a: 'e>(
    episodes: impl IntoIterator<Item = &'e Episode<'a>>,
    value: impl Fn(&Episode<'a>) -> Option<f64>,
) -> Option<f64> {
    let per_task = per_task_means(episodes, value);
    mean(per_task.values().copied())
}

/// Per-task means of `value` over the episodes where it is defined.
pub fn per_task_means<'e, 'a: 'e>(
    episodes: impl IntoIterator<Item = &'e Episode<'a>>,
    value: impl Fn(&Episode<'a>) -> Option<f64>,
) -> BTreeMap<String, f64> {
    let mut sums: KeyedMap<&'a str, (f64, usize)> = KeyedMap::default();
    for episode in episodes {
        if let Some(v) = value(episode) {
            let slot = sums.entry(episode.row.task.as_str()).or_insert((0.0, 0));
            slot.0 += v;
            slot.1 += 1;
        }
    }
    sums.into_iter().map(|(task, (sum, n))| (task.to_string(), sum / n as f64)).collect()
}

/// Arithmetic mean; `None` for no values.
pub fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.into_iter().fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// 1.0 for true, 0.0 for false.
pub fn indicator(flag: bool) -> f64 {
    if flag { 1.0 } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::EpisodeFinder;

    /// Positions of `queries` (in this order) with one finder over `ids`.
    fn positions(ids: &[&'static str], queries: &[&str]) -> Vec<Option<usize>> {
        let mut finder = EpisodeFinder::new(ids.to_vec());
        queries.iter().map(|q| finder.position(q)).collect()
    }

    #[test]
    fn sorted_ids_are_found_forward_backward_and_absent() {
        let ids = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
        // One table (sorted, sparse, with an unknown episode), then a second table restarting.
        let queries = ["b", "b", "c", "h", "bb", "j", "zz", "a", "a", "e", "j", "0"];
        assert_eq!(
            positions(&ids, &queries),
            [Some(1), Some(1), Some(2), Some(7), None, Some(9), None, Some(0), Some(0), Some(4), Some(9), None]
        );
    }

    #[test]
    fn unsorted_or_repeated_ids_use_the_hash_map_where_the_last_row_wins() {
        let ids = ["c", "a", "b", "a"];
        assert_eq!(positions(&ids, &["a", "b", "c", "d"]), [Some(3), Some(2), Some(0), None]);
    }

    #[test]
    fn no_episodes_find_nothing() {
        assert_eq!(positions(&[], &["a"]), [None]);
    }
}
