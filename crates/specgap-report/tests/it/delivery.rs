//! Seed 002 measures: Quality, DSR, pass@k, pass^k, the clarification measures with the offline
//! judge (recorded in the store) and the undefined-value rules of App. A.3, zero-score
//! signatures, and the oracle-coverage curve against Table 13.

use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::EndReason;
use specgap_report::Dim;
use specgap_report::clarification::clarification_values;
use specgap_report::judge::{COVERED, MISSED, OFFLINE_JUDGE, QuestionUnit};
use specgap_store::Store;

use crate::fixture::{Ep, Sub, TaskSpec, close, delivery, run_with};
use crate::{group, report_of};

fn case(name: &str, with_targets: bool) -> TaskSpec {
    let mut spec = TaskSpec::new(name);
    spec.family = "optimization";
    spec.delivery = true;
    if with_targets {
        spec.targets = vec![
            (
                "packaging-weight",
                "Whether the carrier's 10 kg limit counts the box and padding",
                vec!["Does the 10 kg limit include the box itself?"],
            ),
            ("all-items-today", "Whether every order line must ship today", vec!["Can some items wait until tomorrow?"]),
            ("currency", "Which currency the report uses", vec!["Which currency should amounts use?"]),
        ];
    }
    spec
}

fn run_ep(task: &str, condition: &str, repeat: u32, score: f64, valid: bool, signature: Option<&str>) -> Ep {
    let success = score >= 1.0;
    let result = delivery(valid, score * 10.0, signature, usize::from(!valid));
    let mut ep = Ep::new(task, "x", condition).kind(ScoringKind::Delivery).repeat(repeat).sub(Sub::scored(score, success, result));
    ep.family = specgap_protocol::package::Family::Optimization;
    ep.end = EndReason::Submitted;
    ep
}

/// The six scored runs of two cases used by the delivery tests (no harness failure).
fn six_scored_runs(run: &crate::fixture::Run) {
    // d1: 0.5 valid; 0 invalid (constraint); 1.0 valid (reference attained).
    run.episode(&run_ep("org/d1", "interact", 0, 0.5, true, None));
    run.episode(&run_ep("org/d1", "interact", 1, 0.0, false, Some("constraint")));
    run.episode(&run_ep("org/d1", "interact", 2, 1.0, true, None));
    // d2: 0.8, 0.6 valid; 0 valid but scoring nothing (quality warning).
    run.episode(&run_ep("org/d2", "interact", 0, 0.8, true, None));
    run.episode(&run_ep("org/d2", "interact", 1, 0.6, true, None));
    run.episode(&run_ep("org/d2", "interact", 2, 0.0, true, Some("quality")));
}

#[test]
fn quality_dsr_pass_k_and_zero_signatures() {
    let run = run_with(11, &[case("org/d1", false), case("org/d2", false)], &[]);
    six_scored_runs(&run);

    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let g = group(&report, &["x", "interact"]);
    let d = g.delivery.clone().unwrap();
    assert_eq!((d.cases, d.planned_runs, d.runs, d.complete), (2, 6, 6, true));
    // Quality = ((0.5 + 0 + 1) / 3 + (0.8 + 0.6 + 0) / 3) / 2 = (0.5 + 0.4666…) / 2.
    close(d.quality.unwrap(), (0.5 + 1.4 / 3.0) / 2.0, 1e-12);
    // DSR = 1 of 6 runs; validity 5 of 6.
    close(d.dsr.unwrap(), 1.0 / 6.0, 1e-12);
    close(d.valid.unwrap(), 5.0 / 6.0, 1e-12);
    // k = 3 repeats per case: d1 has 2 valid (pass@3 = 1, pass^3 = 0), d2 has 3 (1, 1).
    let p = d.pass_k.unwrap();
    assert_eq!(p.k, 3);
    close(p.pass_at_k, 1.0, 1e-12);
    close(p.pass_hat_k, 0.5, 1e-12);
    // Every planned run scored: the scored-only column equals the planned-run values.
    let s = d.scored_only.unwrap();
    assert_eq!((s.runs, s.cases), (6, 2));
    close(s.quality, d.quality.unwrap(), 1e-15);
    assert!(d.unscored.is_empty());
    let z = g.zero_scores.clone().unwrap();
    assert_eq!((z.runs, z.zero, z.invalid, z.valid_zero), (6, 2, 1, 1));
    assert_eq!(z.signatures.get("constraint"), Some(&1));
    assert_eq!(z.signatures.get("quality"), Some(&1));
    // No targets in these packages: no clarification measures (absent, not 0).
    assert!(g.clarification.is_none());
}

#[test]
fn an_infrastructure_error_is_listed_and_leaves_the_planned_cells_incomplete() {
    let run = run_with(11, &[case("org/d1", false), case("org/d2", false)], &[]);
    six_scored_runs(&run);
    // A fourth planned run of d2 ended in an infrastructure error: not a zero, not dropped.
    let mut broken = run_ep("org/d2", "interact", 3, 0.0, false, None);
    broken.end = EndReason::InfrastructureError;
    broken.status = specgap_store::Status::InfraError;
    broken.subs.clear();
    let broken_id = run.episode(&broken);

    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let d = group(&report, &["x", "interact"]).delivery.clone().unwrap();
    assert_eq!((d.cases, d.planned_runs, d.runs, d.complete), (2, 7, 6, false));
    assert_eq!((d.quality, d.dsr, d.valid, d.pass_k.clone()), (None, None, None, None));
    assert!(d.intervals.is_empty());
    assert_eq!(d.unscored.len(), 1);
    assert_eq!(
        (d.unscored[0].episode.as_str(), d.unscored[0].task.as_str(), d.unscored[0].repeat, d.unscored[0].reason.as_str()),
        (broken_id.as_str(), "org/d2", 3, "infrastructure_error")
    );
    // The robustness column: the six scored runs, k = the fewest scored repeats (3).
    let s = d.scored_only.unwrap();
    close(s.quality, (0.5 + 1.4 / 3.0) / 2.0, 1e-12);
    close(s.dsr, 1.0 / 6.0, 1e-12);
    assert_eq!(s.pass_k.unwrap().k, 3);
    // Markdown marks the cells; JSON leaves them out and says `complete: false`.
    let md = specgap_report::render::render_markdown(&report, "t");
    assert!(md.contains("| x | interact | 2 | 7 | 6 | incomplete | incomplete | incomplete | 3 | incomplete | incomplete |"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&specgap_report::render::render_json(&report).unwrap()).unwrap();
    let delivery = &json["groups"][0]["delivery"];
    assert_eq!(delivery["complete"], false);
    assert!(delivery.get("quality").is_none());
    assert_eq!(delivery["unscored"][0]["reason"], "infrastructure_error");
}

#[test]
fn clarification_measures_with_the_offline_judge() {
    let run = run_with(12, &[case("org/d1", true)], &[]);
    // r0: turn 3 asks two units (the first reaches packaging-weight, the second nothing), turn 5
    // asks one that reaches all-items-today. currency is never asked about.
    let mut r0 = run_ep("org/d1", "interact", 0, 0.5, true, None);
    r0.questions = vec![
        (3, "Does the 10 kg limit include the box itself? And which carrier do you use?".into()),
        (5, "Can some items wait until tomorrow?".into()),
    ];
    let r0_id = run.episode(&r0);
    // r1: no question at all.
    run.episode(&run_ep("org/d1", "interact", 1, 0.2, true, None));
    // r2: one question that reaches nothing.
    let mut r2 = run_ep("org/d1", "interact", 2, 0.1, true, None);
    r2.questions = vec![(2, "Is everything fine?".into())];
    run.episode(&r2);
    // Under `hidden` nobody can be asked: judged, but not a clarification run.
    run.episode(&run_ep("org/d1", "hidden", 0, 0.0, false, Some("schema")));

    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    assert_eq!(report.runs[0].judged_now, 4);
    let c = group(&report, &["x", "interact"]).clarification.clone().unwrap();
    assert_eq!(c.runs, 3);
    // r0: Recall 2/3, Precision 2/3 (units 0 and 2 of 3), Ask-F1 2/3, KQC1 1/3 (only
    // packaging-weight in the first interaction turn), ATC (1 + 2) / 2, Redund. 1.
    // r1: Recall 0, KQC1 0, Redund. 0; Precision, Ask-F1, ATC undefined.
    // r2: Recall 0, Precision 0, Ask-F1 0 (P = R = 0), KQC1 0, ATC undefined, Redund. 1.
    close(c.recall.as_ref().unwrap().mean, (2.0 / 3.0) / 3.0, 1e-12);
    assert_eq!(c.recall.as_ref().unwrap().n, 3);
    close(c.precision.as_ref().unwrap().mean, (2.0 / 3.0) / 2.0, 1e-12);
    assert_eq!(c.precision.as_ref().unwrap().n, 2);
    close(c.ask_f1.as_ref().unwrap().mean, (2.0 / 3.0) / 2.0, 1e-12);
    close(c.kqc1.as_ref().unwrap().mean, (1.0 / 3.0) / 3.0, 1e-12);
    close(c.atc.as_ref().unwrap().mean, 1.5, 1e-12);
    assert_eq!(c.atc.as_ref().unwrap().n, 1);
    close(c.redund.as_ref().unwrap().mean, 2.0 / 3.0, 1e-12);
    close(c.mean_units, (3.0 + 0.0 + 1.0) / 3.0, 1e-12);
    assert!(group(&report, &["x", "hidden"]).clarification.is_none());

    // The verdicts are in the store, with question-unit indices.
    let store = Store::open(&run.dir).unwrap();
    let mut r0_judgements: Vec<(String, String, Vec<u32>)> = store
        .judgements()
        .unwrap()
        .into_iter()
        .filter(|j| j.episode == r0_id)
        .map(|j| (j.judgement.target, j.judgement.verdict, j.judgement.matched_question_indices))
        .collect();
    r0_judgements.sort();
    assert_eq!(
        r0_judgements,
        [
            ("all-items-today".to_string(), COVERED.to_string(), vec![2]),
            ("currency".to_string(), MISSED.to_string(), vec![]),
            ("packaging-weight".to_string(), COVERED.to_string(), vec![0]),
        ]
    );
    assert!(store.judgements().unwrap().iter().all(|j| j.judgement.judge == OFFLINE_JUDGE));
    assert_eq!(store.judgements().unwrap().len(), 4 * 3);
    // A second report finds them and judges nothing again.
    let again = report_of(&[&run], &[Dim::Agent]);
    assert_eq!(again.runs[0].judged_now, 0);
}

#[test]
fn undefined_values_of_appendix_a3() {
    let targets = vec!["a".to_string(), "b".to_string()];
    let unit = QuestionUnit { index: 0, question: 0, turn: 1, text: "Which unit?".into(), after_questions: false };
    // Questions but no judgement (the judge failed): every measure unavailable.
    let v = clarification_values(std::slice::from_ref(&unit), &targets, &[]);
    assert_eq!((v.recall, v.precision, v.ask_f1, v.kqc1, v.atc, v.redund), (None, None, None, None, None, None));
    // No question: Recall 0; Precision and Ask-F1 undefined.
    let v = clarification_values(&[], &targets, &[]);
    assert_eq!((v.recall, v.precision, v.ask_f1, v.atc), (Some(0.0), None, None, None));
    // No target: nothing applies.
    let v = clarification_values(std::slice::from_ref(&unit), &[], &[]);
    assert_eq!(v.recall, None);
    // A target a panel could not decide (no judge answered) makes the run unavailable, not a
    // miss: Recall would otherwise be 1/2 here.
    let judgement = |target: &str, verdict: &str| specgap_store::Judgement {
        judge: "panel:aaaaaaaaaaaa".into(),
        target: target.into(),
        verdict: verdict.into(),
        matched_question_indices: if verdict == COVERED { vec![0] } else { vec![] },
    };
    let (a, b) = (judgement("a", COVERED), judgement("b", specgap_report::judge::UNAVAILABLE));
    let v = clarification_values(std::slice::from_ref(&unit), &targets, &[&a, &b]);
    assert_eq!((v.units, v.recall, v.precision, v.ask_f1), (1, None, None, None));
    let b = judgement("b", MISSED);
    let v = clarification_values(&[unit], &targets, &[&a, &b]);
    assert_eq!((v.recall, v.precision), (Some(0.5), Some(1.0)));
}

/// Seed 002 Table 13: Quality by answer coverage (0, 25, 50, 75, 100 %), mean ± sd over three
/// repeats for cases 09, 11, 17, 38, and the printed four-case means.
const TABLE_13: &[(&str, [(f64, f64); 5])] = &[
    ("case-09", [(0.0, 0.0), (0.0, 0.0), (0.3272, 0.5667), (0.3206, 0.5553), (0.9770, 0.0109)]),
    ("case-11", [(0.0, 0.0), (0.4661, 0.4037), (0.7442, 0.0629), (0.7935, 0.0670), (0.8558, 0.0582)]),
    ("case-17", [(0.2347, 0.1189), (0.1637, 0.0399), (0.3357, 0.1595), (0.4260, 0.1418), (0.6782, 0.2787)]),
    ("case-38", [(0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.3190, 0.5525), (0.9650, 0.0093)]),
];
const FOUR_CASE_MEANS: [f64; 5] = [0.0587, 0.1575, 0.3518, 0.4648, 0.8690];
const LEVELS: [&str; 5] = ["oracle:0", "oracle:0.25", "oracle:0.5", "oracle:0.75", "oracle:1"];

/// Three repeats with mean m and sample sd s: m − s, m, m + s when m ≥ s, else one nonzero
/// repeat 3m and two zeros (the paper's "nonzero score in one of three repeats"), whose sd
/// is m·√3.
fn repeats((m, s): (f64, f64)) -> [f64; 3] {
    if m >= s { [m - s, m, m + s] } else { [3.0 * m, 0.0, 0.0] }
}

#[test]
fn oracle_curve_reproduces_table_13_four_case_means() {
    let cases: Vec<TaskSpec> = TABLE_13.iter().map(|(name, _)| case(name, false)).collect();
    let run = run_with(13, &cases, &[]);
    for (name, cells) in TABLE_13 {
        for (level, cell) in LEVELS.iter().zip(cells) {
            for (repeat, score) in repeats(*cell).iter().enumerate() {
                run.episode(&run_ep(name, level, repeat as u32, *score, *score > 0.0, None));
            }
        }
    }
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition, Dim::Start]);
    assert_eq!(report.oracle.len(), 1);
    let levels = &report.oracle[0].levels;
    let ratios: Vec<f64> = levels.iter().map(|l| l.ratio).collect();
    assert_eq!(ratios, [0.0, 0.25, 0.5, 0.75, 1.0]);
    for (i, level) in levels.iter().enumerate() {
        // Each printed case mean is rounded to 4 decimals, and so is the four-case mean.
        close(level.macro_mean, FOUR_CASE_MEANS[i], 0.0001);
        for (name, cells) in TABLE_13 {
            let c = level.cases.iter().find(|c| c.task == *name).unwrap();
            assert_eq!(c.repeats, 3);
            close(c.mean, cells[i].0, 1e-9);
            close(c.sd.unwrap(), cells[i].1, 0.0001);
        }
    }
}
