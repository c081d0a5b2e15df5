//! pass@k and pass^k from n attempts of which c succeeded.
//!
//! Sources: pass@k is the unbiased estimator of Chen et al. (2021), "Evaluating Large Language
//! Models Trained on Code", §2.1; pass^k (all k attempts succeed) is the estimator of
//! tau-bench (Yao et al., 2024, "τ-bench: a benchmark for tool-agent-user interaction").
//! Seed 002 §4.2 reports pass@3 and pass^3 over three valid repeats per case (there n = k = 3, so they are "at least one" and "all three").
//!
//! Both are computed as running products of ratios, never as factorials, so large n stays
//! finite and accurate.

use crate::error::StatsError;

fn check_counts(n: u64, c: u64, k: u64) -> Result<(), StatsError> {
    if c > n {
        return Err(StatsError::InvalidCount {
            what: "successes c <= attempts n",
            detail: format!("c = {c}, n = {n}"),
        });
    }
    if k == 0 || k > n {
        return Err(StatsError::InvalidCount {
            what: "1 <= k <= attempts n",
            detail: format!("k = {k}, n = {n}"),
        });
    }
    Ok(())
}

/// Unbiased pass@k: the probability that at least one of k attempts drawn without replacement
/// from n attempts (c of them successful) succeeds, `1 − C(n − c, k) / C(n, k)`.
///
/// Computed as `1 − Π_{i = n−c+1}^{n} (1 − k / i)` (Chen et al. 2021, Fig. 3), which is 1 when
/// `n − c < k`. In [0, 1].
///
/// # Errors
/// [`StatsError::InvalidCount`] unless `c ≤ n` and `1 ≤ k ≤ n`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Result<f64, StatsError> {
    check_counts(n, c, k)?;
    if n - c < k {
        return Ok(1.0);
    }
    let k = k as f64;
    let all_fail: f64 = (n - c + 1..=n).map(|i| 1.0 - k / i as f64).product();
    Ok(1.0 - all_fail)
}

/// pass^k: the probability that all k attempts drawn without replacement from n attempts (c of
/// them successful) succeed, `C(c, k) / C(n, k) = Π_{i = 0}^{k−1} (c − i) / (n − i)`; 0 when
/// `c < k`. In [0, 1].
///
/// # Errors
/// [`StatsError::InvalidCount`] unless `c ≤ n` and `1 ≤ k ≤ n`.
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Result<f64, StatsError> {
    check_counts(n, c, k)?;
    if c < k {
        return Ok(0.0);
    }
    Ok((0..k).map(|i| (c - i) as f64 / (n - i) as f64).product())
}
