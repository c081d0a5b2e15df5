//! Planned-run denominators of seed 002's delivery cells (§4.2, App. A.3; issue 11 item 6),
//! with `run.toml` planning what the store holds: a delivery the agent failed counts 0 over the
//! planned runs; a harness failure or a missing run is listed and leaves the cells incomplete;
//! k is the planned number of repeats.

use specgap_protocol::package::Family;
use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::EndReason;
use specgap_report::Dim;
use specgap_store::Status;

use crate::fixture::{Ep, Run, Sub, TaskSpec, close, delivery, run_configured};
use crate::{group, report_of};

fn case(name: &str) -> TaskSpec {
    let mut spec = TaskSpec::new(name);
    spec.family = "optimization";
    spec.delivery = true;
    spec
}

/// A run whose `run.toml` plans agent `x` under `interact` on cases c1 and c2, three repeats.
fn planned_run(seed: u64) -> Run {
    run_configured(seed, &[case("org/c1"), case("org/c2")], &[], |config| {
        config.agents[0].spec = "x".into();
        config.conditions = vec!["interact".into()];
        config.repeats = 3;
    })
}

fn scored(task: &str, repeat: u32, score: f64, valid: bool, signature: Option<&str>) -> Ep {
    let result = delivery(valid, score * 10.0, signature, usize::from(!valid && signature == Some("constraint")));
    let mut ep = Ep::new(task, "x", "interact").kind(ScoringKind::Delivery).repeat(repeat).sub(Sub::scored(score, score >= 1.0, result));
    ep.family = Family::Optimization;
    ep.end = EndReason::Submitted;
    ep
}

fn failed(task: &str, repeat: u32, end: EndReason, status: Status) -> Ep {
    let mut ep = Ep::new(task, "x", "interact").kind(ScoringKind::Delivery).repeat(repeat);
    ep.family = Family::Optimization;
    ep.end = end;
    ep.status = status;
    ep
}

/// c1: 1.0, 0.5, 0.5; c2: 0.8, 0.4 and repeat 2 as given.
fn five_plus(run: &Run, last: Option<Ep>) -> Option<String> {
    run.episode(&scored("org/c1", 0, 1.0, true, None));
    run.episode(&scored("org/c1", 1, 0.5, true, None));
    run.episode(&scored("org/c1", 2, 0.5, true, None));
    run.episode(&scored("org/c2", 0, 0.8, true, None));
    run.episode(&scored("org/c2", 1, 0.4, true, None));
    last.map(|ep| run.episode(&ep))
}

#[test]
fn an_evaluator_failing_on_the_delivered_artifact_counts_zero_over_planned_runs() {
    let run = planned_run(41);
    // The engine's attribution (the evaluator succeeds on the gold artifact, fails on this
    // one): a scored submission, invalid, signature `execution`, score 0.
    five_plus(&run, Some(scored("org/c2", 2, 0.0, false, Some("execution"))));
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let g = group(&report, &["x", "interact"]);
    let d = g.delivery.clone().unwrap();
    assert_eq!((d.cases, d.planned_runs, d.runs, d.complete), (2, 6, 6, true));
    // DSR = 1 success of 6 planned runs; Quality = ((1 + .5 + .5)/3 + (.8 + .4 + 0)/3) / 2.
    close(d.dsr.unwrap(), 1.0 / 6.0, 1e-15);
    close(d.quality.unwrap(), (2.0 / 3.0 + 0.4) / 2.0, 1e-12);
    close(d.valid.unwrap(), 5.0 / 6.0, 1e-15);
    // k = 3 planned repeats: c1 3 valid (pass@3 1, pass^3 1), c2 2 valid (1, 0).
    let p = d.pass_k.unwrap();
    assert_eq!(p.k, 3);
    close(p.pass_at_k, 1.0, 1e-15);
    close(p.pass_hat_k, 0.5, 1e-15);
    assert_eq!(g.zero_scores.clone().unwrap().signatures.get("execution"), Some(&1));
}

#[test]
fn an_evaluation_error_episode_is_the_harness_failure_it_is_recorded_as() {
    let run = planned_run(42);
    // Today's recorded form of an evaluator failure: the episode ends `evaluation_error`. The
    // report does not guess whose fault it was: listed, cells incomplete.
    let id = five_plus(&run, Some(failed("org/c2", 2, EndReason::EvaluationError, Status::EvalError))).unwrap();
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let d = group(&report, &["x", "interact"]).delivery.clone().unwrap();
    assert_eq!((d.planned_runs, d.runs, d.complete), (6, 5, false));
    assert_eq!(d.dsr, None);
    assert_eq!(d.unscored.len(), 1);
    assert_eq!((d.unscored[0].episode.as_str(), d.unscored[0].reason.as_str()), (id.as_str(), "evaluation_error"));
}

#[test]
fn an_infrastructure_error_is_listed_cells_incomplete_and_k_unchanged() {
    let run = planned_run(43);
    five_plus(&run, Some(failed("org/c2", 2, EndReason::InfrastructureError, Status::InfraError)));
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let d = group(&report, &["x", "interact"]).delivery.clone().unwrap();
    assert_eq!((d.planned_runs, d.runs, d.complete), (6, 5, false));
    // k is the planned number of repeats (3), not the 2 scored runs of c2.
    assert_eq!(d.k, 3);
    assert_eq!((d.quality, d.pass_k.clone()), (None, None));
    assert_eq!(d.unscored[0].reason, "infrastructure_error");
    // The robustness column is labelled as such and uses what was scored (k = 2 there).
    let s = d.scored_only.unwrap();
    assert_eq!((s.runs, s.pass_k.unwrap().k), (5, 2));
    close(s.quality, (2.0 / 3.0 + 0.6) / 2.0, 1e-12);
}

#[test]
fn a_planned_run_missing_from_the_store_is_listed_as_absent() {
    let run = planned_run(44);
    five_plus(&run, None);
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let d = group(&report, &["x", "interact"]).delivery.clone().unwrap();
    assert_eq!((d.planned_runs, d.runs, d.complete, d.k), (6, 5, false, 3));
    assert_eq!((d.unscored[0].task.as_str(), d.unscored[0].repeat, d.unscored[0].reason.as_str()), ("org/c2", 2, "absent"));
    // The input check says the same in words.
    assert!(report.warnings.iter().any(|w| w.contains("1 of 6 planned episodes has no result")), "{:?}", report.warnings);
}

#[test]
fn no_artifact_scores_zero_and_counts() {
    let run = planned_run(45);
    // The agent ended without any submission (nothing delivered): a scored episode with Score 0.
    let mut nothing = Ep::new("org/c2", "x", "interact").kind(ScoringKind::Delivery).repeat(2);
    nothing.family = Family::Optimization;
    nothing.end = EndReason::TurnBudget;
    five_plus(&run, Some(nothing));
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let d = group(&report, &["x", "interact"]).delivery.clone().unwrap();
    assert_eq!((d.planned_runs, d.runs, d.complete), (6, 6, true));
    close(d.quality.unwrap(), (2.0 / 3.0 + 0.4) / 2.0, 1e-12);
    close(d.valid.unwrap(), 5.0 / 6.0, 1e-15);
}
