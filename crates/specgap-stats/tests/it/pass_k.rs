//! pass@k and pass^k by hand-computed cases (no reference library implements pass^k).

use specgap_stats::{StatsError, pass_at_k, pass_hat_k};

fn assert_near(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= 1e-15,
        "got {actual}, expected {expected}"
    );
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
    let by_hand: f64 = (0..10)
        .map(|i| (900 - i) as f64 / (1000 - i) as f64)
        .product();
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
    assert!(matches!(
        pass_at_k(3, 4, 1),
        Err(StatsError::InvalidCount {
            what: "successes c <= attempts n",
            ..
        })
    ));
    assert!(matches!(
        pass_at_k(3, 1, 0),
        Err(StatsError::InvalidCount {
            what: "1 <= k <= attempts n",
            ..
        })
    ));
    assert!(matches!(
        pass_hat_k(3, 1, 4),
        Err(StatsError::InvalidCount {
            what: "1 <= k <= attempts n",
            ..
        })
    ));
}
