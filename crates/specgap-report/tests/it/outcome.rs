//! Seed 000 measures: Score@k / Success@k per group, outcome cost (Table 4 subscripts, Table 7
//! Cost), In round / Ahead (§5.3), seed replicates (Table 7 mean ± sd), per-family grouping.

use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::EndReason;
use specgap_report::Dim;
use specgap_report::outcome::outcome_cost;
use specgap_report::render::render_markdown;

use crate::fixture::{Ep, Sub, TaskSpec, close, reqs, reward, run_with};
use crate::{group, report_of};

fn reward_sub(score: f64, success: bool) -> Sub {
    Sub::scored(score, success, reward(score))
}

/// Reward-scored episode with the given Score per submission (success when 1.0).
fn scores(task: &str, agent: &str, condition: &str, values: &[f64]) -> Ep {
    let mut ep = Ep::new(task, agent, condition).kind(ScoringKind::Reward);
    for v in values {
        ep = ep.sub(reward_sub(*v, *v >= 1.0));
    }
    ep.end(if values.last() == Some(&1.0) { EndReason::Accepted } else { EndReason::SubmissionBudget })
}

#[test]
fn score_and_success_carry_forward_and_errors_stay_out() {
    let run = run_with(1, &[], &[]);
    // Seed 000 Table 11: Luna under Partial 0.2 0.6 0.8 1.0 (accepted at 4); Sol 0.4 four
    // times (budget exhausted); DeepSeek 0.4 0.6 then an episode that ended after 2.
    run.episode(&scores("t1", "m", "partial", &[0.2, 0.6, 0.8, 1.0]));
    run.episode(&scores("t2", "m", "partial", &[0.4, 0.4, 0.4, 0.4]));
    run.episode(&scores("t3", "m", "partial", &[0.4, 0.6]).end(EndReason::TurnBudget));
    // An evaluation error never enters the means.
    let mut broken = scores("t4", "m", "partial", &[1.0]);
    broken.end = EndReason::EvaluationError;
    broken.status = specgap_store::Status::EvalError;
    run.episode(&broken);
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let g = group(&report, &["m", "partial"]);
    assert_eq!((g.episodes, g.outcomes.scored, g.evaluation_errors), (4, 3, 1));
    // Score@1 = (0.2 + 0.4 + 0.4) / 3; @2 = (0.6 + 0.4 + 0.6) / 3; @3 = (0.8 + 0.4 + 0.6) / 3;
    // @4 = (1.0 + 0.4 + 0.6) / 3 (t3 carries 0.6 forward).
    let expected = [1.0 / 3.0, 1.6 / 3.0, 1.8 / 3.0, 2.0 / 3.0];
    for (k, e) in expected.iter().enumerate() {
        close(g.outcomes.score_at[k].unwrap(), *e, 1e-12);
    }
    // Only t1 succeeds, at its 4th submission: Success@1..3 = 0, Success@4 = 1/3.
    assert_eq!(g.outcomes.success_at[..3], [Some(0.0); 3]);
    close(g.outcomes.success_at[3].unwrap(), 1.0 / 3.0, 1e-12);
    // (4 + 4 + 2) / 3 submissions.
    close(g.outcomes.mean_submissions.unwrap(), 10.0 / 3.0, 1e-12);
    // No requirement-scored episode, so no In round / Ahead; no delivery, no Quality.
    assert!(g.resolution.is_none() && g.delivery.is_none() && g.clarification.is_none());
}

/// Seed 000 Table 4 (all 64 tasks), as printed: Literal@1, Literal@4 (Score, Success),
/// Partial@1 and Partial@4 (Score, Success, each with its printed subscript), Full@1 (Score,
/// Success), in percent.
/// (model, Literal@1 and @4 [Score, Success], Partial@1 and @4 [Score, subscript, Success,
/// subscript], Full@1 [Score, Success]).
type Table4Row = (&'static str, [f64; 4], [f64; 8], [f64; 2]);

const TABLE_4: &[Table4Row] = &[
    ("GPT-5.6-Sol", [31.9, 3.1, 48.8, 14.1], [48.8, -40.0, 10.9, -53.2, 61.9, -26.9, 29.7, -34.4], [88.8, 64.1]),
    ("GPT-5.6-Terra", [28.1, 1.6, 44.4, 6.3], [50.6, -41.3, 4.7, -64.1, 64.7, -27.2, 28.1, -40.7], [91.9, 68.8]),
    ("GPT-5.6-Luna", [25.9, 0.0, 40.9, 7.8], [41.6, -42.5, 3.1, -57.8, 52.8, -31.3, 23.4, -37.5], [84.1, 60.9]),
    ("Kimi-K3", [34.7, 3.1, 60.6, 23.4], [68.8, -23.4, 21.9, -53.1, 84.7, -7.5, 59.4, -15.6], [92.2, 75.0]),
    ("MiMo-v2.6-Pro", [47.5, 10.9, 69.1, 37.5], [69.4, -24.7, 28.1, -53.2, 84.1, -10.0, 62.5, -18.8], [94.1, 81.3]),
    ("DeepSeek-V4.1-Flash", [50.3, 18.8, 68.4, 39.1], [66.3, -28.1, 25.0, -56.3, 80.0, -14.4, 60.9, -20.4], [94.4, 81.3]),
    ("GLM-5.3-Flash", [41.6, 9.4, 62.2, 28.1], [58.4, -34.7, 10.9, -67.2, 69.4, -23.7, 31.3, -46.8], [93.1, 78.1]),
    ("MiMo-v2.6-Flash", [30.6, 6.3, 53.4, 20.3], [55.3, -39.1, 18.8, -64.0, 67.8, -26.6, 45.3, -37.5], [94.4, 82.8]),
    ("Qwen3.6-35B-A3B", [9.1, 0.0, 20.3, 0.0], [9.1, -32.8, 0.0, -15.6, 21.6, -20.3, 0.0, -15.6], [41.9, 15.6]),
    ("Gemma-4-31B-it", [4.4, 0.0, 7.2, 0.0], [1.9, -7.8, 0.0, -1.6, 4.7, -5.0, 0.0, -1.6], [9.7, 1.6]),
    ("Qwen3.8-27B", [0.3, 0.0, 0.6, 0.0], [5.9, 5.3, 0.0, 0.0, 5.0, 4.4, 0.0, 0.0], [0.6, 0.0]),
    ("Qwen3.5-9B", [2.8, 0.0, 3.1, 0.0], [1.3, -0.9, 0.0, 0.0, 1.9, -0.3, 0.0, 0.0], [2.2, 0.0]),
];

#[test]
fn table_4_subscripts_are_partial_minus_full_of_the_printed_values() {
    // Success columns: the subscripts are differences of the printed, rounded values.
    for (_, _, partial, full) in TABLE_4 {
        for (value, subscript) in [(partial[2], partial[3]), (partial[6], partial[7])] {
            close(-outcome_cost(full[1], value), subscript, 1e-9);
        }
    }
}

#[test]
fn table_4_score_subscripts_through_a_store() {
    // One reward-scored task per model; its Score values are the printed percentages, so the
    // report's Partial@k − Full@1 must reproduce the printed Score subscripts.
    let run = run_with(4, &[], &[]);
    for (model, literal, partial, full) in TABLE_4 {
        run.episode(&scores("t", model, "full", &[full[0] / 100.0]));
        // Partial: Score@1 = P1, carried to @2 and @3, Score@4 = P4.
        run.episode(&scores("t", model, "partial", &[partial[0] / 100.0, partial[0] / 100.0, partial[0] / 100.0, partial[4] / 100.0]));
        run.episode(&scores("t", model, "literal", &[literal[0] / 100.0, literal[0] / 100.0, literal[0] / 100.0, literal[2] / 100.0]));
    }
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition, Dim::Start]);
    assert_eq!(report.outcome_costs.len(), TABLE_4.len());
    for (model, literal, partial, full) in TABLE_4 {
        let row = report.outcome_costs.iter().find(|c| c.key[&Dim::Agent] == *model).unwrap();
        let c = &row.comparison;
        assert_eq!(c.tasks, 1);
        close(c.full_score_at_1 * 100.0, full[0], 1e-9);
        close(-c.cost_score_at[0] * 100.0, partial[1], 1e-9);
        close(-c.cost_score_at[3] * 100.0, partial[5], 1e-9);
        close(c.literal_score_at.unwrap()[3] * 100.0, literal[2], 1e-9);
    }
}

#[test]
fn table_7_replicates_and_cost_as_full_minus_partial() {
    // Seed 000 Table 7, three replicates each: Luna Partial@1 44.7 ± 2.7, Partial@4 56.1 ±
    // 3.5, Full@1 85.2 ± 1.0, Literal@1 27.8 ± 3.0, Cost 40.5 ± 1.8; DeepSeek Partial@1 64.8 ±
    // 1.3, Full@1 93.5 ± 1.6, Cost 28.6 ± 1.5. Replicate values m − s, m, m + s have mean m and
    // sample sd s exactly. The per-replicate pairing of the paper is not printed, so only the
    // Cost mean is checked: mean(Full − Partial) = mean(Full) − mean(Partial), within the
    // printed rounding (±0.1).
    let models = [
        ("luna", (44.7, 2.7), (56.1, 3.5), (85.2, 1.0), (27.8, 3.0), 40.5),
        ("deepseek", (64.8, 1.3), (77.1, 2.7), (93.5, 1.6), (45.4, 4.3), 28.6),
    ];
    let runs: Vec<_> = (0..3).map(|seed| run_with(seed, &[], &[])).collect();
    for (r, run) in runs.iter().enumerate() {
        let offset = r as f64 - 1.0;
        for (model, p1, p4, f1, l1, _) in &models {
            let at = |(m, s): (f64, f64)| (m + offset * s) / 100.0;
            run.episode(&scores("t", model, "partial", &[at(*p1), at(*p1), at(*p1), at(*p4)]));
            run.episode(&scores("t", model, "full", &[at(*f1)]));
            run.episode(&scores("t", model, "literal", &[at(*l1)]));
        }
    }
    let report = report_of(&runs.iter().collect::<Vec<_>>(), &[Dim::Agent, Dim::Condition, Dim::Start]);
    for (model, p1, p4, f1, l1, cost) in &models {
        let rep = |condition: &str| group(&report, &[model, condition, "clean"]).replicates.clone().unwrap();
        let partial = rep("partial");
        assert_eq!(partial.runs, 3);
        close(partial.score_at[0].mean * 100.0, p1.0, 1e-9);
        close(partial.score_at[0].sd * 100.0, p1.1, 1e-9);
        close(partial.score_at[3].mean * 100.0, p4.0, 1e-9);
        close(partial.score_at[3].sd * 100.0, p4.1, 1e-9);
        close(rep("full").score_at[0].sd * 100.0, f1.1, 1e-9);
        close(rep("literal").score_at[0].mean * 100.0, l1.0, 1e-9);
        let row = report.outcome_costs.iter().find(|c| c.key[&Dim::Agent] == *model).unwrap();
        close(row.cost_replicates.unwrap().mean * 100.0, *cost, 0.1 + 1e-9);
        // The pooled comparison over all three runs agrees with the replicate mean.
        close(row.comparison.cost_score_at[0] * 100.0, f1.0 - p1.0, 1e-9);
    }
}

fn req_sub(verdicts: &[(&str, bool)], failing: Option<&str>) -> Sub {
    let passed = verdicts.iter().filter(|(_, p)| *p).count();
    let score = passed as f64 / verdicts.len() as f64;
    let mut sub = Sub::scored(score, passed == verdicts.len(), reqs(verdicts));
    sub.failing = failing.map(str::to_string);
    sub
}

#[test]
fn in_round_and_ahead_follow_the_paper_when_episodes_stop_loop_or_run_out_after_a_report() {
    let mut spec = TaskSpec::new("org/req");
    // r1 is stated by the partial instruction; r2..r4 are not.
    spec.requirements = vec![("r1", 1, true), ("r2", 2, false), ("r3", 3, false), ("r4", 4, false)];
    let run = run_with(5, &[spec], &["org/gone"]);
    let v = |a: bool, b: bool, c: bool, d: bool| [("r1", a), ("r2", b), ("r3", c), ("r4", d)];
    // A (accepted): sub1 fails r2 r3 r4, r2 reported; sub2 fixes r2 (next) and r3 (ahead: never
    // reported), r4 reported; sub3 still fails r4, reported again (not a first report); sub4
    // passes: r4 fixed at the second submission after its first report.
    let mut a = Ep::new("org/req", "m", "partial");
    a.subs = vec![
        req_sub(&v(true, false, false, false), Some("r2")),
        req_sub(&v(true, true, true, false), Some("r4")),
        req_sub(&v(true, true, true, false), Some("r4")),
        req_sub(&v(true, true, true, true), None),
    ];
    run.episode(&a);
    // B (the agent stops after a report): sub1 fails r1 (stated, reported) and r3; sub2 fixes
    // r1 (next), r3 is reported and the script ends without a new submission: r3 is in
    // neither round and never passes.
    let mut b = Ep::new("org/req", "m", "partial").repeat(1).end(EndReason::AgentDone);
    b.subs = vec![req_sub(&v(false, true, false, true), Some("r1")), req_sub(&v(true, true, false, true), Some("r3"))];
    run.episode(&b);
    // C: its package is gone — it enters In round, not Ahead; q is fixed at the next.
    let mut c = Ep::new("org/gone", "m", "partial");
    c.subs = vec![req_sub(&[("q", false)], Some("q")), req_sub(&[("q", true)], None)];
    run.episode(&c);
    // D: accepted at once — enters, with nothing reported and nothing remaining.
    let mut d = Ep::new("org/req", "m", "partial").repeat(2);
    d.subs = vec![req_sub(&v(true, true, true, true), None)];
    run.episode(&d);
    // E (the turn budget runs out after a report, the workspace unchanged, so no automatic
    // submission): r2 reported and never resubmitted — neither, never; r4 remains unstated.
    let mut e = Ep::new("org/req", "m", "partial").repeat(3).end(EndReason::TurnBudget);
    e.subs = vec![req_sub(&v(true, false, true, false), Some("r2"))];
    run.episode(&e);
    // F: one submission allowed; the budget ends there, so r3 was never fed back (no report)
    // and counts among the remaining unstated requirements.
    let mut f = Ep::new("org/req", "m", "partial+submissions=1").end(EndReason::SubmissionBudget);
    f.subs = vec![req_sub(&v(true, true, false, true), Some("r3"))];
    run.episode(&f);
    // H (a loop ends the episode after a report): sub1 fails r2 and r4, r4 reported; the
    // automatic sub2 passes both — r4 fixed at the next submission, r2 resolved ahead.
    let mut h = Ep::new("org/req", "m", "partial").repeat(4).end(EndReason::LoopRepeatedCall);
    let mut automatic = req_sub(&v(true, true, true, true), None);
    automatic.automatic = true;
    automatic.declared = false;
    h.subs = vec![req_sub(&v(true, false, true, false), Some("r4")), automatic];
    run.episode(&h);
    // G: the same agent under `full` (no feedback: does not enter) passes r2 and fails r3 at
    // its first submission — the Full reference of the neither group.
    let mut g = Ep::new("org/req", "m", "full").end(EndReason::Submitted);
    g.subs = vec![req_sub(&v(true, true, false, true), Some("r3"))];
    run.episode(&g);

    let report = report_of(&[&run], &[Dim::Agent]);
    let r = group(&report, &["m"]).resolution.clone().unwrap();
    // A, B, C, D, E, F, H (G gives no feedback).
    assert_eq!(r.episodes, 7);
    // First reports: A r2, A r4, B r1, B r3, C q, E r2, H r4 = 7. Fixed next: A r2, B r1, C q,
    // H r4 = 4; second: A r4; neither: B r3, E r2 (both never fixed). In round 4/7 — the old
    // rule (reports followed by a submission) gave 5/6 here: B r3 and E r2 dropped out and A
    // r4 counted twice.
    assert_eq!((r.reported, r.fixed_next, r.fixed_second, r.neither, r.never), (7, 4, 1, 2, 2));
    close(r.in_round.unwrap(), 4.0 / 7.0, 1e-12);
    // Under full, G fails B's r3 (0) and passes E's r2 (1): 0.5 over 2 requirements.
    assert_eq!(r.neither_with_full, 2);
    close(r.neither_pass_under_full.unwrap(), 0.5, 1e-12);
    // Remaining unstated after the first submission: A {r3, r4}, B {r3}, E {r4}, F {r3}, H {r2}
    // = 6; resolved ahead: A r3, H r2 = 2.
    assert_eq!((r.resolved_ahead, r.remaining_unstated), (2, 6));
    close(r.ahead.unwrap(), 2.0 / 6.0, 1e-12);
    // The full group gets no resolution (no feedback).
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    assert!(group(&report, &["m", "full"]).resolution.is_none());
    assert!(report.warnings.iter().any(|w| w.contains("org/gone")), "{:?}", report.warnings);
}

#[test]
fn per_family_breakdown() {
    let mut research = TaskSpec::new("org/res");
    research.family = "research";
    let run = run_with(6, &[TaskSpec::new("org/swe"), research], &[]);
    let mut swe = scores("org/swe", "m", "full", &[1.0]);
    swe.family = specgap_protocol::package::Family::Swe;
    run.episode(&swe);
    let mut res = scores("org/res", "m", "full", &[0.25]);
    res.family = specgap_protocol::package::Family::Research;
    run.episode(&res);
    run.store
        .record_not_applicable(&specgap_store::NotApplicableRow {
            task: "org/res".into(),
            agent: "m".into(),
            condition: "partial".into(),
            start: "clean".into(),
            reason: "no observations.toml".into(),
        })
        .unwrap();
    let report = report_of(&[&run], &[Dim::Agent, Dim::Family]);
    assert_eq!(group(&report, &["m", "swe"]).outcomes.score_at[0], Some(1.0));
    assert_eq!(group(&report, &["m", "research"]).outcomes.score_at[0], Some(0.25));
    assert_eq!(group(&report, &["m", "research"]).not_applicable, 1);
    assert_eq!(report.not_applicable.len(), 1);
}

#[test]
fn skipped_combinations_are_listed_once_per_task_and_reason() {
    let run = run_with(61, &[TaskSpec::new("org/swe"), TaskSpec::new("org/res")], &[]);
    run.episode(&scores("org/swe", "a", "full", &[1.0]));
    let skip = |task: &str, agent: &str, condition: &str, start: &str, reason: &str| {
        run.store
            .record_not_applicable(&specgap_store::NotApplicableRow {
                task: task.into(),
                agent: agent.into(),
                condition: condition.into(),
                start: start.into(),
                reason: reason.into(),
            })
            .unwrap();
    };
    for agent in ["b", "a"] {
        for start in ["clean", "residual:x"] {
            skip("org/res", agent, "full", start, "condition full needs instruction.full.md");
        }
    }
    skip("org/res", "a", "partial", "clean", "no observations");
    let report = report_of(&[&run], &[Dim::Agent]);
    assert_eq!(report.not_applicable.len(), 5, "the JSON keeps every combination");
    let md = render_markdown(&report, "run");
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| org/res |")).collect();
    assert_eq!(
        rows,
        [
            "| org/res | condition full needs instruction.full.md | a, b | full | clean, residual:x | 4 |",
            "| org/res | no observations | a | partial | clean | 1 |",
        ]
    );
}

/// Groups are formed and ordered by their values (bytewise), whatever order the episodes come
/// in, and the per-task means of the cost comparison pair tasks by name (a guard for any
/// faster grouping of issue 32: it must give what string keys give).
#[test]
fn groups_come_in_the_order_of_their_values_and_the_cost_pairs_tasks_by_name() {
    let run = run_with(1, &[], &[]);
    // Agents and tasks written in an order that is neither sorted nor reversed; episode ids
    // (the stores' order) are hashes, so the rows come back in yet another order.
    for (agent, task, full, partial) in [
        ("mid", "t-b", 1.0, 0.5),
        ("zeta", "t-a", 1.0, 0.0),
        ("alpha", "t-c", 0.5, 0.5),
        ("mid", "t-a", 0.0, 0.0),
        ("zeta", "t-c", 1.0, 1.0),
    ] {
        run.episode(&scores(task, agent, "full", &[full]));
        run.episode(&scores(task, agent, "partial", &[partial]));
    }
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let keys: Vec<Vec<&str>> = report.groups.iter().map(|g| g.key.values().map(String::as_str).collect()).collect();
    assert_eq!(keys, [["alpha", "full"], ["alpha", "partial"], ["mid", "full"], ["mid", "partial"], ["zeta", "full"], ["zeta", "partial"]]);
    // Outcome cost per agent over its tasks under both conditions: mid has t-a (full 0,
    // partial 0) and t-b (full 1, partial 0.5): Full@1 = 0.5, Partial@1 = 0.25.
    let mid = report.outcome_costs.iter().find(|c| c.key.values().any(|v| v == "mid")).unwrap();
    let comparison = &mid.comparison;
    assert_eq!(comparison.tasks, 2);
    close(comparison.full_score_at_1, 0.5, 1e-12);
    close(comparison.partial_score_at[0], 0.25, 1e-12);
    // zeta: t-a (1, 0) and t-c (1, 1): Full@1 = 1, Partial@1 = 0.5.
    let zeta = report.outcome_costs.iter().find(|c| c.key.values().any(|v| v == "zeta")).unwrap();
    close(zeta.comparison.partial_score_at[0], 0.5, 1e-12);
}
