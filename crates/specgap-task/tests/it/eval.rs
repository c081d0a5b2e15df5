//! `eval`: any directory evaluated as a submission, through the real evaluator.

use specgap_protocol::result::{ScoringKind, TestOutcome};
use specgap_task::eval::{eval_dir, render_eval};

use crate::check::judge;
use crate::support::{Copy, copy_tree, fixture};

/// The starter workspace of a fixture with a solution overlay copied over it.
fn submission(task: &str, overlay: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture(task).join("workspace"), dir.path());
    if let Some(overlay) = overlay {
        copy_tree(&fixture(task).join("solutions").join(overlay), dir.path());
        let _ = std::fs::remove_file(dir.path().join("delete.txt"));
    }
    dir
}

#[test]
fn literal_of_req_basic_scores_one_third_with_feedback() {
    let package = specgap_task::load(fixture("req-basic")).unwrap();
    let dir = submission("req-basic", Some("literal"));
    let report = eval_dir(&package, dir.path(), judge()).unwrap();
    assert_eq!(report.kind, ScoringKind::Requirement);
    assert_eq!(report.score, Some(1.0 / 3.0));
    assert!(!report.success);
    let feedback = report.feedback.as_ref().unwrap();
    assert_eq!(feedback.requirement, "disputed-exempt");
    assert_eq!(feedback.detail, "Invoice INV-9201 is marked as disputed and its statement shows a late fee of 12.00.");
    assert_eq!(
        render_eval(&report),
        "fixtures/req-basic: requirement-scored, score 0.3333, success no
  requirement      priority  stated  result  failure mode / measured
  disputed-exempt  1         no      fail    disputed-charged  fee=12.00 invoice=INV-9201
  fee-cap          2         no      fail    fee-over-cap  fee=140.00 invoice=INV-9101 principal=1000.00
  monthly-rate     3         yes     pass
  feedback (disputed-exempt/disputed-charged): A customer who is contesting an invoice with us complained that the statement added a late fee on top of the amount they are contesting.
    then: Invoice INV-9201 is marked as disputed and its statement shows a late fee of 12.00.
"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["requirements"][1]["measured"]["principal"], "1000.00");
}

#[test]
fn gold_of_each_kind_succeeds() {
    for task in ["req-basic", "test-basic", "delivery-basic"] {
        let package = specgap_task::load(fixture(task)).unwrap();
        let dir = submission(task, Some("gold"));
        let report = eval_dir(&package, dir.path(), judge()).unwrap();
        assert_eq!((report.score, report.success), (Some(1.0), true), "{task}");
    }
}

#[test]
fn starter_of_test_basic_reports_every_test() {
    let package = specgap_task::load(fixture("test-basic")).unwrap();
    let dir = submission("test-basic", None);
    let report = eval_dir(&package, dir.path(), judge()).unwrap();
    assert_eq!(report.kind, ScoringKind::Test);
    assert_eq!(report.score, Some(1.0 / 7.0));
    assert_eq!(report.tests["line_count_empty"], TestOutcome::Pass);
    assert_eq!(report.tests["top_words_ties"], TestOutcome::Fail);
}

#[test]
fn evaluation_error_carries_the_stderr_tail() {
    let copy = Copy::of("req-basic");
    copy.write("evaluator/evaluate.py", "import sys\nprint('looking for invoices', file=sys.stderr)\nraise SystemExit(3)\n");
    let package = specgap_task::load(&copy.root).unwrap();
    let dir = submission("req-basic", None);
    let err = eval_dir(&package, dir.path(), judge()).unwrap_err();
    assert_eq!(specgap_task::check::describe_error_chain(&err), "evaluation error: evaluator exited with status 3");
    assert_eq!(err.stderr_tail(), Some("looking for invoices\n"));
}
