//! The coverage-judge panel (seed 002 §4.1 "Requirement coverage", A.3, A.9.5): for every
//! clarification target of a finished delivery episode, each judge receives the target (its
//! id and description), its trigger questions as matching hints and the episode's numbered
//! question units — never the registered answer, the issue type or the domain — and returns
//! whether answering some question would state the target, with the numbers of those
//! questions. The vote rule is [`crate::vote::coverage_verdict`].
//!
//! [`judge_run`] is a resumable step: verdicts go to the store's `judgements` (judge = the
//! panel's name) with their ballots, one episode per transaction; a later call judges only
//! the targets that have no verdict of this panel yet or whose verdict is `unavailable` (no
//! judge answered: a service that was down may answer now). A report reads the verdicts and
//! asks no model. An episode without question units gets `missed` on every target without a
//! request (there is nothing to judge; seed 002 A.3 gives it Recall 0).
//!
//! Question units and their numbering are the report's ([`specgap_report::judge::question_units`]),
//! so the indices a judge cites are the ones Precision counts.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use specgap_engine::session::{Deadline, SessionLink, UsageSink};
use specgap_protocol::package::ClarificationTarget;
use specgap_protocol::result::ScoringKind;
use specgap_report::context::TaskContext;
use specgap_report::judge::{COVERED, MISSED, QuestionUnit, UNAVAILABLE, question_units};
use specgap_store::{Ballot, Judgement, QuestionRow, Role, Status, Store};

use crate::config::Panel;
use crate::error::PanelError;
use crate::order::{call_order, subject_seed};
use crate::prompts::fill;
use crate::seat::SeatClient;
use crate::vote::{CoverageBallot, CoverageVerdict, coverage_verdict};

/// How a judge step runs.
#[derive(Debug, Clone, Default)]
pub struct JudgeOptions {
    /// Episodes judged at once (each worker has its own clients); at least 1.
    pub jobs: usize,
    /// Set by Ctrl-C: requests in flight are abandoned, the episode they belong to is not
    /// recorded, and the step ends.
    pub stop: Option<Arc<AtomicBool>>,
}

/// What [`judge_run`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JudgeSummary {
    /// The panel's name (its judge name in `judgements`).
    pub panel: String,
    /// Episodes that had targets to judge.
    pub episodes: usize,
    /// Targets given a verdict now.
    pub targets: usize,
    /// Of those, covered.
    pub covered: usize,
    /// Of those, unavailable (no judge answered).
    pub unavailable: usize,
    /// Ballots dropped (malformed twice, or the service failed).
    pub dropped: usize,
    /// Episodes already judged by this panel.
    pub already: usize,
    /// Whether a stop request ended the step early.
    pub interrupted: bool,
    /// Tasks whose packages could not be read (their episodes are not judged).
    pub warnings: Vec<String>,
}

/// One episode's pending work.
struct Work<'a> {
    episode: String,
    units: Vec<QuestionUnit>,
    targets: Vec<&'a ClarificationTarget>,
}

/// Runs the coverage panel over the run in `store` (module guide); `seed` is the run seed
/// (the call order's).
///
/// # Errors
/// Store errors; [`PanelError::Client`] when a model client cannot be built.
pub fn judge_run(store: &Store, panel: &Panel, options: &JudgeOptions) -> Result<JudgeSummary, PanelError> {
    store.record_panel(&panel.record())?;
    let seed = store.config().seed;
    let rows = store.rows()?;
    let (tasks, warnings) = specgap_report::run::load_task_contexts(store.config());
    let work = pending_work(&rows, &tasks, &panel.name);
    let mut summary = JudgeSummary { panel: panel.name.clone(), warnings, already: work.already, ..Default::default() };
    summary.episodes = work.items.len();
    let queue = Mutex::new(work.items.into_iter());
    let totals = Mutex::new(Tally::default());
    let stopped = AtomicBool::new(false);
    let jobs = options.jobs.max(1);
    let failure: Mutex<Option<PanelError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for worker in 0..jobs {
            let (queue, totals, stopped, failure) = (&queue, &totals, &stopped, &failure);
            scope.spawn(move || {
                let result = run_worker(store, panel, seed, worker, options, queue, totals, stopped);
                if let Err(error) = result {
                    stopped.store(true, Ordering::SeqCst);
                    lock(failure).get_or_insert(error);
                }
            });
        }
    });
    if let Some(error) = lock(&failure).take() {
        return Err(error);
    }
    let tally = lock(&totals).clone();
    summary.targets = tally.targets;
    summary.covered = tally.covered;
    summary.unavailable = tally.unavailable;
    summary.dropped = tally.dropped;
    summary.interrupted = tally.interrupted;
    Ok(summary)
}

#[derive(Debug, Clone, Default)]
struct Tally {
    targets: usize,
    covered: usize,
    unavailable: usize,
    dropped: usize,
    interrupted: bool,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Pending<'a> {
    items: Vec<Work<'a>>,
    already: usize,
}

/// Every finished delivery episode of a task with targets, with the targets this panel has
/// not decided yet.
fn pending_work<'a>(rows: &specgap_store::RunRows, tasks: &'a BTreeMap<String, TaskContext>, panel: &str) -> Pending<'a> {
    let mut decided: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for j in rows.judgements.iter().filter(|j| j.judgement.judge == panel && j.judgement.verdict != UNAVAILABLE) {
        decided.entry(j.episode.as_str()).or_default().insert(j.judgement.target.as_str());
    }
    let mut questions: HashMap<&str, Vec<&QuestionRow>> = HashMap::new();
    for q in &rows.questions {
        questions.entry(q.episode.as_str()).or_default().push(q);
    }
    let mut items = Vec::new();
    let mut already = 0;
    for episode in &rows.episodes {
        if episode.status != Status::Finished || episode.scoring_kind != ScoringKind::Delivery {
            continue;
        }
        let Some(context) = tasks.get(&episode.task).filter(|c| !c.targets.is_empty()) else { continue };
        let done = decided.get(episode.id.as_str());
        let targets: Vec<&ClarificationTarget> =
            context.targets.iter().filter(|t| done.is_none_or(|d| !d.contains(t.id.as_str()))).collect();
        if targets.is_empty() {
            already += 1;
            continue;
        }
        let asked = questions.get(episode.id.as_str()).map(Vec::as_slice).unwrap_or_default();
        items.push(Work { episode: episode.id.clone(), units: question_units(asked), targets });
    }
    Pending { items, already }
}

#[allow(clippy::too_many_arguments)]
fn run_worker<'a>(
    store: &Store,
    panel: &Panel,
    seed: u64,
    worker: usize,
    options: &JudgeOptions,
    queue: &Mutex<std::vec::IntoIter<Work<'a>>>,
    totals: &Mutex<Tally>,
    stopped: &AtomicBool,
) -> Result<(), PanelError> {
    let mut seats = panel
        .models
        .iter()
        .enumerate()
        .map(|(seat, model)| SeatClient::new(seat as u32, model, subject_seed(seed, "judge", &format!("{worker}:{seat}"))))
        .collect::<Result<Vec<_>, _>>()?;
    loop {
        if stopped.load(Ordering::SeqCst) || options.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
            return Ok(());
        }
        let Some(work) = lock(queue).next() else { return Ok(()) };
        let mut deadline = Deadline::none();
        if let Some(stop) = &options.stop {
            deadline = deadline.with_stop(Arc::clone(stop));
        }
        let link = SessionLink { deadline, usage: UsageSink::to_store(Role::Judge, store.usage_recorder(&work.episode)?) };
        for seat in &mut seats {
            seat.attach(&link);
        }
        let judged = judge_episode(panel, seed, &work, &mut seats);
        if let Some(error) = link.usage.take_failure() {
            return Err(error.into());
        }
        let Some(judged) = judged else {
            lock(totals).interrupted = true;
            stopped.store(true, Ordering::SeqCst);
            return Ok(());
        };
        store.record_panel_judgements(&work.episode, &judged.ballots, &judged.judgements)?;
        let mut tally = lock(totals);
        tally.targets += judged.judgements.len();
        tally.covered += judged.judgements.iter().filter(|j| j.verdict == COVERED).count();
        tally.unavailable += judged.judgements.iter().filter(|j| j.verdict == UNAVAILABLE).count();
        tally.dropped += judged.ballots.iter().filter(|b| b.outcome != specgap_store::BallotOutcome::Ballot).count();
    }
}

/// One episode's ballots and verdicts.
struct Judged {
    ballots: Vec<Ballot>,
    judgements: Vec<Judgement>,
}

/// Judges the pending targets of one episode; `None` when a request was abandoned (a stop).
fn judge_episode(panel: &Panel, seed: u64, work: &Work<'_>, seats: &mut [SeatClient]) -> Option<Judged> {
    let mut judged = Judged { ballots: Vec::new(), judgements: Vec::new() };
    if work.units.is_empty() {
        judged.judgements = work.targets.iter().map(|t| verdict(&panel.name, t, &CoverageVerdict::Missed)).collect();
        return Some(judged);
    }
    let questions = numbered_questions(&work.units);
    let units = work.units.len() as u32;
    let parse = move |object: &Map<String, Value>| parse_coverage(object, units);
    for target in &work.targets {
        let user = judge_message(panel, target, &questions);
        let mut returned = Vec::new();
        for (position, seat) in call_order(seed, &work.episode, &target.id, seats.len()).into_iter().enumerate() {
            let client = &mut seats[seat as usize];
            let asked = client.ask(&panel.prompts.system, &user, &panel.prompts.repair, &parse);
            if asked.abandoned {
                return None;
            }
            if let Some(ballot) = &asked.parsed {
                returned.push(ballot.clone());
            }
            judged.ballots.push(Ballot {
                panel: panel.name.clone(),
                subject: target.id.clone(),
                seat,
                model: client.model.clone(),
                position: position as u32,
                prompt_version: panel.prompts.version.clone(),
                outcome: asked.outcome,
                vote: asked.vote,
                request: Value::Array(asked.requests),
                response: Value::Array(asked.responses),
                error: asked.error,
            });
        }
        judged.judgements.push(verdict(&panel.name, target, &coverage_verdict(&returned, panel.majority())));
    }
    Some(judged)
}

fn verdict(panel: &str, target: &ClarificationTarget, verdict: &CoverageVerdict) -> Judgement {
    let (text, matched) = match verdict {
        CoverageVerdict::Covered(indices) => (COVERED, indices.iter().copied().collect()),
        CoverageVerdict::Missed => (MISSED, Vec::new()),
        CoverageVerdict::Unavailable => (UNAVAILABLE, Vec::new()),
    };
    Judgement { judge: panel.to_string(), target: target.id.clone(), verdict: text.to_string(), matched_question_indices: matched }
}

/// The run-level numbered question list: `1. <unit>` per line, in unit order (A.9.5).
pub fn numbered_questions(units: &[QuestionUnit]) -> String {
    units
        .iter()
        .map(|u| format!("{}. {}", u.index + 1, u.text.split_whitespace().collect::<Vec<_>>().join(" ")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The judge's user message for `target`: its id, its description, its trigger questions as
/// hints, and the numbered questions. Nothing else of the target reaches the judge.
pub fn judge_message(panel: &Panel, target: &ClarificationTarget, questions: &str) -> String {
    let triggers = if target.triggers.is_empty() {
        String::new()
    } else {
        let lines = target.triggers.iter().map(|t| format!("  - {t}")).collect::<Vec<_>>().join("\n");
        fill(&panel.prompts.triggers, &[("trigger_lines", &lines)])
    };
    fill(
        &panel.prompts.user,
        &[("target_id", &target.id), ("target", &target.description), ("triggers", &triggers), ("questions", questions)],
    )
}

/// A coverage ballot: `covered` (a boolean) and `question_indices` (1-based numbers of
/// questions that exist; absent means none).
fn parse_coverage(object: &Map<String, Value>, units: u32) -> Result<(CoverageBallot, Value), String> {
    let covered = object.get("covered").and_then(Value::as_bool).ok_or("`covered` is not true or false")?;
    let indices = match object.get("question_indices") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| (1..=units).contains(n))
                    .ok_or_else(|| format!("`question_indices` holds {item}, not a question number from 1 to {units}"))
            })
            .collect::<Result<Vec<u32>, String>>()?,
        Some(other) => return Err(format!("`question_indices` is {other}, not a list")),
    };
    let ballot = CoverageBallot { covered, question_indices: indices };
    let vote = json!({ "covered": ballot.covered, "question_indices": ballot.question_indices });
    Ok((ballot, vote))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ballots_must_cite_questions_that_exist() {
        let object = |v: Value| v.as_object().unwrap().clone();
        let (ballot, vote) = parse_coverage(&object(json!({"covered": true, "question_indices": [2, 1]})), 3).unwrap();
        assert_eq!(ballot.question_indices, [2, 1]);
        assert_eq!(vote, json!({"covered": true, "question_indices": [2, 1]}));
        assert_eq!(parse_coverage(&object(json!({"covered": false})), 3).unwrap().0.question_indices, Vec::<u32>::new());
        assert_eq!(
            parse_coverage(&object(json!({"covered": true, "question_indices": [4]})), 3).unwrap_err(),
            "`question_indices` holds 4, not a question number from 1 to 3"
        );
        assert_eq!(parse_coverage(&object(json!({"covered": "yes"})), 3).unwrap_err(), "`covered` is not true or false");
    }
}
