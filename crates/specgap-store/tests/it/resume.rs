//! Resume bookkeeping: statuses, which episodes run again, restarts and resets.

use specgap_protocol::event::EventKind;
use specgap_protocol::run::EndReason;
use specgap_store::{ErrorClass, ErrorRecord, Status, Store, SubmissionRecord};

use crate::{config, files_under, key, meta, run_episode, summary};

fn end(store: &Store, repeat: u32, status: Status, reason: EndReason) -> String {
    let w = store.begin_episode(&key(repeat, "clean"), &meta()).unwrap();
    let id = w.id().to_string();
    w.finish(summary(status, Some(reason), 5)).unwrap();
    id
}

#[test]
fn resume_lists_unfinished_and_infrastructure_failed_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let finished = run_episode(&store, 0, 1.0, 5);
    let running = store.begin_episode(&key(1, "clean"), &meta()).unwrap().id().to_string();
    let infra = end(&store, 2, Status::InfraError, EndReason::InfrastructureError);
    let interrupted = end(&store, 3, Status::Interrupted, EndReason::Interrupted);
    let eval = end(&store, 4, Status::EvalError, EndReason::EvaluationError);

    assert_eq!(store.episode_status(&finished).unwrap(), Some(Status::Finished));
    assert_eq!(store.episode_status(&running).unwrap(), Some(Status::Running));
    assert_eq!(store.episode_status(&infra).unwrap(), Some(Status::InfraError));
    assert_eq!(store.episode_status(&interrupted).unwrap(), Some(Status::Interrupted));
    assert_eq!(store.episode_status(&eval).unwrap(), Some(Status::EvalError));
    assert_eq!(store.episode_status("0123456789abcdef").unwrap(), None);

    let mut expected = vec![running, infra, interrupted];
    expected.sort();
    // Reopening (as `--resume` does) sees the same.
    drop(store);
    let store = Store::open(tmp.path()).unwrap();
    assert_eq!(store.unfinished_or_failed().unwrap(), expected);
}

#[test]
fn a_finished_episode_is_not_begun_again() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let id = run_episode(&store, 0, 1.0, 5);
    let err = store.begin_episode(&key(0, "clean"), &meta()).unwrap_err();
    assert_eq!(err.to_string(), format!("episode {id} is already finished; reset it before running it again"));
}

#[test]
fn restarting_clears_the_earlier_attempt_but_keeps_its_errors_and_usage() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let mut w = store.begin_episode(&key(0, "clean"), &meta()).unwrap();
    let id = w.id().to_string();
    w.event(EventKind::Overlay { name: "gold".into() }).unwrap();
    w.event(EventKind::Overlay { name: "gold".into() }).unwrap();
    let record = SubmissionRecord {
        automatic: false,
        agent_declared: true,
        result: None,
        scored: None,
        failing_requirement: None,
        error: Some("sandbox failed".into()),
        diff: "x".into(),
    };
    w.write_submission(1, &record).unwrap();
    w.record_usage(specgap_store::Role::Agent, &Default::default()).unwrap();
    w.record_error(&ErrorRecord {
        class: ErrorClass::Infrastructure,
        message: "model service returned 503".into(),
        stderr_tail: String::new(),
        deterministic: false,
    })
    .unwrap();
    w.finish(summary(Status::InfraError, Some(EndReason::InfrastructureError), 5)).unwrap();

    let mut w = store.begin_episode(&key(0, "clean"), &meta()).unwrap();
    assert_eq!(w.attempt(), 2);
    assert_eq!(w.event(EventKind::Overlay { name: "starter".into() }).unwrap(), 0);
    let row = store.episode(&id).unwrap().unwrap();
    assert_eq!((row.status, row.attempts, row.submissions, row.end_reason), (Status::Running, 2, 0, None));
    assert!(store.submissions().unwrap().is_empty());
    assert_eq!(files_under(&store.episode_dir(&id)), vec!["trajectory.jsonl.zst"]);
    let trajectory = specgap_store::read_trajectory(store.dir(), &id).unwrap();
    assert_eq!(trajectory.events.len(), 1);
    let errors = store.errors().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!((errors[0].attempt, errors[0].error.message.as_str()), (1, "model service returned 503"));
    assert_eq!(store.usage().unwrap().iter().map(|u| u.attempt).collect::<Vec<_>>(), vec![1]);
    w.finish(summary(Status::Finished, Some(EndReason::AgentDone), 5)).unwrap();
    let row = store.episode(&id).unwrap().unwrap();
    assert_eq!((row.status, row.attempts, row.final_score), (Status::Finished, 2, None));
    assert!(store.unfinished_or_failed().unwrap().is_empty());
}

#[test]
fn reset_removes_rows_and_files() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let id = run_episode(&store, 0, 0.0, 5);
    let other = run_episode(&store, 1, 1.0, 5);
    store.reset_episode(&id).unwrap();
    assert_eq!(store.episode_status(&id).unwrap(), None);
    assert!(!store.episode_dir(&id).exists());
    assert_eq!(store.submissions().unwrap().iter().map(|s| s.episode.clone()).collect::<Vec<_>>(), vec![other.clone()]);
    assert_eq!(store.requirement_outcomes().unwrap().len(), 1);
    // Resetting twice is harmless; the episode can then begin afresh.
    store.reset_episode(&id).unwrap();
    let w = store.begin_episode(&key(0, "clean"), &meta()).unwrap();
    assert_eq!(w.attempt(), 1);
}

#[test]
fn an_evaluation_error_can_be_retried_in_the_run_but_resume_keeps_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let id = end(&store, 0, Status::EvalError, EndReason::EvaluationError);
    assert!(store.unfinished_or_failed().unwrap().is_empty());
    let w = store.begin_episode(&key(0, "clean"), &meta()).unwrap();
    assert_eq!((w.id(), w.attempt()), (id.as_str(), 2));
}

#[test]
fn usage_recorded_during_an_attempt_that_never_finishes_is_kept_by_the_restart() {
    use specgap_protocol::event::Usage;
    use specgap_store::Role;
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let writer = store.begin_episode(&key(0, "clean"), &meta()).unwrap();
    let recorder = writer.usage_recorder();
    assert_eq!(recorder.attempt(), 1);
    // A model client records each request from its own thread as it completes.
    std::thread::spawn(move || {
        for _ in 0..3 {
            recorder.record(Role::User, &Usage { requests: 1, input_tokens: 100, cost_usd: 0.5, ..Usage::default() }).unwrap();
        }
    })
    .join()
    .unwrap();
    // The process dies: the writer is never finished.
    drop(writer);
    let mut again = store.begin_episode(&key(0, "clean"), &meta()).unwrap();
    again.record_usage(Role::User, &Usage { requests: 1, input_tokens: 100, cost_usd: 0.5, ..Usage::default() }).unwrap();
    let rows: Vec<(u32, Role, u64, u64, f64)> =
        store.usage().unwrap().into_iter().map(|u| (u.attempt, u.role, u.usage.requests, u.usage.input_tokens, u.usage.cost_usd)).collect();
    assert_eq!(rows, [(1, Role::User, 3, 300, 1.5), (2, Role::User, 1, 100, 0.5)]);
}

#[test]
fn a_judge_records_usage_on_a_finished_episode_under_its_last_attempt() {
    use specgap_protocol::event::Usage;
    use specgap_store::Role;
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let id = run_episode(&store, 0, 1.0, 10);
    let recorder = store.usage_recorder(&id).unwrap();
    assert_eq!((recorder.episode(), recorder.attempt()), (id.as_str(), 1));
    recorder.record(Role::Judge, &Usage { requests: 2, output_tokens: 9, ..Usage::default() }).unwrap();
    let rows: Vec<(u32, Role, u64, u64)> =
        store.usage().unwrap().into_iter().map(|u| (u.attempt, u.role, u.usage.requests, u.usage.output_tokens)).collect();
    assert_eq!(rows, [(1, Role::Judge, 2, 9)]);
    assert_eq!(
        store.usage_recorder("0000000000000000").unwrap_err().to_string(),
        specgap_store::StoreError::UnknownEpisode { id: "0000000000000000".into() }.to_string()
    );
}
