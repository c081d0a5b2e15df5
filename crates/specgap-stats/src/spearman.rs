//! Spearman rank correlation with its two-sided p-value.
//!
//! Source: Spearman (1904/1961); seed 002 §5.2, §5.3 (Fig. 4) and App. A.5 report ρ with p-values
//! across configurations. Matches `scipy.stats.spearmanr(x, y)` (scipy 1.17) for 1-D input:
//! average ranks for ties, Pearson correlation of the ranks in `numpy.corrcoef`'s order of
//! operations (covariance scaled by the reciprocal 1/(n − 1), divided by each standard
//! deviation in turn, clipped to [−1, 1]), then `t = ρ·sqrt(max(0, (n − 2) / ((1 + ρ)(1 − ρ))))`
//! and `p = 2·sf_t(|t|, n − 2)` (`scipy.stats._stats_py._get_pvalue` with the Student t of
//! n − 2 degrees of freedom), clamped to [0, 1].
//!
//! The order matters at the edge: for perfectly monotone ranks the covariance equals both
//! variances, and `v·(1/(n−1))` versus `v/(n−1)` decides whether `cov/sd/sd` rounds to 1.0 or
//! to 0.9999999999999998 (n = 7); through the t distribution that is p = 0 versus 1.4e-39.
//! With numpy's order the result is scipy's for every n (scipy itself gives
//! 0.9999999999999999 at n = 5, p = 1.4e-24).

use crate::describe::{mean_unchecked, rank_average_with_ties};
use crate::error::{StatsError, ensure_finite, ensure_len, ensure_same_len};
use crate::special::{probability, student_t_sf};

/// A correlation coefficient with its two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Correlation {
    /// The coefficient, in [−1, 1]; NaN where undefined.
    pub rho: f64,
    /// Two-sided p-value against ρ = 0, in [0, 1]; NaN where undefined.
    pub p_value: f64,
}

/// Spearman's ρ between `x` and `y` (aligned observations), with scipy's two-sided p-value.
///
/// NaN cases, as scipy: one observation gives ρ = NaN and p = NaN; a constant `x` or `y` gives
/// ρ = NaN and p = NaN (scipy also warns `ConstantInputWarning`); two observations give
/// ρ = ±1 and p = NaN (zero degrees of freedom). With n ≥ 3 and |ρ| = 1, p = 0.
///
/// # Errors
/// [`StatsError::LengthMismatch`] when the lengths differ, [`StatsError::TooFewObservations`]
/// for empty input (scipy returns NaN there), [`StatsError::NonFinite`] for NaN or infinite
/// values (scipy propagates NaN).
pub fn spearman(x: &[f64], y: &[f64]) -> Result<Correlation, StatsError> {
    ensure_same_len("x and y", x.len(), y.len())?;
    ensure_len("x and y", x.len(), 1)?;
    ensure_finite("x", x)?;
    ensure_finite("y", y)?;
    let undefined = Correlation { rho: f64::NAN, p_value: f64::NAN };
    if x.len() == 1 || is_constant(x) || is_constant(y) {
        return Ok(undefined);
    }
    let rho = pearson_like_numpy(&rank_average_with_ties(x).0, &rank_average_with_ties(y).0);
    let dof = (x.len() - 2) as f64;
    // Clip tiny negative values from rounding, as scipy does; |ρ| = 1 gives t = ±inf.
    let t = rho * (dof / ((rho + 1.0) * (1.0 - rho))).max(0.0).sqrt();
    let p_value = probability(2.0 * student_t_sf(t.abs(), dof));
    Ok(Correlation { rho, p_value })
}

fn is_constant(values: &[f64]) -> bool {
    values.iter().all(|v| *v == values[0])
}

/// Pearson correlation in numpy.corrcoef's order of operations: `numpy.cov` scales the
/// cross-products by the reciprocal `1 / (n − 1)` (`c *= np.true_divide(1, fact)`), the
/// covariance is divided by the second standard deviation, then by the first, and the result
/// clipped to [−1, 1].
fn pearson_like_numpy(a: &[f64], b: &[f64]) -> f64 {
    let (mean_a, mean_b) = (mean_unchecked(a), mean_unchecked(b));
    let mut cross = 0.0;
    let mut square_a = 0.0;
    let mut square_b = 0.0;
    for (u, v) in a.iter().zip(b) {
        let (du, dv) = (u - mean_a, v - mean_b);
        cross += du * dv;
        square_a += du * du;
        square_b += dv * dv;
    }
    let reciprocal = 1.0 / (a.len() - 1) as f64;
    let covariance = cross * reciprocal;
    let (sd_a, sd_b) = ((square_a * reciprocal).sqrt(), (square_b * reciprocal).sqrt());
    (covariance / sd_b / sd_a).clamp(-1.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_monotone_relation() {
        let result = spearman(&[1.0, 2.0, 3.0, 4.0], &[10.0, 20.0, 25.0, 100.0]).unwrap();
        assert_eq!(result.rho, 1.0);
        assert_eq!(result.p_value, 0.0);
    }

    #[test]
    fn two_points_have_no_p_value() {
        let result = spearman(&[1.0, 2.0], &[2.0, 1.0]).unwrap();
        // scipy.stats.spearmanr([1, 2], [2, 1]) gives the same rounded value.
        assert_eq!(result.rho, -0.9999999999999999);
        assert!(result.p_value.is_nan());
    }
}
