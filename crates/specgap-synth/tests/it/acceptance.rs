//! The acceptance checks rejecting defects planted after the Builder's hand-off: a broken
//! gold, a mutant that changes nothing, an over-long partial instruction, a leak in a record, a
//! package that states what the brief withholds.

use specgap_synth::acceptance::{AcceptanceReport, run_acceptance};
use specgap_synth::handoff::{BriefLimits, PlannerBrief, parse};

use crate::support::{brief, copy_within, package_copy};

/// The acceptance failure of payment-retry with the starter's checkout.py as its gold.
pub const BROKEN_GOLD: &str = "gold: fails charge-once (charged-but-failed), retry-timeouts (timeout-ended-checkout), declines-final (decline-not-recorded), respect-busy-wait (busy-gave-up), checkout-deadline (unresolved-marked-failed); expected the gold to pass every requirement";

fn planned() -> PlannerBrief {
    parse(&brief().to_string(), &BriefLimits::default()).unwrap()
}

fn accept(root: &std::path::Path) -> AcceptanceReport {
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    run_acceptance(root, &planned(), &judge)
}

/// The failing rows as `check: reason`.
fn failing(report: &AcceptanceReport) -> Vec<String> {
    report.failures()
}

#[test]
fn the_bundled_package_passes_every_acceptance_check() {
    let tmp = tempfile::tempdir().unwrap();
    let report = accept(&package_copy(tmp.path()));
    assert_eq!(failing(&report), Vec::<String>::new());
    assert!(report.passed);
    let names: Vec<&str> = report.rows.iter().map(|r| r.check.as_str()).collect();
    for name in ["instruction-length", "leak-scan", "starter", "gold", "literal", "mutant:charge-once", "brief:stated"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
}

#[test]
fn a_broken_gold_fails_the_gold_row() {
    let tmp = tempfile::tempdir().unwrap();
    let root = package_copy(tmp.path());
    copy_within(&root, "workspace/shop/checkout.py", "solutions/gold/shop/checkout.py");
    let report = accept(&root);
    assert!(!report.passed);
    let failures = failing(&report);
    assert_eq!(failures, vec![BROKEN_GOLD.to_owned()]);
}

#[test]
fn a_mutant_that_changes_nothing_fails_its_row() {
    let tmp = tempfile::tempdir().unwrap();
    let root = package_copy(tmp.path());
    copy_within(&root, "solutions/gold/shop/checkout.py", "solutions/mutants/declines-final/shop/checkout.py");
    let report = accept(&root);
    let failures = failing(&report);
    assert_eq!(failures, vec!["mutant:declines-final: passes declines-final; expected the mutant to reproduce its failure".to_owned()]);
}

#[test]
fn an_over_long_partial_instruction_fails_the_length_row() {
    let tmp = tempfile::tempdir().unwrap();
    let root = package_copy(tmp.path());
    let path = root.join("instruction.md");
    let text = fs_err::read_to_string(&path).unwrap();
    fs_err::write(&path, format!("{text}\n{}\n", "Thanks again for looking at this today. ".repeat(20))).unwrap();
    let report = accept(&root);
    let failures = failing(&report);
    assert_eq!(failures, vec!["instruction-length: instruction.md has 279 words; expected 40 to 250".to_owned()]);
}

#[test]
fn a_package_stating_what_the_brief_withholds_fails_the_brief_row() {
    let tmp = tempfile::tempdir().unwrap();
    let root = package_copy(tmp.path());
    let mut brief = planned();
    brief.stated = vec!["retry-timeouts".into(), "declines-final".into()];
    brief.withheld.retain(|id| id != "declines-final");
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let report = run_acceptance(&root, &brief, &judge);
    assert_eq!(
        report.failures(),
        vec!["brief:stated: requirements.toml states [retry-timeouts]; the brief states [declines-final, retry-timeouts]".to_owned()]
    );
}

#[test]
fn a_record_that_states_a_withheld_requirement_fails_the_leak_scan() {
    let tmp = tempfile::tempdir().unwrap();
    let root = package_copy(tmp.path());
    let note = "Lesson from June: every request for one order must carry the same idempotency key.\n";
    fs_err::write(root.join("workspace/records/ops-notes.txt"), note).unwrap();
    let report = accept(&root);
    assert_eq!(
        report.failures(),
        vec!["leak-scan: workspace/records/ops-notes.txt: 11 words of unstated requirement `charge-once`: \"every request for one order must carry the same idempotency key\"".to_owned()]
    );
}
