//! Descriptive helpers: mean, median, sample standard deviation, mean ± sd over replicates, and
//! average ranks.
//!
//! Every function here rejects empty input and non-finite values with a [`StatsError`]; a
//! measure that is undefined for a non-empty input (the sd of a single replicate) is NaN, as
//! numpy returns it.

use crate::error::{StatsError, ensure_finite, ensure_len};

/// Arithmetic mean of `values`, bit-for-bit equal to numpy.mean (pairwise summation).
///
/// # Errors
/// [`StatsError::TooFewObservations`] for an empty slice, [`StatsError::NonFinite`] for NaN or
/// infinite values.
pub fn mean(values: &[f64]) -> Result<f64, StatsError> {
    ensure_len("values", values.len(), 1)?;
    ensure_finite("values", values)?;
    Ok(mean_unchecked(values))
}

/// Arithmetic mean for use inside a bootstrap statistic: no validation, NaN for an empty
/// slice, NaN propagates. Bit-for-bit equal to `numpy.mean` (same pairwise summation, see
/// [`pairwise_sum`]).
pub fn mean_or_nan(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    mean_unchecked(values)
}

/// numpy.mean: `(0 + pairwise_sum(x)) / n` (numpy's add-reduction starts from the identity 0).
pub(crate) fn mean_unchecked(values: &[f64]) -> f64 {
    (0.0 + pairwise_sum(values)) / values.len() as f64
}

/// Unrolling width and block size of numpy's pairwise summation.
const PAIRWISE_LANES: usize = 8;
const PAIRWISE_BLOCK: usize = 128;

/// Sum in numpy's order (`pairwise_sum` in numpy/_core/src/umath/loops_utils.h.src): below 8
/// values a plain loop from −0; up to 128 values eight interleaved accumulators combined as
/// `((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))`, then the remainder; above 128 the two
/// halves (split at a multiple of 8) summed recursively. Rounding error grows as O(log n), and
/// the eight independent accumulators make it several times faster than a serial loop.
#[inline]
pub fn pairwise_sum(values: &[f64]) -> f64 {
    if values.len() < PAIRWISE_LANES {
        // numpy starts from −0 so that a sum of −0 values stays −0.
        values.iter().fold(-0.0, |sum, v| sum + v)
    } else if values.len() <= PAIRWISE_BLOCK {
        block_sum(values)
    } else {
        let half = values.len() / 2;
        let split = half - half % PAIRWISE_LANES;
        pairwise_sum(&values[..split]) + pairwise_sum(&values[split..])
    }
}

/// numpy's block of 8 to 128 values: eight interleaved accumulators, then the remainder.
#[inline]
fn block_sum(values: &[f64]) -> f64 {
    let (head, rest) = values.split_at(PAIRWISE_LANES);
    let mut lanes = [0.0; PAIRWISE_LANES];
    lanes.copy_from_slice(head);
    let mut chunks = rest.chunks_exact(PAIRWISE_LANES);
    for chunk in &mut chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    let [r0, r1, r2, r3, r4, r5, r6, r7] = lanes;
    let mut sum = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));
    for v in chunks.remainder() {
        sum += v;
    }
    sum
}

/// Median of `values` (numpy.median): the middle value of the sorted data, or the mean of the
/// two middle values when the length is even.
///
/// # Errors
/// As [`mean`].
pub fn median(values: &[f64]) -> Result<f64, StatsError> {
    ensure_len("values", values.len(), 1)?;
    ensure_finite("values", values)?;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Ok(if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        // numpy.median averages the two middle values.
        (sorted[mid - 1] + sorted[mid]) / 2.0
    })
}

/// Sample standard deviation with Bessel's correction, computed as numpy.std with `ddof=1`:
/// `sqrt(Σ (x − mean)² / (n − 1))`.
///
/// A single value has no sample deviation: the result is NaN, as numpy returns it.
///
/// # Errors
/// As [`mean`].
pub fn sample_sd(values: &[f64]) -> Result<f64, StatsError> {
    ensure_len("values", values.len(), 1)?;
    ensure_finite("values", values)?;
    Ok(sample_sd_unchecked(values))
}

/// Sample sd (`ddof = 1`) without validation: NaN for fewer than two values, NaN propagates.
pub(crate) fn sample_sd_unchecked(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    // numpy.std: squared deviations from the mean, summed the same pairwise way.
    let centre = mean_unchecked(values);
    let squares: Vec<f64> = values.iter().map(|v| (v - centre) * (v - centre)).collect();
    ((0.0 + pairwise_sum(&squares)) / (values.len() - 1) as f64).sqrt()
}

/// A mean with its sample standard deviation over replicates, as "mean ± sd".
///
/// Seed 000 §5.6 (Table 7) reports seed-to-seed reliability as the mean and standard deviation
/// over three replicates; DESIGN §7 asks for seed replicates as mean ± sd. The sd is the
/// sample sd (`ddof = 1`), NaN for a single replicate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanSd {
    /// Arithmetic mean over replicates.
    pub mean: f64,
    /// Sample standard deviation (`ddof = 1`); NaN when `n == 1`.
    pub sd: f64,
    /// Number of replicates.
    pub n: usize,
}

/// Mean ± sample sd over replicate values (one value per seed replicate).
///
/// # Errors
/// As [`mean`].
pub fn mean_sd(replicates: &[f64]) -> Result<MeanSd, StatsError> {
    ensure_len("replicates", replicates.len(), 1)?;
    ensure_finite("replicates", replicates)?;
    Ok(MeanSd { mean: mean_unchecked(replicates), sd: sample_sd_unchecked(replicates), n: replicates.len() })
}

/// Ranks from 1 to n with ties given the average of the ranks they span
/// (scipy.stats.rankdata with `method='average'`). Output is aligned with the input.
///
/// # Errors
/// [`StatsError::NonFinite`] for NaN or infinite values. An empty slice gives an empty vector.
pub fn rank_average(values: &[f64]) -> Result<Vec<f64>, StatsError> {
    ensure_finite("values", values)?;
    Ok(rank_average_with_ties(values).0)
}

/// Average ranks plus the size of every tie group (groups of one included), in sorted order.
///
/// Ties are exact equality, as in scipy. Ranks are half-integers, so they are exact in `f64`.
pub(crate) fn rank_average_with_ties(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut group_sizes = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold ordinal ranks start+1..=end; their average is the midpoint.
        let average = (start + 1 + end) as f64 / 2.0;
        for &index in &order[start..end] {
            ranks[index] = average;
        }
        group_sizes.push(end - start);
        start = end;
    }
    (ranks, group_sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_and_odd_lengths() {
        assert_eq!(median(&[3.0, 1.0, 2.0]).unwrap(), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]).unwrap(), 2.5);
    }

    #[test]
    fn ranks_average_ties() {
        // scipy.stats.rankdata([3, 2, 1, 2, 2, 2, 1]) = [7, 4.5, 1.5, 4.5, 4.5, 4.5, 1.5]
        let (ranks, groups) = rank_average_with_ties(&[3.0, 2.0, 1.0, 2.0, 2.0, 2.0, 1.0]);
        assert_eq!(ranks, vec![7.0, 4.5, 1.5, 4.5, 4.5, 4.5, 1.5]);
        assert_eq!(groups, vec![2, 4, 1]);
    }

    #[test]
    fn single_replicate_has_nan_sd() {
        let summary = mean_sd(&[0.7]).unwrap();
        assert_eq!(summary.mean, 0.7);
        assert!(summary.sd.is_nan());
        assert_eq!(summary.n, 1);
    }

    #[test]
    fn empty_and_nan_inputs_are_errors() {
        assert_eq!(mean(&[]), Err(StatsError::TooFewObservations { what: "values", min: 1, got: 0 }));
        assert!(matches!(median(&[1.0, f64::NAN]), Err(StatsError::NonFinite { index: 1, .. })));
    }
}
