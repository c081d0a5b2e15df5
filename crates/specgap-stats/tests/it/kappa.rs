//! Cohen's kappa against sklearn.metrics.cohen_kappa_score, all three weightings.

use crate::fixture::{arguments, assert_close, cases, num};
use serde_json::Value;
use specgap_stats::{KappaWeighting, StatsError, cohen_kappa};

fn weighting(value: &Value) -> KappaWeighting {
    match value.as_str() {
        None => KappaWeighting::Unweighted,
        Some("linear") => KappaWeighting::Linear,
        Some("quadratic") => KappaWeighting::Quadratic,
        Some(other) => panic!("weights {other}"),
    }
}

/// Labels are integers or strings in the fixture; kappa is generic over any ordered label.
fn kappa_of(y1: &Value, y2: &Value, weights: KappaWeighting) -> f64 {
    let (a, b) = (y1.as_array().expect("list"), y2.as_array().expect("list"));
    if a.iter().chain(b).all(Value::is_i64) {
        let ints = |v: &[Value]| v.iter().map(|x| x.as_i64().expect("int")).collect::<Vec<_>>();
        cohen_kappa(&ints(a), &ints(b), weights).unwrap()
    } else {
        let strs = |v: &[Value]| v.iter().map(|x| x.as_str().expect("str").to_owned()).collect::<Vec<_>>();
        cohen_kappa(&strs(a), &strs(b), weights).unwrap()
    }
}

#[test]
fn matches_sklearn_on_every_fixture_case() {
    let all = cases("cohen_kappa");
    assert!(all.iter().any(|c| num(&c["result"]["kappa"]).is_nan()), "a NaN case is covered");
    for case in all {
        let args = arguments(case);
        let weights = weighting(&args["weights"]);
        let ours = kappa_of(&args["y1"], &args["y2"], weights);
        let context = format!("{} {weights:?}", case["name"]);
        assert_close(ours, num(&case["result"]["kappa"]), 1e-12, &context);
    }
}

#[test]
fn invalid_input_is_a_typed_error() {
    assert_eq!(
        cohen_kappa(&[1, 2], &[1], KappaWeighting::Unweighted),
        Err(StatsError::LengthMismatch { what: "rater labels", left: 2, right: 1 })
    );
    let empty: [u8; 0] = [];
    assert!(matches!(cohen_kappa(&empty, &empty, KappaWeighting::Linear), Err(StatsError::TooFewObservations { .. })));
}
