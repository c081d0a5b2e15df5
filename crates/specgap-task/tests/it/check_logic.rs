//! `check` logic with a judge that returns prepared results, so each rule is exercised
//! without running an evaluator.

use std::collections::HashMap;
use std::time::Duration;

use specgap_protocol::result::EvalResult;
use specgap_task::check::{CheckOptions, CheckRow, Verdict, check_package, check_package_with};
use specgap_task::heard::Heard;
use specgap_task::{EvaluateError, Judge, Judged, Submission, TaskPackage};

use crate::support::{Copy, add_probes, fixture};

/// Returns the prepared `result.json` text for each submission label; a label without one
/// is an evaluation error.
struct FakeJudge(HashMap<String, String>);

impl FakeJudge {
    fn new(results: &[(&str, &str)]) -> Self {
        FakeJudge(results.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }
}

impl Judge for FakeJudge {
    fn evaluate(&self, _package: &TaskPackage, submission: Submission<'_>) -> Result<Judged, EvaluateError> {
        let label = submission.label();
        match self.0.get(&label) {
            Some(text) => Ok(Judged { result: serde_json::from_str::<EvalResult>(text).unwrap(), stderr_tail: String::new() }),
            None => Err(EvaluateError::Evaluation {
                reason: "the evaluator exited with status 1".into(),
                stderr_tail: format!("Traceback ...\nKeyError: '{label}'\n"),
            }),
        }
    }

    /// Prepared output under the key `run:<command>`; other commands print nothing.
    fn run_on_starter(&self, _package: &TaskPackage, command: &str, _timeout: Duration) -> Result<Heard, EvaluateError> {
        let stdout = self.0.get(&format!("run:{command}")).cloned().unwrap_or_default();
        Ok(Heard { stdout, stderr: String::new() })
    }
}

fn row<'a>(rows: &'a [CheckRow], check: &str) -> &'a CheckRow {
    rows.iter().find(|r| r.check == check).unwrap_or_else(|| panic!("no row {check} in {rows:#?}"))
}

const REQ_ALL_PASS: &str =
    r#"{"version":1,"requirements":{"disputed-exempt":{"pass":true},"fee-cap":{"pass":true},"monthly-rate":{"pass":true}}}"#;
const REQ_ALL_FAIL: &str = r#"{"version":1,"requirements":{
  "disputed-exempt":{"pass":false,"failure_mode":"disputed-charged","measured":{"invoice":"I-1","fee":"6.00"}},
  "fee-cap":{"pass":false,"failure_mode":"fee-over-cap","measured":{"invoice":"I-2","principal":"10.00","fee":"9.00"}},
  "monthly-rate":{"pass":false}}}"#;

fn one_failing(id: &str, mode: &str, measured: &str) -> String {
    let mut parts = Vec::new();
    for r in ["disputed-exempt", "fee-cap", "monthly-rate"] {
        if r == id {
            parts.push(format!(r#""{r}":{{"pass":false,"failure_mode":"{mode}","measured":{measured}}}"#));
        } else {
            parts.push(format!(r#""{r}":{{"pass":true}}"#));
        }
    }
    format!(r#"{{"version":1,"requirements":{{{}}}}}"#, parts.join(","))
}

#[test]
fn nothing_to_score_fails_the_kind_row_and_stops() {
    let package = specgap_task::load(fixture("test-basic")).unwrap();
    let judge = FakeJudge::new(&[("starter", r#"{"version":1}"#), ("gold", r#"{"version":1}"#)]);
    let report = check_package(&package, &judge);
    assert!(!report.passed);
    assert_eq!(report.kind, None);
    let rows: Vec<(&str, Verdict)> = report.checks.iter().map(|r| (r.check.as_str(), r.result)).collect();
    assert_eq!(rows, [("load", Verdict::Pass), ("kind", Verdict::Fail)]);
    assert_eq!(
        row(&report.checks, "kind").reason,
        "nothing to score: no requirements.toml, no [delivery], and the evaluator reports neither tests nor reward"
    );
}

#[test]
fn reward_scored_task_needs_a_full_gold_reward() {
    let copy = Copy::of("test-basic");
    copy.remove("residual");
    let package = specgap_task::load(&copy.root).unwrap();
    let judge = FakeJudge::new(&[("starter", r#"{"version":1,"reward":0.25}"#), ("gold", r#"{"version":1,"reward":0.5}"#)]);
    let report = check_package(&package, &judge);
    assert_eq!(row(&report.checks, "kind").reason, "reward-scored");
    assert_eq!(row(&report.checks, "starter").result, Verdict::Pass);
    let gold = row(&report.checks, "gold");
    assert_eq!((gold.result, gold.reason.as_str()), (Verdict::Fail, "reward 0.5; expected reward 1"));
}

/// DESIGN §2 (format 2): `check` names the package's format.
#[test]
fn check_names_the_package_format() {
    let copy = Copy::of("test-basic");
    copy.remove("residual");
    let judge = FakeJudge::new(&[("starter", r#"{"version":1,"reward":0.25}"#), ("gold", r#"{"version":1,"reward":1}"#)]);
    let load_row = |copy: &Copy| {
        let report = check_package(&specgap_task::load(&copy.root).unwrap(), &judge);
        let row = row(&report.checks, "load");
        (row.result, row.reason.clone())
    };
    assert_eq!(load_row(&copy), (Verdict::Pass, "format 1 package loaded".to_string()));
    copy.replace("task.toml", "format = 1\n", "format = 2\n");
    assert_eq!(load_row(&copy), (Verdict::Pass, "format 2 package loaded".to_string()));
}

#[test]
fn evaluation_error_names_reason_and_stderr() {
    let package = specgap_task::load(fixture("req-basic")).unwrap();
    let judge = FakeJudge::new(&[("starter", REQ_ALL_FAIL)]);
    let report = check_package(&package, &judge);
    let gold = row(&report.checks, "gold");
    assert_eq!(gold.result, Verdict::Fail);
    assert_eq!(gold.reason, "evaluation error: the evaluator exited with status 1 (stderr: KeyError: 'gold')");
}

#[test]
fn invalid_result_is_an_evaluation_error() {
    let package = specgap_task::load(fixture("req-basic")).unwrap();
    let missing = r#"{"version":1,"requirements":{"fee-cap":{"pass":true},"monthly-rate":{"pass":true}}}"#;
    let judge = FakeJudge::new(&[("starter", REQ_ALL_FAIL), ("gold", missing)]);
    let report = check_package(&package, &judge);
    assert_eq!(row(&report.checks, "gold").reason, "evaluation error: result.json does not report requirement `disputed-exempt`");
}

#[test]
fn unregistered_failure_mode_and_unmeasured_placeholder_fail_observations() {
    let package = specgap_task::load(fixture("req-basic")).unwrap();
    let literal = one_failing("fee-cap", "fee-too-big", "{}");
    let mutant = one_failing("fee-cap", "fee-over-cap", r#"{"invoice":"I-2","fee":"9.00"}"#);
    let judge = FakeJudge::new(&[("starter", REQ_ALL_FAIL), ("gold", REQ_ALL_PASS), ("literal", &literal), ("mutant:fee-cap", &mutant)]);
    let report = check_package(&package, &judge);
    let observations = row(&report.checks, "observations");
    assert_eq!(observations.result, Verdict::Fail);
    assert_eq!(
        observations.reason,
        "literal reports failure mode `fee-too-big` of `fee-cap`, which observations.toml does not register; \
         mutant:fee-cap reports `fee-cap`/`fee-over-cap` without measuring `principal`, which its observation's detail needs"
    );
    // The literal fails only 1 of the 2 unstated requirements.
    assert_eq!(row(&report.checks, "literal").reason, "fails 1 (fee-cap); expected at least 2, one per unstated requirement");
    // Mutants whose runs error fail; the one that runs passes.
    assert_eq!(row(&report.checks, "mutant:fee-cap").reason, "fails fee-cap (fee-over-cap) only");
    assert_eq!(row(&report.checks, "mutant:disputed-exempt").result, Verdict::Fail);
}

#[test]
fn residual_state_that_passes_or_lists_other_tests_fails() {
    let package = specgap_task::load(fixture("test-basic")).unwrap();
    let starter = r#"{"version":1,"tests":{"a":"fail","b":"fail","line_count_trailing":"fail"}}"#;
    let gold = r#"{"version":1,"tests":{"a":"pass","b":"pass","line_count_trailing":"pass"}}"#;
    let state = r#"{"version":1,"tests":{"a":"error","b":"pass","line_count_trailing":"fail","top_words_ties":"pass"}}"#;
    let judge = FakeJudge::new(&[("starter", starter), ("gold", gold), ("residual:half-done", state)]);
    let report = check_package(&package, &judge);
    assert_eq!(
        row(&report.checks, "residual:half-done").reason,
        "failing tests differ from meta.toml's failing_tests: listed but passing: top_words_ties; failing but not listed: a"
    );
    let judge = FakeJudge::new(&[("starter", starter), ("gold", gold), ("residual:half-done", gold)]);
    let report = check_package(&package, &judge);
    assert_eq!(row(&report.checks, "residual:half-done").reason, "the verifier passes on this state; expected it to fail");
}

#[test]
fn every_evaluation_failing_fails_each_run_and_skips_observations() {
    let package = specgap_task::load(fixture("req-basic")).unwrap();
    let report = check_package(&package, &FakeJudge::new(&[]));
    let rows: Vec<(&str, Verdict)> = report.checks.iter().map(|r| (r.check.as_str(), r.result)).collect();
    assert_eq!(
        rows,
        [
            ("load", Verdict::Pass),
            ("kind", Verdict::Pass),
            ("instruction-length", Verdict::Pass),
            ("leak-scan", Verdict::Pass),
            ("starter", Verdict::Fail),
            ("gold", Verdict::Fail),
            ("literal", Verdict::Fail),
            ("mutant:disputed-exempt", Verdict::Fail),
            ("mutant:fee-cap", Verdict::Fail),
            ("mutant:monthly-rate", Verdict::Fail),
            ("observations", Verdict::Skip),
        ]
    );
    assert_eq!(row(&report.checks, "observations").reason, "no evaluation succeeded, so no failure mode was reported");
    assert_eq!(
        row(&report.checks, "mutant:fee-cap").reason,
        "evaluation error: the evaluator exited with status 1 (stderr: KeyError: 'mutant:fee-cap')"
    );
}

#[test]
fn missing_solutions_fail_gold_and_warn_for_literal_and_mutants() {
    let copy = Copy::of("req-basic");
    copy.remove("solutions");
    let package = specgap_task::load(&copy.root).unwrap();
    let report = check_package(&package, &FakeJudge::new(&[("starter", REQ_ALL_FAIL)]));
    let rows: Vec<(&str, Verdict, &str)> = report.checks.iter().skip(4).map(|r| (r.check.as_str(), r.result, r.reason.as_str())).collect();
    assert_eq!(
        rows,
        [
            ("starter", Verdict::Pass, "fails every requirement (3 of 3)"),
            ("gold", Verdict::Fail, "no solutions/gold/; a requirement-scored task needs a gold solution"),
            ("literal", Verdict::Warn, "no solutions/literal/; the instruction-following baseline is not calibrated"),
            ("mutant:disputed-exempt", Verdict::Warn, "no solutions/mutants/disputed-exempt/; its failure is not shown reproducible"),
            ("mutant:fee-cap", Verdict::Warn, "no solutions/mutants/fee-cap/; its failure is not shown reproducible"),
            ("mutant:monthly-rate", Verdict::Warn, "no solutions/mutants/monthly-rate/; its failure is not shown reproducible"),
            ("observations", Verdict::Pass, "2 reported failure modes, each with an observation"),
        ]
    );
    assert!(!report.passed);
}

#[test]
fn strict_fails_a_mutant_reporting_no_failure_mode() {
    // mutant:fee-cap fails its requirement with `failure_mode` null; the other mutants fail
    // theirs with registered modes. Without --strict that mutant passes (today's rule); with it
    // the row fails, naming the modes observations.toml registers for fee-cap.
    let package = specgap_task::load(fixture("req-basic")).unwrap();
    let literal = r#"{"version":1,"requirements":{"disputed-exempt":{"pass":false,"failure_mode":"disputed-charged","measured":{"invoice":"I-1","fee":"6.00"}},"fee-cap":{"pass":false,"failure_mode":"fee-over-cap","measured":{"invoice":"I-2","principal":"10.00","fee":"9.00"}},"monthly-rate":{"pass":true}}}"#;
    let null_mode =
        r#"{"version":1,"requirements":{"disputed-exempt":{"pass":true},"fee-cap":{"pass":false},"monthly-rate":{"pass":true}}}"#;
    let disputed = one_failing("disputed-exempt", "disputed-charged", r#"{"invoice":"I-1","fee":"6.00"}"#);
    let monthly = one_failing("monthly-rate", "fee-miscounted", r#"{"invoice":"I-3","days_late":"40","fee":"2.00"}"#);
    let judge = FakeJudge::new(&[
        ("starter", REQ_ALL_FAIL),
        ("gold", REQ_ALL_PASS),
        ("literal", literal),
        ("mutant:disputed-exempt", &disputed),
        ("mutant:fee-cap", null_mode),
        ("mutant:monthly-rate", &monthly),
    ]);
    let lenient = check_package(&package, &judge);
    assert_eq!(row(&lenient.checks, "mutant:fee-cap").result, Verdict::Pass);
    assert_eq!(row(&lenient.checks, "mutant:fee-cap").reason, "fails fee-cap (-) only");
    let strict = check_package_with(&package, &judge, &CheckOptions { strict: true });
    let mutant = row(&strict.checks, "mutant:fee-cap");
    assert_eq!(mutant.result, Verdict::Fail);
    assert_eq!(
        mutant.reason,
        "fails fee-cap with no failure mode (null); --strict needs the failure mode its observation names (registered: fee-over-cap)"
    );
    assert_eq!(row(&strict.checks, "mutant:monthly-rate").result, Verdict::Pass);
    assert!(!strict.passed);
}

#[test]
fn strict_warns_when_a_task_departs_from_the_papers_shape() {
    // req-basic has 3 requirements, 1 stated: a warning, not a failure.
    let package = specgap_task::load(fixture("req-basic")).unwrap();
    let report = check_package_with(&package, &FakeJudge::new(&[]), &CheckOptions { strict: true });
    let shape = row(&report.checks, "shape");
    assert_eq!(shape.result, Verdict::Warn);
    assert_eq!(shape.reason, "3 requirements, 1 stated; the paper's tasks have 5 requirements with at most 2 stated");
    let order: Vec<&str> = report.checks.iter().take(8).map(|r| r.check.as_str()).collect();
    assert_eq!(order, ["load", "kind", "instruction-length", "leak-scan", "instruction-full", "user", "shape", "starter"]);
    // Three stated of five is also outside the shape.
    let copy = Copy::of("req-basic");
    let text = copy.read("requirements.toml");
    copy.write("requirements.toml", &text.replace("stated = false", "stated = true"));
    let package = specgap_task::load(&copy.root).unwrap();
    let report = check_package_with(&package, &FakeJudge::new(&[]), &CheckOptions { strict: true });
    assert_eq!(
        row(&report.checks, "shape").reason,
        "3 requirements, 3 stated; the paper's tasks have 5 requirements with at most 2 stated"
    );
}

#[test]
fn strict_adds_nothing_to_other_scoring_kinds() {
    let package = specgap_task::load(fixture("test-basic")).unwrap();
    let starter = r#"{"version":1,"tests":{"a":"fail"}}"#;
    let gold = r#"{"version":1,"tests":{"a":"pass"}}"#;
    let judge = FakeJudge::new(&[("starter", starter), ("gold", gold)]);
    let lenient: Vec<String> = check_package(&package, &judge).checks.iter().map(|r| r.check.clone()).collect();
    let strict: Vec<String> =
        check_package_with(&package, &judge, &CheckOptions { strict: true }).checks.iter().map(|r| r.check.clone()).collect();
    assert_eq!(lenient, strict);
}

#[test]
fn a_replay_printing_an_unstated_rule_fails_the_leak_scan() {
    // Seed 000 §4.2 criterion 4 covers what the agent hears as well as what it reads: the
    // starter's replay of a record prints `fee-cap`'s rule, which no file states.
    let package = specgap_task::load(fixture("req-basic")).unwrap();
    let leak = "Late fees: the late fee of one invoice is at most ten percent of its principal.";
    let mut results = vec![("starter", REQ_ALL_FAIL), ("gold", REQ_ALL_PASS)];
    let key = "run:python3 -m billing.replay project_records/collections-2023.log";
    results.push((key, leak));
    let report = check_package(&package, &FakeJudge::new(&results));
    let scan = row(&report.checks, "leak-scan");
    assert_eq!(
        (scan.result, scan.reason.as_str()),
        (
            Verdict::Fail,
            "output of `python3 -m billing.replay project_records/collections-2023.log` (stdout): 14 words of unstated requirement `fee-cap`: \"the late fee of one invoice is at most ten percent of its principal\""
        )
    );
    // The same text from a command the package does not name is never heard by `check`.
    let quiet = vec![("starter", REQ_ALL_FAIL), ("gold", REQ_ALL_PASS), ("run:python3 -m billing.fees", leak)];
    let report = check_package(&package, &FakeJudge::new(&quiet));
    let scan = row(&report.checks, "leak-scan");
    assert_eq!(
        (scan.result, scan.reason.as_str()),
        (
            Verdict::Pass,
            "no unstated requirement text in instruction.md, workspace files, observations, user.toml or the starter's output of 3 replays and 0 probes"
        )
    );
}

#[test]
fn heard_commands_are_each_record_replayed_then_the_probes() {
    use specgap_task::heard::{HeardSource, heard_commands};
    let copy = Copy::of("req-basic");
    copy.replace("task.toml", "format = 1\n", "format = 2\n");
    add_probes(&copy, r#"["python3 -m billing.fees --help"]"#);
    copy.write("workspace/project_records/it's 2024.log", "x\n");
    let package = specgap_task::load(&copy.root).unwrap();
    let commands: Vec<(HeardSource, String)> = heard_commands(&package).unwrap().into_iter().map(|c| (c.source, c.command)).collect();
    assert_eq!(
        commands,
        [
            (HeardSource::Replay, "python3 -m billing.replay project_records/account-harbor-tea.json".to_string()),
            (HeardSource::Replay, "python3 -m billing.replay project_records/collections-2023.log".to_string()),
            (HeardSource::Replay, r"python3 -m billing.replay 'project_records/it'\''s 2024.log'".to_string()),
            (HeardSource::Replay, "python3 -m billing.replay project_records/support-2024-q1.log".to_string()),
            (HeardSource::Probe, "python3 -m billing.fees --help".to_string()),
        ]
    );
}
