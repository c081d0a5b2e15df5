//! The one error type of this crate: invalid input, said in terms of what was expected.

/// Invalid input to a statistics function.
///
/// Every variant names the argument (`what`) so that a caller several layers up can still tell
/// which measure was fed bad data. Results that scipy reports as NaN (a constant input to
/// Spearman, a degenerate bootstrap distribution, ...) are *not* errors: they come back as
/// `f64::NAN` and are documented on each function.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// Fewer observations than the function needs (for example an empty slice).
    #[error("expected at least {min} observation(s) in {what}, got {got}")]
    TooFewObservations {
        /// The argument that was too short.
        what: &'static str,
        /// The smallest length accepted.
        min: usize,
        /// The length received.
        got: usize,
    },
    /// Two slices that must be aligned (paired observations, two raters) differ in length.
    #[error("expected {what} of equal length, got {left} and {right}")]
    LengthMismatch {
        /// The pair of arguments, e.g. `"paired samples"`.
        what: &'static str,
        /// Length of the first slice.
        left: usize,
        /// Length of the second slice.
        right: usize,
    },
    /// A NaN or infinite value where only finite numbers make sense.
    #[error("expected finite values in {what}, found {value} at index {index}")]
    NonFinite {
        /// The argument holding the value.
        what: &'static str,
        /// Position of the first offending value.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// A real-valued parameter outside its domain (a confidence level outside (0, 1), a p-value
    /// outside [0, 1]).
    #[error("expected {what} in {expected}, got {value}")]
    OutOfRange {
        /// The parameter.
        what: &'static str,
        /// The accepted range, written as an interval.
        expected: &'static str,
        /// The value received.
        value: f64,
    },
    /// A count parameter that violates an ordering constraint (for pass@k: `c <= n`,
    /// `1 <= k <= n`).
    #[error("expected {what}, got {detail}")]
    InvalidCount {
        /// The constraint that failed, e.g. `"k <= n"`.
        what: &'static str,
        /// The values received, e.g. `"k = 5, n = 3"`.
        detail: String,
    },
}

/// Checks that every value is finite, naming the argument in the error.
pub(crate) fn ensure_finite(what: &'static str, values: &[f64]) -> Result<(), StatsError> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(StatsError::NonFinite { what, index, value: values[index] }),
        None => Ok(()),
    }
}

/// Checks that a slice holds at least `min` values.
pub(crate) fn ensure_len(what: &'static str, len: usize, min: usize) -> Result<(), StatsError> {
    if len < min {
        return Err(StatsError::TooFewObservations { what, min, got: len });
    }
    Ok(())
}

/// Checks that two aligned slices have the same length.
pub(crate) fn ensure_same_len(what: &'static str, left: usize, right: usize) -> Result<(), StatsError> {
    if left != right {
        return Err(StatsError::LengthMismatch { what, left, right });
    }
    Ok(())
}
