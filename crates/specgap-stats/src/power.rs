//! Power of paired comparisons by task: what difference a design can detect, and how many
//! tasks and repeats a difference needs.
//!
//! Two routes, both for a two-sided test at level `alpha` of the mean of per-task differences
//! B − A:
//!
//! * **Closed form, paired t-test** (continuous measures: Score@k, Quality, a gap's
//!   difference). The power of the one-sample t-test of `n` task differences with
//!   standardised effect `d = Δ / sd(task differences)` is
//!   `P(T > t₁₋α/₂) + P(T < −t₁₋α/₂)` for `T` noncentral t with `n − 1` degrees of freedom and
//!   noncentrality `d·√n` — statsmodels' `TTestPower().power(effect_size, nobs, alpha,
//!   alternative='two-sided')` (`statsmodels.stats.power.ttest_power`), which
//!   [`paired_t_power`] reproduces; [`paired_t_detectable_effect`] and [`paired_t_nobs`]
//!   invert it as `TTestPower().solve_power` does. The noncentral t CDF is Lenth's (1989)
//!   series, Applied Statistics algorithm AS 243.
//! * **Seeded simulation** (binary measures with repeats: Success@k, DSR, the Res / Clean
//!   gap): per task, repeats are Bernoulli draws at the task's rate, the task values are the
//!   repeat means, and the same paired t-test is applied to each simulated design
//!   ([`simulated_binary_power`], [`simulated_binary_detectable`]). Binary task means from a
//!   few repeats are far from normal and many tasks sit at 0 or 1, so the closed form would
//!   misstate their power; the simulation keeps each task's own rate.
//!
//! [`simulated_normal_power`] simulates the closed form's own model (task differences normal
//! around Δ, with a task and a repeat component), the check that the planner's closed form
//! says what it means.

use statrs::distribution::{Continuous, ContinuousCDF, StudentsT};
use statrs::function::beta::checked_beta_reg;
use statrs::function::gamma::ln_gamma;

use crate::error::{StatsError, ensure_len};
use crate::resample::Xoshiro256PlusPlus;
use crate::special::{normal_cdf, normal_ppf, probability, student_t_sf};

/// Two-sided power of the paired (one-sample) t-test of `nobs` task differences with
/// standardised effect `effect_size` (Δ / sd of the task differences) at level `alpha`:
/// statsmodels `TTestPower().power(effect_size, nobs, alpha, alternative='two-sided')`.
/// `nobs` may be fractional (the degrees of freedom are `nobs − 1`), as in statsmodels.
///
/// # Errors
/// [`StatsError::OutOfRange`] for `alpha` outside (0, 1), `nobs` ≤ 1 or a non-finite effect.
pub fn paired_t_power(effect_size: f64, nobs: f64, alpha: f64) -> Result<f64, StatsError> {
    check_alpha(alpha)?;
    check_nobs(nobs)?;
    if !effect_size.is_finite() {
        return Err(StatsError::OutOfRange { what: "effect size", expected: "a finite number", value: effect_size });
    }
    Ok(power_unchecked(effect_size, nobs, alpha))
}

fn power_unchecked(effect_size: f64, nobs: f64, alpha: f64) -> f64 {
    let df = nobs - 1.0;
    let critical = t_isf(alpha / 2.0, df);
    let nc = effect_size * nobs.sqrt();
    probability((1.0 - nct_cdf(critical, df, nc)) + nct_cdf(-critical, df, nc))
}

/// The smallest standardised effect (Δ / sd of task differences, > 0) that the paired t-test
/// of `nobs` tasks detects with probability `power` at level `alpha`:
/// `TTestPower().solve_power(nobs=nobs, alpha=alpha, power=power)`. Solved by bisection to a
/// relative 1e-13.
///
/// # Errors
/// As [`paired_t_power`]; [`StatsError::OutOfRange`] for `power` outside (alpha, 1).
pub fn paired_t_detectable_effect(nobs: f64, alpha: f64, power: f64) -> Result<f64, StatsError> {
    check_alpha(alpha)?;
    check_nobs(nobs)?;
    check_power(power, alpha)?;
    let mut high = 1.0;
    while power_unchecked(high, nobs, alpha) < power {
        high *= 2.0;
        if high > 1e6 {
            return Ok(f64::INFINITY);
        }
    }
    Ok(bisect(0.0, high, |d| power_unchecked(d, nobs, alpha) >= power))
}

/// The (fractional) number of tasks at which the paired t-test detects a standardised effect
/// `effect_size` with probability `power`: `TTestPower().solve_power(effect_size=…,
/// alpha=…, power=…)`. A design needs `ceil` of it tasks. Searched from 2 tasks up: a value of
/// 2 means two tasks already suffice.
///
/// # Errors
/// As [`paired_t_detectable_effect`]; [`StatsError::OutOfRange`] for an effect of 0 (never
/// detectable with the stated power).
pub fn paired_t_nobs(effect_size: f64, alpha: f64, power: f64) -> Result<f64, StatsError> {
    check_alpha(alpha)?;
    check_power(power, alpha)?;
    let effect = effect_size.abs();
    if !effect.is_finite() || effect == 0.0 {
        return Err(StatsError::OutOfRange { what: "effect size", expected: "a finite nonzero number", value: effect_size });
    }
    if power_unchecked(effect, 2.0, alpha) >= power {
        return Ok(2.0);
    }
    let mut high = 4.0;
    while power_unchecked(effect, high, alpha) < power {
        high *= 2.0;
    }
    Ok(bisect(2.0, high, |n| power_unchecked(effect, n, alpha) >= power))
}

/// The boundary between `low` (predicate false) and `high` (true) of a monotone predicate.
fn bisect(mut low: f64, mut high: f64, holds: impl Fn(f64) -> bool) -> f64 {
    for _ in 0..200 {
        let middle = 0.5 * (low + high);
        if middle <= low || middle >= high || high - low <= 1e-13 * high {
            break;
        }
        if holds(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    0.5 * (low + high)
}

fn check_alpha(alpha: f64) -> Result<(), StatsError> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(StatsError::OutOfRange { what: "alpha", expected: "(0, 1)", value: alpha });
    }
    Ok(())
}

fn check_power(power: f64, alpha: f64) -> Result<(), StatsError> {
    if !(power > alpha && power < 1.0) {
        return Err(StatsError::OutOfRange { what: "power", expected: "(alpha, 1)", value: power });
    }
    Ok(())
}

fn check_nobs(nobs: f64) -> Result<(), StatsError> {
    if !(nobs > 1.0 && nobs.is_finite()) {
        return Err(StatsError::OutOfRange { what: "number of tasks", expected: "(1, inf)", value: nobs });
    }
    Ok(())
}

/// Upper quantile of Student's t: `t` with `P(T > t) = p` (scipy `stats.t.isf(p, df)`).
/// statrs' inverse (an inverse incomplete beta) starts three Newton steps on scipy's
/// survival function, which bring it to about an ulp.
fn t_isf(p: f64, df: f64) -> f64 {
    let Ok(dist) = StudentsT::new(0.0, 1.0, df) else {
        return f64::NAN;
    };
    let mut t = dist.inverse_cdf(1.0 - p);
    for _ in 0..3 {
        let density = dist.pdf(t);
        // NaN or 0: no Newton step possible.
        if density.is_nan() || density <= 0.0 {
            break;
        }
        t += (student_t_sf(t, df) - p) / density;
    }
    t
}

/// CDF of the noncentral t with `df` degrees of freedom and noncentrality `nc` at `t`
/// (scipy `special.nctdtr(df, nc, t)`), by AS 243 (Lenth 1989): for `t ≥ 0`,
/// `F = Φ(−δ) + ½ Σⱼ [pⱼ I_x(j + ½, ν/2) + qⱼ I_x(j + 1, ν/2)]` with `x = t² / (t² + ν)`,
/// `pⱼ = e^{−δ²/2} (δ²/2)ʲ / j!`, `qⱼ = δ e^{−δ²/2} (δ²/2)ʲ / (√2 Γ(j + 3/2))`; for `t < 0`,
/// `F(t; ν, δ) = 1 − F(−t; ν, −δ)`.
pub(crate) fn nct_cdf(t: f64, df: f64, nc: f64) -> f64 {
    if t.is_nan() || df.is_nan() || nc.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t >= 0.0 { probability(lenth_series(t, df, nc)) } else { probability(1.0 - lenth_series(-t, df, -nc)) }
}

fn lenth_series(t: f64, df: f64, nc: f64) -> f64 {
    if t.is_infinite() {
        return 1.0;
    }
    let x = t * t / (t * t + df);
    let lambda = nc * nc / 2.0;
    let mut sum = 0.0;
    if x > 0.0 {
        let beta = |a: f64| checked_beta_reg(a, df / 2.0, x).unwrap_or(f64::NAN);
        let ln_lambda = lambda.ln();
        for j in 0..100_000_u32 {
            let jf = f64::from(j);
            let ln_power = if j == 0 { 0.0 } else { jf * ln_lambda };
            let p = (-lambda + ln_power - ln_gamma(jf + 1.0)).exp();
            let q = if lambda == 0.0 { 0.0 } else { nc / std::f64::consts::SQRT_2 * (-lambda + ln_power - ln_gamma(jf + 1.5)).exp() };
            let term = p * beta(jf + 0.5) + q * beta(jf + 1.0);
            sum += term;
            let past_mode = jf > lambda;
            if (past_mode && p < 1e-20 && term.abs() < 1e-20) || (lambda == 0.0 && j == 0) {
                break;
            }
        }
    }
    normal_cdf(-nc) + 0.5 * sum
}

/// Settings of a seeded power simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Simulation {
    /// Simulated designs (each one a full run of the paired test).
    pub simulations: usize,
    /// Seed of the xoshiro256++ stream (the bootstrap's generator); every call with the same
    /// seed draws the same uniforms, so power is compared across shifts on common numbers.
    pub seed: u64,
}

/// A binary design: per task, the rate of side A and the repeats of each side.
#[derive(Debug, Clone, PartialEq)]
pub struct BinaryDesign {
    /// Per-task success rate of side A (and of B before the shift), in [0, 1].
    pub rates: Vec<f64>,
    /// Repeats of each task on side A (≥ 1).
    pub repeats_a: Vec<usize>,
    /// Repeats of each task on side B (≥ 1).
    pub repeats_b: Vec<usize>,
}

impl BinaryDesign {
    /// The rates of side B under an additive `shift`, each clamped to [0, 1].
    pub fn shifted(&self, shift: f64) -> Vec<f64> {
        self.rates.iter().map(|r| (r + shift).clamp(0.0, 1.0)).collect()
    }

    /// The mean over tasks of B's shifted rate minus A's rate: the true difference a shift
    /// makes (smaller than the shift where rates hit 0 or 1).
    pub fn difference(&self, shift: f64) -> f64 {
        let shifted = self.shifted(shift);
        shifted.iter().zip(&self.rates).map(|(b, a)| b - a).sum::<f64>() / self.rates.len() as f64
    }

    fn validate(&self) -> Result<(), StatsError> {
        ensure_len("tasks", self.rates.len(), 2)?;
        crate::error::ensure_same_len("rates and repeats of A", self.rates.len(), self.repeats_a.len())?;
        crate::error::ensure_same_len("rates and repeats of B", self.rates.len(), self.repeats_b.len())?;
        if let Some(bad) = self.rates.iter().find(|r| !(0.0..=1.0).contains(*r)) {
            return Err(StatsError::OutOfRange { what: "per-task rate", expected: "[0, 1]", value: *bad });
        }
        if self.repeats_a.iter().chain(&self.repeats_b).any(|r| *r == 0) {
            return Err(StatsError::InvalidCount { what: "at least one repeat per task and side", detail: "a task with 0 repeats".into() });
        }
        Ok(())
    }
}

/// A uniform in [0, 1) from the top 53 bits of a draw.
fn uniform(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Whether the two-sided paired t-test of `differences` rejects at the critical value: |t| >
/// `critical`. With every difference equal the t statistic is ±inf for a nonzero mean (a
/// rejection) and undefined for a zero mean (no rejection).
fn rejects(differences: &[f64], critical: f64) -> bool {
    let n = differences.len() as f64;
    let mean = differences.iter().sum::<f64>() / n;
    let ss: f64 = differences.iter().map(|d| (d - mean) * (d - mean)).sum();
    let sd = (ss / (n - 1.0)).sqrt();
    if sd <= 1e-12 * mean.abs().max(1e-300) || ss == 0.0 {
        return mean.abs() > 1e-12;
    }
    (mean / (sd / n.sqrt())).abs() > critical
}

/// Simulated power of the paired t-test (task means of Bernoulli repeats) when side B's
/// rates are side A's plus `shift` (clamped): the share of `simulation.simulations` designs
/// whose test rejects at `alpha`.
///
/// # Errors
/// [`StatsError::TooFewObservations`] for fewer than two tasks or no simulation;
/// [`StatsError::LengthMismatch`], [`StatsError::OutOfRange`], [`StatsError::InvalidCount`]
/// for an inconsistent design or `alpha` outside (0, 1).
pub fn simulated_binary_power(design: &BinaryDesign, shift: f64, alpha: f64, simulation: &Simulation) -> Result<f64, StatsError> {
    design.validate()?;
    check_alpha(alpha)?;
    ensure_len("simulations", simulation.simulations, 1)?;
    Ok(binary_power_unchecked(design, shift, alpha, simulation))
}

fn binary_power_unchecked(design: &BinaryDesign, shift: f64, alpha: f64, simulation: &Simulation) -> f64 {
    binary_power_with(design, shift, alpha, simulation, |successes, repeats| successes as f64 / repeats as f64)
}

/// The simulated power of the paired t-test on per-task values `value(successes, repeats)`.
fn binary_power_with(design: &BinaryDesign, shift: f64, alpha: f64, simulation: &Simulation, value: impl Fn(usize, usize) -> f64) -> f64 {
    let tasks = design.rates.len();
    let critical = t_isf(alpha / 2.0, (tasks - 1) as f64);
    let shifted = design.shifted(shift);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(simulation.seed);
    let mut differences = vec![0.0; tasks];
    let mut rejections = 0usize;
    let successes =
        |rng: &mut Xoshiro256PlusPlus, rate: f64, repeats: usize| -> usize { (0..repeats).filter(|_| uniform(rng) < rate).count() };
    for _ in 0..simulation.simulations {
        for (t, difference) in differences.iter_mut().enumerate() {
            let (ra, rb) = (design.repeats_a[t], design.repeats_b[t]);
            let a = value(successes(&mut rng, design.rates[t], ra), ra);
            let b = value(successes(&mut rng, shifted[t], rb), rb);
            *difference = b - a;
        }
        if rejects(&differences, critical) {
            rejections += 1;
        }
    }
    rejections as f64 / simulation.simulations as f64
}

/// Simulated power of the paired t-test on per-task pass^k estimates (tau-bench, Yao et al.
/// 2024 §4: `C(c, k) / C(r, k)` for `c` successes of `r` repeats, unbiased for `p^k`), side B
/// at the rates shifted by `shift`.
///
/// # Errors
/// As [`simulated_binary_power`]; [`StatsError::InvalidCount`] when a task has fewer than `k`
/// repeats or `k` is 0.
pub fn simulated_pass_hat_k_power(
    design: &BinaryDesign,
    shift: f64,
    k: usize,
    alpha: f64,
    simulation: &Simulation,
) -> Result<f64, StatsError> {
    design.validate()?;
    check_alpha(alpha)?;
    ensure_len("simulations", simulation.simulations, 1)?;
    if k == 0 || design.repeats_a.iter().chain(&design.repeats_b).any(|r| *r < k) {
        return Err(StatsError::InvalidCount { what: "1 <= k <= repeats of every task", detail: format!("k = {k}") });
    }
    Ok(binary_power_with(design, shift, alpha, simulation, |c, r| {
        if c < k {
            return 0.0;
        }
        (0..k).map(|i| (c - i) as f64 / (r - i) as f64).product()
    }))
}

/// The smallest detectable shift of a binary design, found by simulation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimulatedDetectable {
    /// The additive shift of every task's rate (signed like the direction asked for).
    pub shift: f64,
    /// The true mean difference it makes ([`BinaryDesign::difference`]).
    pub difference: f64,
    /// Simulated power at that shift (≥ the target).
    pub power: f64,
}

/// The smallest shift (in the direction of `direction`'s sign; up for 0) whose simulated
/// power reaches `power` at `alpha`, by bisection on the shift (24 steps, common random
/// numbers: every step draws the same uniforms). `None` when even the largest shift (every
/// rate moved to 0 or 1) stays below `power`: no difference of that sign is detectable.
///
/// # Errors
/// As [`simulated_binary_power`]; [`StatsError::OutOfRange`] for `power` outside (alpha, 1).
pub fn simulated_binary_detectable(
    design: &BinaryDesign,
    direction: f64,
    alpha: f64,
    power: f64,
    simulation: &Simulation,
) -> Result<Option<SimulatedDetectable>, StatsError> {
    design.validate()?;
    check_alpha(alpha)?;
    check_power(power, alpha)?;
    ensure_len("simulations", simulation.simulations, 1)?;
    let sign = if direction < 0.0 { -1.0 } else { 1.0 };
    let power_at = |size: f64| binary_power_unchecked(design, sign * size, alpha, simulation);
    if power_at(1.0) < power {
        return Ok(None);
    }
    let (mut low, mut high) = (0.0_f64, 1.0_f64);
    for _ in 0..24 {
        let middle = 0.5 * (low + high);
        if power_at(middle) >= power {
            high = middle;
        } else {
            low = middle;
        }
    }
    Ok(Some(SimulatedDetectable { shift: sign * high, difference: design.difference(sign * high), power: power_at(high) }))
}

/// Simulated power of the paired t-test under the closed form's model: `tasks` task
/// differences `Δ + u + ē_B − ē_A`, `u ~ N(0, task_sd²)` (the task × condition spread of the
/// true difference), `ē ~ N(0, repeat_sd² / repeats)` per side (the mean of `repeats`
/// repeats). Its expectation is [`paired_t_power`] with effect
/// `Δ / sqrt(task_sd² + 2·repeat_sd²/repeats)`.
///
/// # Errors
/// [`StatsError::TooFewObservations`] for fewer than two tasks, no repeat or no simulation;
/// [`StatsError::OutOfRange`] for `alpha` outside (0, 1) or a negative or non-finite sd.
pub fn simulated_normal_power(
    tasks: usize,
    repeats: usize,
    difference: f64,
    task_sd: f64,
    repeat_sd: f64,
    alpha: f64,
    simulation: &Simulation,
) -> Result<f64, StatsError> {
    ensure_len("tasks", tasks, 2)?;
    ensure_len("repeats", repeats, 1)?;
    ensure_len("simulations", simulation.simulations, 1)?;
    check_alpha(alpha)?;
    for (what, sd) in [("task sd", task_sd), ("repeat sd", repeat_sd)] {
        if !(sd >= 0.0 && sd.is_finite()) {
            return Err(StatsError::OutOfRange { what, expected: "[0, inf)", value: sd });
        }
    }
    let critical = t_isf(alpha / 2.0, (tasks - 1) as f64);
    let side_sd = repeat_sd / (repeats as f64).sqrt();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(simulation.seed);
    let mut normal = || normal_ppf(((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64));
    let mut differences = vec![0.0; tasks];
    let mut rejections = 0usize;
    for _ in 0..simulation.simulations {
        for d in differences.iter_mut() {
            *d = difference + task_sd * normal() + side_sd * normal() - side_sd * normal();
        }
        if rejects(&differences, critical) {
            rejections += 1;
        }
    }
    Ok(rejections as f64 / simulation.simulations as f64)
}

/// The Monte Carlo standard error of a simulated power `p` from `simulations` designs:
/// `sqrt(p (1 − p) / simulations)`.
pub fn monte_carlo_se(power: f64, simulations: usize) -> f64 {
    (power * (1.0 - power) / simulations as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn central_t_is_the_zero_noncentrality_case() {
        // F(t; ν, 0) = 1 − sf(t).
        for (t, df) in [(0.7, 4.0), (2.1, 11.0), (-1.3, 7.0)] {
            assert!((nct_cdf(t, df, 0.0) - (1.0 - student_t_sf(t, df))).abs() < 1e-14);
        }
        assert_eq!(nct_cdf(0.0, 5.0, 0.0), 0.5);
    }

    #[test]
    fn quantile_inverts_the_survival_function() {
        let t = t_isf(0.025, 9.0);
        assert!((student_t_sf(t, 9.0) - 0.025).abs() < 1e-16);
    }

    #[test]
    fn rejection_edges() {
        assert!(rejects(&[0.5, 0.5, 0.5], 2.0));
        assert!(!rejects(&[0.0, 0.0, 0.0], 2.0));
    }
}
