//! Thin, panic-free wrappers for the few distribution functions the tests need.
//!
//! The normal CDF uses `libm::erfc` (the FreeBSD/musl implementation, accurate to about an
//! ulp): statrs 0.18's `erfc` is off by up to ~1e-10 relative, which would show in p-values
//! compared with scipy at 1e-12. The normal quantile (statrs `erfc_inv`) and Student's t
//! (statrs `beta_reg`) agree with scipy to 1e-12 on the fixture. statrs' `inverse_cdf` panics
//! outside [0, 1] (including NaN) and `StudentsT::new` rejects zero degrees of freedom; scipy
//! answers NaN (or ±inf) there, so these wrappers do the same before calling statrs.

use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::function::erf;
use std::f64::consts::SQRT_2;

/// `p` clamped to [0, 1], NaN kept: the last step of every p-value this crate returns, so
/// that rounding (a sum of probabilities slightly above 1, a difference slightly below 0) never
/// leaves the unit interval. (`f64::clamp` propagates NaN, which is what scipy's NaN cases need.)
pub(crate) fn probability(p: f64) -> f64 {
    p.clamp(0.0, 1.0)
}

/// Standard normal CDF Φ(x) (scipy.special.ndtr). NaN in, NaN out.
pub(crate) fn normal_cdf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    0.5 * libm::erfc(-x / SQRT_2)
}

/// Standard normal quantile Φ⁻¹(p) (scipy.special.ndtri): −inf at 0, +inf at 1, NaN outside
/// [0, 1] or for NaN.
pub(crate) fn normal_ppf(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    -SQRT_2 * erf::erfc_inv(2.0 * p)
}

/// Survival function of Student's t with `df` degrees of freedom (scipy.special.stdtr(df, -t)).
/// NaN when `t` is NaN or `df` is not positive (scipy's answer for n = 2 in Spearman).
pub(crate) fn student_t_sf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => dist.sf(t),
        Err(_) => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_functions_handle_the_edges_like_scipy() {
        assert_eq!(normal_cdf(0.0), 0.5);
        assert!(normal_cdf(f64::NAN).is_nan());
        assert_eq!(normal_ppf(0.0), f64::NEG_INFINITY);
        assert_eq!(normal_ppf(1.0), f64::INFINITY);
        assert!(normal_ppf(1.5).is_nan());
        assert!(normal_ppf(f64::NAN).is_nan());
        // scipy.special.ndtri(0.975) = 1.959963984540054
        assert!((normal_ppf(0.975) - 1.959963984540054).abs() < 1e-15);
    }

    #[test]
    fn probabilities_stay_in_the_unit_interval() {
        assert_eq!(probability(-4.440892098500626e-16), 0.0);
        assert_eq!(probability(1.0000000000000002), 1.0);
        assert_eq!(probability(0.25), 0.25);
        assert!(probability(f64::NAN).is_nan());
    }

    #[test]
    fn student_t_sf_edges() {
        assert!(student_t_sf(1.0, 0.0).is_nan());
        assert_eq!(student_t_sf(f64::INFINITY, 3.0), 0.0);
        assert_eq!(student_t_sf(0.0, 3.0), 0.5);
    }
}
