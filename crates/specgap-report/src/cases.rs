//! Case-level data behind seed 002's group measures, and the case bootstrap over it.
//!
//! Every seed 002 cell of a group is a ratio of sums over its cases (tasks): per case a
//! numerator and a denominator, the cell `Σ num / Σ den`. Quality is case-macro (per case the
//! mean of its repeats, denominator 1); DSR and validity are run-level (successes, runs); pass@k
//! and pass^k are case-level (the case's estimate, 1); the clarification measures are run-level
//! over the runs where each is defined (sum of the defined values, count of them); type- and
//! domain-specific Recall are case-macro over the cases holding the type (seed 002 §4.2,
//! App. A.3, A.4, A.5).
//!
//! Intervals (seed 002 App. A.4: "95% case-bootstrap intervals (2,000 resamples, seed
//! 12345)"): cases are resampled with replacement, each case with all its runs, and the ratio
//! is recomputed on each resample; the interval is the percentile interval of those values
//! ([`specgap_stats::bootstrap_indices`], [`IntervalMethod::Percentile`]). A resample whose
//! denominator is 0 gives NaN, and then (as scipy) no interval.

use serde::Serialize;
use specgap_stats::{BootstrapConfig, IntervalMethod, bootstrap_indices};

use crate::ReportError;

/// Settings of every case-bootstrap interval of a report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IntervalSettings {
    /// Two-sided confidence level (0.95).
    pub confidence: f64,
    /// Bootstrap resamples (2,000); 0 turns intervals off.
    pub resamples: usize,
    /// Seed of the resample stream (12345).
    pub seed: u64,
}

impl Default for IntervalSettings {
    /// Seed 002 App. A.4: 95%, 2,000 resamples, seed 12345.
    fn default() -> Self {
        IntervalSettings { confidence: 0.95, resamples: 2000, seed: 12345 }
    }
}

impl IntervalSettings {
    /// The percentile bootstrap configuration, or `None` when intervals are off.
    pub fn bootstrap(&self) -> Option<BootstrapConfig> {
        (self.resamples > 0).then_some(BootstrapConfig {
            confidence_level: self.confidence,
            n_resamples: self.resamples,
            method: IntervalMethod::Percentile,
            seed: self.seed,
        })
    }
}

/// One measure of one group, case by case: `(task, numerator, denominator)` sorted by task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaseValues {
    cases: Vec<(String, f64, f64)>,
}

impl CaseValues {
    /// From `(task, numerator, denominator)` entries (any order; sorted here). A task given
    /// twice keeps both entries' sums.
    pub fn new(entries: impl IntoIterator<Item = (String, f64, f64)>) -> CaseValues {
        let mut cases: Vec<(String, f64, f64)> = Vec::new();
        let mut sorted: Vec<(String, f64, f64)> = entries.into_iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        for (task, num, den) in sorted {
            match cases.last_mut() {
                Some(last) if last.0 == task => {
                    last.1 += num;
                    last.2 += den;
                }
                _ => cases.push((task, num, den)),
            }
        }
        CaseValues { cases }
    }

    /// The entries, sorted by task.
    pub fn entries(&self) -> &[(String, f64, f64)] {
        &self.cases
    }

    /// Number of cases.
    pub fn len(&self) -> usize {
        self.cases.len()
    }

    /// Whether there is no case.
    pub fn is_empty(&self) -> bool {
        self.cases.is_empty()
    }

    /// Σ numerators / Σ denominators; `None` when the denominators sum to 0.
    pub fn value(&self) -> Option<f64> {
        let (num, den) = self.sums(0..self.cases.len());
        (den > 0.0).then(|| num / den)
    }

    /// Σ denominators (for a run-level measure: the runs where it is defined).
    pub fn weight(&self) -> f64 {
        self.cases.iter().map(|c| c.2).sum()
    }

    /// The numerator and denominator of task `task`, if it is a case here.
    pub fn get(&self, task: &str) -> Option<(f64, f64)> {
        self.cases.binary_search_by(|c| c.0.as_str().cmp(task)).ok().map(|i| (self.cases[i].1, self.cases[i].2))
    }

    /// The ratio over the cases at `indices` (a resample: indices may repeat); NaN when the
    /// denominators sum to 0.
    pub fn ratio_at(&self, indices: &[usize]) -> f64 {
        let (num, den) = self.sums(indices.iter().copied());
        if den > 0.0 { num / den } else { f64::NAN }
    }

    fn sums(&self, indices: impl Iterator<Item = usize>) -> (f64, f64) {
        indices.fold((0.0, 0.0), |(num, den), i| (num + self.cases[i].1, den + self.cases[i].2))
    }

    /// The case-bootstrap percentile interval of [`CaseValues::value`] (module guide); `None`
    /// with intervals off, fewer than two cases, or a NaN endpoint.
    ///
    /// # Errors
    /// [`ReportError::Stats`] if the bootstrap rejects its settings (a confidence level
    /// outside (0, 1)).
    pub fn interval(&self, settings: &IntervalSettings, measure: &str) -> Result<Option<[f64; 2]>, ReportError> {
        let Some(config) = settings.bootstrap() else {
            return Ok(None);
        };
        if self.cases.len() < 2 {
            return Ok(None);
        }
        let interval = bootstrap_indices(self.cases.len(), |idx| self.ratio_at(idx), &config)
            .map_err(|source| ReportError::Stats { measure: format!("case-bootstrap interval of {measure}"), source })?;
        Ok((interval.low.is_finite() && interval.high.is_finite()).then_some([interval.low, interval.high]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(entries: &[(&str, f64, f64)]) -> CaseValues {
        CaseValues::new(entries.iter().map(|(t, n, d)| (t.to_string(), *n, *d)))
    }

    #[test]
    fn ratio_of_sums_sorted_by_task_with_repeated_tasks_merged() {
        let v = values(&[("b", 1.0, 3.0), ("a", 2.0, 3.0), ("b", 1.0, 0.0)]);
        assert_eq!(v.entries(), [("a".to_string(), 2.0, 3.0), ("b".to_string(), 2.0, 3.0)]);
        assert_eq!(v.value(), Some(4.0 / 6.0));
        assert_eq!(v.get("b"), Some((2.0, 3.0)));
        assert_eq!(v.get("c"), None);
        assert_eq!(v.ratio_at(&[0, 0]), 4.0 / 6.0);
        assert!(values(&[("a", 0.0, 0.0)]).value().is_none());
        assert!(values(&[("a", 0.0, 0.0)]).ratio_at(&[0]).is_nan());
    }

    #[test]
    fn no_interval_with_one_case_or_intervals_off() {
        let one = values(&[("a", 1.0, 1.0)]);
        assert_eq!(one.interval(&IntervalSettings::default(), "x").unwrap(), None);
        let two = values(&[("a", 1.0, 1.0), ("b", 0.0, 1.0)]);
        let off = IntervalSettings { resamples: 0, ..IntervalSettings::default() };
        assert_eq!(two.interval(&off, "x").unwrap(), None);
        let [low, high] = two.interval(&IntervalSettings::default(), "x").unwrap().unwrap();
        assert!((0.0..=0.5).contains(&low) && (0.5..=1.0).contains(&high));
    }
}
