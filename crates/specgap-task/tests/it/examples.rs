//! Deliberately broken copies of the bundled example `examples/tasks/payment-retry` fail
//! `check` with the right reasons (issue "Example suite", done-when).

use specgap_task::check::{TaskReport, Verdict, check_dir};

use crate::check::judge;
use crate::support::Copy;

fn failing(report: &TaskReport) -> Vec<(String, String)> {
    report.checks.iter().filter(|r| r.result == Verdict::Fail).map(|r| (r.check.clone(), r.reason.clone())).collect()
}

#[test]
fn the_example_as_shipped_passes() {
    let copy = Copy::of_example("payment-retry");
    let report = check_dir(&copy.root, judge());
    assert!(report.passed, "{:#?}", report.checks);
}

#[test]
fn a_gold_that_only_retries_fails_the_gold_check() {
    let copy = Copy::of_example("payment-retry");
    copy.write("solutions/gold/shop/checkout.py", &copy.read("solutions/literal/shop/checkout.py"));
    let report = check_dir(&copy.root, judge());
    assert_eq!(failing(&report), [("gold".to_string(), "fails charge-once (charged-twice), declines-final (decline-retried), respect-busy-wait (busy-retried-early), checkout-deadline (deadline-exceeded); expected the gold to pass every requirement".to_string())]);
}

#[test]
fn an_unstated_rule_copied_into_the_workspace_fails_the_leak_scan() {
    let copy = Copy::of_example("payment-retry");
    let readme = copy.read("workspace/README.md");
    copy.write(
        "workspace/README.md",
        &format!("{readme}\nNo order is captured more than once, and an order the gateway did capture never ends up failed.\n"),
    );
    let report = check_dir(&copy.root, judge());
    assert_eq!(failing(&report), [("leak-scan".to_string(), "workspace/README.md: 16 words of unstated requirement `charge-once`: \"no order is captured more than once and an order the gateway did capture never ends\"".to_string())]);
}

#[test]
fn a_mutant_that_breaks_nothing_fails_its_check() {
    let copy = Copy::of_example("payment-retry");
    copy.write("solutions/mutants/declines-final/shop/checkout.py", &copy.read("solutions/gold/shop/checkout.py"));
    let report = check_dir(&copy.root, judge());
    assert_eq!(failing(&report), [("mutant:declines-final".to_string(), "passes declines-final; expected the mutant to reproduce its failure".to_string())]);
}

#[test]
fn a_reported_failure_mode_without_an_observation_fails_the_registry_check() {
    let copy = Copy::of_example("payment-retry");
    let text = copy.read("observations.toml");
    let start = text.find("failure_mode = \"decline-retried\"").unwrap();
    let block_start = text[..start].rfind("[[observation]]").unwrap();
    let block_end = text[start..].find("[[observation]]").map_or(text.len(), |i| start + i);
    copy.write("observations.toml", &format!("{}{}", &text[..block_start], &text[block_end..]));
    let report = check_dir(&copy.root, judge());
    assert_eq!(failing(&report), [("observations".to_string(), "literal reports failure mode `decline-retried` of `declines-final`, which observations.toml does not register; mutant:declines-final reports failure mode `decline-retried` of `declines-final`, which observations.toml does not register".to_string())]);
}
