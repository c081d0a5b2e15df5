//! Wilcoxon signed-rank against scipy.stats.wilcoxon: every dataset of the fixture under every
//! zero method, alternative, method and continuity correction.

use crate::fixture::{arguments, assert_close, cases, floats, num};
use serde_json::Value;
use specgap_stats::{Alternative, StatsError, WilcoxonMethod, WilcoxonOptions, WilcoxonPath, ZeroMethod, wilcoxon, wilcoxon_paired};

/// p-values agree to 1e-12 relative: the exact and permutation paths are exact dyadic
/// arithmetic, and the normal approximation differs only by the erfc implementations.
const P_TOLERANCE: f64 = 1e-12;

fn options(args: &Value) -> WilcoxonOptions {
    let zero_method = match args["zero_method"].as_str() {
        Some("wilcox") => ZeroMethod::Wilcox,
        Some("pratt") => ZeroMethod::Pratt,
        Some("zsplit") => ZeroMethod::Zsplit,
        other => panic!("zero_method {other:?}"),
    };
    let alternative = match args["alternative"].as_str() {
        Some("two-sided") => Alternative::TwoSided,
        Some("greater") => Alternative::Greater,
        Some("less") => Alternative::Less,
        other => panic!("alternative {other:?}"),
    };
    let method = match args["method"].as_str() {
        Some("auto") => WilcoxonMethod::Auto,
        Some("exact") => WilcoxonMethod::Exact,
        Some("asymptotic") => WilcoxonMethod::Asymptotic,
        other => panic!("method {other:?}"),
    };
    let correction = args["correction"].as_bool().expect("correction is a bool");
    WilcoxonOptions { alternative, zero_method, method, correction }
}

#[test]
fn matches_scipy_on_every_fixture_case() {
    let all = cases("wilcoxon");
    assert!(all.len() > 700, "the fixture covers the option grid");
    for case in all {
        let args = arguments(case);
        let d = floats(&args["x"]);
        let opts = options(args);
        let context = format!("{} {:?}", case["name"], opts);
        let result = wilcoxon(&d, &opts).unwrap_or_else(|e| panic!("{context}: {e}"));
        let expected = &case["result"];
        // Ranks are half-integers, so the statistic is exact.
        assert_close(result.statistic, num(&expected["statistic"]), 0.0, &context);
        assert_close(result.p_value, num(&expected["pvalue"]), P_TOLERANCE, &context);
        if let Some(z) = expected.get("zstatistic") {
            let ours = result.z_statistic.unwrap_or_else(|| panic!("{context}: no z statistic"));
            assert_close(ours, num(z), P_TOLERANCE, &context);
        }
    }
}

#[test]
fn worked_example_uses_the_exhaustive_permutation_path() {
    // d = [0,2,3,-1,-4,0,0,8,9,2,-2,5], zero_method wilcox, method auto, scipy 1.17:
    // W = 10, p = 0.16015625 = 82/512. Zeros dropped leave 9 non-zero differences with ranks
    // |d| = 1,2,2,2,3,4,5,8,9 -> 1, 3, 3, 3, 5, 6, 7, 8, 9; r_minus = 1 + 3 + 6 = 10.
    let d = [0.0, 2.0, 3.0, -1.0, -4.0, 0.0, 0.0, 8.0, 9.0, 2.0, -2.0, 5.0];
    let result = wilcoxon(&d, &WilcoxonOptions::default()).unwrap();
    assert_eq!(result.statistic, 10.0);
    assert_eq!(result.r_plus, 35.0);
    assert_eq!(result.r_minus, 10.0);
    assert_eq!(result.p_value, 0.16015625);
    assert_eq!(result.path, WilcoxonPath::ExhaustivePermutation);
    assert_eq!(result.z_statistic, None);
}

#[test]
fn auto_switches_paths_at_scipys_thresholds() {
    let auto = WilcoxonOptions::default();
    let untied: Vec<f64> = (1..=50).map(|i| if i % 3 == 0 { -(i as f64) } else { i as f64 }).collect();
    assert_eq!(wilcoxon(&untied, &auto).unwrap().path, WilcoxonPath::Exact);
    let untied_51: Vec<f64> = (1..=51).map(f64::from).collect();
    assert_eq!(wilcoxon(&untied_51, &auto).unwrap().path, WilcoxonPath::Asymptotic);
    let tied_13 = [1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, -12.0];
    assert_eq!(wilcoxon(&tied_13, &auto).unwrap().path, WilcoxonPath::ExhaustivePermutation);
    let tied_14 = [1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, -12.0, 13.0];
    assert_eq!(wilcoxon(&tied_14, &auto).unwrap().path, WilcoxonPath::Asymptotic);
}

#[test]
fn paired_samples_match_scipy() {
    for case in cases("wilcoxon_paired") {
        let args = arguments(case);
        let (x, y) = (floats(&args["x"]), floats(&args["y"]));
        let result = wilcoxon_paired(&x, &y, &WilcoxonOptions::default()).unwrap();
        let context = case["name"].to_string();
        assert_close(result.statistic, num(&case["result"]["statistic"]), 0.0, &context);
        assert_close(result.p_value, num(&case["result"]["pvalue"]), P_TOLERANCE, &context);
    }
}

#[test]
fn invalid_input_is_a_typed_error() {
    let opts = WilcoxonOptions::default();
    assert_eq!(wilcoxon(&[], &opts), Err(StatsError::TooFewObservations { what: "differences", min: 1, got: 0 }));
    assert!(matches!(wilcoxon(&[1.0, f64::NAN], &opts), Err(StatsError::NonFinite { what: "differences", index: 1, .. })));
    assert_eq!(wilcoxon_paired(&[1.0, 2.0], &[1.0], &opts), Err(StatsError::LengthMismatch { what: "paired samples", left: 2, right: 1 }));
}

/// scipy's rounding on the exact path from 54 differences on: it returns a tail beyond the mean
/// as `1 − (sum of the other side)`, which is off by up to about one ulp of 1 (measured ≤ 1.15
/// ulps for n = 54..100, scipy 1.17.1), doubled for two-sided. 2⁻⁵⁰ = 4 ulps of 1 bounds it.
const SCIPY_COMPLEMENT_ERROR: f64 = 8.881784197001252e-16;

fn exact_options(alternative: &Value) -> WilcoxonOptions {
    let alternative = match alternative.as_str() {
        Some("two-sided") => Alternative::TwoSided,
        Some("greater") => Alternative::Greater,
        Some("less") => Alternative::Less,
        other => panic!("alternative {other:?}"),
    };
    WilcoxonOptions { alternative, method: WilcoxonMethod::Exact, ..WilcoxonOptions::default() }
}

/// The fixture's `wilcoxon_exact_edges` case `name` under `alternative`: (our p, scipy's p,
/// the exact rational's p).
fn exact_edge(name: &str, alternative: &str) -> (f64, f64, f64) {
    let case = cases("wilcoxon_exact_edges")
        .iter()
        .find(|c| c["name"] == name && arguments(c)["alternative"] == alternative)
        .unwrap_or_else(|| panic!("no case {name} {alternative}"));
    let args = arguments(case);
    let ours = wilcoxon(&floats(&args["x"]), &exact_options(&args["alternative"])).unwrap();
    (ours.p_value, num(&case["result"]["pvalue"]), num(&case["exact"]["pvalue"]))
}

#[test]
fn exact_method_beyond_53_differences_is_the_exact_tail() {
    for case in cases("wilcoxon_exact_edges") {
        let args = arguments(case);
        let n = floats(&args["x"]).len();
        let context = format!("{} {}", case["name"], args["alternative"]);
        let result = wilcoxon(&floats(&args["x"]), &exact_options(&args["alternative"])).unwrap();
        assert_eq!(result.path, WilcoxonPath::Exact, "{context}");
        assert_close(result.statistic, num(&case["result"]["statistic"]), 0.0, &context);
        let (scipy, exact) = (num(&case["result"]["pvalue"]), num(&case["exact"]["pvalue"]));
        // Within 4 ulps of the correctly rounded rational.
        assert_close(result.p_value, exact, 1e-15, &context);
        if n <= 53 {
            // scipy's float recursion is exact up to 53 ranks, so its value is the rational's.
            assert_eq!(result.p_value, scipy, "{context}");
        } else {
            assert!(
                (result.p_value - scipy).abs() <= 1e-12 * scipy + SCIPY_COMPLEMENT_ERROR,
                "{context}: {} vs scipy {scipy}",
                result.p_value
            );
        }
    }
}

#[test]
fn wilcoxon_exact_at_60_matches_scipy() {
    // 60 untied differences (numpy default_rng(22).normal(1.4, 1, 60) rounded to 6 places),
    // r_plus = 1765, method exact, two-sided. scipy 1.17.1: 3.0686564400639327e-13, which is
    // 1 − (a sum near 1), a multiple of 2⁻⁵³ off the exact value by 5.4e-17. The exact rational
    // (subset-sum counts over 2⁶⁰, Python ints): 3.0691942043414855e-13. A serial sum gave
    // 3.055333763768431e-13 (4.3e-3 from scipy).
    let (ours, scipy, exact) = exact_edge("untied_n60", "two-sided");
    assert_eq!(scipy, 3.0686564400639327e-13);
    assert_eq!(exact, 3.0691942043414855e-13);
    assert_close(ours, exact, 1e-15, "two-sided");
    assert!((ours - scipy).abs() <= SCIPY_COMPLEMENT_ERROR);
    // On the near side of the mean scipy sums directly, in numpy's pairwise order, as we do:
    // the same bits.
    let (ours_less, scipy_less, _) = exact_edge("untied_n60", "less");
    assert_eq!(ours_less, scipy_less);
}

#[test]
fn wilcoxon_one_sided_p_is_never_negative() {
    // Sixty equal differences of 1.5: every (tied) rank is positive, r_plus = 1830, the largest
    // sum. Exact: P(R ≥ 1830) = 2⁻⁶⁰ = 8.673617379884035e-19; scipy 1.17.1 gives 0.0 (1 − a sum
    // that rounds to 1), a serial sum gave −4.440892098500626e-16.
    let (greater, scipy_greater, exact_greater) = exact_edge("all_equal_n60", "greater");
    assert_eq!(exact_greater, 8.673617379884035e-19);
    assert_eq!(greater, exact_greater);
    assert_eq!(scipy_greater, 0.0);
    let (two_sided, _, exact_two_sided) = exact_edge("all_equal_n60", "two-sided");
    assert_eq!(two_sided, 1.734723475976807e-18);
    assert_eq!(two_sided, exact_two_sided);
    let (less, scipy_less, _) = exact_edge("all_equal_n60", "less");
    assert_eq!((less, scipy_less), (1.0, 1.0));

    // Every statistic of the exact null for n = 54..=64 (one negated rank m, so r_plus =
    // n(n+1)/2 − m, plus all positive): each p-value lies in [0, 1] and the one-sided ones are
    // positive.
    for n in 54..=64usize {
        for m in 0..=n {
            let d: Vec<f64> = (1..=n).map(|i| if i == m { -(i as f64) } else { i as f64 }).collect();
            for alternative in [Alternative::TwoSided, Alternative::Greater, Alternative::Less] {
                let opts = WilcoxonOptions { alternative, method: WilcoxonMethod::Exact, ..WilcoxonOptions::default() };
                let p = wilcoxon(&d, &opts).unwrap().p_value;
                assert!(p > 0.0 && p <= 1.0, "n={n} m={m} {alternative:?}: {p}");
            }
        }
    }
}

#[test]
fn every_p_value_lies_in_the_unit_interval() {
    // Every fixture case and path: scipy's own values lie in [0, 1], and so must ours.
    for case in cases("wilcoxon") {
        let args = arguments(case);
        let p = wilcoxon(&floats(&args["x"]), &options(args)).unwrap().p_value;
        assert!(p.is_nan() || (0.0..=1.0).contains(&p), "{}: {p}", case["name"]);
    }
}
