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
            "user.toml understanding: 8 words of unstated requirement `declines-final`: \"a card decline is final for that checkout\""
                .to_string()
        )]
    );
}

#[test]
fn a_mutant_that_breaks_nothing_fails_its_check() {
    let copy = Copy::of_example("payment-retry");
    copy.write("solutions/mutants/declines-final/shop/checkout.py", &copy.read("solutions/gold/shop/checkout.py"));
    let report = check_dir(&copy.root, judge());
    assert_eq!(
        failing(&report),
        [("mutant:declines-final".to_string(), "passes declines-final; expected the mutant to reproduce its failure".to_string())]
    );
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
    assert_eq!(
        names,
        [
            "examples/config-drift",
            "examples/experiment-analysis",
            "examples/interval-tree",
            "examples/payment-retry",
            "examples/retail-replenishment"
        ]
    );
    let payment = &reports[3];
    assert_eq!(
        verdict_of(payment, "instruction-full"),
        (
            Verdict::Pass,
            "instruction.full.md present (322 words): 6 paragraphs, each requirement stated in one of its own; lowest: `respect-busy-wait`, 63% of its description's content words"
        )
    );
    assert_eq!(verdict_of(payment, "user"), (Verdict::Pass, "user.toml present (persona, understanding, editable surface)"));
    assert_eq!(verdict_of(payment, "shape"), (Verdict::Pass, "5 requirements, 1 stated, as in the paper"));
}

#[test]
fn strict_rejects_a_copy_without_instruction_full() {
    let copy = Copy::of_example("payment-retry");
    copy.remove("instruction.full.md");
    assert_eq!(
        failing(&check_strict(&copy)),
        [(
            "instruction-full".to_string(),
            "no instruction.full.md; --strict needs the complete specification the full condition opens with (seed 000 App. E.2)"
                .to_string()
        )]
    );
    // Without --strict nothing changes: the package passes with today's rows.
    let lenient = check_dir(&copy.root, judge());
    assert!(lenient.passed, "{:#?}", lenient.checks);
    assert!(lenient.checks.iter().all(|r| !["instruction-full", "user", "shape"].contains(&r.check.as_str())));
}

#[test]
fn strict_rejects_a_copy_with_an_empty_instruction_full() {
    let copy = Copy::of_example("payment-retry");
    copy.write("instruction.full.md", "\n  \n");
    assert_eq!(
        failing(&check_strict(&copy)),
        [(
            "instruction-full".to_string(),
            "instruction.full.md is empty; --strict needs the complete specification the full condition opens with".to_string()
        )]
    );
}

#[test]
fn strict_rejects_a_copy_without_user_toml() {
    let copy = Copy::of_example("payment-retry");
    copy.remove("user.toml");
    assert_eq!(
        failing(&check_strict(&copy)),
        [(
            "user".to_string(),
            "no user.toml; --strict needs the simulated owner's persona, understanding and editable surface (seed 000 App. E.1, F.4)"
                .to_string()
        )]
    );
    assert!(check_dir(&copy.root, judge()).passed);
}

#[test]
fn strict_rejects_a_copy_with_a_blank_persona() {
    let copy = Copy::of_example("payment-retry");
    let user = copy.read("user.toml");
    let start = user.find("persona = ").unwrap();
    let end = start + user[start..].find('\n').unwrap();
    copy.write("user.toml", &format!("{}persona = \" \"{}", &user[..start], &user[end..]));
    assert_eq!(
        failing(&check_strict(&copy)),
        [("user".to_string(), "user.toml has an empty persona; the simulated owner speaks from each".to_string())]
    );
}

#[test]
fn strict_rejects_a_copy_without_the_literal_reference() {
    let copy = Copy::of_example("payment-retry");
    copy.remove("solutions/literal");
    assert_eq!(
        failing(&check_strict(&copy)),
        [(
            "literal".to_string(),
            "no solutions/literal/; --strict needs the literal reference, the instruction-following baseline (seed 000 App. E.2)"
                .to_string()
        )]
    );
    let lenient = check_dir(&copy.root, judge());
    assert!(lenient.passed);
    assert_eq!(
        verdict_of(&lenient, "literal"),
        (Verdict::Warn, "no solutions/literal/; the instruction-following baseline is not calibrated")
    );
}

#[test]
fn strict_rejects_a_literal_reference_failing_fewer_than_the_unstated() {
    let copy = Copy::of_example("payment-retry");
    copy.write("solutions/literal/shop/checkout.py", &copy.read("solutions/gold/shop/checkout.py"));
    assert_eq!(
        failing(&check_strict(&copy)),
        [("literal".to_string(), "fails 0 (none); expected at least 4, one per unstated requirement".to_string())]
    );
}

#[test]
fn strict_rejects_a_copy_missing_a_mutant() {
    let copy = Copy::of_example("payment-retry");
    copy.remove("solutions/mutants/declines-final");
    assert_eq!(
        failing(&check_strict(&copy)),
        [(
            "mutant:declines-final".to_string(),
            "no solutions/mutants/declines-final/; --strict needs one mutant per requirement (seed 000 App. E.2)".to_string()
        )]
    );
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
        (
            Verdict::Fail,
            "fails declines-final with failure mode `decline-retried`, which observations.toml does not register for declines-final (registered: decline-sent-again, decline-not-recorded, checkout-error-on-decline)"
        )
    );
    assert_eq!(failing(&strict).iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(), ["mutant:declines-final", "observations"]);
    // Without --strict the mutant row keeps today's verdict; the registry row still fails.
    let lenient = check_dir(&copy.root, judge());
    assert_eq!(verdict_of(&lenient, "mutant:declines-final"), (Verdict::Pass, "fails declines-final (decline-retried) only"));
    assert_eq!(failing(&lenient).iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(), ["observations"]);
}

/// Each bundled requirement package's coverage figures (module guide of
/// `specgap_task::full_instruction`): the lowest share a requirement gets from its own paragraph
/// of instruction.full.md, the highest share an unstated requirement gets from any paragraph of
/// instruction.md, and the highest share a requirement gets from a full-instruction paragraph
/// that is not its own. All three must sit on the right side of MIN_COVERAGE (0.5).
#[test]
fn the_paragraph_rule_separates_the_bundled_full_and_partial_instructions() {
    use specgap_task::full_instruction::{MIN_COVERAGE, coverage, paragraphs, percent, review};
    use specgap_task::matching::content_words;
    let mut rows = Vec::new();
    for name in ["config-drift", "experiment-analysis", "payment-retry"] {
        let package = specgap_task::load(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks").join(name)).unwrap();
        let full = package.instruction_full().unwrap();
        let accepted = review(full, package.instruction(), package.requirements()).unwrap();
        let own_lowest = accepted.stated.iter().map(|s| s.coverage).fold(1.0, f64::min);
        let share = |text: &str, r: &specgap_protocol::package::Requirement| -> Vec<f64> {
            let description = content_words(&r.description);
            paragraphs(text).iter().map(|p| coverage(&description, &content_words(p))).collect()
        };
        let partial_highest =
            package.requirements().iter().filter(|r| !r.stated).flat_map(|r| share(package.instruction(), r)).fold(0.0, f64::max);
        let other_highest = accepted
            .stated
            .iter()
            .flat_map(|s| {
                let r = package.requirements().iter().find(|r| r.id == s.requirement).unwrap();
                share(full, r).into_iter().enumerate().filter(move |(p, _)| p + 1 != s.paragraph).map(|(_, c)| c)
            })
            .fold(0.0, f64::max);
        assert!(own_lowest >= MIN_COVERAGE && partial_highest < MIN_COVERAGE, "{name}");
        rows.push(format!(
            "{name}: own >= {}, partial <= {}, other paragraphs <= {}",
            percent(own_lowest),
            percent(partial_highest),
            percent(other_highest)
        ));
    }
    assert_eq!(
        rows,
        [
            "config-drift: own >= 77%, partial <= 22%, other paragraphs <= 55%",
            "experiment-analysis: own >= 73%, partial <= 35%, other paragraphs <= 42%",
            "payment-retry: own >= 63%, partial <= 27%, other paragraphs <= 53%",
        ]
    );
}

#[test]
fn strict_rejects_a_one_line_full_instruction() {
    // Every requirement's full description, on one line: one paragraph for five requirements.
    let copy = Copy::of_example("payment-retry");
    let package = specgap_task::load(&copy.root).unwrap();
    let one_line: Vec<&str> = package.requirements().iter().map(|r| r.description.trim()).collect();
    copy.write("instruction.full.md", &one_line.join(" "));
    assert_eq!(
        failing(&check_strict(&copy)),
        [(
            "instruction-full".to_string(),
            "instruction.full.md has 1 paragraph; seed 000 App. E.2 writes one paragraph per requirement (5)".to_string()
        )]
    );
}

#[test]
fn strict_rejects_a_full_instruction_that_copies_the_partial_one() {
    let copy = Copy::of_example("payment-retry");
    copy.write("instruction.full.md", &copy.read("instruction.md"));
    assert_eq!(
        failing(&check_strict(&copy)),
        [(
            "instruction-full".to_string(),
            "instruction.full.md says what instruction.md says; the full instruction states every requirement".to_string()
        )]
    );
    // The partial instruction with a paragraph per requirement that only names it still fails:
    // the unstated rules are not stated.
    let mut padded = copy.read("instruction.md");
    for id in ["charge-once", "declines-final", "respect-busy-wait", "checkout-deadline", "retry-timeouts"] {
        padded.push_str(&format!("\n\nAnd {} too.\n", id.replace('-', " ")));
    }
    copy.write("instruction.full.md", &padded);
    let reason = &failing(&check_strict(&copy))[0].1;
    assert!(
        reason
            .starts_with("instruction.full.md does not state every requirement in a paragraph of its own: `charge-once` (best: paragraph "),
        "{reason}"
    );
    for id in ["declines-final", "respect-busy-wait", "checkout-deadline", "retry-timeouts"] {
        assert!(reason.contains(&format!("`{id}` (best: paragraph ")), "{reason}");
    }
}

#[test]
fn strict_rejects_a_full_instruction_missing_one_requirement_paragraph() {
    // The bundled full instruction without its deadline paragraph (the last one).
    let copy = Copy::of_example("payment-retry");
    let full = copy.read("instruction.full.md");
    let kept: Vec<&str> = full.split("\n\n").filter(|p| !p.starts_with("Stay inside the request deadline.")).collect();
    assert_eq!(kept.len(), 5);
    copy.write("instruction.full.md", &(kept.join("\n\n") + "\n\nThank you.\n"));
    assert_eq!(
        failing(&check_strict(&copy)),
        [(
            "instruction-full".to_string(),
            "instruction.full.md does not state every requirement in a paragraph of its own: `checkout-deadline` (best: paragraph 2, with 25% of its description's content words; 50% needed)".to_string()
        )]
    );
}

#[test]
fn an_empty_instruction_fails_check_for_every_kind() {
    for (name, row, reason) in [
        ("payment-retry", "instruction-length", "instruction.md is empty; expected 40 to 250 words"),
        ("interval-tree", "instruction", "instruction.md is empty; it is the agent's opening message"),
        ("retail-replenishment", "instruction", "instruction.md is empty; it is the agent's opening message"),
    ] {
        let copy = Copy::of_example(name);
        copy.write("instruction.md", " \n\n");
        let report = check_dir(&copy.root, judge());
        assert_eq!(failing(&report), [(row.to_string(), reason.to_string())], "{name}");
    }
}

/// Python that prints `declines-final`'s rule at run time from its words in reverse order, so
/// no file of the workspace holds eight of its words in a row.
const PRINTS_THE_DECLINE_RULE: &str =
    "_W = 'sent is request charge further no checkout that for final is decline card A'.split()\nprint(' '.join(reversed(_W)))\n";

#[test]
fn a_replay_that_prints_an_unstated_rule_fails_the_leak_scan() {
    // The leak scan hears what the starter's replays print (seed 000 §4.2 criterion 4): a
    // replay announcing the decline rule leaks it, though no file states it.
    let copy = Copy::of_example("payment-retry");
    let replay = copy.read("workspace/shop/replay.py");
    copy.write("workspace/shop/replay.py", &replay.replacen("import json\n", &format!("import json\n{PRINTS_THE_DECLINE_RULE}"), 1));
    let report = check_dir(&copy.root, judge());
    let records = [
        "checkout-2024-06-07.json",
        "checkout-2024-06-14.json",
        "checkout-2024-06-21.json",
        "payments.log",
        "settlements-2024-06.csv",
        "support-tickets.txt",
    ];
    let leaks = records
        .iter()
        .map(|record| {
            format!("output of `python3 -m shop.replay records/{record}` (stdout): 14 words of unstated requirement `declines-final`: \"a card decline is final for that checkout no further charge request is sent\"")
        })
        .collect::<Vec<_>>()
        .join("; ");
    assert_eq!(failing(&report), [("leak-scan".to_string(), leaks)]);
}

#[test]
fn a_probe_that_prints_an_unstated_rule_fails_the_leak_scan() {
    // `[project].probes` (format 2) names other commands the agent runs; their starter output
    // is heard as well. Without the probe the same module is never run, and check passes.
    let copy = Copy::of_example("payment-retry");
    copy.write("workspace/shop/banner.py", PRINTS_THE_DECLINE_RULE);
    assert!(check_dir(&copy.root, judge()).passed);
    copy.replace(
        "task.toml",
        "replay = \"python3 -m shop.replay {record}\"\n",
        "replay = \"python3 -m shop.replay {record}\"\nprobes = [\"python3 -m shop.banner\"]\n",
    );
    let report = check_dir(&copy.root, judge());
    assert_eq!(
        failing(&report),
        [(
            "leak-scan".to_string(),
            "output of `python3 -m shop.banner` (stdout): 14 words of unstated requirement `declines-final`: \"a card decline is final for that checkout no further charge request is sent\"".to_string()
        )]
    );
}

#[test]
fn the_bundled_leak_scans_hear_every_record_replayed() {
    let suite = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks");
    let reports = check_paths_with(&[suite], judge(), 2, &CheckOptions::default()).unwrap();
    let scans: Vec<(String, String)> =
        reports.iter().filter_map(|r| r.checks.iter().find(|c| c.check == "leak-scan").map(|c| (r.title(), c.reason.clone()))).collect();
    let heard = |n: usize| {
        format!(
            "no unstated requirement text in instruction.md, workspace files, observations, user.toml or the starter's output of {n} replays and 0 probes"
        )
    };
    assert_eq!(
        scans,
        [
            ("examples/config-drift".to_string(), heard(5)),
            ("examples/experiment-analysis".to_string(), heard(3)),
            ("examples/payment-retry".to_string(), heard(6)),
        ]
    );
}
