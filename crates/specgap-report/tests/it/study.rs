//! `plan-study` (issue 28): tasks × repeats from assumed sds and from a designed pilot, against
//! statsmodels (`TTestPower().power` solved by brentq), and the seeded simulation check.

use specgap_protocol::result::ScoringKind;
use specgap_report::compare::Selection;
use specgap_report::study::{Assumption, StudyOptions, plan_from_assumption, plan_from_pilot, render_plan_markdown};
use specgap_report::{ReportError, RunData};

use crate::fixture::{Ep, Sub, close, reward, run_with};

#[test]
fn assumed_sds_give_statsmodels_task_counts() {
    let assumption = Assumption { task_sd: 0.1, repeat_sd: 0.2, rate: 0.5 };
    let options = StudyOptions { difference: 0.1, max_repeats: 3, tasks: Some(45), ..StudyOptions::default() };
    let plan = plan_from_assumption(&assumption, &options).unwrap();
    let m = &plan.measures[0];
    assert_eq!(m.measure, "Score@1");
    // sd = sqrt(0.01 + 2·0.04/r); statsmodels: nobs 72.58 → 73, 41.21 → 42, 30.76 → 31.
    let tasks: Vec<usize> = m.designs.iter().map(|d| d.tasks).collect();
    assert_eq!(tasks, [73, 42, 31]);
    close(m.designs[0].sd.unwrap(), 0.3, 1e-15);
    // TTestPower().power(0.1 / 0.3, 73, 0.05) = 0.802298943383034.
    close(m.designs[0].power, 0.802298943383034, 1e-10);
    // Episodes 146, 168, 186: one repeat is the cheapest design.
    assert_eq!(m.recommended, 0);
    // A suite of 45 tasks needs 2 repeats.
    assert_eq!(m.repeats_for_suite, Some(2));
    let check = m.check.as_ref().unwrap();
    assert_eq!((check.method, check.tasks, check.repeats), ("normal", 73, 1));
    assert!(check.agrees, "{check:?}");
    assert!((check.simulated_power - check.planned_power).abs() <= 3.0 * check.monte_carlo_se);
    let md = render_plan_markdown(&plan);
    assert!(md.contains("| 1 (fewest episodes) | 0.3000 | 73 | 146 | 0.802 |"), "{md}");
    assert!(md.contains("With the suite's tasks: 2 repeats per task and side."), "{md}");
}

fn reward_ep(task: &str, agent: &str, repeat: u32, score: f64) -> Ep {
    Ep::new(task, agent, "full").kind(ScoringKind::Reward).repeat(repeat).sub(Sub::scored(score, score >= 0.5, reward(score)))
}

#[test]
fn a_two_sided_pilot_measures_the_spread_of_the_difference() {
    let run = run_with(41, &[], &[]);
    let a = [[0.2, 0.4], [0.5, 0.5], [0.1, 0.3], [0.6, 0.8]];
    let b = [[0.5, 0.5], [0.6, 0.8], [0.0, 0.0], [0.9, 0.7]];
    for (t, (xs, ys)) in a.iter().zip(&b).enumerate() {
        for r in 0..2 {
            run.episode(&reward_ep(&format!("t{t}"), "a", r as u32, xs[r]));
            run.episode(&reward_ep(&format!("t{t}"), "b", r as u32, ys[r]));
        }
    }
    let pilot = RunData::load(&run.dir).unwrap();
    let options = StudyOptions {
        difference: 0.2,
        max_repeats: 2,
        simulations: 1000,
        select_a: Selection::parse("agent=a").unwrap(),
        select_b: Some(Selection::parse("agent=b").unwrap()),
        ..StudyOptions::default()
    };
    let plan = plan_from_pilot(&[pilot], &options).unwrap();
    let score = plan.measures.iter().find(|m| m.measure == "Score@1").unwrap();
    // numpy: pooled repeat variance 0.0125; var of the task differences 0.0358333 minus
    // 0.0125 · (1/2 + 1/2) = 0.0233333.
    close(score.variances.repeat_sd.unwrap(), 0.11180339887498951, 1e-14);
    close(score.variances.task_sd, 0.15275252316519466, 1e-14);
    assert_eq!((score.variances.pilot_tasks, score.variances.pilot_episodes), (4, 16));
    // statsmodels: 11.55 → 12 tasks with one repeat, 9.13 → 10 with two.
    let tasks: Vec<usize> = score.designs.iter().map(|d| d.tasks).collect();
    assert_eq!(tasks, [12, 10]);
    close(score.designs[1].sd.unwrap(), 0.18929694486000911, 1e-14);
    let success = plan.measures.iter().find(|m| m.measure == "Success@1").unwrap();
    assert_eq!(success.check.as_ref().unwrap().method, "per-task rates");
    // Seeded: the same plan twice.
    let again = plan_from_pilot(&[RunData::load(&run.dir).unwrap()], &options).unwrap();
    assert_eq!(again, plan);
}

#[test]
fn pass_k_is_planned_by_simulation() {
    let assumption = Assumption { task_sd: 0.0, repeat_sd: 0.5, rate: 0.5 };
    let options = StudyOptions {
        difference: 0.3,
        max_repeats: 4,
        pass_k: 4,
        simulations: 400,
        measures: vec!["pass^k".into()],
        ..StudyOptions::default()
    };
    let plan = plan_from_assumption(&assumption, &options).unwrap();
    let m = &plan.measures[0];
    // Only 4 repeats can estimate pass^4.
    assert_eq!(m.designs.len(), 1);
    let d = &m.designs[0];
    assert_eq!((d.repeats, d.sd), (4, None));
    assert!(d.power >= 0.8 && d.tasks >= 2, "{d:?}");
    let check = m.check.as_ref().unwrap();
    assert_eq!((check.method, check.tasks), ("per-task rates", d.tasks));
    assert!(check.simulated_power > 0.7, "{check:?}");
}

#[test]
fn a_pilot_without_the_measure_is_an_error() {
    let run = run_with(42, &[], &[]);
    run.episode(&reward_ep("t0", "a", 0, 0.5));
    run.episode(&reward_ep("t1", "a", 0, 0.7));
    let options = StudyOptions { measures: vec!["Quality".into()], ..StudyOptions::default() };
    let err = plan_from_pilot(&[RunData::load(&run.dir).unwrap()], &options).unwrap_err();
    assert!(matches!(err, ReportError::StudyPlan { .. }));
    assert_eq!(err.to_string(), "cannot plan the study: the pilot has no scored episode with Quality");
    // Without repeats the plan says repeats are not credited.
    let plan =
        plan_from_pilot(&[RunData::load(&run.dir).unwrap()], &StudyOptions { measures: vec!["Score@1".into()], ..StudyOptions::default() })
            .unwrap();
    assert!(plan.measures[0].notes[0].starts_with("the pilot has no repeats"), "{:?}", plan.measures[0].notes);
    assert_eq!(plan.measures[0].variances.repeat_sd, None);
}

/// A side that pools agents (or conditions), or matches nothing, is refused: the agents'
/// differences would pass for repeat noise (a fresh user's `--a condition=full` over three
/// agents planned hundreds of tasks without a warning).
#[test]
fn a_pilot_side_that_pools_agents_or_matches_nothing_is_refused() {
    let run = run_with(43, &[], &[]);
    for t in 0..3 {
        run.episode(&reward_ep(&format!("t{t}"), "a", 0, 1.0));
        run.episode(&reward_ep(&format!("t{t}"), "b", 0, 0.0));
    }
    let pilot = || RunData::load(&run.dir).unwrap();
    let pooled = StudyOptions { select_a: Selection::parse("condition=full").unwrap(), ..StudyOptions::default() };
    assert_eq!(
        plan_from_pilot(&[pilot()], &pooled).unwrap_err().to_string(),
        "cannot plan the study: --a pools 2 agents (a, b): a pilot side is one agent under one condition, whose repeats show the \
         run-to-run noise; add agent=<one of them> to --a"
    );
    let nothing = StudyOptions { select_a: Selection::parse("agent=c").unwrap(), ..StudyOptions::default() };
    assert_eq!(
        plan_from_pilot(&[pilot()], &nothing).unwrap_err().to_string(),
        "cannot plan the study: --a matches no scored episode of the pilot"
    );
    let one = StudyOptions { select_a: Selection::parse("agent=a").unwrap(), ..StudyOptions::default() };
    assert!(plan_from_pilot(&[pilot()], &one).is_ok());
}
