//! Every table written through the episode API and read back exactly.

use std::collections::BTreeMap;

use serde_json::json;
use specgap_protocol::event::{EventKind, Usage};
use specgap_protocol::package::Family;
use specgap_protocol::result::{Scored, ScoringKind, Signature, TestOutcome, Violation};
use specgap_protocol::run::EndReason;
use specgap_store::*;

use crate::{config, key, meta, result, run_episode, summary};

const START: &str = r#"{"version":1,
    "requirements":{"a":{"pass":false,"failure_mode":"stale","measured":{"open_rows":3},"detail":"3 rows"},
                    "b":{"pass":true}},
    "tests":{"t1":"fail","t2":"pass"},
    "delivery":{"valid":false,"violations":[{"rule":"same-city-first","count":8,"detail":"eight"}],"signature":"constraint"},
    "reward":0.25}"#;

const SECOND: &str = r#"{"version":1,"requirements":{"a":{"pass":true},"b":{"pass":true}},
    "tests":{"t1":"pass","t2":"skip"},"delivery":{"valid":true,"objective":99.5,"signature":"none"}}"#;

fn usage(input: u64, cost: f64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: 20,
        cached_tokens: 5,
        reasoning_tokens: 2,
        requests: 1,
        retries: 0,
        latency_ms: 40,
        cost_usd: cost,
    }
}

/// Writes one episode touching every table; returns the store and the episode id.
fn write_everything(dir: &std::path::Path) -> (Store, String) {
    let store = Store::create(dir, &config(7, None)).unwrap();
    let key = key(0, "residual:r1");
    let mut w = store.begin_episode(&key, &meta()).unwrap();
    assert_eq!(w.id(), key.id());
    assert_eq!(w.attempt(), 1);
    assert_eq!(w.event(EventKind::Overlay { name: "gold".into() }).unwrap(), 0);
    w.write_start_result(&result(START)).unwrap();
    w.record_start_score(&specgap_protocol::result::Scored {
        kind: specgap_protocol::result::ScoringKind::Requirement,
        score: 0.5,
        success: false,
    })
    .unwrap();
    w.write_start_diff(b"state diff\n").unwrap();
    w.write_submission(
        1,
        &SubmissionRecord {
            automatic: false,
            agent_declared: true,
            result: Some(result(START)),
            scored: Some(Scored { kind: ScoringKind::Requirement, score: 0.5, success: false }),
            failing_requirement: Some("a".into()),
            error: None,
            diff: "first diff\n".into(),
        },
    )
    .unwrap();
    w.write_submission(
        2,
        &SubmissionRecord {
            automatic: true,
            agent_declared: false,
            result: Some(result(SECOND)),
            scored: Some(Scored { kind: ScoringKind::Requirement, score: 1.0, success: true }),
            failing_requirement: None,
            error: None,
            diff: "second\n".into(),
        },
    )
    .unwrap();
    w.write_submission(
        3,
        &SubmissionRecord {
            automatic: true,
            agent_declared: false,
            result: None,
            scored: None,
            failing_requirement: None,
            error: Some("evaluator exited with status 1".into()),
            diff: Vec::new(),
        },
    )
    .unwrap();
    let q = Question { turn: 2, text: "Which rows?".into(), answer: "The open ones.".into(), matched_targets: vec!["t-open".into()] };
    assert_eq!(w.record_question(&q).unwrap(), 0);
    let q2 = Question { turn: 4, text: "Why?".into(), answer: "I do not know.".into(), matched_targets: vec![] };
    assert_eq!(w.record_question(&q2).unwrap(), 1);
    w.record_judgement(&Judgement {
        judge: "offline".into(),
        target: "t-open".into(),
        verdict: "covered".into(),
        matched_question_indices: vec![0],
    })
    .unwrap();
    w.record_usage(Role::Agent, &usage(100, 0.5)).unwrap();
    w.record_usage(Role::Agent, &usage(50, 0.25)).unwrap();
    w.record_usage(Role::User, &usage(7, 0.0)).unwrap();
    let e = ErrorRecord {
        class: ErrorClass::Evaluation,
        message: "evaluator exited with status 1".into(),
        stderr_tail: "Traceback".into(),
        deterministic: true,
    };
    assert_eq!(w.record_error(&e).unwrap(), 0);
    let id = w.id().to_string();
    w.finish(EpisodeSummary {
        status: Status::Finished,
        end_reason: Some(EndReason::SubmissionBudget),
        turns: 9,
        tool_calls: 14,
        wall_ms: 1234,
        error: None,
    })
    .unwrap();
    store
        .record_not_applicable(&NotApplicableRow {
            task: "examples/x".into(),
            agent: "scripted:gold".into(),
            condition: "full".into(),
            start: "clean".into(),
            reason: "no instruction.full.md".into(),
        })
        .unwrap();
    (store, id)
}

#[test]
fn episode_row_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, id) = write_everything(tmp.path());
    let episodes = store.episodes().unwrap();
    assert_eq!(episodes.len(), 1);
    let e = &episodes[0];
    assert_eq!(e.id, id);
    assert_eq!(e.key(), key(0, "residual:r1"));
    assert_eq!(e.user, "relay");
    assert_eq!(e.family, Family::Swe);
    assert_eq!(e.scoring_kind, ScoringKind::Requirement);
    assert_eq!(e.status, Status::Finished);
    assert_eq!(e.end_reason, Some(EndReason::SubmissionBudget));
    assert_eq!(e.attempts, 1);
    assert_eq!(e.submissions, 3);
    // Submission 3 has no valid evaluation, so the last valid one (k = 2) is final.
    assert_eq!(e.final_score, Some(1.0));
    assert_eq!(e.final_success, Some(true));
    assert_eq!((e.turns, e.tool_calls, e.wall_ms), (9, 14, 1234));
    assert!(e.ended_ts.is_some_and(|end| end >= e.started_ts));
    assert_eq!(e.error, None);
}

#[test]
fn submissions_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, id) = write_everything(tmp.path());
    let subs = store.submissions().unwrap();
    let expected = vec![
        SubmissionRow {
            episode: id.clone(),
            k: 1,
            automatic: false,
            agent_declared: true,
            valid_evaluation: true,
            kind: Some(ScoringKind::Requirement),
            score: Some(0.5),
            success: Some(false),
            reward: Some(0.25),
            failing_requirement: Some("a".into()),
            error: None,
            diff_bytes: 11,
        },
        SubmissionRow {
            episode: id.clone(),
            k: 2,
            automatic: true,
            agent_declared: false,
            valid_evaluation: true,
            kind: Some(ScoringKind::Requirement),
            score: Some(1.0),
            success: Some(true),
            reward: None,
            failing_requirement: None,
            error: None,
            diff_bytes: 7,
        },
        SubmissionRow {
            episode: id.clone(),
            k: 3,
            automatic: true,
            agent_declared: false,
            valid_evaluation: false,
            kind: None,
            score: None,
            success: None,
            reward: None,
            failing_requirement: None,
            error: Some("evaluator exited with status 1".into()),
            diff_bytes: 0,
        },
    ];
    assert_eq!(subs, expected);
}

#[test]
fn result_tables_round_trip_with_start_at_k0() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, id) = write_everything(tmp.path());
    assert_eq!(
        store.start_results().unwrap(),
        vec![StartResultRow { episode: id.clone(), state: "r1".into(), reward: Some(0.25), score: Some(0.5), success: Some(false) }]
    );
    let reqs = store.requirement_outcomes().unwrap();
    let summary: Vec<(u32, &str, bool)> = reqs.iter().map(|r| (r.k, r.requirement.as_str(), r.pass)).collect();
    assert_eq!(summary, vec![(0, "a", false), (0, "b", true), (1, "a", false), (1, "b", true), (2, "a", true), (2, "b", true)]);
    let first = &reqs[0];
    assert_eq!(first.failure_mode.as_deref(), Some("stale"));
    assert_eq!(first.measured, BTreeMap::from([("open_rows".to_string(), json!(3))]));
    assert_eq!(first.detail.as_deref(), Some("3 rows"));
    assert!(reqs[1].measured.is_empty());

    let tests: Vec<(u32, String, TestOutcome)> = store.tests().unwrap().into_iter().map(|t| (t.k, t.test, t.outcome)).collect();
    assert_eq!(
        tests,
        vec![
            (0, "t1".into(), TestOutcome::Fail),
            (0, "t2".into(), TestOutcome::Pass),
            (1, "t1".into(), TestOutcome::Fail),
            (1, "t2".into(), TestOutcome::Pass),
            (2, "t1".into(), TestOutcome::Pass),
            (2, "t2".into(), TestOutcome::Skip),
        ]
    );

    let violation = Violation { rule: "same-city-first".into(), count: 8, detail: "eight".into() };
    let deliveries = store.deliveries().unwrap();
    let invalid = |k| DeliveryRow {
        episode: id.clone(),
        k,
        valid: false,
        objective: None,
        signature: Some(Signature::Constraint),
        violations: vec![violation.clone()],
    };
    let valid =
        DeliveryRow { episode: id.clone(), k: 2, valid: true, objective: Some(99.5), signature: Some(Signature::None), violations: vec![] };
    assert_eq!(deliveries, vec![invalid(0), invalid(1), valid]);
}

#[test]
fn questions_judgements_usage_errors_and_not_applicable_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, id) = write_everything(tmp.path());
    let questions = store.questions().unwrap();
    assert_eq!(questions.len(), 2);
    assert_eq!(questions[0].idx, 0);
    assert_eq!(
        questions[0].question,
        Question { turn: 2, text: "Which rows?".into(), answer: "The open ones.".into(), matched_targets: vec!["t-open".into()] }
    );
    assert_eq!((questions[1].idx, questions[1].question.matched_targets.len()), (1, 0));

    assert_eq!(
        store.judgements().unwrap(),
        vec![JudgementRow {
            episode: id.clone(),
            judgement: Judgement {
                judge: "offline".into(),
                target: "t-open".into(),
                verdict: "covered".into(),
                matched_question_indices: vec![0]
            }
        }]
    );

    // Two agent records are summed into one row.
    let agent = Usage {
        input_tokens: 150,
        output_tokens: 40,
        cached_tokens: 10,
        reasoning_tokens: 4,
        requests: 2,
        retries: 0,
        latency_ms: 80,
        cost_usd: 0.75,
    };
    assert_eq!(
        store.usage().unwrap(),
        vec![
            UsageRow { episode: id.clone(), attempt: 1, role: Role::Agent, usage: agent },
            UsageRow { episode: id.clone(), attempt: 1, role: Role::User, usage: usage(7, 0.0) },
        ]
    );

    assert_eq!(
        store.errors().unwrap(),
        vec![ErrorRow {
            episode: id.clone(),
            attempt: 1,
            idx: 0,
            error: ErrorRecord {
                class: ErrorClass::Evaluation,
                message: "evaluator exited with status 1".into(),
                stderr_tail: "Traceback".into(),
                deterministic: true
            }
        }]
    );

    assert_eq!(
        store.not_applicable().unwrap(),
        vec![NotApplicableRow {
            task: "examples/x".into(),
            agent: "scripted:gold".into(),
            condition: "full".into(),
            start: "clean".into(),
            reason: "no instruction.full.md".into()
        }]
    );
}

#[test]
fn files_are_written_where_design_section_6_says() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, id) = write_everything(tmp.path());
    let dir = store.episode_dir(&id);
    assert_eq!(
        crate::files_under(&dir),
        vec![
            "start/result.json",
            "start/workspace.diff",
            "submissions/1/result.json",
            "submissions/1/workspace.diff",
            "submissions/2/result.json",
            "submissions/2/workspace.diff",
            "submissions/3/workspace.diff",
            "trajectory.jsonl.zst",
        ]
    );
    let start: specgap_protocol::result::EvalResult =
        serde_json::from_str(&std::fs::read_to_string(dir.join("start/result.json")).unwrap()).unwrap();
    assert_eq!(start, result(START));
    assert_eq!(std::fs::read_to_string(dir.join("start").join(specgap_store::START_DIFF_FILE)).unwrap(), "state diff\n");
    assert_eq!(std::fs::read_to_string(dir.join("submissions/1/workspace.diff")).unwrap(), "first diff\n");
}

#[test]
fn episode_detail_gathers_one_episode() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, id) = write_everything(tmp.path());
    let detail = store.episode_detail(&id).unwrap().unwrap();
    assert_eq!(detail.episode.id, id);
    assert_eq!(detail.start_result.map(|s| s.state), Some("r1".to_string()));
    assert_eq!(detail.submissions.len(), 3);
    assert_eq!(detail.requirement_outcomes.len(), 6);
    assert_eq!(detail.tests.len(), 6);
    assert_eq!(detail.deliveries.len(), 3);
    assert_eq!(detail.questions.len(), 2);
    assert_eq!(detail.judgements.len(), 1);
    assert_eq!(detail.usage.len(), 2);
    assert_eq!(detail.errors.len(), 1);
    assert_eq!(store.episode_detail("0000000000000000").unwrap(), None);
    let all = store.rows().unwrap();
    assert_eq!((all.episodes.len(), all.tests.len(), all.not_applicable.len()), (1, 6, 1));
}

#[test]
fn judgement_for_an_unknown_episode_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let judgement = Judgement { judge: "offline".into(), target: "t".into(), verdict: "missed".into(), matched_question_indices: vec![] };
    let err = store.record_judgement("feedfeedfeedfeed", &judgement).unwrap_err();
    assert_eq!(err.to_string(), "episode feedfeedfeedfeed is not in the store");
}

#[test]
fn judgements_in_one_batch_are_all_or_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let id = run_episode(&store, 0, 1.0, 5);
    let row = |episode: &str, target: &str, indices: Vec<u32>| JudgementRow {
        episode: episode.to_string(),
        judgement: Judgement {
            judge: "offline".into(),
            target: target.into(),
            verdict: if indices.is_empty() { "missed" } else { "covered" }.into(),
            matched_question_indices: indices,
        },
    };
    store.record_judgements(&[row(&id, "a", vec![0, 2]), row(&id, "b", vec![])]).unwrap();
    let stored = store.judgements().unwrap();
    assert_eq!(stored, [row(&id, "a", vec![0, 2]), row(&id, "b", vec![])]);
    // One unknown episode refuses the whole batch.
    let err = store.record_judgements(&[row(&id, "c", vec![1]), row("feedfeedfeedfeed", "a", vec![])]).unwrap_err();
    assert_eq!(err.to_string(), "episode feedfeedfeedfeed is not in the store");
    assert_eq!(store.judgements().unwrap().len(), 2);
}

#[test]
fn finish_refuses_running() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let w = store.begin_episode(&key(0, "clean"), &meta()).unwrap();
    let id = w.id().to_string();
    let err = w.finish(summary(Status::Running, None, 1)).unwrap_err();
    assert_eq!(err.to_string(), format!("episode {id}: expected a final status in finish, got `running`"));
    assert_eq!(store.episode_status(&id).unwrap(), Some(Status::Running));
}

/// The scoring kind planned before any evaluation (a guess between test and reward, DESIGN §2)
/// is replaced by the kind of the first valid evaluation when the episode finishes.
#[test]
fn finish_settles_the_scoring_kind_from_the_first_evaluation() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(&tmp.path().join("run"), &config(1, None)).unwrap();
    let planned = EpisodeMeta { scoring_kind: ScoringKind::Test, ..meta() };
    let mut writer = store.begin_episode(&key(0, "clean"), &planned).unwrap();
    let record = SubmissionRecord {
        automatic: false,
        agent_declared: true,
        result: Some(result(r#"{"version":1,"reward":1.0}"#)),
        scored: Some(Scored { kind: ScoringKind::Reward, score: 1.0, success: true }),
        failing_requirement: None,
        error: None,
        diff: Vec::new(),
    };
    writer.write_submission(1, &record).unwrap();
    let id = writer.id().to_string();
    writer.finish(summary(Status::Finished, Some(EndReason::Accepted), 5)).unwrap();
    assert_eq!(store.episode(&id).unwrap().unwrap().scoring_kind, ScoringKind::Reward);
}
