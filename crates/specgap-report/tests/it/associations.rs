//! Associations across groups (seed 002 §5.2–5.3, App. A.4–A.5): the clarification × delivery
//! matrix with Holm, the model-demeaned ρ across scaffolds, type- and domain-specific Recall,
//! runtime against Quality — on four systems (two models × two scaffolds) with exact
//! dyadic values, so every ρ is computed here by hand.

use specgap_protocol::package::Family;
use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::EndReason;
use specgap_report::Dim;

use crate::fixture::{Ep, Sub, TaskSpec, close, delivery, run_configured};
use crate::{group, report_of};

/// Four targets: two `missing` constraint rules, one `ambiguous` data-semantics point and one
/// `invalidated` scoring convention.
pub const CLARIFICATIONS: &str = r#"
[[target]]
id = "weight"
description = "The carrier weight limit counts the box and padding"
issue_type = "missing"
domain = "constraint-rule"
answer = "yes"
triggers = ["Does the weight limit include the box and padding?"]

[[target]]
id = "today"
description = "Every order line ships today"
issue_type = "missing"
domain = "constraint-rule"
answer = "yes"
triggers = ["Must every order line ship today?"]

[[target]]
id = "currency"
description = "Amounts are in euros"
issue_type = "ambiguous"
domain = "data-semantics"
answer = "euros"
triggers = ["Which currency are the amounts in?"]

[[target]]
id = "metric"
description = "Plans are scored by mean absolute lateness"
issue_type = "invalidated"
domain = "scoring-convention"
answer = "lateness"
triggers = ["How are plans scored, by mean absolute lateness?"]
"#;

pub const QUESTIONS: [&str; 4] = [
    "Does the weight limit include the box and padding?",
    "Must every order line ship today?",
    "Which currency are the amounts in?",
    "How are plans scored, by mean absolute lateness?",
];

/// (agent, model, targets asked, score, wall ms)
const SYSTEMS: [(&str, &str, usize, f64, u64); 4] =
    [("s1:A", "A", 4, 0.5, 4000), ("s2:A", "A", 2, 0.75, 1000), ("s1:B", "B", 3, 0.25, 3000), ("s2:B", "B", 1, 0.5, 2000)];

fn report() -> specgap_report::Report {
    report_of_systems("", false)
}

/// The four systems' run, their agents' specs and labels prefixed with `prefix` (`replay:`
/// makes them replays), reported with `show_timing`.
fn report_of_systems(prefix: &str, show_timing: bool) -> specgap_report::Report {
    let mut spec = TaskSpec::new("org/case");
    spec.family = "optimization";
    spec.delivery = true;
    spec.clarifications_toml = Some(CLARIFICATIONS.to_string());
    let run = run_configured(51, &[spec], &[], |config| {
        let template = config.agents[0].clone();
        config.agents = SYSTEMS
            .iter()
            .map(|(agent, model, ..)| {
                let mut a = template.clone();
                a.spec = format!("{prefix}{agent}");
                a.config.insert("model".into(), toml::Value::String(model.to_string()));
                a
            })
            .collect();
        config.conditions = vec!["interact".into()];
    });
    for (agent, _, asked, score, wall_ms) in SYSTEMS {
        let mut ep = Ep::new("org/case", &format!("{prefix}{agent}"), "interact").kind(ScoringKind::Delivery).sub(Sub::scored(
            score,
            false,
            delivery(true, score * 10.0, None, 0),
        ));
        ep.family = Family::Optimization;
        ep.end = EndReason::Submitted;
        ep.wall_ms = wall_ms;
        ep.questions = QUESTIONS[..asked].iter().map(|q| (3, q.to_string())).collect();
        run.episode(&ep);
    }
    let data = [specgap_report::RunData::load(&run.dir).unwrap()];
    let options = specgap_report::ReportOptions { group_by: vec![Dim::Agent, Dim::Condition], show_timing, ..Default::default() };
    specgap_report::build_report(&data, &options).unwrap()
}

#[test]
fn recall_and_quality_raw_and_model_demeaned() {
    let report = report();
    // Recall per system: 4/4, 2/4, 3/4, 1/4 (each question reaches its own target).
    let recalls: Vec<f64> = SYSTEMS
        .iter()
        .map(|(agent, ..)| group(&report, &[agent, "interact"]).clarification.as_ref().unwrap().recall.as_ref().unwrap().mean)
        .collect();
    assert_eq!(recalls, [1.0, 0.5, 0.75, 0.25]);
    let a = report.recall_quality.clone().unwrap();
    assert_eq!(a.groups, 4);
    // Ranks: Recall (4, 2, 3, 1); Quality 0.5, 0.75, 0.25, 0.5 → (2.5, 4, 1, 2.5). Deviations
    // from 2.5: (1.5, −.5, .5, −1.5) and (0, 1.5, −1.5, 0): ρ = −1.5 / √(5 · 4.5).
    close(a.rho, -1.5 / (5.0_f64 * 4.5).sqrt(), 1e-12);
    // Demeaned per model: Recall (+.25, −.25, +.25, −.25), Quality (−.125, +.125, −.125, +.125):
    // perfectly opposed ranks, ρ = −1 and (n = 4, |ρ| = 1) p = 0.
    assert_eq!(a.demeaned_rho, Some(-1.0));
    assert_eq!(a.demeaned_p, Some(0.0));
}

#[test]
fn the_matrix_has_holm_over_its_cells() {
    let report = report();
    let matrix = &report.associations.clarification_delivery;
    // Recall, Precision, Ask-F1, KQC1, ATC, Redund. × Quality, DSR, pass@k, pass^k; cells
    // whose ρ is undefined (a constant column: Precision is 1 everywhere, DSR 0, pass 1) are
    // left out.
    let cells: Vec<(&str, &str)> = matrix.iter().map(|a| (a.x.as_str(), a.y.as_str())).collect();
    assert_eq!(cells, [("Recall", "Quality"), ("Ask-F1", "Quality"), ("KQC1", "Quality")]);
    let raw: Vec<f64> = matrix.iter().map(|a| a.p_value).collect();
    let holm = specgap_stats::holm_adjust(&raw).unwrap();
    for (a, q) in matrix.iter().zip(holm) {
        assert_eq!(a.holm_p, Some(q));
    }
}

#[test]
fn type_and_domain_specific_recall() {
    let report = report();
    let c = group(&report, &["s2:A", "interact"]).clarification.clone().unwrap();
    // s2:A asked the first two questions: both `missing` targets, no other.
    let by_type: Vec<(&str, f64)> = c.by_issue_type.iter().map(|(k, v)| (k.as_str(), v.recall)).collect();
    assert_eq!(by_type, [("ambiguous", 0.0), ("invalidated", 0.0), ("missing", 1.0)]);
    let by_domain: Vec<(&str, f64)> = c.by_domain.iter().map(|(k, v)| (k.as_str(), v.recall)).collect();
    assert_eq!(by_domain, [("constraint-rule", 1.0), ("data-semantics", 0.0), ("scoring-convention", 0.0)]);
    let c = group(&report, &["s1:B", "interact"]).clarification.clone().unwrap();
    assert_eq!(c.by_issue_type["missing"].recall, 1.0);
    assert_eq!(c.by_issue_type["ambiguous"].recall, 1.0);
    assert_eq!(c.by_issue_type["invalidated"].recall, 0.0);
    // Across systems: `missing` Recall is 1, 1, 1, 0.5; mean 0.875; ρ with Quality (0.5, 0.75,
    // 0.25, 0.5): ranks (3, 3, 3, 1) and (2.5, 4, 1, 2.5) → deviations (.5, .5, .5, −1.5) and
    // (0, 1.5, −1.5, 0): covariance 0, ρ = 0.
    let missing = report.associations.issue_type_recall.iter().find(|k| k.kind == "missing").unwrap();
    assert_eq!((missing.groups, missing.mean_recall), (4, 0.875));
    assert_eq!(missing.quality.as_ref().unwrap().rho, 0.0);
    // One case: no case-bootstrap interval.
    assert_eq!(missing.quality.as_ref().unwrap().interval, None);
    assert_eq!(report.associations.domain_recall.len(), 3);
}

#[test]
fn runtime_against_quality() {
    let report = report();
    let r = report.associations.runtime_quality.clone().unwrap();
    // Wall time 4, 1, 3, 2 s → ranks (4, 1, 3, 2); Quality ranks (2.5, 4, 1, 2.5): deviations
    // (1.5, −1.5, .5, −.5) and (0, 1.5, −1.5, 0): covariance −3, ρ = −3 / √(5 · 4.5).
    close(r.rho, -3.0 / (5.0_f64 * 4.5).sqrt(), 1e-12);
    let d = group(&report, &["s1:A", "interact"]).delivery.clone().unwrap();
    assert_eq!(d.mean_wall_sec, Some(4.0));
}

/// Regression (issue 30 item 8): run time against Quality reached p = 0.04 in one run of
/// replayed agents and 0.41 in a merge of the same episodes; replayed and scripted agents'
/// run times are the machine's, so the association is left out unless asked for.
#[test]
fn runtime_against_quality_is_left_out_for_replays_unless_asked_and_labelled_otherwise() {
    let models = report();
    assert_eq!(models.associations.timing, specgap_report::associations::Timing::TimingDependent);
    let text = specgap_report::render::render_markdown(&models, "r");
    assert!(text.contains("Timing-dependent: wall-clock times vary with the machine's load"), "{text}");

    let replays = report_of_systems("replay:", false);
    assert_eq!(replays.associations.runtime_quality, None);
    assert_eq!(replays.associations.timing, specgap_report::associations::Timing::LeftOut);
    let text = specgap_report::render::render_markdown(&replays, "r");
    assert!(text.contains("Mean run time against Quality is left out: every agent is scripted or replayed"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&specgap_report::render::render_json(&replays).unwrap()).unwrap();
    assert_eq!(json["associations"]["timing"], "left_out");
    assert_eq!(json["associations"].get("runtime_quality"), None);

    let shown = report_of_systems("replay:", true);
    close(shown.associations.runtime_quality.unwrap().rho, -3.0 / (5.0_f64 * 4.5).sqrt(), 1e-12);
}

#[test]
fn registry_composition_of_table_7() {
    let report = report();
    let r = report.clarification_registry.clone().unwrap();
    assert_eq!((r.points, r.cases), (4, 1));
    let rows: Vec<(&str, &str, usize, f64, usize)> =
        r.rows.iter().map(|row| (row.annotation, row.kind.as_str(), row.points, row.share, row.cases)).collect();
    assert_eq!(
        rows,
        [
            ("issue_type", "missing", 2, 0.5, 1),
            ("issue_type", "ambiguous", 1, 0.25, 1),
            ("issue_type", "invalidated", 1, 0.25, 1),
            ("domain", "constraint-rule", 2, 0.5, 1),
            ("domain", "data-semantics", 1, 0.25, 1),
            ("domain", "scoring-convention", 1, 0.25, 1),
        ]
    );
}

#[test]
fn domain_mix_of_matched_questions_splits_a_unit_among_its_domains() {
    let report = report();
    // s1:B's three units matched weight, today (constraint rules) and currency (data semantics).
    let c = group(&report, &["s1:B", "interact"]).clarification.clone().unwrap();
    let mix: Vec<(&str, f64)> = c.matched_domains.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(mix, [("constraint-rule", 2.0 / 3.0), ("data-semantics", 1.0 / 3.0)]);

    // One unit naming a constraint rule and the currency in two clauses counts half to each.
    let mut spec = TaskSpec::new("org/case");
    spec.family = "optimization";
    spec.delivery = true;
    spec.clarifications_toml = Some(CLARIFICATIONS.to_string());
    let run = run_configured(52, &[spec], &[], |_| {});
    let mut ep =
        Ep::new("org/case", "x", "interact").kind(ScoringKind::Delivery).sub(Sub::scored(0.5, false, delivery(true, 5.0, None, 0)));
    ep.family = Family::Optimization;
    ep.end = EndReason::Submitted;
    ep.questions = vec![
        (3, "Does the weight limit include the box and padding, and which currency are the amounts in?".into()),
        (3, "Must every order line ship today?".into()),
    ];
    run.episode(&ep);
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let c = group(&report, &["x", "interact"]).clarification.clone().unwrap();
    assert_eq!(c.recall.as_ref().unwrap().mean, 0.75);
    let mix: Vec<(&str, f64)> = c.matched_domains.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(mix, [("constraint-rule", 0.75), ("data-semantics", 0.25)]);
}
