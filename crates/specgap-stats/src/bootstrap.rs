//! Seeded nonparametric bootstrap confidence intervals: percentile and BCa, over cases or over
//! aligned pairs of cases.
//!
//! Source: Efron (1979) and Efron & Tibshirani (1993), *An Introduction to the Bootstrap*,
//! §13.3 (percentile) and §14.3 (BCa: bias correction ẑ₀ and jackknife acceleration â; scipy
//! cites §14.3 and §15.4, Eq. 15.36, for its implementation). Seed 002 App. A.4 reports 95%
//! case-bootstrap intervals with 2,000 resamples and seed 12345, paired by case for
//! differences. The semantics are those of
//! `scipy.stats.bootstrap` (scipy 1.17): `confidence_level`, `n_resamples`,
//! `method='percentile' | 'BCa'`, `paired=True` for aligned samples, BCa computed as scipy's
//! `_bca_interval` (mid-rank percentile of the estimate, leave-one-case-out jackknife), and
//! endpoints read with `scipy.stats.quantile(..., method='linear')`.
//!
//! Only the random stream differs from scipy: resample indices come from a xoshiro256++
//! stream seeded with [`BootstrapConfig::seed`] (see the crate's `resample` module), so the
//! same seed gives the same interval on every machine, and intervals agree with scipy's within
//! Monte Carlo error. Given the same bootstrap distribution, [`percentile_interval`] and
//! [`bca_interval`] agree with scipy to rounding.
//!
//! For the mean, [`bootstrap_mean`] is the fast path: the same interval as
//! [`bootstrap_case`] with [`mean_or_nan`], bit for bit, without writing resamples out (about
//! 1.6 times as fast for seed 002's 49 cases; BENCHMARKS.md "Statistics").

use crate::describe::{mean_or_nan, mean_unchecked, pairwise_sum, sample_sd_unchecked};
use crate::error::{StatsError, ensure_finite, ensure_len, ensure_same_len};
use crate::resample::{IndexSampler, MeanSampler};
use crate::special::{normal_cdf, normal_ppf};

/// How the interval is read from the bootstrap distribution (scipy's `method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IntervalMethod {
    /// Quantiles α/2 and 1 − α/2 of the bootstrap distribution (Efron & Tibshirani §13.3).
    Percentile,
    /// Bias-corrected and accelerated quantiles (Efron & Tibshirani §14.3; scipy's default).
    #[default]
    Bca,
}

/// Settings of a bootstrap interval. [`BootstrapConfig::new`] gives scipy's defaults
/// (95%, 9,999 resamples, BCa) with the given seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapConfig {
    /// Two-sided coverage, strictly between 0 and 1 (e.g. 0.95).
    pub confidence_level: f64,
    /// Number of bootstrap resamples, at least 1 (seed 002 uses 2,000).
    pub n_resamples: usize,
    /// Percentile or BCa.
    pub method: IntervalMethod,
    /// Seed of the xoshiro256++ stream that draws resample indices (seed 002 uses 12345).
    pub seed: u64,
}

impl BootstrapConfig {
    /// scipy.stats.bootstrap's defaults (`confidence_level=0.95`, `n_resamples=9999`,
    /// `method='BCa'`) with the given seed.
    pub fn new(seed: u64) -> Self {
        BootstrapConfig { confidence_level: 0.95, n_resamples: 9999, method: IntervalMethod::Bca, seed }
    }

    fn validate(&self) -> Result<(), StatsError> {
        if !(self.confidence_level > 0.0 && self.confidence_level < 1.0) {
            return Err(StatsError::OutOfRange { what: "confidence level", expected: "(0, 1)", value: self.confidence_level });
        }
        ensure_len("bootstrap resamples", self.n_resamples, 1)
    }
}

/// Lower and upper endpoints of a confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfidenceInterval {
    /// Lower endpoint.
    pub low: f64,
    /// Upper endpoint.
    pub high: f64,
}

/// A statistic with its bootstrap confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapInterval {
    /// The statistic on the original data.
    pub estimate: f64,
    /// Lower endpoint; NaN when the interval cannot be computed (see [`bootstrap_indices`]).
    pub low: f64,
    /// Upper endpoint; NaN likewise.
    pub high: f64,
    /// Bootstrap standard error: sample sd (`ddof = 1`) of the bootstrap distribution, as
    /// scipy's `standard_error`.
    pub standard_error: f64,
}

/// Case-level bootstrap of a statistic of one sample (scipy.stats.bootstrap((cases,), stat)).
///
/// `statistic` receives a resample of `cases` (same length, drawn with replacement); for BCa it
/// also receives the n leave-one-out samples (original order, one case removed).
///
/// # Errors
/// [`StatsError::TooFewObservations`] for fewer than 2 cases (as scipy) or `n_resamples == 0`,
/// [`StatsError::NonFinite`] for non-finite cases, [`StatsError::OutOfRange`] for a confidence
/// level outside (0, 1).
pub fn bootstrap_case<F>(cases: &[f64], mut statistic: F, config: &BootstrapConfig) -> Result<BootstrapInterval, StatsError>
where
    F: FnMut(&[f64]) -> f64,
{
    ensure_finite("cases", cases)?;
    run_bootstrap(CaseResampler::new(cases, &mut statistic), config)
}

/// Case-level bootstrap of the mean (scipy.stats.bootstrap((cases,), np.mean)): the same
/// interval as `bootstrap_case(cases, mean_or_nan, config)`, bit for bit, computed faster.
///
/// Every resample mean is `numpy.mean` of the resample (pairwise summation). Up to 128 cases,
/// each drawn case is added straight into its accumulator of that sum instead of being
/// written out and summed afterwards; above 128 this is [`bootstrap_case`] with
/// [`mean_or_nan`].
///
/// # Errors
/// As [`bootstrap_case`].
pub fn bootstrap_mean(cases: &[f64], config: &BootstrapConfig) -> Result<BootstrapInterval, StatsError> {
    ensure_finite("cases", cases)?;
    run_bootstrap(MeanResampler { cases, buffer: Vec::with_capacity(cases.len()) }, config)
}

/// Paired bootstrap: cases are resampled as aligned pairs `(a[i], b[i])` and `statistic`
/// receives the resampled `a` and `b` (scipy.stats.bootstrap((a, b), stat, paired=True)).
/// Use it for paired differences, e.g. `|a, b| mean(a) − mean(b)`.
///
/// # Errors
/// [`StatsError::LengthMismatch`] when `a` and `b` differ in length; otherwise as
/// [`bootstrap_case`].
pub fn bootstrap_paired<F>(a: &[f64], b: &[f64], mut statistic: F, config: &BootstrapConfig) -> Result<BootstrapInterval, StatsError>
where
    F: FnMut(&[f64], &[f64]) -> f64,
{
    ensure_same_len("paired samples", a.len(), b.len())?;
    ensure_finite("a", a)?;
    ensure_finite("b", b)?;
    let mut buffer_a = Vec::with_capacity(a.len());
    let mut buffer_b = Vec::with_capacity(b.len());
    bootstrap_indices(
        a.len(),
        |indices| {
            buffer_a.clear();
            buffer_b.clear();
            buffer_a.extend(indices.iter().map(|&i| a[i]));
            buffer_b.extend(indices.iter().map(|&i| b[i]));
            statistic(&buffer_a, &buffer_b)
        },
        config,
    )
}

/// The general form: bootstrap over `n_cases` case indices. `statistic` receives the indices
/// of a resample (length `n_cases`, drawn with replacement) and computes the statistic from the
/// caller's own data — for cluster bootstraps (all items of a case move together) or statistics
/// over several aligned arrays (Spearman ρ across cases, Cohen's κ per case cluster).
///
/// The estimate is `statistic(0..n_cases)`. For BCa the jackknife leaves out one index at a
/// time, as scipy does for paired data.
///
/// Determinism: resample r draws its `n_cases` indices in order from one xoshiro256++ stream
/// seeded with `config.seed`, each exactly uniform (Lemire's multiply-and-reject draw, up to
/// eight indices per 64-bit word, every resample starting on a fresh word; see the crate's
/// `resample` module); the same seed, data and statistic give the same interval on every
/// platform, and [`bootstrap_case`], [`bootstrap_paired`], [`bootstrap_mean`] and this
/// function draw the same resamples.
///
/// NaN results, as scipy: if any resample's statistic is NaN the endpoints are NaN; BCa
/// endpoints are NaN when the acceleration is undefined (every jackknife value equal, e.g. a
/// constant sample) or the estimate lies outside the bootstrap distribution (ẑ₀ infinite).
/// scipy warns `DegenerateDataWarning` in these cases.
///
/// # Errors
/// [`StatsError::TooFewObservations`] for `n_cases < 2` or `n_resamples == 0`,
/// [`StatsError::OutOfRange`] for a confidence level outside (0, 1) or more than 2³² cases.
pub fn bootstrap_indices<F>(n_cases: usize, mut statistic: F, config: &BootstrapConfig) -> Result<BootstrapInterval, StatsError>
where
    F: FnMut(&[usize]) -> f64,
{
    run_bootstrap(IndexResampler { n_cases, statistic: &mut statistic, indices: vec![0; n_cases] }, config)
}

/// The bootstrap distribution: `n_resamples` values of `statistic` on index resamples drawn
/// from the seeded stream [`bootstrap_indices`] uses.
///
/// # Errors
/// [`StatsError::TooFewObservations`] for `n_cases == 0`; [`StatsError::OutOfRange`] for more
/// than 2³² cases.
pub fn resample_statistics<F>(n_cases: usize, mut statistic: F, n_resamples: usize, seed: u64) -> Result<Vec<f64>, StatsError>
where
    F: FnMut(&[usize]) -> f64,
{
    ensure_len("cases", n_cases, 1)?;
    IndexResampler { n_cases, statistic: &mut statistic, indices: vec![0; n_cases] }.distribution(seed, n_resamples)
}

fn new_sampler(n_cases: usize, seed: u64) -> Result<IndexSampler, StatsError> {
    IndexSampler::new(n_cases, seed).ok_or(StatsError::OutOfRange { what: "number of cases", expected: "[1, 2^32)", value: n_cases as f64 })
}

/// Evaluates `statistic` on `n_resamples` resamples of `buffer.len()` values, each drawn into
/// `buffer` as `map(index)`, in stream order.
fn distribution_of<T>(
    seed: u64,
    n_resamples: usize,
    buffer: &mut [T],
    map: impl Fn(usize) -> T,
    mut statistic: impl FnMut(&[T]) -> f64,
) -> Result<Vec<f64>, StatsError> {
    let mut sampler = new_sampler(buffer.len(), seed)?;
    let mut distribution = Vec::with_capacity(n_resamples);
    for _ in 0..n_resamples {
        sampler.fill_resample_with(buffer, &map);
        distribution.push(statistic(buffer));
    }
    Ok(distribution)
}

/// One way of evaluating a statistic on the original cases, on a resample, and on the data
/// with one case left out.
trait Resampler {
    fn n_cases(&self) -> usize;
    fn estimate(&mut self) -> f64;
    /// The bootstrap distribution: the statistic on `n_resamples` resamples of the stream
    /// seeded with `seed`, in stream order.
    fn distribution(&mut self, seed: u64, n_resamples: usize) -> Result<Vec<f64>, StatsError>;
    /// θ̂₍ᵢ₎: the statistic without case `left_out` (original order kept), for BCa.
    fn leave_one_out(&mut self, left_out: usize) -> f64;
}

/// The statistic sees case indices.
struct IndexResampler<'s, F> {
    n_cases: usize,
    statistic: &'s mut F,
    indices: Vec<usize>,
}

impl<F: FnMut(&[usize]) -> f64> Resampler for IndexResampler<'_, F> {
    fn n_cases(&self) -> usize {
        self.n_cases
    }

    fn estimate(&mut self) -> f64 {
        self.indices.clear();
        self.indices.extend(0..self.n_cases);
        (self.statistic)(&self.indices)
    }

    fn distribution(&mut self, seed: u64, n_resamples: usize) -> Result<Vec<f64>, StatsError> {
        self.indices.resize(self.n_cases, 0);
        distribution_of(seed, n_resamples, &mut self.indices, |i| i, &mut self.statistic)
    }

    fn leave_one_out(&mut self, left_out: usize) -> f64 {
        self.indices.clear();
        self.indices.extend((0..self.n_cases).filter(|&i| i != left_out));
        (self.statistic)(&self.indices)
    }
}

/// The statistic sees case values; resamples are gathered while the indices are drawn.
struct CaseResampler<'c, 's, F> {
    cases: &'c [f64],
    statistic: &'s mut F,
    buffer: Vec<f64>,
}

impl<'c, 's, F> CaseResampler<'c, 's, F> {
    fn new(cases: &'c [f64], statistic: &'s mut F) -> Self {
        CaseResampler { cases, statistic, buffer: Vec::with_capacity(cases.len()) }
    }
}

impl<F: FnMut(&[f64]) -> f64> Resampler for CaseResampler<'_, '_, F> {
    fn n_cases(&self) -> usize {
        self.cases.len()
    }

    fn estimate(&mut self) -> f64 {
        (self.statistic)(self.cases)
    }

    fn distribution(&mut self, seed: u64, n_resamples: usize) -> Result<Vec<f64>, StatsError> {
        let cases = self.cases;
        self.buffer.resize(cases.len(), 0.0);
        distribution_of(seed, n_resamples, &mut self.buffer, |i| cases[i], &mut self.statistic)
    }

    fn leave_one_out(&mut self, left_out: usize) -> f64 {
        leave_one_out_into(&mut self.buffer, self.cases, left_out);
        (self.statistic)(&self.buffer)
    }
}

/// Writes `cases` without case `left_out` into `buffer`, in the original order.
fn leave_one_out_into(buffer: &mut Vec<f64>, cases: &[f64], left_out: usize) {
    buffer.clear();
    buffer.extend_from_slice(&cases[..left_out]);
    buffer.extend_from_slice(&cases[left_out + 1..]);
}

/// The mean, drawn by [`MeanSampler`] when there are at most 128 cases: the same resamples
/// and the same values as [`CaseResampler`] with [`mean_or_nan`], without writing resamples
/// out.
struct MeanResampler<'c> {
    cases: &'c [f64],
    buffer: Vec<f64>,
}

impl Resampler for MeanResampler<'_> {
    fn n_cases(&self) -> usize {
        self.cases.len()
    }

    fn estimate(&mut self) -> f64 {
        mean_or_nan(self.cases)
    }

    fn distribution(&mut self, seed: u64, n_resamples: usize) -> Result<Vec<f64>, StatsError> {
        match MeanSampler::new(self.cases, seed) {
            Some(mut sampler) => Ok((0..n_resamples).map(|_| sampler.next_mean()).collect()),
            None => CaseResampler::new(self.cases, &mut mean_or_nan).distribution(seed, n_resamples),
        }
    }

    fn leave_one_out(&mut self, left_out: usize) -> f64 {
        leave_one_out_into(&mut self.buffer, self.cases, left_out);
        mean_or_nan(&self.buffer)
    }
}

/// The shared procedure: validate, estimate, resample, read the interval.
fn run_bootstrap(mut resampler: impl Resampler, config: &BootstrapConfig) -> Result<BootstrapInterval, StatsError> {
    config.validate()?;
    let n_cases = resampler.n_cases();
    ensure_len("cases", n_cases, 2)?;
    // The sampler is built later; reject an impossible case count before any work.
    new_sampler(n_cases, config.seed)?;
    let estimate = resampler.estimate();
    let distribution = resampler.distribution(config.seed, config.n_resamples)?;
    let interval = match config.method {
        IntervalMethod::Percentile => percentile_interval(&distribution, config.confidence_level)?,
        IntervalMethod::Bca => {
            let jackknife: Vec<f64> = (0..n_cases).map(|i| resampler.leave_one_out(i)).collect();
            bca_interval(&distribution, estimate, &jackknife, config.confidence_level)?
        }
    };
    Ok(BootstrapInterval { estimate, low: interval.low, high: interval.high, standard_error: sample_sd_unchecked(&distribution) })
}

/// Percentile interval: the `(1 − level)/2` and `(1 + level)/2` linear quantiles of the
/// bootstrap distribution (scipy.stats.bootstrap with `method='percentile'`).
///
/// # Errors
/// [`StatsError::TooFewObservations`] for an empty distribution, [`StatsError::OutOfRange`]
/// for a level outside (0, 1). NaN values in the distribution give NaN endpoints.
pub fn percentile_interval(distribution: &[f64], confidence_level: f64) -> Result<ConfidenceInterval, StatsError> {
    check_level_and_distribution(distribution, confidence_level)?;
    let alpha = (1.0 - confidence_level) / 2.0;
    Ok(quantile_pair(distribution, alpha, 1.0 - alpha))
}

/// BCa interval from a bootstrap distribution, the estimate θ̂ on the original data, and the
/// jackknife values θ̂₍ᵢ₎ (Efron & Tibshirani §14.3, as scipy's
/// `_bca_interval`): with z_α = Φ⁻¹((1 − level)/2), the endpoints are the linear quantiles at
/// `Φ(ẑ₀ + (ẑ₀ ± z_α) / (1 − â(ẑ₀ ± z_α)))`, with ẑ₀ from [`bca_bias_correction`] and â from
/// [`bca_acceleration`].
///
/// # Errors
/// As [`percentile_interval`], plus [`StatsError::TooFewObservations`] for fewer than two
/// jackknife values. Undefined ẑ₀ or â give NaN endpoints (see [`bootstrap_indices`]).
pub fn bca_interval(
    distribution: &[f64],
    estimate: f64,
    jackknife: &[f64],
    confidence_level: f64,
) -> Result<ConfidenceInterval, StatsError> {
    check_level_and_distribution(distribution, confidence_level)?;
    ensure_len("jackknife values", jackknife.len(), 2)?;
    let z0 = bca_bias_correction(distribution, estimate);
    let acceleration = bca_acceleration(jackknife);
    let z_alpha = normal_ppf((1.0 - confidence_level) / 2.0);
    let adjusted = |z: f64| {
        let shifted = z0 + z;
        normal_cdf(z0 + shifted / (1.0 - acceleration * shifted))
    };
    Ok(quantile_pair(distribution, adjusted(z_alpha), adjusted(-z_alpha)))
}

/// BCa bias correction ẑ₀ = Φ⁻¹(q), where q is the mid-rank share of the bootstrap
/// distribution below the estimate: `(#{θ* < θ̂} + #{θ* ≤ θ̂}) / 2B` (scipy's
/// `_percentile_of_score`). ±inf when θ̂ lies outside the distribution.
pub fn bca_bias_correction(distribution: &[f64], estimate: f64) -> f64 {
    let below = distribution.iter().filter(|v| **v < estimate).count();
    let at_or_below = distribution.iter().filter(|v| **v <= estimate).count();
    normal_ppf((below + at_or_below) as f64 / (2 * distribution.len()) as f64)
}

/// BCa acceleration â from jackknife values (Efron & Tibshirani §14.3; scipy's form):
/// with θ̄ their mean and Uᵢ = (n − 1)(θ̄ − θ̂₍ᵢ₎),
/// `â = (ΣUᵢ³ / n³) / (6 · (ΣUᵢ² / n²)^{3/2})`. NaN when all jackknife values are equal.
pub fn bca_acceleration(jackknife: &[f64]) -> f64 {
    if jackknife.is_empty() {
        return f64::NAN;
    }
    // Sums in numpy's pairwise order, as scipy computes them.
    let n = jackknife.len() as f64;
    let centre = mean_unchecked(jackknife);
    let u: Vec<f64> = jackknife.iter().map(|value| (n - 1.0) * (centre - value)).collect();
    let cubes: Vec<f64> = u.iter().map(|x| x * x * x).collect();
    let squares: Vec<f64> = u.iter().map(|x| x * x).collect();
    let numerator = (0.0 + pairwise_sum(&cubes)) / (n * n * n);
    let denominator = (0.0 + pairwise_sum(&squares)) / (n * n);
    1.0 / 6.0 * numerator / denominator.powf(1.5)
}

fn check_level_and_distribution(distribution: &[f64], confidence_level: f64) -> Result<(), StatsError> {
    ensure_len("bootstrap distribution", distribution.len(), 1)?;
    if !(confidence_level > 0.0 && confidence_level < 1.0) {
        return Err(StatsError::OutOfRange { what: "confidence level", expected: "(0, 1)", value: confidence_level });
    }
    Ok(())
}

/// Two linear quantiles of an unsorted distribution; NaN if the distribution holds NaN.
///
/// At most four order statistics are needed, so they are found by selection (O(B), reordering
/// a copy) instead of a full sort.
fn quantile_pair(distribution: &[f64], p_low: f64, p_high: f64) -> ConfidenceInterval {
    if distribution.iter().any(|v| v.is_nan()) {
        return ConfidenceInterval { low: f64::NAN, high: f64::NAN };
    }
    let mut values = distribution.to_vec();
    let n = values.len();
    let (low, high) = match (LinearQuantile::locate(n, p_low), LinearQuantile::locate(n, p_high)) {
        (Some(low), Some(high)) if low.j <= high.j => read_ordered_pair(&mut values, low, high),
        (Some(low), Some(high)) => {
            let (high, low) = read_ordered_pair(&mut values, high, low);
            (low, high)
        }
        // An undefined level (NaN from BCa) gives a NaN endpoint; the other is read alone.
        (low, high) => (low.map_or(f64::NAN, |q| q.read(&mut values)), high.map_or(f64::NAN, |q| q.read(&mut values))),
    };
    ConfidenceInterval { low, high }
}

/// Two linear quantiles with `first.j ≤ second.j`: the second is selected only among the
/// values above the first's position, which the first selection has already set apart.
fn read_ordered_pair(values: &mut [f64], first: LinearQuantile, second: LinearQuantile) -> (f64, f64) {
    let around_first = first.order_statistics(values);
    let second_value = if second.j == first.j {
        // Same j means the same ⌊jg⌋ (clipping merges none: 1 ≤ jg ≤ n), so the same j_next.
        second.interpolate(around_first)
    } else {
        // values[first.j + 1..] holds exactly the order statistics above first.j.
        let start = first.j + 1;
        second.relative_to(start).read(&mut values[start..])
    };
    (first.interpolate(around_first), second_value)
}

/// Where a Hyndman & Fan type 7 ("linear") quantile lies among n sorted values y, in the exact
/// arithmetic of `scipy.stats.quantile`'s `_quantile_hf`: `jg = p·n + (1 − p)`,
/// `j = ⌊jg⌋ − 1`, `g = jg − ⌊jg⌋`, result `(1 − g)·y[j] + g·y[j + 1]`, with indices clipped
/// to the data.
#[derive(Debug, Clone, Copy)]
struct LinearQuantile {
    j: usize,
    /// j + 1, or j itself when j is the last position.
    j_next: usize,
    g: f64,
}

impl LinearQuantile {
    /// The position of level p among n values; `None` for p outside [0, 1], NaN, or n = 0.
    fn locate(n: usize, p: f64) -> Option<Self> {
        if p.is_nan() || !(0.0..=1.0).contains(&p) || n == 0 {
            return None;
        }
        let n = n as f64;
        let jg = p * n + (1.0 - p);
        let jp1 = jg.floor();
        let last = n - 1.0;
        // jg ≥ 1, so j ≥ 0; both are clipped to [0, n − 1], so the casts are in range.
        Some(LinearQuantile { j: (jp1 - 1.0).clamp(0.0, last) as usize, j_next: jp1.clamp(0.0, last) as usize, g: jg - jp1 })
    }

    /// The same quantile among the values from position `start` on (`start ≤ j`).
    fn relative_to(self, start: usize) -> Self {
        LinearQuantile { j: self.j - start, j_next: self.j_next - start, g: self.g }
    }

    /// y[j] and y[j_next], by selection (reorders `values`).
    fn order_statistics(&self, values: &mut [f64]) -> (f64, f64) {
        let (_, lower, above) = values.select_nth_unstable_by(self.j, f64::total_cmp);
        let lower = *lower;
        // After selection everything right of j is ≥ y[j]; the smallest of them is y[j + 1].
        let upper = if self.j_next == self.j { lower } else { above.iter().copied().fold(f64::INFINITY, f64::min) };
        (lower, upper)
    }

    fn interpolate(&self, (lower, upper): (f64, f64)) -> f64 {
        (1.0 - self.g) * lower + self.g * upper
    }

    fn read(&self, values: &mut [f64]) -> f64 {
        self.interpolate(self.order_statistics(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One linear quantile, NaN for an undefined level.
    fn quantile_linear(values: &mut [f64], p: f64) -> f64 {
        LinearQuantile::locate(values.len(), p).map_or(f64::NAN, |q| q.read(values))
    }

    #[test]
    fn linear_quantile_interpolates_like_scipy() {
        let q = |p: f64| quantile_linear(&mut [8.0, 2.0, 1.0, 4.0], p);
        // p = 0.5: jg = 2 + 0.5 = 2.5 -> j = 1, g = 0.5 -> (2 + 4)/2 = 3.
        assert_eq!(q(0.5), 3.0);
        assert_eq!(q(0.0), 1.0);
        assert_eq!(q(1.0), 8.0);
        // p = 0.25: jg = 1 + 0.75 = 1.75 -> j = 0, g = 0.75 -> 0.25*1 + 0.75*2 = 1.75.
        assert_eq!(q(0.25), 1.75);
        // p = 0.9: jg = 3.6 + 0.1 = 3.7 -> j = 2, g = 0.7 -> 0.3*4 + 0.7*8 = 6.8 (to rounding).
        assert!((q(0.9) - 6.8).abs() < 1e-15);
        assert!(q(f64::NAN).is_nan());
        assert!(q(1.5).is_nan());
    }

    #[test]
    fn quantile_pairs_equal_two_separate_quantiles() {
        // The second selection runs only above the first position; whatever the order and
        // spacing of the two levels, the pair must equal two independent readings.
        let distribution: Vec<f64> = (0..101).map(|i| ((i * 37) % 101) as f64 / 7.0).collect();
        let levels = [0.0, 0.01, 0.025, 0.025, 0.026, 0.5, 0.975, 0.99, 1.0, f64::NAN, 1.5];
        for &p_low in &levels {
            for &p_high in &levels {
                let pair = quantile_pair(&distribution, p_low, p_high);
                let low = quantile_linear(&mut distribution.clone(), p_low);
                let high = quantile_linear(&mut distribution.clone(), p_high);
                let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
                assert!(same(pair.low, low) && same(pair.high, high), "{p_low} {p_high}: {pair:?} vs {low} {high}");
            }
        }
        // Of 101 values, p = 0.25 gives jg = 25.25 + 0.75 = 26 (exact) -> y[25], and p = 0.75
        // gives jg = 75.75 + 0.25 = 76 -> y[75].
        let mut sorted = distribution.clone();
        sorted.sort_by(f64::total_cmp);
        let pair = quantile_pair(&distribution, 0.25, 0.75);
        assert_eq!((pair.low, pair.high), (sorted[25], sorted[75]));
        assert_eq!((sorted[25], sorted[75]), (25.0 / 7.0, 75.0 / 7.0));
        let with_nan = [1.0, f64::NAN, 3.0];
        let nan_pair = quantile_pair(&with_nan, 0.0, 1.0);
        assert!(nan_pair.low.is_nan() && nan_pair.high.is_nan());
    }

    #[test]
    fn jackknife_leaves_out_each_case_once() {
        let values = [1.0, 2.0, 4.0];
        let mut sum_of_indexed = |idx: &[usize]| idx.iter().map(|&i| values[i]).sum::<f64>();
        let mut by_index = IndexResampler { n_cases: 3, statistic: &mut sum_of_indexed, indices: vec![] };
        let mut sum = |v: &[f64]| v.iter().sum::<f64>();
        let mut by_value = CaseResampler::new(&values, &mut sum);
        for (left_out, expected) in [(0, 6.0), (1, 5.0), (2, 3.0)] {
            assert_eq!(by_index.leave_one_out(left_out), expected);
            assert_eq!(by_value.leave_one_out(left_out), expected);
        }
    }

    #[test]
    fn same_seed_same_interval_other_seed_other_resamples() {
        let cases: Vec<f64> = (0..20).map(|i| ((i * 37) % 11) as f64 / 10.0).collect();
        let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
        let config = BootstrapConfig { n_resamples: 500, ..BootstrapConfig::new(7) };
        let first = bootstrap_case(&cases, mean, &config).unwrap();
        let second = bootstrap_case(&cases, mean, &config).unwrap();
        assert_eq!(first, second);
        // A different seed gives a different stream of resamples.
        let sum = |idx: &[usize]| idx.iter().map(|&i| cases[i]).sum::<f64>();
        let seven = resample_statistics(cases.len(), sum, 50, 7).unwrap();
        let eight = resample_statistics(cases.len(), sum, 50, 8).unwrap();
        assert_ne!(seven, eight);
    }
}
