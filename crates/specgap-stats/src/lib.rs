//! # specgap-stats
//!
//! The statistics behind specgap's measures: pure functions over slices of `f64` (or labels),
//! no I/O, deterministic for a given seed. Each function reproduces a named reference
//! implementation, and the integration tests (`tests/it`) compare against values that
//! `scripts/stats-reference/generate.py` computed with pinned scipy / scikit-learn /
//! statsmodels (`tests/fixtures/reference.json`).
//!
//! | need | function | reference |
//! | --- | --- | --- |
//! | interval for a case-level measure (Quality, Recall, …) | [`bootstrap_case`] | `scipy.stats.bootstrap` |
//! | the same for a mean, fast path (bit-equal to `bootstrap_case` with [`mean_or_nan`]) | [`bootstrap_mean`] | same |
//! | interval for a paired difference between conditions | [`bootstrap_paired`] | `scipy.stats.bootstrap(paired=True)` |
//! | interval for anything computed from case indices (clusters, ρ, κ) | [`bootstrap_indices`] | same |
//! | paired test of two conditions over cases | [`wilcoxon()`], [`wilcoxon_paired`] | `scipy.stats.wilcoxon` |
//! | many tests at once | [`holm_adjust`] | `statsmodels multipletests(method='holm')` |
//! | rank association across systems or cases | [`spearman()`] | `scipy.stats.spearmanr` |
//! | agreement of two raters | [`cohen_kappa`] | `sklearn.metrics.cohen_kappa_score` |
//! | repeats of one case | [`pass_at_k`], [`pass_hat_k`] | Chen et al. 2021; tau-bench |
//! | seed replicates | [`mean_sd`], plus [`mean`], [`median`], [`sample_sd`], [`rank_average`] | numpy / scipy |
//! | run-to-run noise: flip rate, within-task sd, task / repeat variance split | [`flip_rate`], [`within_task_sd`], [`variance_components`] | one-way random-effects ANOVA (Searle et al. 1992 §3.5–3.6); `scipy.stats.f_oneway` |
//! | power and detectable difference of a paired comparison | [`paired_t_power`], [`paired_t_detectable_effect`], [`paired_t_nobs`]; seeded [`simulated_binary_detectable`], [`simulated_normal_power`] | `statsmodels TTestPower` |
//! | a fast statistic for the bootstrap | [`mean_or_nan`] (bit-equal to `numpy.mean`) | numpy |
//!
//! Seed 002 (FDE-Bench) §5.1 and App. A.4 use the combination this crate is built for: 95%
//! case-bootstrap intervals (2,000 resamples, seed 12345), two-sided Wilcoxon signed-rank
//! tests on paired case means, Holm over the family of comparisons.
//!
//! ## Errors and NaN
//! Invalid input (empty slices, mismatched lengths, NaN in the data, a confidence level outside
//! (0, 1), impossible counts) is a [`StatsError`]. A well-formed input whose answer is
//! undefined gives NaN where scipy gives NaN — a constant input to Spearman, the normal
//! approximation with zero variance, a degenerate BCa interval — as documented on each
//! function. Every p-value (and pass@k / pass^k) is clamped to [0, 1] as its last step, so
//! rounding never leaves the unit interval.
//!
//! ## Where specgap is more accurate than its reference
//! Values agree with the references to 1e-12 (most bit for bit) except at edges where the
//! reference's own rounding dominates, pinned in the fixture beside the exact rational:
//! Wilcoxon's exact path from 54 differences on (scipy returns small tails as `1 − sum`, off by
//! up to ~2.2e-16 absolute; we sum the tail), and pass@k near 0 (Chen et al.'s `1 − Π`
//! cancels; we use `−expm1(Σ ln_1p)`).
//!
//! ## Example
//! ```
//! use specgap_stats::{
//!     BootstrapConfig, IntervalMethod, WilcoxonOptions, bootstrap_paired, holm_adjust, wilcoxon_paired,
//! };
//! let interact = [0.61, 0.40, 0.72, 0.55, 0.30, 0.81, 0.47];
//! let hidden = [0.20, 0.35, 0.41, 0.18, 0.30, 0.52, 0.11];
//! let config = BootstrapConfig {
//!     n_resamples: 2000,
//!     method: IntervalMethod::Percentile,
//!     ..BootstrapConfig::new(12345)
//! };
//! let mean_difference = |a: &[f64], b: &[f64]| {
//!     a.iter().zip(b).map(|(x, y)| x - y).sum::<f64>() / a.len() as f64
//! };
//! let interval = bootstrap_paired(&interact, &hidden, mean_difference, &config)?;
//! assert!(interval.low <= interval.estimate && interval.estimate <= interval.high);
//! let test = wilcoxon_paired(&interact, &hidden, &WilcoxonOptions::default())?;
//! let adjusted = holm_adjust(&[test.p_value, 0.2])?;
//! assert!(adjusted[0] >= test.p_value);
//! # Ok::<(), specgap_stats::StatsError>(())
//! ```
#![deny(missing_docs)]

pub mod bootstrap;
pub mod describe;
pub mod error;
pub mod holm;
pub mod kappa;
pub mod noise;
pub mod pass_k;
pub mod power;
mod resample;
pub mod spearman;
mod special;
pub mod wilcoxon;

pub use bootstrap::{
    BootstrapConfig, BootstrapInterval, ConfidenceInterval, IntervalMethod, bca_acceleration, bca_bias_correction, bca_interval,
    bootstrap_case, bootstrap_indices, bootstrap_mean, bootstrap_paired, percentile_interval, resample_statistics,
};
pub use describe::{MeanSd, mean, mean_or_nan, mean_sd, median, pairwise_sum, rank_average, sample_sd};
pub use error::StatsError;
pub use holm::holm_adjust;
pub use kappa::{KappaWeighting, cohen_kappa};
pub use noise::{VarianceComponents, flip_rate, variance_components, within_task_sd};
pub use pass_k::{pass_at_k, pass_hat_k};
pub use power::{
    BinaryDesign, SimulatedDetectable, Simulation, monte_carlo_se, paired_t_detectable_effect, paired_t_nobs, paired_t_power,
    simulated_binary_detectable, simulated_binary_power, simulated_normal_power, simulated_pass_hat_k_power,
};
pub use spearman::{Correlation, spearman};
pub use wilcoxon::{Alternative, WilcoxonMethod, WilcoxonOptions, WilcoxonPath, WilcoxonResult, ZeroMethod, wilcoxon, wilcoxon_paired};
