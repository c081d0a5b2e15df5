//! Run-to-run noise of repeated episodes: how often repeats of one task disagree, how much one
//! task's scores spread, and how a group's variance splits between tasks and repeats.
//!
//! Sources: the flip rate is the share of repeat pairs that disagree on success, the measure
//! of identical-run instability that users of agent benchmarks report (issue 28; tau-bench's
//! pass^k, Yao et al. 2024 §4, reads the same repeats as a reliability curve). The variance
//! split is the ANOVA estimator of the one-way random-effects model
//! `y_ij = μ + τ_i + e_ij` (task effect `τ_i ~ (0, σ²_τ)`, repeat error `e_ij ~ (0, σ²_e)`):
//! Searle, Casella & McCulloch (1992), *Variance Components*, §3.5 (balanced) and §3.6
//! (unbalanced data, the `n₀` coefficient), equivalently the intraclass correlation ICC(1) of
//! Shrout & Fleiss (1979). Its mean squares are those of `scipy.stats.f_oneway`.

use crate::describe::{mean_unchecked, sample_sd_unchecked};
use crate::error::{StatsError, ensure_finite, ensure_len};

/// Share of the `n·(n−1)/2` unordered pairs of repeats that disagree on success: with `s`
/// successes among `n` repeats, `s·(n−s) / (n·(n−1)/2)`, in [0, 1]. 0 when every repeat
/// agrees; at most `⌈n/2⌉⌊n/2⌋ / C(n,2)` (2/3 for three repeats, 1 for two).
///
/// # Errors
/// [`StatsError::TooFewObservations`] for fewer than two repeats (no pair: the flip rate is
/// not defined, and a caller must say so rather than print 0).
pub fn flip_rate(successes: &[bool]) -> Result<f64, StatsError> {
    ensure_len("repeats", successes.len(), 2)?;
    let n = successes.len() as f64;
    let s = successes.iter().filter(|s| **s).count() as f64;
    Ok(s * (n - s) / (n * (n - 1.0) / 2.0))
}

/// Sample standard deviation (`ddof = 1`) of one task's repeat scores, as `numpy.std(x,
/// ddof=1)`.
///
/// # Errors
/// [`StatsError::TooFewObservations`] for fewer than two repeats;
/// [`StatsError::NonFinite`] for NaN or infinite scores.
pub fn within_task_sd(scores: &[f64]) -> Result<f64, StatsError> {
    ensure_len("repeats", scores.len(), 2)?;
    ensure_finite("repeat scores", scores)?;
    Ok(sample_sd_unchecked(scores))
}

/// The one-way random-effects decomposition of a group's scores (module guide).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VarianceComponents {
    /// Tasks `a` (the random factor's levels).
    pub tasks: usize,
    /// Episodes `N = Σ nᵢ`.
    pub observations: usize,
    /// Between-task mean square `Σ nᵢ (ȳᵢ − ȳ)² / (a − 1)`.
    pub ms_between: f64,
    /// Within-task (repeat) mean square `Σᵢ Σⱼ (yᵢⱼ − ȳᵢ)² / (N − a)`.
    pub ms_within: f64,
    /// `n₀ = (N − Σ nᵢ² / N) / (a − 1)`, the mean repeats per task of the unbalanced
    /// estimator (equal to `n` when every task has `n` repeats).
    pub n0: f64,
    /// `σ̂²_τ = max(0, (MS_between − MS_within) / n₀)`: variance between tasks (score² units).
    /// The untruncated estimator can be negative; a variance cannot, so it is set to 0 and
    /// [`VarianceComponents::truncated`] says so.
    pub between_tasks: f64,
    /// `σ̂²_e = MS_within`: variance between repeats of one task (score² units).
    pub within_tasks: f64,
    /// `σ̂²_τ / (σ̂²_τ + σ̂²_e)`, the intraclass correlation ICC(1), in [0, 1]; NaN when both
    /// components are 0 (every score equal).
    pub task_share: f64,
    /// Whether the between-task estimate was negative and set to 0.
    pub truncated: bool,
}

/// The ANOVA estimator of the variance components of `tasks` (one slice of repeat scores per
/// task; tasks may have different numbers of repeats).
///
/// # Errors
/// [`StatsError::TooFewObservations`] with fewer than two tasks, a task without scores, or no
/// task with two repeats (`N − a = 0`: no repeat variance to estimate);
/// [`StatsError::NonFinite`] for NaN or infinite scores.
pub fn variance_components(tasks: &[&[f64]]) -> Result<VarianceComponents, StatsError> {
    ensure_len("tasks", tasks.len(), 2)?;
    for task in tasks {
        ensure_len("repeats of a task", task.len(), 1)?;
        ensure_finite("repeat scores", task)?;
    }
    let a = tasks.len();
    let sizes: Vec<f64> = tasks.iter().map(|t| t.len() as f64).collect();
    let total: f64 = sizes.iter().sum();
    let observations = total as usize;
    ensure_len("episodes beyond one per task", observations - a, 1)?;
    let all: Vec<f64> = tasks.iter().flat_map(|t| t.iter().copied()).collect();
    let grand = mean_unchecked(&all);
    let means: Vec<f64> = tasks.iter().map(|t| mean_unchecked(t)).collect();
    let ss_between: f64 = sizes.iter().zip(&means).map(|(n, m)| n * (m - grand) * (m - grand)).sum();
    let ss_within: f64 = tasks.iter().zip(&means).map(|(t, m)| t.iter().map(|y| (y - m) * (y - m)).sum::<f64>()).sum();
    let ms_between = ss_between / (a - 1) as f64;
    let ms_within = ss_within / (total - a as f64);
    let n0 = (total - sizes.iter().map(|n| n * n).sum::<f64>() / total) / (a - 1) as f64;
    let raw_between = (ms_between - ms_within) / n0;
    let between_tasks = raw_between.max(0.0);
    let sum = between_tasks + ms_within;
    Ok(VarianceComponents {
        tasks: a,
        observations,
        ms_between,
        ms_within,
        n0,
        between_tasks,
        within_tasks: ms_within,
        task_share: if sum > 0.0 { between_tasks / sum } else { f64::NAN },
        truncated: raw_between < 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flip_rate_counts_disagreeing_pairs() {
        assert_eq!(flip_rate(&[true, true, true]), Ok(0.0));
        // 1 success of 3: pairs (s, f) ×2 of 3 pairs.
        assert_eq!(flip_rate(&[true, false, false]), Ok(2.0 / 3.0));
        assert_eq!(flip_rate(&[true, false]), Ok(1.0));
        // 2 of 4: 4 of 6 pairs.
        assert_eq!(flip_rate(&[true, false, true, false]), Ok(4.0 / 6.0));
        assert!(flip_rate(&[true]).is_err());
    }

    #[test]
    fn balanced_components_by_hand() {
        // Task means 2 and 5, grand mean 3.5; SSB = 3·(1.5² + 1.5²) = 13.5, MSB = 13.5;
        // SSW = (1+0+1) + (1+0+1) = 4, MSW = 4 / 4 = 1; n₀ = 3; σ²_τ = 12.5 / 3.
        let c = variance_components(&[&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]]).unwrap();
        assert_eq!(c.ms_between, 13.5);
        assert_eq!(c.ms_within, 1.0);
        assert_eq!(c.n0, 3.0);
        assert_eq!(c.between_tasks, 12.5 / 3.0);
        assert!(!c.truncated);
    }

    #[test]
    fn negative_between_estimate_is_truncated() {
        let c = variance_components(&[&[0.0, 1.0], &[1.0, 0.0]]).unwrap();
        assert_eq!(c.between_tasks, 0.0);
        assert!(c.truncated);
        assert_eq!(c.task_share, 0.0);
    }

    #[test]
    fn no_repeat_is_an_error() {
        assert!(variance_components(&[&[1.0], &[2.0]]).is_err());
    }
}
