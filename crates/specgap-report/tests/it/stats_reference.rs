//! The report's statistics checked against scipy and statsmodels run on the same data and the
//! same resample indices (issue 11 item 7): the 95% case-bootstrap intervals of every seed 002
//! cell, the Spearman matrix and its Holm adjustment, the case-bootstrap interval of a kind
//! association's ρ, and a `compare` family's Wilcoxon p-values with Holm over the family.
//!
//! How the reference is made (the values' origin):
//!
//! 1. `cargo test -p specgap-report --test it -- --ignored export_reference_input` builds the
//!    world below, and writes what the report computes from — each cell's per-case numerators
//!    and denominators, the group values, the compared per-task pairs — with the 2,000 resample
//!    index vectors of seed 12345 (`specgap_stats::resample_statistics`, the stream every
//!    bootstrap of the report draws) to `tests/fixtures/reference_input.json`.
//! 2. `scripts/stats-reference/report_reference.py` (pinned numpy / scipy / statsmodels,
//!    `scripts/stats-reference/requirements.txt`) reads it and writes
//!    `tests/fixtures/reference.json`, each value with the library, version, function and
//!    arguments that produced it.
//!
//! The test below rebuilds the input in memory and checks it equals the committed one (same
//! data, same resamples), then compares the report's values to the reference.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use specgap_protocol::package::Family;
use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::EndReason;
use specgap_report::compare::MeasureComparison;
use specgap_report::{CompareOptions, Dim, Report, compare_family};

use crate::associations::{CLARIFICATIONS, QUESTIONS};
use crate::fixture::{Ep, Run, Sub, TaskSpec, delivery, run_configured};
use crate::report_of;

/// Five systems from formulas, and `s9:Z`, which delivers the reference and asks all four
/// questions in every run (so some family tests are clearly significant and Holm has work).
const AGENTS: [(&str, &str); 6] = [("s1:A", "A"), ("s2:A", "A"), ("s1:B", "B"), ("s2:B", "B"), ("s1:C", "C"), ("s9:Z", "Z")];
const CASES: usize = 6;
const REPEATS: u32 = 3;
const RESAMPLES: usize = 2000;
const SEED: u64 = 12345;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Six delivery cases with the four targets of [`CLARIFICATIONS`], five systems, three
/// repeats, planned in `run.toml`; scores and questions from fixed formulas.
fn world() -> Run {
    let specs: Vec<TaskSpec> = (0..CASES)
        .map(|c| {
            let mut spec = TaskSpec::new(&format!("org/t{c}"));
            spec.family = "optimization";
            spec.delivery = true;
            spec.clarifications_toml = Some(CLARIFICATIONS.to_string());
            spec
        })
        .collect();
    let run = run_configured(61, &specs, &[], |config| {
        let template = config.agents[0].clone();
        config.agents = AGENTS
            .iter()
            .map(|(agent, model)| {
                let mut a = template.clone();
                a.spec = agent.to_string();
                a.config.insert("model".into(), toml::Value::String(model.to_string()));
                a
            })
            .collect();
        config.conditions = vec!["interact".into()];
        config.repeats = REPEATS;
    });
    for (a, (agent, _)) in AGENTS.iter().enumerate() {
        for c in 0..CASES {
            for r in 0..REPEATS as usize {
                let strong = *agent == "s9:Z";
                let v = if strong { 10 } else { (a * 7 + c * 3 + r * 5 + a * c) % 11 };
                let score = v as f64 / 10.0;
                let result = delivery(v != 0, score * 10.0, if v == 0 { Some("constraint") } else { None }, usize::from(v == 0));
                let mut ep = Ep::new(&format!("org/t{c}"), agent, "interact")
                    .kind(ScoringKind::Delivery)
                    .repeat(r as u32)
                    .sub(Sub::scored(score, v == 10, result));
                ep.family = Family::Optimization;
                ep.end = EndReason::Submitted;
                ep.wall_ms = 1000 * (1 + ((a * 5 + c + r) % 7) as u64);
                let asked = if strong { 4 } else { (a * 3 + c + r * 2) % 5 };
                ep.questions = QUESTIONS[..asked].iter().enumerate().map(|(i, q)| (3 + (i * (a % 2)) as u32, q.to_string())).collect();
                if asked > 0 && (a + c + r) % 3 == 0 {
                    ep.questions.push((9, "Anything else I should know?".into()));
                }
                run.episode(&ep);
            }
        }
    }
    run
}

/// The family file of the world: six pairs of systems, Quality and Recall each.
fn family_file(run: &Run) -> PathBuf {
    let pairs = [("s1:A", "s2:A"), ("s1:B", "s2:B"), ("s1:A", "s1:B"), ("s2:A", "s2:B"), ("s1:A", "s9:Z"), ("s1:B", "s9:Z")];
    let mut text =
        String::from("# Pairs of systems, Holm over every test.\nseed = 12345\nresamples = 2000\nmeasures = [\"Quality\", \"Recall\"]\n\n");
    for (a, b) in pairs {
        text.push_str(&format!(
            "[[comparison]]\nname = \"{b} - {a}\"\na = {{ run = \"run\", select = \"agent={a}\" }}\nb = {{ run = \"run\", select = \"agent={b}\" }}\n\n"
        ));
    }
    let path = run.dir.parent().unwrap().join("family.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn pairs(v: &specgap_report::cases::CaseValues) -> Value {
    Value::Array(v.entries().iter().map(|(_, n, d)| json!([n, d])).collect())
}

/// What the report computes from, as the reference script reads it.
fn reference_input(report: &Report, family: &[(String, MeasureComparison)]) -> Value {
    let mut indices: Vec<Vec<usize>> = Vec::new();
    specgap_stats::resample_statistics(
        CASES,
        |idx| {
            indices.push(idx.to_vec());
            0.0
        },
        RESAMPLES,
        SEED,
    )
    .unwrap();
    let mut intervals = Vec::new();
    for g in &report.groups {
        let label = g.key.values().cloned().collect::<Vec<_>>().join(" · ");
        let tables = g.delivery.iter().flat_map(|d| d.case_values.iter()).chain(g.clarification.iter().flat_map(|c| c.cases.iter()));
        for (measure, values) in tables {
            // Kind Recall and domain shares are association data, not cells with intervals.
            if measure.starts_with("Recall[") || measure.starts_with("Share[") {
                continue;
            }
            intervals.push(json!({ "group": label, "measure": measure, "cases": pairs(values) }));
        }
    }
    let measures = ["Recall", "Precision", "Ask-F1", "KQC1", "ATC", "Redund.", "Quality", "DSR", "pass@k", "pass^k"];
    let mut matrix = BTreeMap::new();
    for m in measures {
        let values: Vec<Value> =
            report.groups.iter().map(|g| specgap_report::associations::group_value(g, m).map_or(Value::Null, |v| json!(v))).collect();
        matrix.insert(m.to_string(), values);
    }
    // The kind association: Recall of `missing` targets against Quality, per group the case data
    // over the six cases (all groups hold all cases).
    let kind = "Recall[type:missing]";
    let kind_groups: Vec<Value> = report
        .groups
        .iter()
        .map(|g| {
            json!({
                "x": pairs(&g.clarification.as_ref().unwrap().cases[kind]),
                "y": pairs(&g.delivery.as_ref().unwrap().case_values["Quality"]),
            })
        })
        .collect();
    let tests: Vec<Value> = family
        .iter()
        .map(|(name, m)| {
            json!({
                "name": name,
                "measure": m.measure,
                "a": m.per_task.iter().map(|p| p.a).collect::<Vec<_>>(),
                "b": m.per_task.iter().map(|p| p.b).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "generator": "crates/specgap-report/tests/it/stats_reference.rs (cargo test -p specgap-report --test it -- --ignored export_reference_input)",
        "resamples": { "n_cases": CASES, "seed": SEED, "count": RESAMPLES, "confidence": 0.95, "indices": indices },
        "intervals": intervals,
        "matrix": { "groups": report.groups.len(), "values": matrix },
        "kind_interval": { "measure": kind, "groups": kind_groups },
        "family": tests,
    })
}

fn build() -> (Run, Report, Vec<(String, MeasureComparison)>, Value) {
    let run = world();
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let comparison = compare_family(&family_file(&run), &CompareOptions::default()).unwrap();
    let family: Vec<(String, MeasureComparison)> =
        comparison.comparisons.iter().flat_map(|p| p.measures.iter().map(|m| (p.name.clone(), m.clone()))).collect();
    let input = reference_input(&report, &family);
    (run, report, family, input)
}

#[test]
#[ignore = "writes tests/fixtures/reference_input.json; run by hand, then the reference script"]
fn export_reference_input() {
    let (_run, _report, _family, input) = build();
    let text = serde_json::to_string(&input).unwrap();
    std::fs::write(fixtures().join("reference_input.json"), text + "\n").unwrap();
}

/// A reference number: JSON numbers, or `"nan"`.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if s == "nan" => None,
        other => panic!("not a reference number: {other}"),
    }
}

#[track_caller]
fn near(actual: Option<f64>, expected: &Value, what: &str) {
    match (actual, number(expected)) {
        (Some(a), Some(e)) => assert!((a - e).abs() <= 1e-12 * e.abs().max(1.0), "{what}: {a} vs scipy {e}"),
        (None, None) => {}
        (a, e) => panic!("{what}: {a:?} vs reference {e:?}"),
    }
}

#[test]
fn report_statistics_match_scipy_and_statsmodels() {
    let (_run, report, family, input) = build();
    let committed: Value = serde_json::from_str(&std::fs::read_to_string(fixtures().join("reference_input.json")).unwrap()).unwrap();
    // Through text both ways: serde_json's float parsing is not always exact, so compare parses.
    let input: Value = serde_json::from_str(&serde_json::to_string(&input).unwrap()).unwrap();
    assert!(
        committed == input,
        "the world or the resample stream changed: re-export the input and rerun scripts/stats-reference/report_reference.py"
    );
    let reference: Value = serde_json::from_str(&std::fs::read_to_string(fixtures().join("reference.json")).unwrap()).unwrap();

    // Every cell's interval: scipy.stats.bootstrap(method='percentile') on the distribution
    // of the ratio over the same resamples.
    let expected = reference["intervals"].as_array().unwrap();
    let mut checked = 0;
    for g in &report.groups {
        let label = g.key.values().cloned().collect::<Vec<_>>().join(" · ");
        let d = g.delivery.as_ref().unwrap();
        let c = g.clarification.as_ref().unwrap();
        let cells = specgap_report::delivery::DELIVERY_MEASURES
            .iter()
            .map(|(field, name)| (*name, d.intervals.get(*field)))
            .chain(specgap_report::clarification::CLARIFICATION_MEASURES.iter().map(|(field, name)| (*name, c.intervals.get(*field))));
        for (name, interval) in cells {
            let e = expected
                .iter()
                .find(|e| e["group"] == label && e["measure"] == name)
                .unwrap_or_else(|| panic!("no reference for {label} {name}"));
            near(interval.map(|i| i[0]), &e["result"]["low"], &format!("{label} {name} low"));
            near(interval.map(|i| i[1]), &e["result"]["high"], &format!("{label} {name} high"));
            checked += 1;
        }
    }
    assert_eq!(checked, AGENTS.len() * 11);

    // The matrix: scipy.stats.spearmanr per cell, statsmodels Holm over the cells with a p.
    for e in reference["matrix"].as_array().unwrap() {
        let cell = report.associations.clarification_delivery.iter().find(|a| a.x == e["x"] && a.y == e["y"]);
        let what = format!("{} × {}", e["x"], e["y"]);
        near(cell.map(|a| a.rho), &e["result"]["rho"], &what);
        near(cell.map(|a| a.p_value), &e["result"]["p_value"], &what);
        near(cell.and_then(|a| a.holm_p), &e["result"]["holm_p"], &what);
    }
    assert_eq!(
        report.associations.clarification_delivery.len(),
        reference["matrix"].as_array().unwrap().iter().filter(|e| number(&e["result"]["rho"]).is_some()).count()
    );

    // The kind association's case-bootstrap interval of ρ.
    let missing = report.associations.issue_type_recall.iter().find(|k| k.kind == "missing").unwrap();
    let q = missing.quality.as_ref().unwrap();
    near(Some(q.rho), &reference["kind_interval"]["result"]["rho"], "missing rho");
    near(q.interval.map(|i| i[0]), &reference["kind_interval"]["result"]["low"], "missing rho low");
    near(q.interval.map(|i| i[1]), &reference["kind_interval"]["result"]["high"], "missing rho high");

    // The family: scipy.stats.wilcoxon per test, statsmodels Holm over the whole family.
    let tests = reference["family"].as_array().unwrap();
    assert_eq!(tests.len(), family.len());
    for ((name, m), e) in family.iter().zip(tests) {
        let what = format!("{name} {}", m.measure);
        near(m.wilcoxon_p, &e["result"]["p_value"], &what);
        near(m.holm_p, &e["result"]["holm_p"], &what);
    }
}
