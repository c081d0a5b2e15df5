//! The offline pipeline end to end with scripted roles on payment-retry: a clean run, the fix
//! loop, the redesign loop, the iteration limit, and a schema-breaking hand-off.

use serde_json::json;
use specgap_synth::pipeline::{Limits, SynthError};

use crate::acceptance::BROKEN_GOLD;
use crate::support::{
    Scripts, accepted_at_first_iteration, audit_fix, audit_pass, brief, build_step, calibrate_ready, copy_within, package_copy, step, steps,
};

#[test]
fn a_clean_run_journals_every_hand_off_and_copies_the_package() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let done = scripts
        .run(
            [vec![json!({"reply": brief()})], vec![build_step(&good, "built payment-retry")], vec![audit_pass()], vec![calibrate_ready()]],
            Limits::default(),
        )
        .unwrap();
    assert_eq!(done.package, scripts.out().join("package"));
    assert_eq!((done.designs, done.iterations), (1, 1));
    assert!(done.package.join("task.toml").is_file());
    assert_eq!(specgap_task::load(&done.package).unwrap().name(), "examples/payment-retry");

    let journal = scripts.journal();
    assert_eq!(steps(&journal), accepted_at_first_iteration(1));
    let entries = journal["entries"].as_array().unwrap();
    assert_eq!(entries[0]["detail"], brief());
    assert_eq!(entries[1]["detail"], json!({"package": "payment-retry", "summary": "built payment-retry"}));
    assert_eq!(entries[3]["detail"]["verdict"], "pass");
    assert_eq!(entries[4]["detail"]["rollouts"][0]["turns"], json!([4, 7]));
    let rows: Vec<(&str, &str)> = entries[2]["detail"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["check"].as_str().unwrap().starts_with("brief:"))
        .map(|r| (r["check"].as_str().unwrap(), r["result"].as_str().unwrap()))
        .collect();
    assert_eq!(rows, vec![("brief:requirements", "pass"), ("brief:stated", "pass"), ("brief:failure-modes", "pass")]);
    assert_eq!(journal["outcome"]["status"], "ready");
    assert_eq!(
        journal["limits"],
        json!({"max_iterations": 3, "max_redesigns": 1, "max_retries": 2, "brief": {"requirements": 5, "min_withheld": 3}})
    );
    assert!(scripts.out().join("prompts/builder.md").is_file());
}

#[test]
fn a_failing_acceptance_check_and_an_audit_fix_go_back_to_the_builder_with_numbered_fixes() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let broken = package_copy(&scripts.tmp.path().join("broken"));
    copy_within(&broken, "workspace/shop/checkout.py", "solutions/gold/shop/checkout.py");
    let done = scripts
        .run(
            [
                vec![json!({"reply": brief()})],
                vec![build_step(&broken, "first try"), build_step(&good, "gold repaired"), build_step(&good, "records trimmed")],
                vec![
                    audit_fix(&["records/payments.log names the idempotency rule", "the full instruction omits the deadline"]),
                    audit_pass(),
                ],
                vec![calibrate_ready()],
            ],
            Limits::default(),
        )
        .unwrap();
    assert_eq!((done.designs, done.iterations), (1, 3));
    let journal = scripts.journal();
    assert_eq!(
        steps(&journal),
        vec![
            step("planner", 1, 0, 1, "accepted"),
            step("builder", 1, 1, 1, "accepted"),
            step("acceptance", 1, 1, 1, "failed"),
            step("builder", 1, 2, 1, "accepted"),
            step("acceptance", 1, 2, 1, "passed"),
            step("auditor", 1, 2, 1, "accepted"),
            step("builder", 1, 3, 1, "accepted"),
            step("acceptance", 1, 3, 1, "passed"),
            step("auditor", 1, 3, 1, "accepted"),
            step("calibrator", 1, 3, 1, "accepted"),
        ]
    );
    let entries = journal["entries"].as_array().unwrap();
    // The failed gold row is what the second Builder round is asked to fix.
    assert_eq!(entries[3]["inputs"]["fixes"], json!([BROKEN_GOLD]));
    assert_eq!(
        entries[6]["inputs"]["fixes"],
        json!(["records/payments.log names the idempotency rule", "the full instruction omits the deadline"])
    );
}

#[test]
fn a_redesign_goes_back_to_the_planner_with_the_reason() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let redesign =
        json!({"reply": {"verdict": "redesign", "reason": "busy-wait is only discoverable from the full instruction", "evidence": []}});
    let done = scripts
        .run(
            [
                vec![json!({"reply": brief()}), json!({"reply": brief()})],
                vec![build_step(&good, "design one"), build_step(&good, "design two")],
                vec![redesign, audit_pass()],
                vec![calibrate_ready()],
            ],
            Limits::default(),
        )
        .unwrap();
    assert_eq!((done.designs, done.iterations), (2, 1));
    let journal = scripts.journal();
    assert_eq!(
        steps(&journal),
        vec![
            step("planner", 1, 0, 1, "accepted"),
            step("builder", 1, 1, 1, "accepted"),
            step("acceptance", 1, 1, 1, "passed"),
            step("auditor", 1, 1, 1, "accepted"),
            step("planner", 2, 0, 1, "accepted"),
            step("builder", 2, 1, 1, "accepted"),
            step("acceptance", 2, 1, 1, "passed"),
            step("auditor", 2, 1, 1, "accepted"),
            step("calibrator", 2, 1, 1, "accepted"),
        ]
    );
    let entries = journal["entries"].as_array().unwrap();
    assert_eq!(entries[0]["inputs"]["redesign_reason"], json!(null));
    assert_eq!(entries[4]["inputs"]["redesign_reason"], "busy-wait is only discoverable from the full instruction");
}

#[test]
fn an_audit_fix_that_never_converges_ends_at_the_iteration_limit() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let limits = Limits { max_iterations: 2, ..Limits::default() };
    let err = scripts
        .run(
            [
                vec![json!({"reply": brief()})],
                vec![build_step(&good, "one"), build_step(&good, "two")],
                vec![audit_fix(&["the starter already retries declines"]), audit_fix(&["the starter already retries declines"])],
                vec![],
            ],
            limits,
        )
        .unwrap_err();
    assert!(matches!(err, SynthError::IterationLimit { design: 1, iterations: 2, .. }), "{err:?}");
    let message = err.to_string();
    assert_eq!(
        message,
        "design 1 is still not accepted after 2 builder iterations (--max-iterations 2); the last round asked for:\n1. the starter already retries declines"
    );
    let journal = scripts.journal();
    assert_eq!(journal["outcome"], json!({"status": "failed", "message": message, "package": null}));
    assert!(!scripts.out().join("package").exists());
}

#[test]
fn a_schema_breaking_hand_off_is_retried_and_then_refused_naming_the_field() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let mut missing = brief();
    missing["requirements"][2].as_object_mut().unwrap().remove("discovery");
    let done = scripts
        .run(
            [
                vec![json!({"reply": missing.clone()}), json!({"reply_text": "Here is my brief: {"}), json!({"reply": brief()})],
                vec![build_step(&good, "built")],
                vec![audit_pass()],
                vec![calibrate_ready()],
            ],
            Limits::default(),
        )
        .unwrap();
    assert_eq!(done.designs, 1);
    let journal = scripts.journal();
    let entries = journal["entries"].as_array().unwrap();
    assert!(
        entries[0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("the planner hand-off does not match its schema at `requirements[2]`: missing field `discovery`")
    );
    assert_eq!(entries[1]["detail"], "the planner hand-off does not match its schema at `.`: expected value at line 1 column 1");
    assert_eq!(entries[1]["status"], "malformed");
    assert_eq!(entries[1]["retry_reason"], entries[0]["detail"]);
    assert_eq!(entries[2]["retry_reason"], entries[1]["detail"]);
    assert!(entries[0].get("retry_reason").is_none());
    assert_eq!((entries[2]["attempt"].as_u64(), entries[2]["status"].as_str()), (Some(3), Some("accepted")));

    // With no retries left the same answer ends the synthesis, naming the field.
    let scripts = Scripts::new();
    let limits = Limits { max_retries: 0, ..Limits::default() };
    let err = scripts.run([vec![json!({"reply": missing})], vec![], vec![], vec![]], limits).unwrap_err();
    let chain = format!("{}: {}", err, std::error::Error::source(&err).unwrap());
    assert!(
        chain.starts_with("the planner's hand-off was still malformed at attempt 1 (--max-retries 0): the planner hand-off does not match its schema at `requirements[2]`: missing field `discovery`"),
        "{chain}"
    );
}

#[test]
fn a_builder_whose_gold_keeps_failing_ends_at_the_limit_with_the_gold_row() {
    let scripts = Scripts::new();
    let broken = package_copy(&scripts.tmp.path().join("broken"));
    copy_within(&broken, "workspace/shop/checkout.py", "solutions/gold/shop/checkout.py");
    let limits = Limits { max_iterations: 2, ..Limits::default() };
    let err = scripts
        .run([vec![json!({"reply": brief()})], vec![build_step(&broken, "one"), build_step(&broken, "two")], vec![], vec![]], limits)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "design 1 is still not accepted after 2 builder iterations (--max-iterations 2); the last round asked for:\n1. {BROKEN_GOLD}"
        )
    );
    assert_eq!(
        steps(&scripts.journal()),
        vec![
            step("planner", 1, 0, 1, "accepted"),
            step("builder", 1, 1, 1, "accepted"),
            step("acceptance", 1, 1, 1, "failed"),
            step("builder", 1, 2, 1, "accepted"),
            step("acceptance", 1, 2, 1, "failed"),
        ]
    );
}

#[test]
fn a_script_out_of_steps_stops_the_synthesis_naming_the_script() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let err =
        scripts.run([vec![json!({"reply": brief()})], vec![build_step(&good, "built")], vec![], vec![]], Limits::default()).unwrap_err();
    let script = scripts.tmp.path().join("auditor.json");
    assert_eq!(err.to_string(), "the auditor could not answer");
    assert_eq!(
        std::error::Error::source(&err).unwrap().to_string(),
        format!("role script {} has no step left for request 1 of the auditor (it has 0)", script.display())
    );
    assert_eq!(scripts.journal()["outcome"]["status"], "failed");
}

#[test]
fn a_redesign_past_the_limit_ends_the_synthesis_with_the_reason() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let redesign = json!({"reply": {"verdict": "redesign", "reason": "the deadline cannot be observed from any record", "evidence": []}});
    let limits = Limits { max_redesigns: 0, ..Limits::default() };
    let err = scripts.run([vec![json!({"reply": brief()})], vec![build_step(&good, "built")], vec![redesign], vec![]], limits).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the auditor still asks for a redesign of design 1 (--max-redesigns 0): the deadline cannot be observed from any record"
    );
}

#[test]
fn resume_reuses_the_recorded_answers_and_asks_the_roles_from_where_it_stopped() {
    let scripts = Scripts::new();
    let broken = package_copy(&scripts.tmp.path().join("broken"));
    copy_within(&broken, "workspace/shop/checkout.py", "solutions/gold/shop/checkout.py");
    let good = package_copy(&scripts.tmp.path().join("good"));
    let planner = vec![json!({"reply": brief()})];
    let builder = vec![build_step(&broken, "first try"), build_step(&good, "gold repaired")];
    // The Auditor's script is empty the first time: the synthesis stops there.
    let err = scripts.run([planner.clone(), builder.clone(), vec![], vec![]], Limits::default()).unwrap_err();
    assert!(matches!(err, SynthError::Role { role: "auditor", .. }), "{err:?}");
    let first = steps(&scripts.journal());

    // The same scripts, now with an Auditor and a Calibrator: the planner and both builder
    // answers come from the journal (the scripts skip them), the checks run again.
    let done = scripts.run_with([planner, builder, vec![audit_pass()], vec![calibrate_ready()]], Limits::default(), true).unwrap();
    assert_eq!((done.designs, done.iterations), (1, 2));
    let journal = scripts.journal();
    let resumed = steps(&journal);
    assert_eq!(resumed[..first.len()], first[..]);
    assert_eq!(resumed[first.len()..], [step("auditor", 1, 2, 1, "accepted"), step("calibrator", 1, 2, 1, "accepted")]);
    assert_eq!(journal["resumed"], 1);
    assert_eq!(journal["entries"][3]["detail"]["summary"], "gold repaired");

    // A ready synthesis is not resumed.
    let again = scripts.run_with([vec![], vec![], vec![], vec![]], Limits::default(), true).unwrap_err();
    assert_eq!(again.to_string(), format!("the synthesis in {} already ended ready; nothing to resume", scripts.out().display()));
}

#[test]
fn an_audit_pass_without_evidence_for_a_withheld_requirement_is_asked_again() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let thin = json!({"reply": {"verdict": "pass", "evidence": [{"requirement": "charge-once", "source": "records", "quote": "q"}]}});
    let stray =
        json!({"reply": {"verdict": "fix", "fixes": ["f"], "evidence": [{"requirement": "refunds", "source": "records", "quote": "q"}]}});
    let limits = Limits { max_retries: 1, ..Limits::default() };
    let err =
        scripts.run([vec![json!({"reply": brief()})], vec![build_step(&good, "built")], vec![thin, stray], vec![]], limits).unwrap_err();
    let journal = scripts.journal();
    let entries = journal["entries"].as_array().unwrap();
    assert_eq!(
        entries[3]["detail"],
        "the auditor hand-off breaks a rule at `evidence`: verdict `pass` quotes no evidence for withheld requirement `declines-final`"
    );
    assert_eq!(
        entries[4]["detail"],
        "the auditor hand-off breaks a rule at `evidence[0].requirement`: `refunds` is not a requirement of the brief"
    );
    assert!(matches!(err, SynthError::Malformed { role: "auditor", attempts: 2, retries: 1, .. }), "{err:?}");
}

/// An implementer step writing `dir`'s files over its copy of the workspace.
fn implement_from(dir: &std::path::Path) -> serde_json::Value {
    json!({"write_from": dir, "reply": {"summary": "implemented the full instruction"}})
}

#[test]
fn the_sufficiency_test_evaluates_the_implementers_directory_and_tells_the_auditor() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let roles = [vec![json!({"reply": brief()})], vec![build_step(&good, "built")], vec![audit_pass()], vec![calibrate_ready()]];
    let done = scripts.run_all(roles, Some(vec![implement_from(&good.join("solutions/gold"))]), Limits::default(), false).unwrap();
    assert_eq!((done.designs, done.iterations), (1, 1));
    let journal = scripts.journal();
    assert_eq!(
        steps(&journal),
        vec![
            step("planner", 1, 0, 1, "accepted"),
            step("builder", 1, 1, 1, "accepted"),
            step("acceptance", 1, 1, 1, "passed"),
            step("implementer", 1, 1, 1, "accepted"),
            step("sufficiency", 1, 1, 1, "passed"),
            step("auditor", 1, 1, 1, "accepted"),
            step("calibrator", 1, 1, 1, "accepted"),
        ]
    );
    let entries = journal["entries"].as_array().unwrap();
    assert_eq!(entries[4]["detail"], json!({"failing": [], "failure": null}));
    assert_eq!(entries[5]["inputs"]["sufficiency"], json!({"failing": [], "failure": null}));
    let instruction = fs_err::read_to_string(good.join("instruction.full.md")).unwrap();
    assert_eq!(entries[3]["inputs"]["instruction"], instruction.as_str());
    assert_eq!(journal["roles"]["implementer"], format!("scripted:{}", scripts.tmp.path().join("implementer.json").display()));
}

#[test]
fn an_implementation_from_the_full_instruction_that_fails_goes_back_to_the_builder() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let limits = Limits { max_iterations: 1, ..Limits::default() };
    let roles = [vec![json!({"reply": brief()})], vec![build_step(&good, "built")], vec![], vec![]];
    // The implementer changes nothing: the starter is what gets evaluated.
    let idle = json!({"reply": {"summary": "nothing needed changing"}});
    let err = scripts.run_all(roles, Some(vec![idle]), limits, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "design 1 is still not accepted after 1 builder iterations (--max-iterations 1); the last round asked for:\n1. sufficiency: an implementation written from instruction.full.md and the workspace alone fails charge-once, retry-timeouts, declines-final, respect-busy-wait, checkout-deadline; the full instruction must state enough to pass every requirement"
    );
    let journal = scripts.journal();
    let last = journal["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["stage"].as_str(), last["status"].as_str()), (Some("sufficiency"), Some("failed")));
    assert_eq!(
        last["detail"]["failing"],
        json!(["charge-once", "retry-timeouts", "declines-final", "respect-busy-wait", "checkout-deadline"])
    );
}

#[test]
fn a_calibrator_fix_goes_back_to_the_builder_and_the_package_is_audited_again() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let calibrator_fix = json!({"reply": {"verdict": "fix", "fixes": ["full run 2 faced an unstated retry cap at turn 9"], "rollouts": [
        {"rollout": "full-2", "condition": "full", "class": "environment-defect", "turns": [9], "note": "the full instruction never says how many retries"}
    ]}});
    let done = scripts
        .run(
            [
                vec![json!({"reply": brief()})],
                vec![build_step(&good, "built"), build_step(&good, "retry cap stated")],
                vec![audit_pass(), audit_pass()],
                vec![calibrator_fix, calibrate_ready()],
            ],
            Limits::default(),
        )
        .unwrap();
    assert_eq!((done.designs, done.iterations), (1, 2));
    let journal = scripts.journal();
    let stages: Vec<String> = steps(&journal).into_iter().map(|s| s.0).collect();
    assert_eq!(stages, ["planner", "builder", "acceptance", "auditor", "calibrator", "builder", "acceptance", "auditor", "calibrator"]);
    assert_eq!(journal["entries"][5]["inputs"]["fixes"], json!(["full run 2 faced an unstated retry cap at turn 9"]));
    assert_eq!(journal["entries"][4]["detail"]["rollouts"][0]["class"], "environment-defect");
}

/// A scripted role that reports a priced usage for every answer, as a chat role's client does.
struct Priced(Box<dyn specgap_synth::role::Role>, f64);

impl specgap_synth::role::Role for Priced {
    fn label(&self) -> String {
        self.0.label()
    }
    fn answer(&mut self, request: &specgap_synth::role::RoleRequest) -> Result<String, specgap_synth::role::RoleError> {
        self.0.answer(request)
    }
    fn take_usage(&mut self) -> Option<specgap_synth::role::Usage> {
        Some(specgap_synth::role::Usage { requests: 1, cost_usd: self.1, ..Default::default() })
    }
}

#[test]
fn the_cost_cap_stops_the_synthesis_after_the_answer_that_goes_over() {
    let scripts = Scripts::new();
    let planner = scripts.role("planner", vec![json!({"reply_text": "not json"}), json!({"reply": brief()})]);
    let mut roles = specgap_synth::pipeline::Roles {
        planner: Box::new(Priced(planner, 0.25)),
        builder: scripts.role("builder", vec![]),
        auditor: scripts.role("auditor", vec![]),
        calibrator: scripts.role("calibrator", vec![]),
        implementer: None,
        reference: None,
    };
    let limits = Limits { max_cost_usd: Some(0.4), ..Limits::default() };
    let config = specgap_synth::pipeline::Config {
        source: crate::support::payment_retry(),
        out: scripts.out(),
        limits,
        prompts: Default::default(),
        resume: false,
    };
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let err = specgap_synth::pipeline::synthesize(&config, &mut roles, &judge).unwrap_err();
    assert!(matches!(err, SynthError::CostCap { spent, .. } if spent == 0.5), "{err:?}");
    assert_eq!(err.to_string(), "the roles and rollouts spent $0.5000, more than --max-cost 0.4");
    let journal = scripts.journal();
    assert_eq!(steps(&journal), vec![step("planner", 1, 0, 1, "malformed"), step("planner", 1, 0, 2, "accepted")]);
    assert_eq!(journal["limits"]["max_cost_usd"], 0.4);
    assert_eq!(journal["usage"]["planner"]["cost_usd"], 0.5);
}
