//! Spearman's rho against scipy.stats.spearmanr, including scipy's NaN cases.

use crate::fixture::{arguments, assert_close, cases, floats, num};
use specgap_stats::{StatsError, spearman};

#[test]
fn matches_scipy_on_every_fixture_case() {
    for case in cases("spearman") {
        let args = arguments(case);
        let (x, y) = (floats(&args["a"]), floats(&args["b"]));
        let result = spearman(&x, &y).unwrap();
        let context = case["name"].to_string();
        // rho: a correlation of half-integer ranks, equal to a few ulps.
        assert_close(result.rho, num(&case["result"]["statistic"]), 1e-14, &context);
        assert_close(result.p_value, num(&case["result"]["pvalue"]), 1e-12, &context);
    }
}

#[test]
fn nan_cases_follow_scipy() {
    let constant = spearman(&[3.0, 3.0, 3.0], &[1.0, 2.0, 3.0]).unwrap();
    assert!(constant.rho.is_nan() && constant.p_value.is_nan());
    let single = spearman(&[1.0], &[2.0]).unwrap();
    assert!(single.rho.is_nan() && single.p_value.is_nan());
}

#[test]
fn invalid_input_is_a_typed_error() {
    assert_eq!(spearman(&[1.0, 2.0], &[1.0]), Err(StatsError::LengthMismatch { what: "x and y", left: 2, right: 1 }));
    assert_eq!(spearman(&[], &[]), Err(StatsError::TooFewObservations { what: "x and y", min: 1, got: 0 }));
    assert!(matches!(spearman(&[1.0, 2.0], &[f64::INFINITY, 1.0]), Err(StatsError::NonFinite { what: "y", .. })));
}

#[test]
fn spearman_perfect_monotone_is_exactly_one() {
    // x = 1..7 against any increasing y: scipy 1.17.1 spearmanr gives statistic 1.0 and pvalue
    // 0.0 (numpy.corrcoef scales by 1/(n−1), and v·(1/6)/s/s rounds to 1). Dividing by n − 1
    // instead gave 0.9999999999999998 and p = 1.4e-39.
    let x: Vec<f64> = (1..=7).map(f64::from).collect();
    let y: Vec<f64> = x.iter().map(|v| v * v * v).collect();
    let increasing = spearman(&x, &y).unwrap();
    assert_eq!((increasing.rho, increasing.p_value), (1.0, 0.0));
    let minus_y: Vec<f64> = y.iter().map(|v| -v).collect();
    let decreasing = spearman(&x, &minus_y).unwrap();
    assert_eq!((decreasing.rho, decreasing.p_value), (-1.0, 0.0));
}

#[test]
fn spearman_perfect_monotone_matches_scipy_at_every_length() {
    // scipy itself is not always exactly ±1 here (n = 5: 0.9999999999999999, p = 1.4e-24); the
    // fixture holds its value for n = 3..=100, increasing and decreasing.
    let all = cases("spearman_monotone");
    assert_eq!(all.len(), 196);
    for case in all {
        let name = case["name"].as_str().unwrap();
        let (direction, n) = name.split_once("_n").unwrap();
        let n: u32 = n.parse().unwrap();
        let x: Vec<f64> = (1..=n).map(f64::from).collect();
        let sign = if direction == "increasing" { 1.0 } else { -1.0 };
        let y: Vec<f64> = x.iter().map(|v| sign * v * v * v).collect();
        let result = spearman(&x, &y).unwrap();
        assert_eq!(result.rho, num(&case["result"]["statistic"]), "{name}");
        assert_close(result.p_value, num(&case["result"]["pvalue"]), 1e-12, name);
    }
}
