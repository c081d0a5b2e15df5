//! The calibration rollouts' usage counts toward `--max-tokens` and `--max-cost` (issue 27
//! item 2): a fake reference agent reports what its episodes spent; the journal holds it
//! under `rollouts`, and a cap the rollouts go over stops the synthesis before the Calibrator;
//! a cap passed between two rollouts (issue 27, caps checked mid-stage) stops them there.

use std::path::{Path, PathBuf};

use serde_json::json;
use specgap_synth::pipeline::{Config, Limits, Roles, SynthError, synthesize};
use specgap_synth::role::Usage;
use specgap_synth::rollouts::{RolloutBudget, RolloutError, RolloutSummary, Rollouts};

use crate::support::{Scripts, audit_pass, brief, build_step, calibrate_ready, package_copy, payment_retry, step, steps};

/// Three episodes, one per condition, each spending 1000 + 100·k prompt and 50 completion
/// tokens and $0.25; like a run, it starts the next only while what they spent is within the
/// budget, and keeps the budgets it was given.
#[derive(Default)]
struct FakeRollouts {
    budgets: std::sync::Arc<std::sync::Mutex<Vec<RolloutBudget>>>,
}

impl Rollouts for FakeRollouts {
    fn label(&self) -> String {
        "fake".into()
    }

    fn run(&mut self, _package: &Path, store: &Path, budget: RolloutBudget) -> Result<Vec<RolloutSummary>, RolloutError> {
        self.budgets.lock().unwrap().push(budget);
        let mut spent = Usage::default();
        let mut ran = Vec::new();
        for (k, condition) in ["full", "partial", "literal"].iter().enumerate() {
            if !budget.allows(&spent) {
                break;
            }
            let usage = Usage { input_tokens: 1000 + 100 * k as u64, output_tokens: 50, requests: 2, cost_usd: 0.25, ..Usage::default() };
            spent.add(&usage);
            ran.push(RolloutSummary {
                rollout: format!("{condition}-0"),
                condition: (*condition).into(),
                repeat: 0,
                status: "finished".into(),
                end_reason: Some("submitted".into()),
                score: Some(1.0),
                success: Some(true),
                submissions: 1,
                turns: 2,
                episode_dir: PathBuf::from(store).join(format!("episodes/{condition}-0")),
                usage,
            });
        }
        Ok(ran)
    }
}

/// [`calibrate_ready`] citing a rollout [`FakeRollouts`] ran.
fn cites_partial_0() -> serde_json::Value {
    let mut step = calibrate_ready();
    step["reply"]["rollouts"][0]["rollout"] = json!("partial-0");
    step
}

fn run(scripts: &Scripts, limits: Limits) -> Result<specgap_synth::pipeline::Synthesized, SynthError> {
    run_counting(scripts, limits, FakeRollouts::default())
}

fn run_counting(scripts: &Scripts, limits: Limits, rollouts: FakeRollouts) -> Result<specgap_synth::pipeline::Synthesized, SynthError> {
    let good = package_copy(&scripts.tmp.path().join("good"));
    let mut roles = Roles {
        planner: scripts.role("planner", vec![json!({"reply": brief()})]),
        builder: scripts.role("builder", vec![build_step(&good, "built")]),
        auditor: scripts.role("auditor", vec![audit_pass()]),
        calibrator: scripts.role("calibrator", vec![cites_partial_0()]),
        implementer: None,
        reference: Some(Box::new(rollouts)),
    };
    let config = Config { source: payment_retry(), out: scripts.out(), limits, prompts: Default::default(), resume: false };
    synthesize(&config, &mut roles, &specgap_task::SandboxJudge::new(true).unwrap())
}

#[test]
fn rollout_usage_is_journaled_and_under_the_caps_the_synthesis_is_ready() {
    let scripts = Scripts::new();
    let limits = Limits { max_tokens: Some(3450), max_cost_usd: Some(0.75), ..Limits::default() };
    run(&scripts, limits).unwrap();
    let journal = scripts.journal();
    let mut usage = journal["usage"]["rollouts"].clone();
    usage.as_object_mut().unwrap().remove("latency_ms");
    assert_eq!(
        usage,
        json!({"input_tokens": 3300, "output_tokens": 150, "cached_tokens": 0, "reasoning_tokens": 0, "requests": 6, "retries": 0, "cost_usd": 0.75})
    );
    assert_eq!(journal["outcome"]["status"], "ready");
    // The Calibrator is not shown what the rollouts spent.
    assert_eq!(journal["entries"][5]["inputs"]["rollouts"][0].get("usage"), None);
}

#[test]
fn rollouts_over_the_token_cap_stop_the_synthesis_before_the_calibrator() {
    let scripts = Scripts::new();
    let err = run(&scripts, Limits { max_tokens: Some(3449), ..Limits::default() }).unwrap_err();
    assert!(matches!(err, SynthError::TokenCap { cap: 3449, spent: 3450 }), "{err:?}");
    assert_eq!(err.to_string(), "the roles and rollouts spent 3450 tokens, more than --max-tokens 3449");
    let journal = scripts.journal();
    assert_eq!(steps(&journal).last(), Some(&step("rollouts", 1, 1, 1, "ran")));
}

#[test]
fn rollouts_over_the_cost_cap_stop_the_synthesis_before_the_calibrator() {
    let scripts = Scripts::new();
    let err = run(&scripts, Limits { max_cost_usd: Some(0.7), ..Limits::default() }).unwrap_err();
    assert_eq!(err.to_string(), "the roles and rollouts spent $0.7500, more than --max-cost 0.7");
    assert_eq!(steps(&scripts.journal()).last(), Some(&step("rollouts", 1, 1, 1, "ran")));
}

/// A Calibrator citing a rollout that did not run, then one under the wrong condition, is
/// asked again each time with the reason; the third answer cites a real one.
#[test]
fn a_calibrator_citing_a_rollout_that_did_not_run_or_under_another_condition_is_asked_again() {
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let finding = |rollout: &str, condition: &str| json!({"reply": {"verdict": "ready", "rollouts": [{"rollout": rollout, "condition": condition, "class": "legitimate-inference", "turns": [1], "note": "n"}]}});
    let mut roles = Roles {
        planner: scripts.role("planner", vec![json!({"reply": brief()})]),
        builder: scripts.role("builder", vec![build_step(&good, "built")]),
        auditor: scripts.role("auditor", vec![audit_pass()]),
        calibrator: scripts
            .role("calibrator", vec![finding("partial-7", "partial"), finding("literal-0", "partial"), finding("partial-0", "partial")]),
        implementer: None,
        reference: Some(Box::new(FakeRollouts::default())),
    };
    let config =
        Config { source: payment_retry(), out: scripts.out(), limits: Limits::default(), prompts: Default::default(), resume: false };
    synthesize(&config, &mut roles, &specgap_task::SandboxJudge::new(true).unwrap()).unwrap();
    let journal = scripts.journal();
    let calibrator: Vec<_> = steps(&journal).into_iter().filter(|s| s.0 == "calibrator").collect();
    assert_eq!(
        calibrator,
        vec![step("calibrator", 1, 1, 1, "malformed"), step("calibrator", 1, 1, 2, "malformed"), step("calibrator", 1, 1, 3, "accepted")]
    );
    let entries = journal["entries"].as_array().unwrap();
    let detail = |attempt: u64| {
        entries.iter().find(|e| e["stage"] == "calibrator" && e["attempt"] == attempt).unwrap()["detail"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        detail(1),
        "the calibrator hand-off breaks a rule at `rollouts[0].rollout`: `partial-7` is not a rollout that ran; the rollouts are: full-0, partial-0, literal-0"
    );
    assert_eq!(detail(2), "the calibrator hand-off breaks a rule at `rollouts[0].rollout`: `literal-0` ran under literal, not partial");
}

/// The token cap passed between the partial and the literal rollout (1050 + 1150 = 2200 over
/// 2000): the literal one never starts, the synthesis stops naming the cap and what was spent,
/// and the journal keeps the two that ran.
#[test]
fn a_token_cap_passed_between_two_rollouts_stops_them_there() {
    let scripts = Scripts::new();
    let fake = FakeRollouts::default();
    let budgets = fake.budgets.clone();
    let err = run_counting(&scripts, Limits { max_tokens: Some(2000), ..Limits::default() }, fake).unwrap_err();
    assert_eq!(err.to_string(), "the roles and rollouts spent 2200 tokens, more than --max-tokens 2000");
    // The scripted roles spent nothing, so the rollouts had the whole cap.
    assert_eq!(*budgets.lock().unwrap(), [RolloutBudget { tokens: Some(2000), cost_usd: None }]);
    let journal = scripts.journal();
    assert_eq!(steps(&journal).last(), Some(&step("rollouts", 1, 1, 1, "ran")));
    let ran: Vec<&str> = journal["entries"].as_array().unwrap().last().unwrap()["detail"]["rollouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rollout"].as_str().unwrap())
        .collect();
    assert_eq!(ran, ["full-0", "partial-0"]);
    assert_eq!(journal["usage"]["rollouts"]["input_tokens"], 2100);
    assert_eq!(journal["outcome"]["message"], "the roles and rollouts spent 2200 tokens, more than --max-tokens 2000");
}

/// The cost cap passed after the first rollout ($0.25 of $0.2): only `full-0` ran.
#[test]
fn a_cost_cap_passed_after_the_first_rollout_stops_the_rest() {
    let scripts = Scripts::new();
    let err = run(&scripts, Limits { max_cost_usd: Some(0.2), ..Limits::default() }).unwrap_err();
    assert_eq!(err.to_string(), "the roles and rollouts spent $0.2500, more than --max-cost 0.2");
    let journal = scripts.journal();
    let detail = &journal["entries"].as_array().unwrap().last().unwrap()["detail"];
    assert_eq!(detail["rollouts"].as_array().unwrap().len(), 1);
    assert_eq!(detail["rollouts"][0]["rollout"], "full-0");
}
