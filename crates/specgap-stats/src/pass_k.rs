//! pass@k and pass^k from n attempts of which c succeeded.
//!
//! Sources: pass@k is the unbiased estimator of Chen et al. (2021), "Evaluating Large Language
//! Models Trained on Code", §2.1; pass^k (all k attempts succeed) is the estimator of
//! tau-bench (Yao et al., 2024, "τ-bench: a benchmark for tool-agent-user interaction").
//! Seed 002 §4.2 reports pass@3 and pass^3 over three valid repeats per case (there n = k = 3, so they are "at least one" and "all three").
//!
//! Both are ratios of binomial coefficients, computed as products of at most
//! `min(k, the other count)` ratios, never as factorials, so large n stays finite and accurate
//! and the cost is O(min(k, c)) for pass@k and O(min(k, n − c)) for pass^k: the identity
//! `C(n − a, b) / C(n, b) = C(n − b, a) / C(n, a)` lets the shorter product stand for the longer
//! one. (Chen et al.'s reference code loops over all c successes, which does not finish for
//! c = 10¹⁵.)

use crate::error::StatsError;

fn check_counts(n: u64, c: u64, k: u64) -> Result<(), StatsError> {
    if c > n {
        return Err(StatsError::InvalidCount { what: "successes c <= attempts n", detail: format!("c = {c}, n = {n}") });
    }
    if k == 0 || k > n {
        return Err(StatsError::InvalidCount { what: "1 <= k <= attempts n", detail: format!("k = {k}, n = {n}") });
    }
    Ok(())
}

/// `ln(C(n − a, b) / C(n, b))`, the log-probability that b draws without replacement from n
/// items all miss a marked ones, as `Σ_{j < m} ln(1 − r / (n − j))` with `m = min(a, b)`,
/// `r = max(a, b)` (both orders give the same ratio). Requires `a + b ≤ n`.
fn log_all_miss(n: u64, a: u64, b: u64) -> f64 {
    let (m, r) = (a.min(b), a.max(b) as f64);
    (0..m).map(|j| (-r / (n - j) as f64).ln_1p()).sum()
}

/// Unbiased pass@k: the probability that at least one of k attempts drawn without replacement
/// from n attempts (c of them successful) succeeds, `1 − C(n − c, k) / C(n, k)`.
///
/// Chen et al. (2021, Fig. 3) write the ratio as `Π_{i = n−c+1}^{n} (1 − k / i)`, a product
/// over the c successes; by the symmetry above it is also `Π_{j=0}^{k−1} (1 − c / (n − j))`.
/// The shorter of the two is summed in logs and the result taken as `−expm1(Σ ln_1p(…))`, so a
/// small pass@k keeps its relative accuracy (`1 − Π` would cancel: pass@1 with n = 10¹⁵, c = 1
/// is 1e-15, not 1.1e-15). 1 when `n − c < k`, 0 when `c = 0`. In [0, 1].
///
/// # Errors
/// [`StatsError::InvalidCount`] unless `c ≤ n` and `1 ≤ k ≤ n`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Result<f64, StatsError> {
    check_counts(n, c, k)?;
    if n - c < k {
        return Ok(1.0);
    }
    if c == 0 {
        return Ok(0.0);
    }
    Ok((-log_all_miss(n, c, k).exp_m1()).clamp(0.0, 1.0))
}

/// pass^k: the probability that all k attempts drawn without replacement from n attempts (c of
/// them successful) succeed, `C(c, k) / C(n, k) = Π_{i = 0}^{k−1} (c − i) / (n − i)`; 0 when
/// `c < k`. With more attempts k than failures n − c, the equal product over the failures,
/// `Π_{j = 0}^{n−c−1} (n − k − j) / (n − j)`, is the one computed. Each factor is a ratio of
/// integers rounded once, so the product is within about `min(k, n − c)` ulps. In [0, 1].
///
/// # Errors
/// [`StatsError::InvalidCount`] unless `c ≤ n` and `1 ≤ k ≤ n`.
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Result<f64, StatsError> {
    check_counts(n, c, k)?;
    if c < k {
        return Ok(0.0);
    }
    // C(c, k) / C(n, k) = C(n − a, b) / C(n, b) with a = n − c failures and b = k draws.
    let (a, b) = (n - c, k);
    let (m, r) = (a.min(b), a.max(b));
    let ratio: f64 = (0..m).map(|j| (n - r - j) as f64 / (n - j) as f64).product();
    Ok(ratio.clamp(0.0, 1.0))
}
