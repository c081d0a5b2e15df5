//! pass@k and pass^k by hand-computed cases, against Chen et al.'s numpy estimator (no
//! reference library implements pass^k) and against exact rationals from the fixture.

use crate::fixture::{cases, num};
use specgap_stats::{StatsError, pass_at_k, pass_hat_k};

fn assert_near(actual: f64, expected: f64) {
    assert!((actual - expected).abs() <= 1e-15, "got {actual}, expected {expected}");
}

#[test]
fn pass_at_k_hand_computed() {
    // Seed 002's pass@3 with three repeats: at least one valid run.
    assert_eq!(pass_at_k(3, 1, 3).unwrap(), 1.0); // n - c = 2 < k = 3
    assert_eq!(pass_at_k(3, 0, 3).unwrap(), 0.0); // C(3,3)/C(3,3) = 1 -> 0
    // k = 1 is the success rate: 1 - C(7,1)/C(10,1) = 1 - 7/10 = 0.3.
    assert_near(pass_at_k(10, 3, 1).unwrap(), 0.3);
    // 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7.
    assert_near(pass_at_k(5, 2, 2).unwrap(), 0.7);
    // 1 - C(7,5)/C(10,5) = 1 - 21/252 = 11/12.
    assert_near(pass_at_k(10, 3, 5).unwrap(), 11.0 / 12.0);
}

#[test]
fn pass_hat_k_hand_computed() {
    // Seed 002's pass^3 with three repeats: all three valid.
    assert_eq!(pass_hat_k(3, 3, 3).unwrap(), 1.0);
    assert_eq!(pass_hat_k(3, 2, 3).unwrap(), 0.0); // c < k
    // C(3,2)/C(5,2) = 3/10.
    assert_near(pass_hat_k(5, 3, 2).unwrap(), 0.3);
    // C(7,3)/C(10,3) = 35/120 = 7/24.
    assert_near(pass_hat_k(10, 7, 3).unwrap(), 7.0 / 24.0);
    // k = 1 is the success rate c/n.
    assert_near(pass_hat_k(8, 6, 1).unwrap(), 0.75);
}

#[test]
fn large_counts_stay_finite_and_complementary() {
    // C(n-c,k)/C(n,k) = pass^k with n - c successes, so pass@k(n,c,k) + pass^k(n,n-c,k) = 1.
    // With n = 1000, c = 10, k = 100 factorials overflow f64; the products do not. By the
    // other grouping, C(990,100)/C(1000,100) = prod_{i=0}^{9} (900 - i)/(1000 - i).
    let by_hand: f64 = (0..10).map(|i| (900 - i) as f64 / (1000 - i) as f64).product();
    let at_k = pass_at_k(1000, 10, 100).unwrap();
    let hat_k = pass_hat_k(1000, 990, 100).unwrap();
    assert!((1.0 - at_k - by_hand).abs() < 1e-14, "{at_k} vs {by_hand}");
    assert!((hat_k - by_hand).abs() < 1e-14, "{hat_k} vs {by_hand}");
    for n in 1..=12u64 {
        for c in 0..=n {
            for k in 1..=n {
                let sum = pass_at_k(n, c, k).unwrap() + pass_hat_k(n, n - c, k).unwrap();
                assert!((sum - 1.0).abs() < 1e-14, "n={n} c={c} k={k}: {sum}");
            }
        }
    }
}

#[test]
fn impossible_counts_are_typed_errors() {
    assert!(matches!(pass_at_k(3, 4, 1), Err(StatsError::InvalidCount { what: "successes c <= attempts n", .. })));
    assert!(matches!(pass_at_k(3, 1, 0), Err(StatsError::InvalidCount { what: "1 <= k <= attempts n", .. })));
    assert!(matches!(pass_hat_k(3, 1, 4), Err(StatsError::InvalidCount { what: "1 <= k <= attempts n", .. })));
}

fn counts(case: &serde_json::Value) -> (u64, u64, u64) {
    let args = &case["exact"]["origin"]["arguments"];
    let get = |key: &str| args[key].as_u64().unwrap_or_else(|| panic!("{key} in {case}"));
    (get("n"), get("c"), get("k"))
}

/// Relative distance, absolute when the expected value is 0.
fn relative(actual: f64, expected: f64) -> f64 {
    if expected == 0.0 { actual.abs() } else { ((actual - expected) / expected).abs() }
}

#[test]
fn pass_k_match_chen_and_the_exact_ratios() {
    // The fixture: Chen et al.'s numpy estimator (numpy 2.3.5) and the exact rationals
    // (Python fractions with math.comb), for n ≤ 12 (every c and k) and n = 50, 200.
    let all = cases("pass_k");
    assert_eq!(all.len(), 812);
    for case in all {
        let (n, c, k) = counts(case);
        let context = format!("n={n} c={c} k={k}");
        let at_k = pass_at_k(n, c, k).unwrap();
        let hat_k = pass_hat_k(n, c, k).unwrap();
        let exact_at = num(&case["exact"]["pass_at_k"]);
        let exact_hat = num(&case["exact"]["pass_hat_k"]);
        assert!(relative(at_k, exact_at) <= 1e-14, "{context}: {at_k} vs {exact_at}");
        assert!(relative(hat_k, exact_hat) <= 1e-13, "{context}: {hat_k} vs {exact_hat}");
        // Chen's form subtracts from 1, so small values carry its absolute rounding.
        let chen = num(&case["result"]["pass_at_k"]);
        assert!((at_k - chen).abs() <= 1e-12 * chen + 1e-15, "{context}: {at_k} vs Chen {chen}");
    }
}

#[test]
fn pass_at_k_is_linear_in_k() {
    // c = 10¹⁵ − 1000 successes: a loop over c (Chen's reference code, and ours before) never
    // ends; the product over k = 10 draws is the same ratio. Exact values from Python fractions
    // (the fixture's pass_k_large section).
    let large = cases("pass_k_large");
    assert_eq!(large.len(), 5);
    for case in large {
        let (n, c, k) = counts(case);
        let context = format!("n={n} c={c} k={k}");
        let at_k = pass_at_k(n, c, k).unwrap();
        let hat_k = pass_hat_k(n, c, k).unwrap();
        let exact_at = num(&case["exact"]["pass_at_k"]);
        let exact_hat = num(&case["exact"]["pass_hat_k"]);
        assert!(relative(at_k, exact_at) <= 1e-14, "{context}: {at_k} vs {exact_at}");
        assert!(relative(hat_k, exact_hat) <= 1e-14, "{context}: {hat_k} vs {exact_hat}");
    }
    let n = 1_000_000_000_000_000u64;
    assert_eq!(pass_at_k(n, n - 1000, 10).unwrap(), 1.0);
    // pass@1 is c/n: 1e-15 to the last bits (1 − (1 − 1e-15) would give 1.1102230246251565e-15).
    assert!(relative(pass_at_k(n, 1, 1).unwrap(), 1e-15) <= 1e-15);
    // pass^k with k beyond the failures: the product over the n − c = 2 failures.
    assert!(relative(pass_hat_k(n, n - 2, n / 2).unwrap(), 0.25) <= 1e-15);
}
