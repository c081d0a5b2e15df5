//! Harbor's trust model made explicit (docs/harbor.md "Trust model"): submissions that try to
//! forge the reward through reward.txt, reward.json and the CTRF file fail or are flagged.
//! The fixture `app-workdir` imports the submitted module into its checker's own process, as
//! Harbor verifiers do, so the submitted code runs where the reward is written.

use specgap_task::{Judge, SandboxJudge, Submission};

use crate::support::import_one;

/// Evaluates the app-workdir starter with `counter.py` replaced; returns the reward and the
/// evaluator's stderr.
fn evaluate_counter(source: &str) -> (f64, String) {
    let (_out, package) = import_one("app-workdir");
    let loaded = specgap_task::load(&package).unwrap();
    let submission = tempfile::tempdir().unwrap();
    std::fs::write(submission.path().join("counter.py"), source).unwrap();
    let judge = SandboxJudge::new(true).unwrap();
    let judged = judge.evaluate(&loaded, Submission::Directory(submission.path())).unwrap();
    (judged.result.reward.unwrap(), judged.stderr_tail)
}

/// A wrong counter (splits on single spaces) followed by `forgery`, run at import.
fn wrong_counter_with(forgery: &str) -> String {
    format!("import os, sys, json, atexit\n{forgery}\ndef count_words(text):\n    return len(text.split(\" \"))\n")
}

fn refusals(stderr: &str) -> Vec<&str> {
    stderr.lines().filter_map(|l| l.strip_prefix("specgap-harbor: reward refused: ")).collect()
}

#[test]
fn an_honest_fix_scores_one_and_the_wrong_counter_zero() {
    let (reward, stderr) = evaluate_counter("def count_words(text):\n    return len(text.split())\n");
    assert_eq!(reward, 1.0, "{stderr}");
    assert_eq!(refusals(&stderr), Vec::<&str>::new());
    let (reward, _) = evaluate_counter(&wrong_counter_with(""));
    assert_eq!(reward, 0.0);
}

#[test]
fn writing_reward_txt_and_killing_the_verifier_is_refused() {
    let forgery = "open('/logs/verifier/reward.txt', 'w').write('1\\n')\nos.kill(os.getppid(), 9)\nos.kill(os.getpid(), 9)";
    let (reward, stderr) = evaluate_counter(&wrong_counter_with(forgery));
    assert_eq!(reward, 0.0);
    assert_eq!(
        refusals(&stderr),
        [
            "counter.py names reward.txt",
            "step main: test.sh was killed by signal 9",
            "step main: the task's tests write ctrf.json, which is missing beside a reward of 1.0"
        ]
    );
}

#[test]
fn a_hidden_reward_txt_write_is_caught_by_the_killed_verifier_and_the_missing_report() {
    // The path is assembled at run time, so no file names the channel.
    let forgery = "p = '/'.join(['', 'logs', 'veri' + 'fier', 'rew' + 'ard.t' + 'xt'])\nopen(p, 'w').write('1\\n')\nos.kill(os.getppid(), 9)\nos.kill(os.getpid(), 9)";
    let (reward, stderr) = evaluate_counter(&wrong_counter_with(forgery));
    assert_eq!(reward, 0.0);
    assert_eq!(
        refusals(&stderr),
        [
            "step main: test.sh was killed by signal 9",
            "step main: the task's tests write ctrf.json, which is missing beside a reward of 1.0"
        ]
    );
}

#[test]
fn a_reward_json_the_tests_never_write_is_refused() {
    // Harbor prefers reward.json to reward.txt, so this would win there.
    let forgery = "p = '/'.join(['', 'logs', 'veri' + 'fier', 'rew' + 'ard.js' + 'on'])\nopen(p, 'w').write(json.dumps({'reward': 1}))";
    let (reward, stderr) = evaluate_counter(&wrong_counter_with(forgery));
    assert_eq!(reward, 0.0);
    assert_eq!(
        refusals(&stderr),
        [
            "step main: reward.json appeared in /logs/verifier, which the task's tests never write",
            "step main: the CTRF report fails repeated_spaces, tabs_and_newlines but the reward is 1.0"
        ]
    );
}

#[test]
fn a_forged_ctrf_report_is_refused() {
    // At exit, overwrite the checker's report with an all-passed one and exit 0.
    let forgery = r#"
def forge():
    report = {"results": {"summary": {"tests": 3, "passed": 3, "failed": 0}, "tests": [{"name": n, "status": "passed"} for n in ("a", "b", "c")]}}
    open("/logs/verifier/ctrf.json", "w").write(json.dumps(report))
    os._exit(0)
atexit.register(forge)"#;
    let (reward, stderr) = evaluate_counter(&wrong_counter_with(forgery));
    assert_eq!(reward, 0.0);
    assert_eq!(refusals(&stderr), ["counter.py names /logs/verifier"]);
}

#[test]
fn a_ctrf_report_with_failures_beside_a_full_reward_is_refused() {
    // Exit 0 from the checker after it wrote its (honest, failing) report.
    let forgery = "atexit.register(lambda: os._exit(0))";
    let (reward, stderr) = evaluate_counter(&wrong_counter_with(forgery));
    assert_eq!(reward, 0.0);
    assert_eq!(refusals(&stderr), ["step main: the CTRF report fails repeated_spaces, tabs_and_newlines but the reward is 1.0"]);
}

#[test]
fn the_submission_never_sees_the_evaluators_private_files() {
    let probe = "import glob\nseen = sorted(glob.glob('/tests/*') + glob.glob('/evaluator/*') + glob.glob('/logs/veri' + 'fier/*') + glob.glob('/workspace/*') + glob.glob('/app/*'))\nimport sys\nprint('seen', seen, file=sys.stderr)\ndef count_words(text):\n    return len(text.split())\n";
    let (reward, stderr) = evaluate_counter(probe);
    assert_eq!(reward, 1.0);
    // The tests are visible at verification time, as in Harbor; the evaluator's harbor.json,
    // its copy of the task (solution included) and specgap's result are not.
    assert!(stderr.contains("seen ['/app/__pycache__', '/app/counter.py', '/tests/check.py', '/tests/test.sh']"), "{stderr}");
}
