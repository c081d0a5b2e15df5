//! Evaluation errors on frozen states (`docs/decisions.md` "Runner: retries and deterministic
//! failures", "Engine: evaluator failures on a delivered artifact"): a submission is
//! re-evaluated, never the agent re-run; an evaluator failure on a delivered artifact whose
//! gold evaluates is the delivery's (Score 0, signature `execution`); an evaluator broken for
//! any input is an evaluation error.

use std::path::Path;

use serde_json::json;
use specgap_engine::EpisodeError;
use specgap_engine::session::AgentReply;
use specgap_protocol::result::Signature;
use specgap_protocol::run::EndReason;
use specgap_store::ErrorClass;

use crate::support::{Options, TestAgent, fixture_copy, one, run};

const GOLD_PLAN: &str = r#"{"boxes": [["A1", "A4"], ["A3", "A2"], ["A5", "A6"], ["A7"]]}"#;

fn deliver(plan: &str) -> Vec<AgentReply> {
    vec![one("write_text", json!({"path": "plan.json", "content": plan})), one("submit", json!({}))]
}

/// A copy of delivery-basic whose judge.py starts with `prelude` (Python run before the real
/// judge).
fn delivery_with_prelude(dir: &Path, prelude: &str) -> specgap_task::TaskPackage {
    let root = fixture_copy("delivery-basic", dir);
    let judge = root.join("evaluator/judge.py");
    let original = fs_err::read_to_string(&judge).unwrap();
    fs_err::write(&judge, format!("{prelude}\n{original}")).unwrap();
    specgap_task::load(&root).unwrap()
}

/// (class, message, stderr tail, deterministic) of every error row.
fn error_rows(r: &crate::support::Run) -> Vec<(ErrorClass, String, String, bool)> {
    r.store.errors().unwrap().into_iter().map(|e| (e.error.class, e.error.message, e.error.stderr_tail, e.error.deterministic)).collect()
}

#[test]
fn an_evaluator_failure_on_a_delivered_artifact_whose_gold_evaluates_is_a_scored_zero_with_signature_execution() {
    let dir = tempfile::tempdir().unwrap();
    // The evaluator crashes on this artifact only (as a case evaluator that imports and runs
    // a submitted module would on code that does not run).
    let prelude = "import os, sys\n\
        if 'CRASH' in open(os.path.join(os.environ['SPECGAP_WORKSPACE'], 'plan.json')).read():\n    \
        sys.stderr.write('the delivered plan cannot be run\\n')\n    sys.exit(4)\n";
    let package = delivery_with_prelude(dir.path(), prelude);
    let mut agent = TestAgent::new(deliver(r#"{"boxes": "CRASH"}"#));
    let r = run(&package, "interact", &mut agent, Options { eval_retries: 2, ..Options::default() });
    assert_eq!(r.ok().end_reason, EndReason::Submitted);
    assert_eq!(r.scores(), [0.0]);
    let rows = r.store.submissions().unwrap();
    assert_eq!(rows.len(), 1);
    assert!(rows[0].valid_evaluation);
    assert_eq!((rows[0].score, rows[0].success), (Some(0.0), Some(false)));
    assert_eq!(
        rows[0].error.as_deref(),
        Some("evaluator exited with status 4; the gold artifact evaluates, so the delivery failed to execute")
    );
    let deliveries = r.store.deliveries().unwrap();
    assert_eq!(deliveries.len(), 1);
    assert!(!deliveries[0].valid);
    assert_eq!(deliveries[0].signature, Some(Signature::Execution));
    // Re-evaluated up to the retry limit although the failure repeats: three evaluations, all
    // recorded, the repeats marked deterministic.
    let failure = |deterministic| {
        (
            ErrorClass::Evaluation,
            "evaluator exited with status 4".to_string(),
            "the delivered plan cannot be run\n".to_string(),
            deterministic,
        )
    };
    assert_eq!(error_rows(&r), [failure(false), failure(true), failure(true)]);
}

#[test]
fn an_evaluator_broken_for_any_input_is_an_evaluation_error_and_never_scored() {
    let dir = tempfile::tempdir().unwrap();
    let package = delivery_with_prelude(dir.path(), "import sys\nsys.stderr.write('the reference table is missing\\n')\nsys.exit(3)\n");
    let mut agent = TestAgent::new(deliver(GOLD_PLAN));
    let r = run(&package, "interact", &mut agent, Options { eval_retries: 2, ..Options::default() });
    let Err(EpisodeError::Evaluation { message, stderr_tail, deterministic }) = &r.outcome else {
        panic!("expected an evaluation error, got {:?}", r.outcome.as_ref().map(|o| o.end_reason));
    };
    assert_eq!(message, "evaluator exited with status 3");
    assert_eq!(stderr_tail, "the reference table is missing\n");
    assert!(deterministic);
    // The engine recorded the first two failures; the third (the limit) is the runner's to record.
    let failure = |deterministic| {
        (
            ErrorClass::Evaluation,
            "evaluator exited with status 3".to_string(),
            "the reference table is missing\n".to_string(),
            deterministic,
        )
    };
    assert_eq!(error_rows(&r), [failure(false), failure(true)]);
    let rows = r.store.submissions().unwrap();
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].valid_evaluation);
    assert_eq!(rows[0].score, None);
    assert_eq!(rows[0].error.as_deref(), Some("evaluation error: evaluator exited with status 3"));
}

#[test]
fn an_evaluation_error_on_a_saved_submission_re_evaluates_it_and_never_reruns_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("evaluations");
    // Fails the first time only: the count lives in a host file, so this test runs without
    // the sandbox (the evaluator cannot write outside SPECGAP_OUT inside it).
    let prelude = format!(
        "import sys\ncounter = {counter:?}\n\
         try:\n    n = int(open(counter).read())\nexcept OSError:\n    n = 0\n\
         open(counter, 'w').write(str(n + 1))\n\
         if n == 0:\n    sys.stderr.write('the database was busy\\n')\n    sys.exit(3)\n",
        counter = counter.display().to_string()
    );
    let package = delivery_with_prelude(dir.path(), &prelude);
    let mut agent = TestAgent::new(deliver(GOLD_PLAN));
    let options = Options { eval_retries: 2, no_sandbox: true, ..Options::default() };
    let r = run(&package, "interact", &mut agent, options);
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(r.scores(), [1.0]);
    // Two agent turns, each asked once: the agent was not run again.
    assert_eq!(r.ok().turns, 2);
    assert_eq!(agent.seen.lock().unwrap().inboxes.len(), 2);
    assert_eq!(fs_err::read_to_string(&counter).unwrap(), "2");
    assert_eq!(
        error_rows(&r),
        [(ErrorClass::Evaluation, "evaluator exited with status 3".to_string(), "the database was busy\n".to_string(), false)]
    );
    let rows = r.store.submissions().unwrap();
    assert_eq!((rows.len(), rows[0].valid_evaluation, rows[0].error.as_deref()), (1, true, None));
}

/// Issue 24 item 4 (seed 001 App. C.1: verification that failed for infrastructure reasons is
/// rerun on the saved final state): the same failure twice does not end the re-evaluation
/// before the retry limit; the third evaluation succeeds and scores the submission.
#[test]
fn a_repeating_evaluation_error_is_still_re_evaluated_up_to_the_retry_limit() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("evaluations");
    // Fails the same way the first two times (the count lives in a host file, so no sandbox).
    let prelude = format!(
        "import sys\ncounter = {counter:?}\n\
         try:\n    n = int(open(counter).read())\nexcept OSError:\n    n = 0\n\
         open(counter, 'w').write(str(n + 1))\n\
         if n < 2:\n    sys.stderr.write('the database was busy\\n')\n    sys.exit(3)\n",
        counter = counter.display().to_string()
    );
    let package = delivery_with_prelude(dir.path(), &prelude);
    let mut agent = TestAgent::new(deliver(GOLD_PLAN));
    let options = Options { eval_retries: 2, no_sandbox: true, ..Options::default() };
    let r = run(&package, "interact", &mut agent, options);
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(r.scores(), [1.0]);
    assert_eq!(fs_err::read_to_string(&counter).unwrap(), "3");
    let failure = |deterministic| {
        (ErrorClass::Evaluation, "evaluator exited with status 3".to_string(), "the database was busy\n".to_string(), deterministic)
    };
    assert_eq!(error_rows(&r), [failure(false), failure(true)]);
    let rows = r.store.submissions().unwrap();
    assert_eq!((rows.len(), rows[0].valid_evaluation, rows[0].error.as_deref()), (1, true, None));
}

#[test]
fn without_retries_an_evaluation_error_is_final_after_one_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let package = delivery_with_prelude(dir.path(), "import sys\nsys.exit(3)\n");
    let mut agent = TestAgent::new(deliver(GOLD_PLAN));
    let r = run(&package, "interact", &mut agent, Options::default());
    let Err(EpisodeError::Evaluation { deterministic, .. }) = &r.outcome else {
        panic!("expected an evaluation error");
    };
    assert!(!deterministic);
    assert!(error_rows(&r).is_empty());
}

#[test]
fn requirement_scored_tasks_keep_evaluator_failures_as_evaluation_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture_copy("req-basic", dir.path());
    fs_err::write(root.join("evaluator/evaluate.py"), "import sys\nsys.exit(3)\n").unwrap();
    let package = specgap_task::load(&root).unwrap();
    let mut agent = specgap_agents::ScriptedAgent::new(specgap_agents::Solution::Gold);
    let r = run(&package, "full", &mut agent, Options { eval_retries: 1, ..Options::default() });
    assert!(matches!(r.outcome, Err(EpisodeError::Evaluation { .. })), "{:?}", r.outcome.as_ref().map(|o| o.end_reason));
}

/// Regression (seen as a flaky `ctrl_c_interrupts…` CLI test): an evaluation that failed while
/// the run was stopping — the evaluator killed by our own Ctrl-C handling — was re-evaluated and
/// recorded as an `errors` row, so the resumed run held a row an uninterrupted one does not.
/// Here the evaluator, once started, waits until a watcher thread has raised the stop flag, then
/// fails; the old code evaluated three times and recorded two rows.
#[test]
fn an_evaluation_failing_while_the_run_stops_is_neither_retried_nor_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("evaluations");
    let go = dir.path().join("go");
    let prelude = format!(
        "import os, sys, time\ncounter = {counter:?}\n\
         try:\n    n = int(open(counter).read())\nexcept OSError:\n    n = 0\n\
         open(counter, 'w').write(str(n + 1))\n\
         for _ in range(3000):\n    if os.path.exists({go:?}):\n        break\n    time.sleep(0.01)\n\
         sys.exit(3)\n",
        counter = counter.display().to_string(),
        go = go.display().to_string()
    );
    let package = delivery_with_prelude(dir.path(), &prelude);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (stop, counter, go) = (stop.clone(), counter.clone(), go.clone());
        std::thread::spawn(move || {
            while !counter.exists() {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            fs_err::write(&go, "").unwrap();
        })
    };
    let mut agent = TestAgent::new(deliver(GOLD_PLAN));
    let options = Options { eval_retries: 2, no_sandbox: true, stop: Some(stop), ..Options::default() };
    let r = run(&package, "interact", &mut agent, options);
    watcher.join().unwrap();
    assert!(matches!(r.outcome, Err(EpisodeError::Evaluation { .. })), "{:?}", r.outcome.as_ref().map(|o| o.end_reason));
    assert_eq!(fs_err::read_to_string(&counter).unwrap(), "1");
    assert!(error_rows(&r).is_empty());
}
