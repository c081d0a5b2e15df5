//! Bootstrap intervals against scipy.stats.bootstrap.
//!
//! Two kinds of check. (1) Deterministic: scipy read intervals off a bootstrap distribution
//! stored in the fixture (`n_resamples=0, bootstrap_result=...`); the same distribution through
//! `percentile_interval` / `bca_interval` must give the same endpoints to rounding. (2) Monte
//! Carlo: scipy resampled 100,000 times with numpy's generator, we resample with our
//! xoshiro256++ stream; the endpoints must agree within Monte Carlo error.

use crate::fixture::{arguments, assert_close, cases, floats, num};
use serde_json::Value;
use specgap_stats::{
    BootstrapConfig, IntervalMethod, StatsError, bca_acceleration, bca_bias_correction, bca_interval, bootstrap_case, bootstrap_indices,
    bootstrap_mean, bootstrap_paired, mean_or_nan, percentile_interval,
};

fn method(args: &Value) -> IntervalMethod {
    match args["method"].as_str() {
        Some("percentile") => IntervalMethod::Percentile,
        Some("BCa") => IntervalMethod::Bca,
        other => panic!("method {other:?}"),
    }
}

/// The statistic of every bootstrap case here: numpy.mean, bit for bit.
fn mean(values: &[f64]) -> f64 {
    mean_or_nan(values)
}

fn leave_one_out_means(data: &[f64]) -> Vec<f64> {
    (0..data.len())
        .map(|left_out| {
            let rest: Vec<f64> = data.iter().enumerate().filter(|(i, _)| *i != left_out).map(|(_, v)| *v).collect();
            mean(&rest)
        })
        .collect()
}

#[test]
fn intervals_from_a_given_distribution_match_scipy() {
    let all = cases("bootstrap_fixed_distribution");
    assert_eq!(all.len(), 12);
    for case in all {
        let args = arguments(case);
        let data = floats(&args["data"][0]);
        let distribution = floats(&args["bootstrap_result"]["bootstrap_distribution"]);
        let level = num(&args["confidence_level"]);
        let expected = &case["result"];
        let context = format!("{} {} {level}", case["name"], args["method"]);
        let interval = match method(args) {
            IntervalMethod::Percentile => percentile_interval(&distribution, level).unwrap(),
            IntervalMethod::Bca => {
                let jackknife = leave_one_out_means(&data);
                // Same sums in the same (numpy pairwise) order; only scipy's `U**3` (a libm pow)
                // and the normal quantile may differ from ours by an ulp or two.
                assert_close(bca_acceleration(&jackknife), num(&expected["acceleration"]), 1e-14, &context);
                let z0 = bca_bias_correction(&distribution, mean(&data));
                assert_close(z0, num(&expected["bias_correction"]), 1e-14, &context);
                bca_interval(&distribution, mean(&data), &jackknife, level).unwrap()
            }
        };
        // Endpoints are interpolations between order statistics; only the interpolation
        // weight can carry rounding (from the normal quantile functions under BCa).
        assert_close(interval.low, num(&expected["low"]), 1e-12, &context);
        assert_close(interval.high, num(&expected["high"]), 1e-12, &context);
    }
}

/// Monte Carlo tolerance for an endpoint.
///
/// An endpoint is a sample quantile at level p ≈ 0.025 (or 0.975) of B bootstrap values. For
/// a roughly normal bootstrap distribution with sd `se`, its Monte Carlo sd is
/// `se · sqrt(p(1 − p)/B) / φ(z_p)` = `2.67 · se / sqrt(B)` at p = 0.025 (φ(1.96) = 0.0584).
/// scipy's and ours are independent, so their difference has sd
/// `2.67 · se · sqrt(1/B_scipy + 1/B_ours)`. We allow 6 of those sds rather than the usual
/// 3-4 because BCa endpoints also carry the noise of the estimated bias correction ẑ₀ (itself
/// a proportion of B values, moving the quantile level by a comparable amount).
fn endpoint_tolerance(se: f64, b_scipy: f64, b_ours: f64) -> f64 {
    6.0 * 2.67 * se * (1.0 / b_scipy + 1.0 / b_ours).sqrt()
}

/// Resamples on our side: fewer than scipy's 100,000 keeps the debug-build test quick.
const OUR_RESAMPLES: usize = 40_000;

#[test]
fn resampled_intervals_agree_with_scipy_within_monte_carlo_error() {
    let all = cases("bootstrap_monte_carlo");
    assert_eq!(all.len(), 4);
    for case in all {
        let args = arguments(case);
        let config = BootstrapConfig {
            confidence_level: num(&args["confidence_level"]),
            n_resamples: OUR_RESAMPLES,
            method: method(args),
            seed: 12345,
        };
        let samples: Vec<Vec<f64>> = args["data"].as_array().expect("list").iter().map(floats).collect();
        let ours = match samples.as_slice() {
            [cases] => {
                let fast = bootstrap_mean(cases, &config).unwrap();
                assert_eq!(fast, bootstrap_case(cases, mean, &config).unwrap());
                fast
            }
            [a, b] => bootstrap_paired(a, b, |x, y| mean(x) - mean(y), &config).unwrap(),
            _ => panic!("one or two samples"),
        };
        let expected = &case["result"];
        let se = num(&expected["standard_error"]);
        let b_scipy = num(&args["n_resamples"]);
        let tolerance = endpoint_tolerance(se, b_scipy, OUR_RESAMPLES as f64);
        let context = format!("{} {:?} tolerance {tolerance:.5}", case["name"], config.method);
        assert!((ours.low - num(&expected["low"])).abs() <= tolerance, "{context}: low {} vs {}", ours.low, expected["low"]);
        assert!((ours.high - num(&expected["high"])).abs() <= tolerance, "{context}: high {} vs {}", ours.high, expected["high"]);
        // The sd of a sample sd is about se / sqrt(2B); same 6-sd allowance.
        let se_tolerance = 6.0 * se * (1.0 / (2.0 * b_scipy) + 1.0 / (2.0 * OUR_RESAMPLES as f64)).sqrt();
        assert!((ours.standard_error - se).abs() <= se_tolerance, "{context}: se {} vs {se}", ours.standard_error);
        assert!(ours.low < ours.estimate && ours.estimate < ours.high, "{context}");
    }
}

#[test]
fn same_seed_gives_the_identical_interval() {
    let cases = floats(&arguments(&crate::fixture::cases("bootstrap_monte_carlo")[0])["data"][0]);
    let config = BootstrapConfig { n_resamples: 2000, ..BootstrapConfig::new(12345) };
    let first = bootstrap_case(&cases, mean, &config).unwrap();
    let second = bootstrap_case(&cases, mean, &config).unwrap();
    assert_eq!(first, second);
    // The index form with the same statistic draws the same resamples.
    let by_index = bootstrap_indices(cases.len(), |idx| mean(&idx.iter().map(|&i| cases[i]).collect::<Vec<_>>()), &config).unwrap();
    assert_eq!(first, by_index);
}

#[test]
fn paired_resampling_is_resampling_of_differences() {
    // Resampling aligned pairs and then differencing is the same as resampling the differences:
    // with the same seed both draw the same case indices, so the intervals are identical.
    let args = arguments(&cases("bootstrap_monte_carlo")[2]);
    let (a, b) = (floats(&args["data"][0]), floats(&args["data"][1]));
    let differences: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    let config = BootstrapConfig { n_resamples: 3000, ..BootstrapConfig::new(99) };
    let mean_difference = |x: &[f64], y: &[f64]| {
        let d: Vec<f64> = x.iter().zip(y).map(|(p, q)| p - q).collect();
        mean(&d)
    };
    let paired = bootstrap_paired(&a, &b, mean_difference, &config).unwrap();
    let of_differences = bootstrap_case(&differences, mean, &config).unwrap();
    assert_eq!(paired, of_differences);
    assert!(paired.low > 0.0, "the fixture's conditions differ: {paired:?}");
}

#[test]
fn degenerate_data_gives_nan_bca_endpoints_as_scipy() {
    // Every resample mean equals the estimate: q = (0 + B) / 2B = 1/2, so z0 = 0, but every
    // jackknife value is equal too, so the acceleration is 0/0 = NaN and the BCa levels are
    // NaN (scipy warns "The BCa confidence interval cannot be calculated").
    let constant = [0.5; 10];
    let bca = bootstrap_case(&constant, mean, &BootstrapConfig { n_resamples: 100, ..BootstrapConfig::new(1) }).unwrap();
    assert!(bca.low.is_nan() && bca.high.is_nan());
    assert_eq!(bca.estimate, 0.5);
    let config = BootstrapConfig { n_resamples: 100, method: IntervalMethod::Percentile, ..BootstrapConfig::new(1) };
    let percentile = bootstrap_case(&constant, mean, &config).unwrap();
    assert_eq!((percentile.low, percentile.high, percentile.standard_error), (0.5, 0.5, 0.0));
}

#[test]
fn nan_statistics_give_nan_endpoints() {
    let config = BootstrapConfig { n_resamples: 50, method: IntervalMethod::Percentile, ..BootstrapConfig::new(3) };
    let interval = bootstrap_case(&[1.0, 2.0, 3.0], |_| f64::NAN, &config).unwrap();
    assert!(interval.low.is_nan() && interval.high.is_nan() && interval.standard_error.is_nan());
}

#[test]
fn invalid_input_is_a_typed_error() {
    let config = BootstrapConfig::new(0);
    assert_eq!(bootstrap_case(&[1.0], mean, &config), Err(StatsError::TooFewObservations { what: "cases", min: 2, got: 1 }));
    assert_eq!(
        bootstrap_paired(&[1.0, 2.0], &[1.0], |a, _| mean(a), &config),
        Err(StatsError::LengthMismatch { what: "paired samples", left: 2, right: 1 })
    );
    let bad_level = BootstrapConfig { confidence_level: 1.0, ..config };
    assert!(matches!(bootstrap_case(&[1.0, 2.0], mean, &bad_level), Err(StatsError::OutOfRange { .. })));
    let no_resamples = BootstrapConfig { n_resamples: 0, ..config };
    assert!(matches!(bootstrap_case(&[1.0, 2.0], mean, &no_resamples), Err(StatsError::TooFewObservations { .. })));
    assert!(matches!(bootstrap_case(&[1.0, f64::NAN], mean, &config), Err(StatsError::NonFinite { .. })));
}

#[test]
fn the_mean_fast_path_gives_the_general_paths_interval_bit_for_bit() {
    // Up to 128 cases bootstrap_mean never writes a resample out; above, it is the general
    // path. Either way every interval field must be identical, for both methods and for case
    // counts with every remainder modulo numpy's eight accumulators. The values have long
    // binary expansions, so sums in another order would round differently.
    for n in [2, 3, 7, 8, 9, 15, 16, 49, 100, 127, 128, 129, 300] {
        let cases: Vec<f64> = (0..n).map(|i| ((i * 7919) % 101) as f64 / 7.0).collect();
        for method in [IntervalMethod::Percentile, IntervalMethod::Bca] {
            let config = BootstrapConfig { n_resamples: 500, method, ..BootstrapConfig::new(n as u64) };
            let fast = bootstrap_mean(&cases, &config).unwrap();
            let general = bootstrap_case(&cases, mean, &config).unwrap();
            assert_eq!(fast, general, "n = {n}, {method:?}");
            assert!(fast.low < fast.estimate && fast.estimate < fast.high, "n = {n}");
        }
    }
}

#[test]
fn the_mean_fast_path_rejects_what_the_general_path_rejects() {
    let config = BootstrapConfig::new(0);
    for cases in [&[1.0][..], &[1.0, f64::INFINITY][..], &[][..]] {
        assert_eq!(bootstrap_mean(cases, &config), bootstrap_case(cases, mean, &config), "{cases:?}");
        assert!(bootstrap_mean(cases, &config).is_err());
    }
    let constant = [0.5; 10];
    let bca = bootstrap_mean(&constant, &config).unwrap();
    assert!(bca.low.is_nan() && bca.high.is_nan());
}
