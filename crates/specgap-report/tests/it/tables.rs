//! The tables of seed 000 that compare along conditions or families (issue "Protocol fidelity
//! to seed 000", item 9): requirements stated per task (Table 3), Score@k per family, Partial as
//! a share of Full per family (§5.2), and the plan mode against Partial (§5.4, Table 6). Every
//! expected value is computed by hand in the comments from the fixture's episodes.

use specgap_protocol::package::Family;
use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::EndReason;
use specgap_report::Dim;

use crate::fixture::{Ep, Sub, TaskSpec, close, reward, run_with};
use crate::report_of;

/// Reward-scored episode of agent `m` with one Score per submission (success at 1.0).
fn scored(task: &str, condition: &str, family: Family, values: &[f64]) -> Ep {
    let mut ep = Ep::new(task, "m", condition).kind(ScoringKind::Reward);
    ep.family = family;
    for v in values {
        ep = ep.sub(Sub::scored(*v, *v >= 1.0, reward(*v)));
    }
    ep.end(if values.last() == Some(&1.0) { EndReason::Accepted } else { EndReason::SubmissionBudget })
}

fn task(name: &str, family: &'static str, stated: usize) -> TaskSpec {
    let mut spec = TaskSpec::new(name);
    spec.family = family;
    let ids = ["r1", "r2", "r3", "r4", "r5"];
    spec.requirements = ids.iter().enumerate().map(|(i, id)| (*id, i as u32 + 1, i < stated)).collect();
    spec
}

#[test]
fn table_3_families_partial_share_and_plan_against_partial() {
    let tasks = [task("org/s1", "swe", 1), task("org/s2", "swe", 0), task("org/r1", "research", 2), task("org/r2", "research", 0)];
    let run = run_with(21, &tasks, &[]);
    let (swe, research) = (Family::Swe, Family::Research);
    run.episode(&scored("org/s1", "full", swe, &[1.0]));
    run.episode(&scored("org/s1", "partial", swe, &[0.4, 0.8]));
    run.episode(&scored("org/s2", "full", swe, &[0.8]));
    run.episode(&scored("org/s2", "partial", swe, &[0.6]));
    run.episode(&scored("org/r1", "full", research, &[0.5]));
    run.episode(&scored("org/r1", "partial", research, &[0.1, 0.2, 0.3]));
    // r2 never ran under full: it is in the family's Score@k, not in its Partial share.
    run.episode(&scored("org/r2", "partial", research, &[0.2]));
    run.episode(&scored("org/s1", "plan", swe, &[0.6]));
    run.episode(&scored("org/s2", "plan", swe, &[1.0]));
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition, Dim::Start]);

    // Table 3: stated counts s1 1, s2 0, r1 2, r2 0 → 0: 2 tasks (50%), 1: 1 (25%), 2: 1 (25%).
    let stated = report.stated_requirements.clone().unwrap();
    assert_eq!(stated.tasks, 4);
    assert_eq!(stated.tasks_by_stated.into_iter().collect::<Vec<_>>(), [(0, 2), (1, 1), (2, 1)]);
    assert_eq!(stated.share_by_stated[&0], 0.5);
    assert_eq!(stated.share_by_stated[&2], 0.25);

    // Score@k per family under partial: SWE s1 (0.4, 0.8, 0.8, 0.8) and s2 (0.6 carried):
    // @1 = 0.5, @2 = 0.7; research r1 (0.1, 0.2, 0.3, 0.3) and r2 (0.2): @1 = 0.15, @3 = 0.25.
    let family = |condition: &str, family: &str| {
        report
            .families
            .iter()
            .find(|f| f.key[&Dim::Condition] == condition && f.family == family)
            .unwrap_or_else(|| panic!("no {condition} {family} row in {:?}", report.families))
            .outcomes
            .clone()
    };
    let swe_partial = family("partial", "swe");
    close(swe_partial.score_at[0].unwrap(), 0.5, 1e-12);
    close(swe_partial.score_at[1].unwrap(), 0.7, 1e-12);
    let research_partial = family("partial", "research");
    assert_eq!(research_partial.scored, 2);
    close(research_partial.score_at[0].unwrap(), 0.15, 1e-12);
    close(research_partial.score_at[2].unwrap(), 0.25, 1e-12);
    // Plan episodes are SWE only: one row, Score@1 (0.6 + 1.0) / 2.
    close(family("plan", "swe").score_at[0].unwrap(), 0.8, 1e-12);
    assert!(!report.families.iter().any(|f| f.key[&Dim::Condition] == "plan" && f.family == "research"));

    // Partial as a share of Full: SWE on s1, s2: Full@1 (1.0 + 0.8) / 2 = 0.9, Partial@1 0.5
    // → 5/9, Partial@4 (0.8 + 0.6) / 2 = 0.7 → 7/9; research on r1 only: 0.1 / 0.5 = 0.2 and
    // 0.3 / 0.5 = 0.6.
    let share = |family: &str| report.partial_shares.iter().find(|p| p.family == family).unwrap().share.clone();
    let s = share("swe");
    assert_eq!(s.tasks, 2);
    close(s.full_score_at_1, 0.9, 1e-12);
    close(s.share_at[0].unwrap(), 5.0 / 9.0, 1e-12);
    close(s.share_at[1].unwrap(), 7.0 / 9.0, 1e-12);
    let r = share("research");
    assert_eq!(r.tasks, 1);
    close(r.share_at[0].unwrap(), 0.2, 1e-12);
    close(r.share_at[1].unwrap(), 0.6, 1e-12);
    assert!(report.partial_shares.iter().all(|p| !p.key.contains_key(&Dim::Condition)));

    // Plan against Partial on s1, s2: Score@1 Partial 0.5 → Plan (0.6 + 1.0) / 2 = 0.8
    // (+0.3); Success@1 0 → 0.5 (s2's plan succeeds at once).
    assert_eq!(report.plan_vs_partial.len(), 1);
    let p = &report.plan_vs_partial[0].comparison;
    assert_eq!(p.tasks, 2);
    close(p.partial_at_1[0], 0.5, 1e-12);
    close(p.plan_at_1[0], 0.8, 1e-12);
    close(p.difference[0], 0.3, 1e-12);
    assert_eq!((p.partial_at_1[1], p.plan_at_1[1]), (0.0, 0.5));

    // The Markdown report shows the four tables.
    let md = specgap_report::render::render_markdown(&report, "t");
    for title in [
        "Per family (seed 000",
        "Partial as a share of Full",
        "Plan mode against Partial",
        "Requirements stated by the partial instruction",
    ] {
        assert!(md.contains(title), "{title} missing:\n{md}");
    }
    assert!(md.contains("| m | clean | swe | 2 | 90.0 | 50.0 | 55.6 | 70.0 | 77.8 |"), "{md}");
}
