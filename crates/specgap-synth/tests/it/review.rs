//! `synthesis.toml` (the recorded sufficiency result and review), `check`'s `synthesis:*`
//! rows, the review pages and the import of reviewers' sheets.

use serde_json::json;
use specgap_synth::pipeline::Limits;
use specgap_synth::review::{ReviewError, blank_sheet, import_review, write_review_pages};
use specgap_task::check::{CheckOptions, Verdict, check_dir_with};
use specgap_task::synthesis::{CriterionResult, ReviewStatus, SufficiencyResult};

use crate::support::{Scripts, audit_pass, brief, build_step, calibrate_ready, copy_within, package_copy};

fn synthesis_rows(package: &std::path::Path) -> Vec<(String, Verdict, String)> {
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let report = check_dir_with(package, &judge, &CheckOptions { strict: true });
    report.checks.into_iter().filter(|r| r.check.starts_with("synthesis:")).map(|r| (r.check, r.result, r.reason)).collect()
}

const SHEET_HEADER: &str = "criterion,question,verdict,note\n";

fn sheet(dir: &std::path::Path, name: &str, verdicts: [&str; 4]) -> (String, std::path::PathBuf) {
    let criteria = ["consistency", "plausibility", "inferability", "no-leak"];
    let mut text = SHEET_HEADER.to_owned();
    for (criterion, verdict) in criteria.iter().zip(verdicts) {
        text.push_str(&format!("{criterion},,{verdict},\"looked at it, {name}\"\n"));
    }
    let path = dir.join(format!("{name}.csv"));
    fs_err::write(&path, text).unwrap();
    (name.to_owned(), path)
}

#[test]
fn a_ready_package_records_its_sufficiency_is_reviewed_and_check_reports_both() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let implement = json!({"write_from": good.join("solutions/gold"), "reply": {"summary": "implemented"}});
    let roles = [vec![json!({"reply": brief()})], vec![build_step(&good, "built")], vec![audit_pass()], vec![calibrate_ready()]];
    let done = scripts.run_all(roles, Some(vec![implement]), Limits::default(), false).unwrap();

    let text = fs_err::read_to_string(done.package.join("synthesis.toml")).unwrap();
    let source = crate::support::payment_retry().display().to_string();
    assert_eq!(text, format!("format = 1\nsource = \"{source}\"\n\n[sufficiency]\nresult = \"pass\"\nfailing = []\n"));
    let loaded = specgap_task::load(&done.package).unwrap();
    assert_eq!(loaded.synthesis().unwrap().sufficiency.result, SufficiencyResult::Pass);
    assert_eq!(
        synthesis_rows(&done.package),
        vec![
            (
                "synthesis:sufficiency".to_owned(),
                Verdict::Pass,
                "the synthesis's implementation from instruction.full.md passed every requirement".to_owned()
            ),
            (
                "synthesis:review".to_owned(),
                Verdict::Warn,
                "not reviewed: no reviewers' verdicts imported (specgap synthesis-review --review NAME=CSV)".to_owned()
            ),
        ]
    );

    // The pages and the blank sheet.
    let pages_dir = scripts.tmp.path().join("pages");
    let pages = write_review_pages(&done.package, &pages_dir).unwrap();
    assert_eq!(fs_err::read_to_string(&pages.sheet).unwrap(), blank_sheet());
    assert!(blank_sheet().starts_with(SHEET_HEADER), "{}", blank_sheet());
    assert_eq!(blank_sheet().lines().count(), 5);
    let markdown = fs_err::read_to_string(&pages.markdown).unwrap();
    assert!(markdown.starts_with("# Review: examples/payment-retry\n"), "{markdown}");
    assert!(markdown.contains("Sufficiency test: passed: an implementation from instruction.full.md alone passed every requirement."));
    assert!(markdown.contains("| 1 | charge-once | "), "{markdown}");
    let html = fs_err::read_to_string(&pages.html).unwrap();
    assert!(html.contains("content=\"default-src 'none'\""));

    // Two reviewers pass everything: version 1, reviewed.
    let ana = sheet(scripts.tmp.path(), "ana", ["pass", "PASS", "pass", "pass"]);
    let bo = sheet(scripts.tmp.path(), "bo", ["pass"; 4]);
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let review = import_review(&done.package, &[ana.clone(), bo], &judge).unwrap();
    assert_eq!((review.version, review.status), (1, ReviewStatus::Reviewed));
    let order: Vec<(&str, &str)> = review.criteria.iter().map(|c| (c.criterion.as_str(), c.reviewer.as_str())).collect();
    assert_eq!(order[..3], [("consistency", "ana"), ("consistency", "bo"), ("plausibility", "ana")]);
    assert_eq!(review.criteria[0].note, "looked at it, ana");

    // A later import that fails one criterion: version 2, rejected, and check fails the row.
    let cy = sheet(scripts.tmp.path(), "cy", ["pass", "pass", "fail", "pass"]);
    let review = import_review(&done.package, &[cy], &judge).unwrap();
    assert_eq!((review.version, review.status), (2, ReviewStatus::Rejected));
    assert_eq!(review.criteria[2].verdict, CriterionResult::Fail);
    let rows = synthesis_rows(&done.package);
    assert_eq!(rows[1], ("synthesis:review".to_owned(), Verdict::Fail, "review version 2 rejected it: inferability failed".to_owned()));

    // A repair that breaks the gold is refused: the acceptance checks run again.
    copy_within(&done.package, "workspace/shop/checkout.py", "solutions/gold/shop/checkout.py");
    let err = import_review(&done.package, &[ana], &judge).unwrap_err();
    assert!(matches!(&err, ReviewError::Acceptance { failures, .. } if failures[0].starts_with("gold: fails charge-once")), "{err}");
    let still = specgap_task::load(&done.package).unwrap();
    assert_eq!(still.synthesis().unwrap().review.as_ref().unwrap().version, 2, "a refused import records nothing");
}

#[test]
fn a_synthesis_without_an_implementer_records_a_skipped_sufficiency_test() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let roles = [vec![json!({"reply": brief()})], vec![build_step(&good, "built")], vec![audit_pass()], vec![calibrate_ready()]];
    let done = scripts.run_all(roles, None, Limits::default(), false).unwrap();
    let loaded = specgap_task::load(&done.package).unwrap();
    let record = loaded.synthesis().unwrap();
    assert_eq!((record.sufficiency.result, record.review.is_none()), (SufficiencyResult::Skipped, true));
}

#[test]
fn malformed_sheets_and_unsynthesized_packages_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let package = package_copy(&tmp.path().join("plain"));
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let good = sheet(tmp.path(), "ana", ["pass"; 4]);
    let err = import_review(&package, &[good], &judge).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{} has no synthesis.toml: only a package `specgap synthesize` built can be reviewed this way", package.display())
    );
    let cases = [
        ("criterion,verdict\nconsistency,maybe\n", "row 2: verdict `maybe` of `consistency` is neither `pass` nor `fail`"),
        (
            "criterion,verdict\nclarity,pass\n",
            "row 2: unknown criterion `clarity`; expected one of consistency, plausibility, inferability, no-leak",
        ),
        ("criterion,verdict\nconsistency,pass\nconsistency,pass\n", "row 3: criterion `consistency` appears twice"),
        ("criterion,verdict\nconsistency,pass\n", "the end: no row for criterion `plausibility`"),
        ("criterion,note\n", "the header: needs the columns `criterion` and `verdict`"),
    ];
    for (text, problem) in cases {
        let path = tmp.path().join("bad.csv");
        fs_err::write(&path, text).unwrap();
        let err = import_review(&package, &[("ana".into(), path.clone())], &judge).unwrap_err();
        assert_eq!(err.to_string(), format!("review sheet {} is malformed at {problem}", path.display()), "{text}");
    }
    assert_eq!(
        import_review(&package, &[], &judge).unwrap_err().to_string(),
        "no review sheet given: name each reviewer's sheet as NAME=CSV"
    );
}

#[test]
fn a_recorded_failing_sufficiency_test_fails_check() {
    let tmp = tempfile::tempdir().unwrap();
    let package = package_copy(&tmp.path().join("p"));
    let record = "format = 1\nsource = \"src\"\n\n[sufficiency]\nresult = \"fail\"\nfailing = [\"charge-once\", \"declines-final\"]\n";
    fs_err::write(package.join("synthesis.toml"), record).unwrap();
    let rows = synthesis_rows(&package);
    assert_eq!(
        rows[0],
        (
            "synthesis:sufficiency".to_owned(),
            Verdict::Fail,
            "the synthesis's implementation from instruction.full.md failed charge-once, declines-final".to_owned()
        )
    );
    fs_err::write(package.join("synthesis.toml"), "format = 1\nsource = \"src\"\n\n[sufficiency]\nresult = \"skipped\"\n").unwrap();
    assert_eq!(synthesis_rows(&package)[0].1, Verdict::Skip);
}
