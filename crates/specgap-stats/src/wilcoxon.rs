//! Wilcoxon signed-rank test, reproducing `scipy.stats.wilcoxon` (scipy 1.17, module
//! `scipy/stats/_wilcoxon.py`) option for option.
//!
//! Source of the test: Wilcoxon (1945), "Individual comparisons by ranking methods"; seed 002
//! §5.1 (and Table 11 of App. A.6) uses it two-sided on paired case means with Holm
//! correction. Zero handling follows Pratt (1959) and the "zero-split" method of scipy gh-2263; the Pratt variance
//! adjustment follows Cureton (1967), as scipy does.

use crate::describe::{pairwise_sum, rank_average_with_ties};
use crate::error::{StatsError, ensure_finite, ensure_len, ensure_same_len};
use crate::special::{normal_cdf, probability};

/// Direction of the alternative hypothesis (scipy's `alternative`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Alternative {
    /// The distribution of the differences is not symmetric about zero (scipy default).
    #[default]
    TwoSided,
    /// The differences are stochastically greater than zero.
    Greater,
    /// The differences are stochastically less than zero.
    Less,
}

/// How zero differences are treated (scipy's `zero_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZeroMethod {
    /// Drop zero differences before ranking (Wilcoxon 1945; scipy default).
    #[default]
    Wilcox,
    /// Rank zeros with the rest, then leave their ranks out of both sums; the normal
    /// approximation's mean and variance are adjusted for them (Pratt 1959, Cureton 1967).
    Pratt,
    /// Rank zeros with the rest and split their ranks equally between the positive and the
    /// negative sum (scipy gh-2263).
    Zsplit,
}

/// Which null distribution to use (scipy's `method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WilcoxonMethod {
    /// scipy's choice (1.15 and later): with more than 50 differences (zeros included), the
    /// normal approximation; otherwise the exact distribution when there are no ties and no
    /// zeros, an exhaustive sign-flip permutation test when there are ties or zeros and at most
    /// 13 differences, and the normal approximation beyond that.
    #[default]
    Auto,
    /// The exact null distribution of the positive rank sum (valid without ties and zeros; with
    /// them the statistic is rounded conservatively, as scipy does: up for `Less`, down for
    /// `Greater`). Building the distribution costs O(n³) time and O(n²) memory, as in scipy,
    /// so it is meant for the small samples `Auto` sends here (n ≤ 50). Tails are summed
    /// directly: equal to scipy bit for bit up to 53 differences; from 54 on scipy's `1 − sum`
    /// for a tail beyond the mean is off by up to ~2.2e-16 (absolute), specgap's value is the
    /// accurate one (within a few ulps of the exact rational, never below 0).
    Exact,
    /// The normal approximation with tie-corrected variance.
    Asymptotic,
}

/// The computation that produced a [`WilcoxonResult`]'s p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WilcoxonPath {
    /// Exact null distribution of the positive rank sum.
    Exact,
    /// All 2ⁿ sign flips enumerated (scipy's `permutation_test` with `n ≤ 13`, where it is
    /// exhaustive and therefore deterministic).
    ExhaustivePermutation,
    /// Normal approximation.
    Asymptotic,
}

/// Options of [`wilcoxon`]; `Default` gives scipy's defaults (two-sided, `wilcox`, `auto`, no
/// continuity correction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WilcoxonOptions {
    /// Direction of the alternative.
    pub alternative: Alternative,
    /// Treatment of zero differences.
    pub zero_method: ZeroMethod,
    /// Null distribution.
    pub method: WilcoxonMethod,
    /// Continuity correction of ±0.5 on the rank sum in the normal approximation (scipy's
    /// `correction`, off by default).
    pub correction: bool,
}

/// Outcome of a Wilcoxon signed-rank test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WilcoxonResult {
    /// The statistic as scipy returns it: `min(r_plus, r_minus)` for a two-sided test, `r_plus`
    /// for a one-sided one.
    pub statistic: f64,
    /// The p-value, in [0, 1] on every path; NaN where scipy gives NaN (the normal
    /// approximation with zero variance, for example when every difference is zero under
    /// `wilcox`).
    pub p_value: f64,
    /// Sum of the ranks of positive differences (plus half the zero ranks under `zsplit`).
    pub r_plus: f64,
    /// Sum of the ranks of negative differences (plus half the zero ranks under `zsplit`).
    pub r_minus: f64,
    /// The z statistic of the normal approximation (after continuity correction; `−|z|` for a
    /// two-sided test), present whenever that path was taken. scipy exposes it only when
    /// `method='asymptotic'` is asked for explicitly; its value is the same.
    pub z_statistic: Option<f64>,
    /// The computation behind `p_value`.
    pub path: WilcoxonPath,
}

/// Wilcoxon signed-rank test on paired samples: the test of `x − y` (scipy.stats.wilcoxon(x, y)).
///
/// # Errors
/// [`StatsError::LengthMismatch`] when the samples differ in length, and the errors of
/// [`wilcoxon`].
pub fn wilcoxon_paired(x: &[f64], y: &[f64], options: &WilcoxonOptions) -> Result<WilcoxonResult, StatsError> {
    ensure_same_len("paired samples", x.len(), y.len())?;
    ensure_finite("x", x)?;
    ensure_finite("y", y)?;
    let differences: Vec<f64> = x.iter().zip(y).map(|(a, b)| a - b).collect();
    wilcoxon(&differences, options)
}

/// Wilcoxon signed-rank test on differences `d` (scipy.stats.wilcoxon(d)): is the distribution
/// of `d` symmetric about zero?
///
/// Reproduces scipy 1.17 exactly, including the `auto` choice of method (see
/// [`WilcoxonMethod::Auto`]), the tie correction of the variance `Σ(t³ − t)/48`, and the
/// returned statistic. The exhaustive permutation path counts sign flips by dynamic
/// programming over the (doubled, hence integral) ranks, which gives the same counts as
/// enumerating all 2ⁿ flips.
///
/// # Errors
/// [`StatsError::TooFewObservations`] for an empty slice (scipy returns NaN there) and
/// [`StatsError::NonFinite`] for NaN or infinite differences (scipy propagates NaN).
pub fn wilcoxon(differences: &[f64], options: &WilcoxonOptions) -> Result<WilcoxonResult, StatsError> {
    ensure_len("differences", differences.len(), 1)?;
    ensure_finite("differences", differences)?;
    let ranks = SignedRanks::new(differences, options.zero_method);
    let path = choose_path(options.method, differences.len(), &ranks);
    let (p_value, z_statistic) = match path {
        WilcoxonPath::Exact => (exact_p_value(&ranks, options.alternative), None),
        WilcoxonPath::ExhaustivePermutation => (permutation_p_value(&ranks, options.alternative), None),
        WilcoxonPath::Asymptotic => {
            let (p, z) = asymptotic_p_value(&ranks, options.alternative, options.correction);
            (p, Some(z))
        }
    };
    let statistic = match options.alternative {
        Alternative::TwoSided => ranks.r_plus.min(ranks.r_minus),
        Alternative::Greater | Alternative::Less => ranks.r_plus,
    };
    Ok(WilcoxonResult { statistic, p_value, r_plus: ranks.r_plus, r_minus: ranks.r_minus, z_statistic, path })
}

/// Largest sample (zeros included) for which `auto` considers the exact or permutation paths
/// (scipy `_wilcoxon_iv`: `d.shape[-1] > 50` goes asymptotic).
const AUTO_EXACT_MAX_N: usize = 50;
/// Largest sample for which `auto` runs the permutation test with ties or zeros: 2¹³ = 8192 is
/// below scipy's default 9999 resamples, so `permutation_test` enumerates every sign flip.
const AUTO_PERMUTATION_MAX_N: usize = 13;

fn choose_path(method: WilcoxonMethod, n: usize, ranks: &SignedRanks) -> WilcoxonPath {
    match method {
        WilcoxonMethod::Exact => WilcoxonPath::Exact,
        WilcoxonMethod::Asymptotic => WilcoxonPath::Asymptotic,
        WilcoxonMethod::Auto if n > AUTO_EXACT_MAX_N => WilcoxonPath::Asymptotic,
        WilcoxonMethod::Auto if !ranks.has_ties && ranks.n_zero == 0 => WilcoxonPath::Exact,
        WilcoxonMethod::Auto if n <= AUTO_PERMUTATION_MAX_N => WilcoxonPath::ExhaustivePermutation,
        WilcoxonMethod::Auto => WilcoxonPath::Asymptotic,
    }
}

/// The ranked differences and the moments of the rank sum, as `_wilcoxon_statistic` builds them.
struct SignedRanks {
    /// Ranks of the non-zero differences (`true` when the difference is positive).
    nonzero: Vec<(f64, bool)>,
    n_zero: usize,
    /// Number of ranked values: non-zero differences under `wilcox`, all under the others.
    count: usize,
    r_plus: f64,
    r_minus: f64,
    has_ties: bool,
    mean: f64,
    sd: f64,
}

impl SignedRanks {
    fn new(differences: &[f64], zero_method: ZeroMethod) -> Self {
        let n_zero = differences.iter().filter(|d| **d == 0.0).count();
        // Under `wilcox` zeros leave the ranking entirely; otherwise they take the lowest ranks.
        let ranked: Vec<f64> = match zero_method {
            ZeroMethod::Wilcox => differences.iter().copied().filter(|d| *d != 0.0).collect(),
            ZeroMethod::Pratt | ZeroMethod::Zsplit => differences.to_vec(),
        };
        let magnitudes: Vec<f64> = ranked.iter().map(|d| d.abs()).collect();
        let (ranks, mut tie_groups) = rank_average_with_ties(&magnitudes);
        let has_ties = tie_groups.iter().any(|&t| t > 1);

        let mut r_plus = 0.0;
        let mut r_minus = 0.0;
        let mut zero_rank_sum = 0.0;
        let mut nonzero = Vec::with_capacity(ranked.len());
        for (&d, &rank) in ranked.iter().zip(&ranks) {
            if d > 0.0 {
                r_plus += rank;
                nonzero.push((rank, true));
            } else if d < 0.0 {
                r_minus += rank;
                nonzero.push((rank, false));
            } else {
                zero_rank_sum += rank;
            }
        }
        if zero_method == ZeroMethod::Zsplit {
            r_plus += zero_rank_sum / 2.0;
            r_minus += zero_rank_sum / 2.0;
        }

        let count = ranked.len();
        let c = count as f64;
        let mut mean = c * (c + 1.0) * 0.25;
        let mut variance_x24 = c * (c + 1.0) * (2.0 * c + 1.0);
        if zero_method == ZeroMethod::Pratt {
            let z = n_zero as f64;
            mean -= z * (z + 1.0) * 0.25;
            variance_x24 -= z * (z + 1.0) * (2.0 * z + 1.0);
            // Zeros rank lowest, so their tie group (if any) is the first; Pratt leaves it out of
            // the tie correction.
            if n_zero > 0 {
                tie_groups[0] = 0;
            }
        }
        let tie_correction: f64 = tie_groups
            .iter()
            .map(|&t| {
                let t = t as f64; // in f64: t³ would overflow usize for huge groups
                t * t * t - t
            })
            .sum();
        let sd = ((variance_x24 - tie_correction / 2.0) / 24.0).sqrt();
        SignedRanks { nonzero, n_zero, count, r_plus, r_minus, has_ties, mean, sd }
    }
}

/// Normal approximation: `z = (r_plus − mean) / sd`, optionally continuity-corrected.
/// Returns the p-value and the z statistic as scipy reports it (`−|z|` when two-sided).
fn asymptotic_p_value(ranks: &SignedRanks, alternative: Alternative, correction: bool) -> (f64, f64) {
    let mut z = (ranks.r_plus - ranks.mean) / ranks.sd;
    if correction {
        let sign = match alternative {
            Alternative::Greater => 1.0,
            Alternative::Less => -1.0,
            Alternative::TwoSided => numpy_sign(z),
        };
        z -= sign * 0.5 / ranks.sd;
    }
    match alternative {
        Alternative::Less => (probability(normal_cdf(z)), z),
        Alternative::Greater => (probability(normal_cdf(-z)), z),
        Alternative::TwoSided => (probability(2.0 * normal_cdf(-z.abs())), -z.abs()),
    }
}

/// numpy.sign: −1, 0 or 1, NaN for NaN (unlike `f64::signum`, which gives 1 for 0).
fn numpy_sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x // 0 or NaN
    }
}

/// Exact null distribution of the positive rank sum for `count` untied ranks, built by the
/// recursion of `scipy.stats._hypotests._get_wilcoxon_distr`: adding rank k halves every
/// probability and adds a copy shifted by k. pmf over r = 0..=count(count+1)/2.
///
/// Every entry is a count over 2^count. Up to 53 ranks the counts fit the 53-bit mantissa, so
/// every entry is exact; beyond, an entry can round once per step past the 53rd (relative error
/// at most (count − 53)·2⁻⁵³), while the small counts of the tails stay exact.
fn exact_null_pmf(count: usize) -> Vec<f64> {
    let mut pmf = vec![1.0];
    for k in 1..=count {
        let mut next = vec![0.0; k * (k + 1) / 2 + 1];
        let m = pmf.len();
        for (i, p) in pmf.iter().enumerate() {
            next[i] = p * 0.5;
        }
        let offset = next.len() - m;
        for (i, p) in pmf.iter().enumerate() {
            next[offset + i] += p * 0.5;
        }
        pmf = next;
    }
    pmf
}

/// Tail probabilities of the exact null, each summed directly over the tail asked for.
///
/// scipy's `WilcoxonDistribution` sums the long side and returns `1 − sum` whenever the tail
/// lies beyond the mean. Up to 53 ranks the two are identical (every partial sum is exact);
/// beyond, `1 − sum` is off by up to about one unit in the last place of 1 (2.2e-16), which is
/// the whole value for a small tail (and below 0 with a serial sum: −4.4e-16 for 60 equal
/// differences under `greater`). A direct sum of the tail's entries stays within a few units
/// in the last place of the exact rational at every size. Sums run in numpy's pairwise order,
/// so the long side (k on the near side of the mean) is bit-equal to scipy's.
struct ExactNull {
    pmf: Vec<f64>,
}

impl ExactNull {
    /// P(R ≤ k).
    fn cdf(&self, k: usize) -> f64 {
        let end = (k + 1).min(self.pmf.len());
        probability(pairwise_sum(&self.pmf[..end]))
    }

    /// P(R ≥ k).
    fn sf(&self, k: usize) -> f64 {
        let start = k.min(self.pmf.len());
        probability(pairwise_sum(&self.pmf[start..]))
    }
}

fn exact_p_value(ranks: &SignedRanks, alternative: Alternative) -> f64 {
    let null = ExactNull { pmf: exact_null_pmf(ranks.count) };
    // With ties or zeros r_plus may be a half-integer; scipy rounds conservatively (gh-19872).
    // r_plus ≥ 0 and at most a few thousand, so the casts are exact.
    let up = ranks.r_plus.ceil() as usize;
    let down = ranks.r_plus.floor() as usize;
    let p = match alternative {
        Alternative::Less => null.cdf(up),
        Alternative::Greater => null.sf(down),
        Alternative::TwoSided => 2.0 * null.sf(down).min(null.cdf(up)),
    };
    probability(p)
}

/// Exhaustive sign-flip permutation test (scipy `permutation_test(..., permutation_type=
/// 'samples')` with all 2ⁿ flips): the null statistic is `r_plus` of the flipped differences.
///
/// Zeros never become positive, and under `zsplit` they add the same constant to every flip,
/// so only the non-zero ranks vary; each zero doubles every count, which cancels in the ratio.
/// Ranks are half-integers, so doubled ranks are integers and the subset-sum counts are exact
/// (scipy's relative tolerance of 100·eps never matters for such sums).
fn permutation_p_value(ranks: &SignedRanks, alternative: Alternative) -> f64 {
    let doubled: Vec<usize> = ranks.nonzero.iter().map(|(r, _)| (2.0 * r).round() as usize).collect();
    let observed: usize = ranks.nonzero.iter().zip(&doubled).filter(|((_, positive), _)| *positive).map(|(_, d)| d).sum();
    let total: usize = doubled.iter().sum();
    // ways[s]: number of sign patterns whose positive doubled ranks sum to s.
    let mut ways = vec![0u64; total + 1];
    ways[0] = 1;
    let mut reach = 0;
    for &r in &doubled {
        for s in (0..=reach).rev() {
            ways[s + r] += ways[s];
        }
        reach += r;
    }
    let patterns = ways.iter().sum::<u64>() as f64;
    let at_most = ways[..=observed].iter().sum::<u64>() as f64 / patterns;
    let at_least = ways[observed..].iter().sum::<u64>() as f64 / patterns;
    let p = match alternative {
        Alternative::Less => at_most,
        Alternative::Greater => at_least,
        Alternative::TwoSided => 2.0 * at_most.min(at_least),
    };
    probability(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_null_for_three_ranks() {
        // Subsets of {1,2,3}: sums 0,1,2,3,3,4,5,6 -> pmf [1,1,1,2,1,1,1]/8.
        let pmf = exact_null_pmf(3);
        assert_eq!(pmf, vec![0.125, 0.125, 0.125, 0.25, 0.125, 0.125, 0.125]);
    }

    #[test]
    fn numpy_sign_keeps_zero() {
        assert_eq!(numpy_sign(0.0), 0.0);
        assert_eq!(numpy_sign(-2.0), -1.0);
        assert!(numpy_sign(f64::NAN).is_nan());
    }

    #[test]
    fn auto_picks_the_permutation_path_for_small_samples_with_zeros() {
        let d = [0.0, 2.0, 3.0, -1.0, -4.0, 0.0, 0.0, 8.0, 9.0, 2.0, -2.0, 5.0];
        let result = wilcoxon(&d, &WilcoxonOptions::default()).unwrap();
        assert_eq!(result.path, WilcoxonPath::ExhaustivePermutation);
        assert_eq!(result.statistic, 10.0);
    }
}
