//! The smallest difference a comparison's design can detect (issue 28): for every measure
//! `compare` prints, the minimum detectable difference (MDD) at 80% power and a two-sided
//! level of 0.05 — divided by the number of tests when `compare` tests a family, the level
//! Holm's procedure applies to its smallest p-value (Holm 1979), so a difference of that size
//! is detected whatever the family's other p-values are — for the design actually run: the
//! paired tasks, and on each side the repeats of each task.
//!
//! * Continuous measures (Score@k, Quality, Recall, Precision, Ask-F1), and binary ones
//!   without repeats: the paired t-test on task means, `MDD = d* · sd(task differences)` with
//!   `d*` the standardised effect `specgap_stats::paired_t_detectable_effect` solves
//!   (statsmodels `TTestPower().solve_power`).
//! * Binary measures with repeats (Success@k, DSR, Valid): seeded simulation from the observed
//!   per-task rates of side A, B's rates shifted in the direction of the observed difference
//!   (`specgap_stats::simulated_binary_detectable`, 2,000 designs, the comparison's seed); the
//!   MDD is the mean difference of the smallest shift reaching 80% power.
//!
//! The MDD is a property of the design, not a test: the verdict says whether the observed
//! difference is at least that large ("detectable at this size") or not ("below what this
//! design can detect" — a true difference of the observed size would be missed more than
//! 20% of the time).

use serde::Serialize;
use specgap_stats::{BinaryDesign, Simulation, paired_t_detectable_effect, sample_sd, simulated_binary_detectable};

use crate::compare::MeasureComparison;

/// Power the MDD is computed for.
pub const POWER: f64 = 0.8;
/// Two-sided level of one test (before the family division).
pub const ALPHA: f64 = 0.05;
/// Simulated designs per power evaluation of a binary measure with repeats.
pub const SIMULATIONS: usize = 2000;

/// The measures whose per-episode values are 0 or 1.
pub const BINARY_MEASURES: [&str; 4] = ["Success@1", "Success@4", "DSR", "Valid"];

/// The verdict when the observed difference reaches the MDD.
pub const DETECTABLE: &str = "detectable at this size";
/// The verdict when it does not (or when no difference of its sign is detectable).
pub const BELOW: &str = "below what this design can detect";
/// The verdict when the design gives no MDD (fewer than two tasks, no spread).
pub const NOT_ESTIMABLE: &str = "cannot be estimated";

/// How the MDD of a measure was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DetectableMethod {
    /// Closed form, paired t-test on task means.
    PairedT,
    /// Seeded simulation from per-task rates.
    Simulation,
}

/// The minimum detectable difference of one compared measure (module guide).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detectable {
    /// How it was computed; absent when it could not be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<DetectableMethod>,
    /// The two-sided level used: 0.05 / tests in the family.
    pub alpha: f64,
    /// Always [`POWER`].
    pub power: f64,
    /// The MDD (a magnitude, in the measure's units); absent when not estimable or when no
    /// difference of the observed sign reaches the power.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<f64>,
    /// Simulated designs (simulation only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulations: Option<usize>,
    /// Simulation seed (simulation only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// [`DETECTABLE`], [`BELOW`] or [`NOT_ESTIMABLE`].
    pub verdict: &'static str,
    /// Why there is no MDD, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The MDD of `measure` in a family of `family_tests` tests, seeded with `seed`.
pub fn detectable(measure: &MeasureComparison, family_tests: usize, seed: u64) -> Detectable {
    let alpha = ALPHA / family_tests.max(1) as f64;
    let missing = |reason: &str, method: Option<DetectableMethod>| Detectable {
        method,
        alpha,
        power: POWER,
        difference: None,
        simulations: None,
        seed: None,
        verdict: NOT_ESTIMABLE,
        reason: Some(reason.to_string()),
    };
    if measure.per_task.len() < 2 {
        return missing("fewer than two paired tasks", None);
    }
    let repeated = measure.per_task.iter().any(|p| p.repeats_a > 1 || p.repeats_b > 1);
    if BINARY_MEASURES.contains(&measure.measure.as_str()) && repeated {
        return simulated(measure, alpha, seed);
    }
    let differences: Vec<f64> = measure.per_task.iter().map(|p| p.b - p.a).collect();
    let spread = sample_sd(&differences).unwrap_or(f64::NAN);
    if spread.is_nan() || spread <= 0.0 {
        return missing("every task differs by the same amount: no spread to scale the test", Some(DetectableMethod::PairedT));
    }
    match paired_t_detectable_effect(differences.len() as f64, alpha, POWER) {
        Ok(effect) => {
            let mdd = effect * spread;
            Detectable {
                method: Some(DetectableMethod::PairedT),
                alpha,
                power: POWER,
                difference: Some(mdd),
                simulations: None,
                seed: None,
                verdict: verdict(measure.difference, Some(mdd)),
                reason: None,
            }
        }
        Err(e) => missing(&e.to_string(), Some(DetectableMethod::PairedT)),
    }
}

fn simulated(measure: &MeasureComparison, alpha: f64, seed: u64) -> Detectable {
    let design = BinaryDesign {
        rates: measure.per_task.iter().map(|p| p.a).collect(),
        repeats_a: measure.per_task.iter().map(|p| p.repeats_a).collect(),
        repeats_b: measure.per_task.iter().map(|p| p.repeats_b).collect(),
    };
    let simulation = Simulation { simulations: SIMULATIONS, seed };
    let found = simulated_binary_detectable(&design, measure.difference, alpha, POWER, &simulation);
    let (difference, reason) = match found {
        Ok(Some(found)) => (Some(found.difference.abs()), None),
        Ok(None) => (None, Some("no difference of the observed sign reaches the power: side A's rates leave no room".to_string())),
        Err(e) => (None, Some(e.to_string())),
    };
    Detectable {
        method: Some(DetectableMethod::Simulation),
        alpha,
        power: POWER,
        difference,
        simulations: Some(SIMULATIONS),
        seed: Some(seed),
        verdict: match (&difference, &reason) {
            (Some(_), _) => verdict(measure.difference, difference),
            (None, Some(r)) if r.starts_with("no difference") => BELOW,
            _ => NOT_ESTIMABLE,
        },
        reason,
    }
}

fn verdict(observed: f64, mdd: Option<f64>) -> &'static str {
    match mdd {
        Some(mdd) if observed.abs() >= mdd => DETECTABLE,
        _ => BELOW,
    }
}

/// The detectable-difference table of one pair's measures (Markdown), after its summary
/// table: per measure the observed difference, the MDD, how it was computed and the verdict.
pub fn render_detectable(out: &mut String, measures: &[MeasureComparison]) {
    use std::fmt::Write as _;
    let rows: Vec<(&MeasureComparison, &Detectable)> = measures.iter().filter_map(|m| m.detectable.as_ref().map(|d| (m, d))).collect();
    let Some((_, first)) = rows.first() else { return };
    let _ = write!(
        out,
        "\nSmallest difference this design detects with {:.0}% power at two-sided α = {} (0.05 / {} tests of the family, Holm's first step), paired by task:\n\n",
        first.power * 100.0,
        format_alpha(first.alpha),
        (ALPHA / first.alpha).round()
    );
    out.push_str("| measure | B − A | detectable | method | verdict |\n| --- | ---: | ---: | --- | --- |\n");
    for (m, d) in rows {
        let method = match d.method {
            Some(DetectableMethod::PairedT) => "paired t-test on task means".to_string(),
            Some(DetectableMethod::Simulation) => format!(
                "simulation from per-task rates ({} designs, seed {})",
                d.simulations.unwrap_or(SIMULATIONS),
                d.seed.unwrap_or_default()
            ),
            None => crate::render::ABSENT.to_string(),
        };
        let verdict = match &d.reason {
            Some(reason) => format!("{} ({reason})", d.verdict),
            None => d.verdict.to_string(),
        };
        let _ = writeln!(
            out,
            "| {} | {:+.4} | {} | {method} | {verdict} |",
            m.measure,
            m.difference,
            d.difference.map_or_else(|| crate::render::ABSENT.to_string(), |v| format!("±{v:.4}"))
        );
    }
}

fn format_alpha(alpha: f64) -> String {
    let text = format!("{alpha:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}
