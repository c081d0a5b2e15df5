//! Evaluation errors: the frozen submission is re-evaluated up to `--retries` times within
//! the one attempt (the agent is not run again), a repeated identical failure is called
//! deterministic after one re-evaluation, and the episode is never scored.

use std::ffi::OsStr;
use std::path::Path;

use specgap_protocol::run::EndReason;
use specgap_store::{ErrorClass, Status, Store};

use crate::support::*;

/// Runs the fixture's only episode, which always ends in an evaluation error: the run has no
/// result, so `specgap run` exits 3 and says so.
fn run_fixture(fixture: &str, out: &Path, retries: &str) {
    let output = specgap()
        .args([
            OsStr::new("run"),
            cli_fixture(fixture).as_os_str(),
            OsStr::new("--agent"),
            OsStr::new("scripted:starter"),
            OsStr::new("--condition"),
            OsStr::new("full"),
            OsStr::new("--retries"),
            OsStr::new(retries),
            OsStr::new("--out"),
            out.as_os_str(),
            OsStr::new("--no-report"),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("error: no episode finished; every one ended in an infrastructure or evaluation error"), "{stderr}");
}

/// (attempt, class, message, stderr tail, deterministic) of every error of the only episode.
fn error_rows(out: &Path) -> Vec<(u32, ErrorClass, String, String, bool)> {
    let store = Store::open(out).unwrap();
    store
        .errors()
        .unwrap()
        .into_iter()
        .map(|e| (e.attempt, e.error.class, e.error.message, e.error.stderr_tail, e.error.deterministic))
        .collect()
}

fn assert_unscored_eval_error(out: &Path, attempts: u32) {
    let rows = episodes(out);
    assert_eq!(rows.len(), 1);
    let e = &rows[0];
    assert_eq!(e.status, Status::EvalError);
    assert_eq!(e.end_reason, Some(EndReason::EvaluationError));
    assert_eq!(e.attempts, attempts);
    assert_eq!((e.final_score, e.final_success), (None, None));
    let store = Store::open(out).unwrap();
    assert!(store.submissions().unwrap().iter().all(|s| !s.valid_evaluation && s.score.is_none()));
    let report = report_json(out);
    let g = group(&report, "scripted:starter", "full");
    assert_eq!(g["outcomes"]["scored"], 0);
    assert_eq!(g["evaluation_errors"], 1);
    assert_eq!(g["outcomes"]["score_at"][0], serde_json::Value::Null);
}

#[test]
fn a_flaky_evaluator_is_re_evaluated_up_to_the_limit_and_never_scored() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_fixture("eval-flaky", &out, "2");
    let errors = error_rows(&out);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    for (attempt, class, message, tail, deterministic) in &errors {
        // Re-evaluations of the frozen submission, all within the first attempt.
        assert_eq!(*attempt, 1);
        assert_eq!(*class, ErrorClass::Evaluation);
        assert_eq!(message, "evaluator exited with status 3");
        assert!(tail.starts_with("transient failure at "), "{tail}");
        assert!(!deterministic);
    }
    assert_unscored_eval_error(&out, 1);
}

#[test]
fn an_evaluator_that_always_crashes_is_re_evaluated_up_to_the_limit_and_marked_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_fixture("eval-crash", &out, "5");
    let crash = |attempt, deterministic| {
        (
            attempt,
            ErrorClass::Evaluation,
            "evaluator exited with status 3".to_string(),
            "the reference table is missing\n".to_string(),
            deterministic,
        )
    };
    // Issue 24 item 4: a repeat no longer ends the re-evaluation; all six evaluations (1 +
    // 5 retries) are recorded, every repeat marked deterministic.
    assert_eq!(error_rows(&out), [crash(1, false), crash(1, true), crash(1, true), crash(1, true), crash(1, true), crash(1, true)]);
    assert_unscored_eval_error(&out, 1);
    let error = episodes(&out)[0].error.clone().unwrap();
    assert_eq!(error, "evaluator exited with status 3 (deterministic: not retried again)");
}

#[test]
fn no_retries_means_one_attempt() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_fixture("eval-flaky", &out, "0");
    assert_eq!(error_rows(&out).len(), 1);
    assert_unscored_eval_error(&out, 1);
}

#[test]
fn resume_runs_evaluation_errors_again_and_keeps_their_history() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_fixture("eval-crash", &out, "2");
    let resumed = specgap().args([OsStr::new("run"), OsStr::new("--resume"), out.as_os_str()]).output().unwrap();
    assert_eq!(resumed.status.code(), Some(3), "the resumed run still has no result");
    let attempts: Vec<(u32, bool)> = error_rows(&out).into_iter().map(|e| (e.0, e.4)).collect();
    // One attempt per process, three evaluations each (1 + 2 retries, the repeats marked
    // deterministic): the resumed one starts a fresh sequence.
    assert_eq!(attempts, [(1, false), (1, true), (1, true), (2, false), (2, true), (2, true)]);
    assert_unscored_eval_error(&out, 2);
}

/// Issue 10 items 4 and 7: a reward of 5.0 was accepted, and a reward-scored task whose
/// evaluations all failed was stored with `scoring_kind = test`.
#[test]
fn a_reward_above_one_is_an_evaluation_error_and_the_task_stays_reward_scored() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_fixture("eval-reward-range", &out, "2");
    let message = "invalid result.json: result.json reports reward 5, outside [0, 1]; a reward is a fraction from 0 (nothing) to 1 (full)";
    let errors: Vec<(u32, String, bool)> = error_rows(&out).into_iter().map(|e| (e.0, e.2, e.4)).collect();
    assert_eq!(errors, [(1, message.to_string(), false), (1, message.to_string(), true), (1, message.to_string(), true)]);
    assert_unscored_eval_error(&out, 1);
    assert_eq!(episodes(&out)[0].scoring_kind, specgap_protocol::result::ScoringKind::Reward);
}
