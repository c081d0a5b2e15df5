//! `check` through the real evaluators of the fixtures, in the sandbox: the valid fixtures
//! pass with exact rows, and broken copies fail with the right reasons.

use std::sync::OnceLock;

use specgap_task::SandboxJudge;
use specgap_task::check::{CheckOptions, CheckRow, TaskReport, Verdict, check_dir, check_paths};

use crate::support::{Copy, fixture};

/// One judge (and base cache) for the whole test binary.
pub fn judge() -> &'static SandboxJudge {
    static JUDGE: OnceLock<SandboxJudge> = OnceLock::new();
    JUDGE.get_or_init(|| SandboxJudge::new(true).unwrap())
}

fn rows(report: &TaskReport) -> Vec<(&str, &str, &str)> {
    report.checks.iter().map(|r| (r.check.as_str(), r.result.as_str(), r.reason.as_str())).collect()
}

fn row<'a>(report: &'a TaskReport, check: &str) -> &'a CheckRow {
    report.checks.iter().find(|r| r.check == check).unwrap_or_else(|| panic!("no row {check} in {:#?}", report.checks))
}

fn check_copy(copy: &Copy) -> TaskReport {
    check_dir(&copy.root, judge())
}

#[test]
fn req_basic_passes_every_check() {
    let report = check_dir(&fixture("req-basic"), judge());
    assert_eq!(
        rows(&report),
        [
            ("load", "pass", "format 1 package loaded"),
            ("kind", "pass", "requirement-scored (3 requirements)"),
            ("instruction-length", "pass", "122 words (40 to 250)"),
            (
                "leak-scan",
                "pass",
                "no unstated requirement text in instruction.md, workspace files, observations, user.toml or the starter's output of 3 replays and 0 probes"
            ),
            ("starter", "pass", "fails every requirement (3 of 3)"),
            ("gold", "pass", "passes every requirement (3 of 3)"),
            ("literal", "pass", "fails 2 (disputed-exempt, fee-cap); at least the 2 unstated"),
            ("mutant:disputed-exempt", "pass", "fails disputed-exempt (disputed-charged) only"),
            ("mutant:fee-cap", "pass", "fails fee-cap (fee-over-cap) only"),
            ("mutant:monthly-rate", "pass", "fails monthly-rate (fee-miscounted) only"),
            ("observations", "pass", "4 reported failure modes, each with an observation"),
        ]
    );
    assert!(report.passed);
}

#[test]
fn test_basic_passes_every_check() {
    let report = check_dir(&fixture("test-basic"), judge());
    assert_eq!(
        rows(&report),
        [
            ("load", "pass", "format 1 package loaded"),
            ("kind", "pass", "test-scored (evaluator reports 7 tests)"),
            ("instruction", "pass", "instruction.md has 67 words"),
            ("starter", "pass", "fails 6 of 7 tests"),
            ("gold", "pass", "passes every test (7)"),
            ("residual:half-done", "pass", "applies; fails line_count_trailing, top_words_ties as meta.toml lists"),
            (
                "residual:half-done:declared-complete",
                "pass",
                "meta.toml declares the state complete (the predecessor submitted it as done)"
            ),
            ("residual:half-done:left-out", "pass", "lists none, the files the gold changes that state.patch does not touch"),
        ]
    );
    assert!(report.passed);
}

#[test]
fn delivery_basic_passes_every_check() {
    let report = check_dir(&fixture("delivery-basic"), judge());
    assert_eq!(
        rows(&report),
        [
            ("load", "pass", "format 1 package loaded"),
            ("kind", "pass", "delivery-scored (reference 4, min)"),
            ("instruction", "pass", "instruction.md has 64 words"),
            ("information", "pass", "information.md present"),
            ("clarifications", "pass", "2 targets, each with an answer and a trigger"),
            ("visible-answers", "pass", "no registered answer stands verbatim in instruction.md or the workspace"),
            ("starter", "pass", "invalid (schema: plan-shape)"),
            ("gold", "pass", "valid, objective 4 attains the reference (score 1.0000)"),
        ]
    );
    assert!(report.passed);
}

#[test]
fn a_suite_is_checked_in_parallel_and_sorted() {
    let reports = check_paths(&[fixture("")], judge(), 2).unwrap();
    let summary: Vec<(String, bool)> = reports.iter().map(|r| (r.title(), r.passed)).collect();
    assert_eq!(
        summary,
        [("fixtures/delivery-basic".to_owned(), true), ("fixtures/req-basic".to_owned(), true), ("fixtures/test-basic".to_owned(), true)]
    );
}

#[test]
fn gold_failing_a_requirement_fails() {
    let copy = Copy::of("req-basic");
    copy.write("solutions/gold/billing/fees.py", &copy.read("solutions/mutants/fee-cap/billing/fees.py"));
    let report = check_copy(&copy);
    assert!(!report.passed);
    let gold = row(&report, "gold");
    assert_eq!(
        (gold.result, gold.reason.as_str()),
        (Verdict::Fail, "fails fee-cap (fee-over-cap); expected the gold to pass every requirement")
    );
}

#[test]
fn mutant_that_does_not_reproduce_its_failure_fails() {
    let copy = Copy::of("req-basic");
    copy.write("solutions/mutants/fee-cap/billing/fees.py", &copy.read("solutions/gold/billing/fees.py"));
    let report = check_copy(&copy);
    let mutant = row(&report, "mutant:fee-cap");
    assert_eq!((mutant.result, mutant.reason.as_str()), (Verdict::Fail, "passes fee-cap; expected the mutant to reproduce its failure"));
    assert!(!report.passed);
}

#[test]
fn mutant_breaking_other_requirements_warns() {
    let copy = Copy::of("req-basic");
    // The literal breaks fee-cap and disputed-exempt: as the fee-cap mutant it over-reaches.
    copy.write("solutions/mutants/fee-cap/billing/fees.py", &copy.read("solutions/literal/billing/fees.py"));
    let report = check_copy(&copy);
    let mutant = row(&report, "mutant:fee-cap");
    assert_eq!((mutant.result, mutant.reason.as_str()), (Verdict::Warn, "fails fee-cap (fee-over-cap), and also breaks disputed-exempt"));
    assert!(report.passed);
}

#[test]
fn leaked_eight_word_run_fails_the_leak_scan() {
    let copy = Copy::of("req-basic");
    let readme = copy.read("workspace/README.md");
    copy.write("workspace/README.md", &format!("{readme}\nReminder: the late fee of one invoice is at most ten percent.\n"));
    let report = check_copy(&copy);
    let leak = row(&report, "leak-scan");
    assert_eq!(
        (leak.result, leak.reason.as_str()),
        (
            Verdict::Fail,
            "workspace/README.md: 11 words of unstated requirement `fee-cap`: \"the late fee of one invoice is at most ten percent\""
        )
    );
}

#[test]
fn leaked_id_and_evaluation_words_fail_the_leak_scan() {
    let copy = Copy::of("req-basic");
    copy.write("workspace/billing/TODO.txt", "Check disputed-exempt before the hidden tests run.\n");
    let report = check_copy(&copy);
    assert_eq!(
        row(&report, "leak-scan").reason,
        "workspace/billing/TODO.txt: names unstated requirement id `disputed-exempt`; \
         workspace/billing/TODO.txt: uses the word \"hidden tests\""
    );
}

#[test]
fn instruction_outside_40_to_250_words_fails() {
    let copy = Copy::of("req-basic");
    copy.write("instruction.md", "Please fix the late fee so it counts started months.\n");
    let report = check_copy(&copy);
    let length = row(&report, "instruction-length");
    assert_eq!((length.result, length.reason.as_str()), (Verdict::Fail, "instruction.md has 10 words; expected 40 to 250"));
}

#[test]
fn starter_passing_a_requirement_fails() {
    let copy = Copy::of("req-basic");
    copy.write("workspace/billing/fees.py", &copy.read("solutions/mutants/monthly-rate/billing/fees.py"));
    let report = check_copy(&copy);
    assert_eq!(row(&report, "starter").reason, "passes disputed-exempt, fee-cap; expected the starter to fail every requirement");
}

#[test]
fn literal_failing_too_few_fails() {
    let copy = Copy::of("req-basic");
    copy.write("solutions/literal/billing/fees.py", &copy.read("solutions/gold/billing/fees.py"));
    let report = check_copy(&copy);
    assert_eq!(row(&report, "literal").reason, "fails 0 (none); expected at least 2, one per unstated requirement");
}

#[test]
fn unregistered_failure_mode_fails_observations() {
    let copy = Copy::of("req-basic");
    copy.replace("evaluator/evaluate.py", r#""failure_mode": "fee-over-cap""#, r#""failure_mode": "fee-too-big""#);
    let report = check_copy(&copy);
    let observations = row(&report, "observations");
    assert_eq!(observations.result, Verdict::Fail);
    assert_eq!(
        observations.reason,
        "starter reports failure mode `fee-too-big` of `fee-cap`, which observations.toml does not register; \
         literal reports failure mode `fee-too-big` of `fee-cap`, which observations.toml does not register; \
         mutant:fee-cap reports failure mode `fee-too-big` of `fee-cap`, which observations.toml does not register"
    );
}

#[test]
fn crashing_evaluator_is_an_evaluation_error() {
    let copy = Copy::of("req-basic");
    copy.write("evaluator/evaluate.py", "import sys\nsys.exit('no verdict today')\n");
    let report = check_copy(&copy);
    assert_eq!(row(&report, "starter").reason, "evaluation error: evaluator exited with status 1 (stderr: no verdict today)");
    assert_eq!(row(&report, "gold").result, Verdict::Fail);
}

#[test]
fn evaluator_reporting_nothing_fails_with_nothing_to_score() {
    let copy = Copy::of("test-basic");
    copy.replace("evaluator/verify.py", r#"{"version": 1, "tests": tests}"#, r#"{"version": 1}"#);
    let report = check_copy(&copy);
    assert_eq!(
        rows(&report),
        [
            ("load", "pass", "format 1 package loaded"),
            ("kind", "fail", "nothing to score: no requirements.toml, no [delivery], and the evaluator reports neither tests nor reward"),
        ]
    );
    assert!(!report.passed);
}

#[test]
fn residual_meta_listing_other_tests_fails() {
    let copy = Copy::of("test-basic");
    copy.replace(
        "residual/half-done/meta.toml",
        r#"["line_count_trailing", "top_words_ties"]"#,
        r#"["line_count_trailing", "word_count_empty"]"#,
    );
    let report = check_copy(&copy);
    assert_eq!(
        row(&report, "residual:half-done").reason,
        "failing tests differ from meta.toml's failing_tests: listed but passing: word_count_empty; failing but not listed: top_words_ties"
    );
}

#[test]
fn residual_meta_not_declared_complete_fails() {
    let copy = Copy::of("test-basic");
    copy.replace("residual/half-done/meta.toml", "declared_complete = true", "declared_complete = false");
    let report = check_copy(&copy);
    let failing: Vec<(&str, &str)> =
        report.checks.iter().filter(|r| r.result == Verdict::Fail).map(|r| (r.check.as_str(), r.reason.as_str())).collect();
    assert_eq!(
        failing,
        [(
            "residual:half-done:declared-complete",
            "meta.toml has declared_complete = false; a residual state is a predecessor's state submitted as complete (seed 001 §3.2)"
        )]
    );
    assert!(!report.passed);
}

#[test]
fn residual_meta_with_wrong_left_out_fails() {
    // The gold changes textstats/core.py, which the state's patch also touches (together with
    // NOTES.txt): nothing is left out, so listing core.py or README.md is wrong.
    let copy = Copy::of("test-basic");
    copy.replace("residual/half-done/meta.toml", "left_out = []", r#"left_out = ["textstats/core.py", "README.md"]"#);
    let report = check_copy(&copy);
    let left_out = row(&report, "residual:half-done:left-out");
    assert_eq!(left_out.result, Verdict::Fail);
    assert_eq!(
        left_out.reason,
        "left_out differs from the files the gold changes that state.patch does not touch (none): listed but not left out: README.md, textstats/core.py; left out but not listed: none"
    );
    assert!(!report.passed);
}

#[test]
fn residual_left_out_is_computed_and_shown_when_absent() {
    // interval-tree's root-refresh state never touches ivtree/node.py, which the gold changes;
    // its meta.toml lists it. Without the list, check computes and shows the same file.
    let copy = Copy::of_example("interval-tree");
    copy.replace("residual/root-refresh/meta.toml", "left_out = [\"ivtree/node.py\"]\n", "");
    let report = check_copy(&copy);
    assert!(report.passed, "{:#?}", report.checks);
    assert_eq!(
        row(&report, "residual:root-refresh:left-out").reason,
        "not in meta.toml; computed: ivtree/node.py (files the gold changes that state.patch does not touch)"
    );
    // A list naming a file the state did touch is caught, with the computed files shown.
    copy.replace("residual/trim-only/meta.toml", "failing_tests =", "left_out = [\"ivtree/tree.py\"]\nfailing_tests =");
    let report = check_copy(&copy);
    assert_eq!(
        row(&report, "residual:trim-only:left-out").reason,
        "left_out differs from the files the gold changes that state.patch does not touch (none): listed but not left out: ivtree/tree.py; left out but not listed: none"
    );
}

#[test]
fn residual_patch_that_does_not_apply_fails() {
    let copy = Copy::of("test-basic");
    copy.replace("residual/half-done/state.patch", "-    return len(text.split(\" \"))", "-    return len(text.split(\"\\t\"))");
    let report = check_copy(&copy);
    let residual = row(&report, "residual:half-done");
    assert_eq!(residual.result, Verdict::Fail);
    let prefix = "state.patch of residual state `half-done` does not apply to the clean workspace: residual patch ";
    assert!(residual.reason.starts_with(prefix), "{}", residual.reason);
}

#[test]
fn gold_delivery_short_of_the_reference_fails() {
    let copy = Copy::of("delivery-basic");
    copy.write("solutions/gold/plan.json", r#"{"boxes": [["A1"], ["A4"], ["A3", "A2"], ["A5", "A6"], ["A7"]]}"#);
    let report = check_copy(&copy);
    assert_eq!(
        row(&report, "gold").reason,
        "valid, objective 5 falls short of the reference (score 0.8000); expected the gold to be valid and attain the reference"
    );
}

#[test]
fn gold_delivery_breaking_a_constraint_fails() {
    let copy = Copy::of("delivery-basic");
    copy.write("solutions/gold/plan.json", r#"{"boxes": [["A1", "A2"], ["A3", "A5"], ["A4", "A6", "A7"]]}"#);
    let report = check_copy(&copy);
    assert_eq!(
        row(&report, "gold").reason,
        "invalid (constraint: packed-box-weight); expected the gold to be valid and attain the reference"
    );
}

#[test]
fn delivery_without_information_or_triggers_fails() {
    let copy = Copy::of("delivery-basic");
    copy.remove("information.md");
    copy.replace("clarifications.toml", r#"triggers = ["Can some items wait until tomorrow?"]"#, "triggers = []");
    copy.replace(
        "clarifications.toml",
        r#"answer = "Every line in orders.csv ships today; nothing may be left for tomorrow.""#,
        r#"answer = " ""#,
    );
    let report = check_copy(&copy);
    assert_eq!(row(&report, "information").reason, "no information.md; the customer needs the complete business information");
    assert_eq!(row(&report, "clarifications").reason, "target `all-items-today` has no answer; target `all-items-today` has no trigger");
    assert!(!report.passed);
}

#[test]
fn a_registered_answer_the_agent_can_read_is_a_warning() {
    // Seed 002 §3.2: a target is kept only when the request and the visible data do not settle
    // it. Here a workspace file states the packaging-weight answer word for word.
    let copy = Copy::of("delivery-basic");
    copy.write("workspace/CARRIER.txt", "From the carrier: the carrier weighs the packed box, and an empty box with padding is 0.5 kg.\n");
    let report = check_copy(&copy);
    let row = row(&report, "visible-answers");
    assert_eq!(row.result.as_str(), "warn");
    assert_eq!(
        row.reason,
        "the agent can read these answers instead of asking: target `packaging-weight`: 8 words of its answer in workspace/CARRIER.txt: \"the carrier weighs the packed box and an\""
    );
    assert!(report.passed, "a warning does not fail the package");
}

#[test]
fn unloadable_package_reports_one_load_row() {
    let copy = Copy::of("req-basic");
    copy.replace("task.toml", "format = 1\n", "");
    let report = check_copy(&copy);
    assert_eq!(report.task, None);
    assert_eq!(
        rows(&report),
        [(
            "load",
            "fail",
            format!(
                "{}: missing `format`; this specgap reads task package formats 1 and 2 (`format = 1` unless the package uses a format-2 key)",
                copy.path("task.toml").display()
            )
            .as_str()
        )]
    );
}

#[test]
fn no_sandbox_judge_gives_the_same_rows() {
    let unsandboxed = SandboxJudge::new(false).unwrap();
    let report = check_dir(&fixture("test-basic"), &unsandboxed);
    assert_eq!(rows(&report), rows(&check_dir(&fixture("test-basic"), judge())));
    assert!(report.passed);
}

#[test]
fn duplicate_names_and_broken_packages_are_reported_per_package() {
    let tmp = tempfile::tempdir().unwrap();
    crate::support::copy_tree(&fixture("delivery-basic"), &tmp.path().join("a"));
    crate::support::copy_tree(&fixture("delivery-basic"), &tmp.path().join("b"));
    crate::support::copy_tree(&fixture("test-basic"), &tmp.path().join("c"));
    fs_err::remove_file(tmp.path().join("c/instruction.md")).unwrap();
    let reports = check_paths(&[tmp.path()], judge(), 3).unwrap();
    let titles: Vec<String> = reports.iter().map(TaskReport::title).collect();
    let broken = tmp.path().join("c");
    assert_eq!(titles, [broken.display().to_string(), "fixtures/delivery-basic".into(), "fixtures/delivery-basic".into()]);
    assert_eq!(
        rows(&reports[0]),
        [("load", "fail", format!("{}: missing instruction.md; every package needs its opening instruction", broken.display()).as_str())]
    );
    let unique = row(&reports[1], "unique-name");
    assert_eq!(unique.reason, format!("task name is also used by {}", tmp.path().join("b").display()));
    assert_eq!(row(&reports[2], "unique-name").reason, format!("task name is also used by {}", tmp.path().join("a").display()));
    assert!(reports.iter().all(|r| !r.passed));
}

#[test]
fn json_summary_has_the_documented_shape() {
    let report = check_dir(&fixture("delivery-basic"), judge());
    let summary = specgap_task::check::CheckSummary::new(vec![report], &CheckOptions::default());
    let json = serde_json::to_value(&summary).unwrap();
    let mut top: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    top.sort_unstable();
    assert_eq!(top, ["passed", "strict", "tasks", "version"]);
    assert_eq!(json["version"], 2);
    assert_eq!(json["strict"], false);
    assert_eq!(json["passed"], true);
    let task = &json["tasks"][0];
    let mut keys: Vec<&str> = task.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["checks", "hash", "kind", "passed", "root", "task"]);
    assert_eq!(task["task"], "fixtures/delivery-basic");
    assert_eq!(task["kind"], "delivery");
    assert_eq!(task["hash"].as_str().unwrap().len(), 64);
    assert_eq!(task["checks"][0], serde_json::json!({"check": "load", "result": "pass", "reason": "format 1 package loaded"}));
}
