//! Cohen's kappa for two raters, unweighted or with linear / quadratic disagreement weights.
//!
//! Source: Cohen (1960) and, for weights, Cohen (1968); seed 002 §4.3 and App. A.8 (Table 16)
//! report unweighted κ between annotators and the judge panel. Matches
//! `sklearn.metrics.cohen_kappa_score(y1, y2, weights=None | 'linear' | 'quadratic')`.

use crate::error::{StatsError, ensure_len, ensure_same_len};

/// Disagreement weights of Cohen's kappa (sklearn's `weights`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KappaWeighting {
    /// Every disagreement weighs 1 (sklearn `weights=None`).
    #[default]
    Unweighted,
    /// Weight `|i − j|` between category positions i and j.
    Linear,
    /// Weight `(i − j)²`.
    Quadratic,
}

impl KappaWeighting {
    fn weight(self, i: usize, j: usize) -> f64 {
        let distance = i.abs_diff(j) as f64;
        match self {
            KappaWeighting::Unweighted => f64::from(u8::from(i != j)),
            KappaWeighting::Linear => distance,
            KappaWeighting::Quadratic => distance * distance,
        }
    }
}

/// Cohen's kappa between two raters' labels of the same items: `κ = 1 − Σ w·O / Σ w·E`, where O
/// is the confusion matrix of counts, E the counts expected from the raters' marginals, and w
/// the disagreement weights.
///
/// Categories are the sorted union of both raters' labels (sklearn's `unique_labels`); for
/// linear and quadratic weights the distance between two categories is the distance between
/// their positions in that order, not between label values. Kappa is symmetric in the raters.
///
/// When chance disagreement is zero (both raters used one and the same category) kappa is
/// undefined and the result is NaN, as sklearn returns it (with a warning).
///
/// # Errors
/// [`StatsError::LengthMismatch`] when the raters labelled different numbers of items,
/// [`StatsError::TooFewObservations`] when there are no items.
pub fn cohen_kappa<L: Ord>(rater_a: &[L], rater_b: &[L], weighting: KappaWeighting) -> Result<f64, StatsError> {
    ensure_same_len("rater labels", rater_a.len(), rater_b.len())?;
    ensure_len("rater labels", rater_a.len(), 1)?;
    let mut categories: Vec<&L> = rater_a.iter().chain(rater_b).collect();
    categories.sort();
    categories.dedup();
    // Every label is among the categories, so the first category not below it is the label.
    let position = |label: &L| categories.partition_point(|category| *category < label);

    let k = categories.len();
    let mut observed = vec![0.0; k * k];
    let mut row_totals = vec![0.0; k];
    let mut column_totals = vec![0.0; k];
    for (a, b) in rater_a.iter().zip(rater_b) {
        let (i, j) = (position(a), position(b));
        observed[i * k + j] += 1.0;
        row_totals[i] += 1.0;
        column_totals[j] += 1.0;
    }
    let items = rater_a.len() as f64;
    let mut weighted_observed = 0.0;
    let mut weighted_expected = 0.0;
    for i in 0..k {
        for j in 0..k {
            let w = weighting.weight(i, j);
            weighted_observed += w * observed[i * k + j];
            weighted_expected += w * row_totals[i] * column_totals[j] / items;
        }
    }
    Ok(1.0 - weighted_observed / weighted_expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_agreement_is_one_and_single_category_is_nan() {
        assert_eq!(cohen_kappa(&[1, 2, 3], &[1, 2, 3], KappaWeighting::Unweighted).unwrap(), 1.0);
        assert!(cohen_kappa(&["a", "a"], &["a", "a"], KappaWeighting::Linear).unwrap().is_nan());
    }

    #[test]
    fn hand_computed_binary_case() {
        // O = [[1,1],[0,2]] (rows rater a), marginals a = (2,2), b = (1,3), n = 4.
        // Disagreement observed = 1; expected = (2*3 + 2*1)/4 = 2; kappa = 1 - 1/2 = 0.5.
        let kappa = cohen_kappa(&[0, 0, 1, 1], &[0, 1, 1, 1], KappaWeighting::Unweighted).unwrap();
        assert_eq!(kappa, 0.5);
    }
}
