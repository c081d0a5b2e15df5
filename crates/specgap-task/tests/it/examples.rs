//! Deliberately broken copies of the bundled example `examples/tasks/payment-retry` fail
//! `check` with the right reasons (issue "Example suite", done-when), and `check --strict`
//! rejects copies missing each piece seed 000's construction demands (issue 13 item 8).

use specgap_task::check::{CheckOptions, TaskReport, Verdict, check_dir, check_dir_with, check_paths_with};

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
fn a_request_quoting_an_unstated_requirement_fails_the_leak_scan() {
    // The relay owner says each observation's request after a failed submission, so the scan
    // reads it as it reads the workspace.
    let copy = Copy::of_example("payment-retry");
    let text = copy.read("observations.toml");
    let old = "request = \"Next time I look at the settlement report, I need every customer to have paid once for their basket, however Paylane behaved that evening.\"";
    assert!(text.contains(old));
    let leaked = "request = \"Next time, no order is captured more than once, and an order stays paid.\"";
    copy.write("observations.toml", &text.replace(old, leaked));
    let report = check_dir(&copy.root, judge());
    assert_eq!(
        failing(&report),
        [(
            "leak-scan".to_string(),
            "observations.toml charge-once/charged-twice request: 10 words of unstated requirement `charge-once`: \"no order is captured more than once and an order\"".to_string()
        )]
    );
}

#[test]
fn a_user_toml_sentence_quoting_an_unstated_requirement_fails_the_leak_scan() {
    // The relay owner answers questions with user.toml's sentences.
    let copy = Copy::of_example("payment-retry");
    let text = copy.read("user.toml");
    let old = "I don't know how \\\nPaylane answers when it is overloaded.";
    assert!(text.contains(old), "{text}");
    let leaked = "I know that a card decline is final for that checkout.";
    copy.write("user.toml", &text.replace(old, leaked));
    let report = check_dir(&copy.root, judge());
    assert_eq!(
        failing(&report),
        [(
            "leak-scan".to_string(),
            "user.toml understanding: 8 words of unstated requirement `declines-final`: \"a card decline is final for that checkout\"".to_string()
        )]
    );
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

// ---- `check --strict` (seed 000 App. E.2) on copies of payment-retry ------------------------

const STRICT: CheckOptions = CheckOptions { strict: true };

fn check_strict(copy: &Copy) -> TaskReport {
    check_dir_with(&copy.root, judge(), &STRICT)
}

fn verdict_of<'a>(report: &'a TaskReport, check: &str) -> (Verdict, &'a str) {
    let row = report.checks.iter().find(|r| r.check == check).unwrap_or_else(|| panic!("no row {check} in {:#?}", report.checks));
    (row.result, row.reason.as_str())
}

#[test]
fn the_bundled_packages_pass_check_strict() {
    let suite = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks");
    let reports = check_paths_with(&[suite], judge(), 2, &STRICT).unwrap();
    assert_eq!(reports.len(), 5);
    for report in &reports {
        assert!(report.passed, "{}: {:#?}", report.title(), report.checks);
        assert!(report.checks.iter().all(|r| r.result != Verdict::Warn), "{}: {:#?}", report.title(), report.checks);
    }
    let names: Vec<String> = reports.iter().map(TaskReport::title).collect();
    assert_eq!(names, ["examples/config-drift", "examples/experiment-analysis", "examples/interval-tree", "examples/payment-retry", "examples/retail-replenishment"]);
    let payment = &reports[3];
    assert_eq!(verdict_of(payment, "instruction-full"), (Verdict::Pass, "instruction.full.md present (322 words)"));
    assert_eq!(verdict_of(payment, "user"), (Verdict::Pass, "user.toml present (persona, understanding, editable surface)"));
    assert_eq!(verdict_of(payment, "shape"), (Verdict::Pass, "5 requirements, 1 stated, as in the paper"));
}

#[test]
fn strict_rejects_a_copy_without_instruction_full() {
    let copy = Copy::of_example("payment-retry");
    copy.remove("instruction.full.md");
    assert_eq!(failing(&check_strict(&copy)), [("instruction-full".to_string(), "no instruction.full.md; --strict needs the complete specification the full condition opens with (seed 000 App. E.2)".to_string())]);
    // Without --strict nothing changes: the package passes with today's rows.
    let lenient = check_dir(&copy.root, judge());
    assert!(lenient.passed, "{:#?}", lenient.checks);
    assert!(lenient.checks.iter().all(|r| !["instruction-full", "user", "shape"].contains(&r.check.as_str())));
}

#[test]
fn strict_rejects_a_copy_with_an_empty_instruction_full() {
    let copy = Copy::of_example("payment-retry");
    copy.write("instruction.full.md", "\n  \n");
    assert_eq!(failing(&check_strict(&copy)), [("instruction-full".to_string(), "instruction.full.md is empty; --strict needs the complete specification the full condition opens with".to_string())]);
}

#[test]
fn strict_rejects_a_copy_without_user_toml() {
    let copy = Copy::of_example("payment-retry");
    copy.remove("user.toml");
    assert_eq!(failing(&check_strict(&copy)), [("user".to_string(), "no user.toml; --strict needs the simulated owner's persona, understanding and editable surface (seed 000 App. E.1, F.4)".to_string())]);
    assert!(check_dir(&copy.root, judge()).passed);
}

#[test]
fn strict_rejects_a_copy_with_a_blank_persona() {
    let copy = Copy::of_example("payment-retry");
    let user = copy.read("user.toml");
    let start = user.find("persona = ").unwrap();
    let end = start + user[start..].find('\n').unwrap();
    copy.write("user.toml", &format!("{}persona = \" \"{}", &user[..start], &user[end..]));
    assert_eq!(failing(&check_strict(&copy)), [("user".to_string(), "user.toml has an empty persona; the simulated owner speaks from each".to_string())]);
}

#[test]
fn strict_rejects_a_copy_without_the_literal_reference() {
    let copy = Copy::of_example("payment-retry");
    copy.remove("solutions/literal");
    assert_eq!(failing(&check_strict(&copy)), [("literal".to_string(), "no solutions/literal/; --strict needs the literal reference, the instruction-following baseline (seed 000 App. E.2)".to_string())]);
    let lenient = check_dir(&copy.root, judge());
    assert!(lenient.passed);
    assert_eq!(verdict_of(&lenient, "literal"), (Verdict::Warn, "no solutions/literal/; the instruction-following baseline is not calibrated"));
}

#[test]
fn strict_rejects_a_literal_reference_failing_fewer_than_the_unstated() {
    let copy = Copy::of_example("payment-retry");
    copy.write("solutions/literal/shop/checkout.py", &copy.read("solutions/gold/shop/checkout.py"));
    assert_eq!(failing(&check_strict(&copy)), [("literal".to_string(), "fails 0 (none); expected at least 4, one per unstated requirement".to_string())]);
}

#[test]
fn strict_rejects_a_copy_missing_a_mutant() {
    let copy = Copy::of_example("payment-retry");
    copy.remove("solutions/mutants/declines-final");
    assert_eq!(failing(&check_strict(&copy)), [("mutant:declines-final".to_string(), "no solutions/mutants/declines-final/; --strict needs one mutant per requirement (seed 000 App. E.2)".to_string())]);
    let lenient = check_dir(&copy.root, judge());
    assert!(lenient.passed);
    assert_eq!(verdict_of(&lenient, "mutant:declines-final").0, Verdict::Warn);
}

#[test]
fn strict_rejects_a_mutant_whose_failure_mode_differs_from_its_observation() {
    // The evaluator reports `decline-retried` for the mutant; observations.toml now registers
    // that observation under another name, so the mutant's failure is not the one it names.
    let copy = Copy::of_example("payment-retry");
    copy.replace("observations.toml", "failure_mode = \"decline-retried\"", "failure_mode = \"decline-sent-again\"");
    let strict = check_strict(&copy);
    assert_eq!(
        verdict_of(&strict, "mutant:declines-final"),
        (Verdict::Fail, "fails declines-final with failure mode `decline-retried`, which observations.toml does not register for declines-final (registered: decline-sent-again, decline-not-recorded, checkout-error-on-decline)")
    );
    assert_eq!(failing(&strict).iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(), ["mutant:declines-final", "observations"]);
    // Without --strict the mutant row keeps today's verdict; the registry row still fails.
    let lenient = check_dir(&copy.root, judge());
    assert_eq!(verdict_of(&lenient, "mutant:declines-final"), (Verdict::Pass, "fails declines-final (decline-retried) only"));
    assert_eq!(failing(&lenient).iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(), ["observations"]);
}
