//! Run-to-run noise in the report and the detectable difference of `compare` (issue 28), on
//! small designed runs with hand-computed (numpy / statsmodels) values.

use specgap_protocol::result::ScoringKind;
use specgap_report::compare::render_comparison_markdown;
use specgap_report::detectable::{BELOW, DetectableMethod, NOT_ESTIMABLE};
use specgap_report::render::{render_json, render_markdown};
use specgap_report::{CompareOptions, Dim, RunData, compare};

use crate::fixture::{Ep, Sub, close, reward, run_with};
use crate::report_of;

fn reward_ep(task: &str, agent: &str, repeat: u32, score: f64, success: bool) -> Ep {
    Ep::new(task, agent, "full").kind(ScoringKind::Reward).repeat(repeat).sub(Sub::scored(score, success, reward(score)))
}

#[test]
fn flip_rate_within_sd_and_variance_split_of_a_designed_run() {
    let run = run_with(31, &[], &[]);
    let design: [(&str, &[(f64, bool)]); 3] = [
        ("t0", &[(1.0, true), (0.0, false), (0.0, false)]),
        ("t1", &[(1.0, true), (1.0, true), (1.0, true)]),
        ("t2", &[(0.2, false), (0.6, true)]),
    ];
    for (task, repeats) in design {
        for (i, (score, success)) in repeats.iter().enumerate() {
            run.episode(&reward_ep(task, "m", i as u32, *score, *success));
        }
    }
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let [g] = report.noise.as_slice() else { panic!("one group: {:?}", report.noise) };
    assert!(g.estimable);
    assert_eq!((g.tasks, g.repeated_tasks), (3, 3));
    assert_eq!(g.measures, "Score@1 / Success@1");
    let flips: Vec<f64> = g.per_task.iter().map(|t| t.flip_rate).collect();
    // t0: 1 success of 3, 2 of 3 pairs disagree; t1 never flips; t2: its one pair disagrees.
    assert_eq!(flips, [2.0 / 3.0, 0.0, 1.0]);
    assert_eq!(g.flipping_tasks, Some(2));
    close(g.mean_flip_rate.unwrap(), (2.0 / 3.0 + 1.0) / 3.0, 1e-15);
    // numpy.std(x, ddof=1): [1, 0, 0] → 0.5773502691896258, [0.2, 0.6] → 0.282842712474619.
    close(g.per_task[0].within_sd, 0.5773502691896258, 1e-15);
    assert_eq!(g.per_task[1].within_sd, 0.0);
    close(g.per_task[2].within_sd, 0.282842712474619, 1e-15);
    // One-way ANOVA (numpy, Searle et al. §3.6): MSB 0.38666666666666666, MSW
    // 0.14933333333333335, n₀ = 2.625, σ²_τ = 0.0904126984126984.
    let v = g.variance.unwrap();
    close(v.within_tasks, 0.14933333333333335, 1e-14);
    close(v.n0, 2.625, 1e-15);
    close(v.between_tasks, 0.0904126984126984, 1e-14);
    close(v.task_share.unwrap(), 0.0904126984126984 / (0.0904126984126984 + 0.14933333333333335), 1e-13);
    assert!(!v.truncated);
    let md = render_markdown(&report, "run");
    assert!(md.contains("## Run-to-run noise"), "{md}");
    assert!(md.contains("| 0.556 (2 tasks flip) | 0.2867 | 0.0904 | 0.1493 | 0.377 |"), "{md}");
}

#[test]
fn a_run_without_repeats_says_noise_cannot_be_estimated() {
    let run = run_with(32, &[], &[]);
    for i in 0..3 {
        run.episode(&reward_ep(&format!("t{i}"), "m", 0, 0.5, i == 0));
    }
    let report = report_of(&[&run], &[Dim::Agent]);
    let [g] = report.noise.as_slice() else { panic!("one group") };
    assert!(!g.estimable);
    assert_eq!(g.reason.as_deref(), Some("no task has two scored repeats in this group"));
    assert_eq!((g.mean_flip_rate, g.mean_within_sd, g.variance), (None, None, None));
    let json = render_json(&report).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let noise = &value["noise"][0];
    assert_eq!(noise["estimable"], false);
    assert!(noise.get("mean_flip_rate").is_none(), "{noise}");
    let md = render_markdown(&report, "run");
    assert!(md.contains("Noise cannot be estimated for this report"), "{md}");
    // The sentence stands alone: no table of rows that could only say the same.
    assert!(!md.contains("Noise per group."), "{md}");
    assert!(!md.contains("cannot be estimated: no task has two scored repeats in this group"), "{md}");
}

#[test]
fn compare_prints_the_detectable_difference_of_its_design() {
    let a = run_with(33, &[], &[]);
    let b = run_with(34, &[], &[]);
    for (i, (x, y)) in [0.1, 0.2, 0.3, 0.4, 0.5].iter().zip([0.3, 0.1, 0.6, 0.9, 0.55]).enumerate() {
        a.episode(&reward_ep(&format!("t{i}"), "m", 0, *x, false));
        b.episode(&reward_ep(&format!("t{i}"), "m", 0, y, false));
    }
    let (ra, rb) = (RunData::load(&a.dir).unwrap(), RunData::load(&b.dir).unwrap());
    let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    let score = c.comparisons[0].measures[0].detectable.as_ref().unwrap();
    // Two tests in the family: α = 0.025. statsmodels (brentq on TTestPower().power):
    // d* = 2.0500072975556223 for 5 tasks; sd of the differences 0.23021728866442678.
    assert_eq!(score.method, Some(DetectableMethod::PairedT));
    assert_eq!(score.alpha, 0.025);
    close(score.difference.unwrap(), 0.47194712178554415, 1e-9);
    // Observed +0.19 < 0.472.
    assert_eq!(score.verdict, BELOW);
    // Success@1 differs by 0 on every task: no spread, no MDD.
    let success = c.comparisons[0].measures[1].detectable.as_ref().unwrap();
    assert_eq!(success.verdict, NOT_ESTIMABLE);
    assert!(success.difference.is_none());
    let md = render_comparison_markdown(&c);
    assert!(md.contains("two-sided α = 0.025 (0.05 / 2 tests of the family"), "{md}");
    assert!(md.contains("| Score@1 | +0.1900 | ±0.4719 | paired t-test on task means | below what this design can detect |"), "{md}");
}

#[test]
fn binary_measures_with_repeats_are_simulated_from_per_task_rates() {
    let a = run_with(35, &[], &[]);
    let b = run_with(36, &[], &[]);
    // 8 tasks, 3 repeats each side: A succeeds once per task, B on every repeat.
    for t in 0..8 {
        for r in 0..3 {
            a.episode(&reward_ep(&format!("t{t}"), "m", r, 0.5, r == 0));
            b.episode(&reward_ep(&format!("t{t}"), "m", r, 1.0, true));
        }
    }
    let (ra, rb) = (RunData::load(&a.dir).unwrap(), RunData::load(&b.dir).unwrap());
    let options = CompareOptions { measures: vec!["Success@1".into()], ..CompareOptions::default() };
    let c = compare(&ra, &rb, &options).unwrap();
    let m = &c.comparisons[0].measures[0];
    assert_eq!((m.per_task[0].repeats_a, m.per_task[0].repeats_b), (3, 3));
    let d = m.detectable.as_ref().unwrap();
    assert_eq!(d.method, Some(DetectableMethod::Simulation));
    assert_eq!((d.simulations, d.seed, d.alpha), (Some(2000), Some(12345), 0.05));
    let mdd = d.difference.unwrap();
    assert!(mdd > 0.0 && mdd < 2.0 / 3.0, "{mdd}");
    // Observed 2/3 (every task: 1/3 → 1) is far above it.
    assert_eq!(d.verdict, "detectable at this size");
    // Seeded: the same call gives the same MDD.
    assert_eq!(compare(&ra, &rb, &options).unwrap().comparisons[0].measures[0].detectable.as_ref().unwrap().difference, Some(mdd));
    let md = render_comparison_markdown(&c);
    assert!(md.contains("simulation from per-task rates (2000 designs, seed 12345)"), "{md}");
}

#[test]
fn a_user_review_gives_the_simulator_section_and_can_exclude_episodes() {
    use specgap_report::simulator::{
        EpisodeReview, Finding, REVIEW_SCHEMA, REVIEW_VERSION, Severity, Tag, UserReview, UserTurn, write_review,
    };
    use specgap_report::{ReportOptions, build_report};
    let run = run_with(37, &[], &[]);
    let kept = run.episode(&reward_ep("t0", "m", 0, 1.0, true));
    let dropped = run.episode(&reward_ep("t1", "m", 0, 0.0, false));
    let turn = |n: u32| UserTurn { turn: n, kind: "answer".into(), prompt: "q?".into(), text: "a".into() };
    let review = UserReview {
        schema: REVIEW_SCHEMA.into(),
        version: REVIEW_VERSION,
        reviewer: "rules:1".into(),
        unchecked: vec![Tag::BrokeCharacter, Tag::StoppedEarly],
        episodes: vec![
            EpisodeReview {
                episode: kept.clone(),
                task: "t0".into(),
                turns: vec![turn(1), turn(2), turn(3)],
                findings: vec![Finding { turn: 2, tag: Tag::OffProfile, severity: Severity::Minor, evidence: "x".into() }],
            },
            EpisodeReview {
                episode: dropped.clone(),
                task: "t1".into(),
                turns: vec![turn(1)],
                findings: vec![Finding { turn: 1, tag: Tag::Volunteered, severity: Severity::Helped, evidence: "y".into() }],
            },
        ],
        ballots: vec![],
    };
    write_review(&run.dir, &review).unwrap();
    let data = RunData::load(&run.dir).unwrap();
    let report = build_report(std::slice::from_ref(&data), &ReportOptions::default()).unwrap();
    let quality = report.simulator.as_ref().unwrap();
    let summary = &quality.reviews[0];
    // 2 findings in 4 user turns: 25 per 100 each of off-profile and volunteered.
    assert_eq!(summary.turns, 4);
    assert_eq!(summary.per_100_turns[&Tag::OffProfile], 25.0);
    assert_eq!(summary.per_100_turns[&Tag::Volunteered], 25.0);
    assert_eq!(summary.per_100_turns[&Tag::Contradiction], 0.0);
    assert!(!summary.per_100_turns.contains_key(&Tag::BrokeCharacter));
    assert_eq!(summary.severe_episodes, 1);
    assert!(quality.excluded.is_empty());
    assert_eq!(report.groups[0].outcomes.scored, 2);
    let md = render_markdown(&report, "run");
    assert!(md.contains("## Simulated user quality"), "{md}");
    assert!(md.contains("| rules:1 | 2 | 4 | 25.0 | 25.0 | 0.0 | 0.0 | — | 0.0 | — | 1 | 0 | 1 | 1 |"), "{md}");
    let options = ReportOptions { exclude_user_findings: Some("rules:1".into()), ..ReportOptions::default() };
    let report = build_report(std::slice::from_ref(&data), &options).unwrap();
    let quality = report.simulator.as_ref().unwrap();
    assert_eq!(quality.excluded, [dropped.clone()]);
    assert_eq!(report.groups[0].outcomes.scored, 1);
    assert!(
        render_markdown(&report, "run")
            .contains(&format!("Excluded from every measure: 1 episodes with a severe finding of rules:1 ({dropped})"))
    );
    // A reviewer no run has is an error, not a silent no-op.
    let missing = ReportOptions { exclude_user_findings: Some("panel:000000000000".into()), ..ReportOptions::default() };
    assert!(build_report(&[data], &missing).is_err());
}
