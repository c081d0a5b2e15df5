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
        assert_close(
            result.rho,
            num(&case["result"]["statistic"]),
            1e-14,
            &context,
        );
        assert_close(
            result.p_value,
            num(&case["result"]["pvalue"]),
            1e-12,
            &context,
        );
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
    assert_eq!(
        spearman(&[1.0, 2.0], &[1.0]),
        Err(StatsError::LengthMismatch {
            what: "x and y",
            left: 2,
            right: 1
        })
    );
    assert_eq!(
        spearman(&[], &[]),
        Err(StatsError::TooFewObservations {
            what: "x and y",
            min: 1,
            got: 0
        })
    );
    assert!(matches!(
        spearman(&[1.0, 2.0], &[f64::INFINITY, 1.0]),
        Err(StatsError::NonFinite { what: "y", .. })
    ));
}
