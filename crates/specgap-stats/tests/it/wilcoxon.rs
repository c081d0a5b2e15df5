//! Wilcoxon signed-rank against scipy.stats.wilcoxon: every dataset of the fixture under every
//! zero method, alternative, method and continuity correction.

use crate::fixture::{arguments, assert_close, cases, floats, num};
use serde_json::Value;
use specgap_stats::{
    Alternative, StatsError, WilcoxonMethod, WilcoxonOptions, WilcoxonPath, ZeroMethod, wilcoxon,
    wilcoxon_paired,
};

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
    WilcoxonOptions {
        alternative,
        zero_method,
        method,
        correction,
    }
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
        assert_close(
            result.p_value,
            num(&expected["pvalue"]),
            P_TOLERANCE,
            &context,
        );
        if let Some(z) = expected.get("zstatistic") {
            let ours = result
                .z_statistic
                .unwrap_or_else(|| panic!("{context}: no z statistic"));
            assert_close(ours, num(z), P_TOLERANCE, &context);
        }
    }
}

#[test]
fn worked_example_uses_the_exhaustive_permutation_path() {
    // d = [0,2,3,-1,-4,0,0,8,9,2,-2,5], zero_method wilcox, method auto, scipy 1.17:
    // W = 10, p = 0.16015625 = 82/512. Zeros dropped leave 9 non-zero differences with ranks
    // |d| = 1,2,2,2,3,4,5,8,9 -> 1, 3, 3, 3, 5, 6, 7, 8, 9; r_minus = 1 + 3 + 6 = 10.
    let d = [
        0.0, 2.0, 3.0, -1.0, -4.0, 0.0, 0.0, 8.0, 9.0, 2.0, -2.0, 5.0,
    ];
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
    let untied: Vec<f64> = (1..=50)
        .map(|i| if i % 3 == 0 { -(i as f64) } else { i as f64 })
        .collect();
    assert_eq!(wilcoxon(&untied, &auto).unwrap().path, WilcoxonPath::Exact);
    let untied_51: Vec<f64> = (1..=51).map(f64::from).collect();
    assert_eq!(
        wilcoxon(&untied_51, &auto).unwrap().path,
        WilcoxonPath::Asymptotic
    );
    let tied_13 = [
        1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, -12.0,
    ];
    assert_eq!(
        wilcoxon(&tied_13, &auto).unwrap().path,
        WilcoxonPath::ExhaustivePermutation
    );
    let tied_14 = [
        1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, -12.0, 13.0,
    ];
    assert_eq!(
        wilcoxon(&tied_14, &auto).unwrap().path,
        WilcoxonPath::Asymptotic
    );
}

#[test]
fn paired_samples_match_scipy() {
    for case in cases("wilcoxon_paired") {
        let args = arguments(case);
        let (x, y) = (floats(&args["x"]), floats(&args["y"]));
        let result = wilcoxon_paired(&x, &y, &WilcoxonOptions::default()).unwrap();
        let context = case["name"].to_string();
        assert_close(
            result.statistic,
            num(&case["result"]["statistic"]),
            0.0,
            &context,
        );
        assert_close(
            result.p_value,
            num(&case["result"]["pvalue"]),
            P_TOLERANCE,
            &context,
        );
    }
}

#[test]
fn invalid_input_is_a_typed_error() {
    let opts = WilcoxonOptions::default();
    assert_eq!(
        wilcoxon(&[], &opts),
        Err(StatsError::TooFewObservations {
            what: "differences",
            min: 1,
            got: 0
        })
    );
    assert!(matches!(
        wilcoxon(&[1.0, f64::NAN], &opts),
        Err(StatsError::NonFinite {
            what: "differences",
            index: 1,
            ..
        })
    ));
    assert_eq!(
        wilcoxon_paired(&[1.0, 2.0], &[1.0], &opts),
        Err(StatsError::LengthMismatch {
            what: "paired samples",
            left: 2,
            right: 1
        })
    );
}
