//! Holm's step-down adjustment of a family of p-values.
//!
//! Source: Holm (1979), "A simple sequentially rejective multiple test procedure"; seed 002
//! §5.1 applies it to the paired Wilcoxon contrasts, Fig. 4 and Table 11 over 24
//! comparisons. Matches `statsmodels.stats.multitest.multipletests(p, method='holm')[1]`.

use crate::error::StatsError;

/// Holm-adjusted p-values, aligned with the input.
///
/// With the m p-values sorted ascending as p₍₁₎ ≤ … ≤ p₍ₘ₎, the adjusted value of p₍ᵢ₎ is
/// `min(1, max_{j ≤ i} (m − j + 1) · p₍ⱼ₎)`: the running maximum keeps the adjusted values in
/// the order of the raw ones, and values above 1 are capped at 1. Tied p-values receive the
/// same adjusted value whatever their order. An empty family gives an empty vector.
///
/// # Errors
/// [`StatsError::OutOfRange`] for a p-value outside [0, 1] or NaN.
pub fn holm_adjust(p_values: &[f64]) -> Result<Vec<f64>, StatsError> {
    if let Some(&bad) = p_values.iter().find(|p| !(0.0..=1.0).contains(*p)) {
        return Err(StatsError::OutOfRange { what: "p-value", expected: "[0, 1]", value: bad });
    }
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut adjusted = vec![0.0; m];
    let mut running_max = 0.0_f64;
    for (position, &index) in order.iter().enumerate() {
        let multiplier = (m - position) as f64;
        running_max = running_max.max(p_values[index] * multiplier);
        adjusted[index] = running_max.min(1.0);
    }
    Ok(adjusted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_maximum_keeps_the_raw_order() {
        // Dyadic values keep the products exact. Sorted: 0.0625*3 = 0.1875, 0.125*2 = 0.25,
        // 0.15625*1 = 0.15625, which the running maximum lifts to 0.25.
        let adjusted = holm_adjust(&[0.15625, 0.0625, 0.125]).unwrap();
        assert_eq!(adjusted, vec![0.25, 0.1875, 0.25]);
    }

    #[test]
    fn adjusted_values_are_capped_at_one() {
        // 0.5*2 = 1.0 and 0.75*1 -> max(1.0, 0.75) = 1.0; 0.625*3 = 1.875 -> 1.
        assert_eq!(holm_adjust(&[0.75, 0.5]).unwrap(), vec![1.0, 1.0]);
        assert_eq!(holm_adjust(&[0.625, 0.75, 0.875]).unwrap(), vec![1.0, 1.0, 1.0]);
        assert!(holm_adjust(&[]).unwrap().is_empty());
    }

    #[test]
    fn rejects_p_values_outside_the_unit_interval() {
        assert!(matches!(holm_adjust(&[0.2, 1.5]), Err(StatsError::OutOfRange { .. })));
        assert!(matches!(holm_adjust(&[f64::NAN]), Err(StatsError::OutOfRange { .. })));
    }
}
