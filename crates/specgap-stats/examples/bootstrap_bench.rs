//! Times the bootstrap of BENCHMARKS.md ("Statistics"): the mean of 49 cases, 2,000 resamples,
//! percentile and BCa, median of 51 timed runs after one warm-up run, through both entry
//! points: `bootstrap_mean` (the fast path for the mean) and `bootstrap_case` with
//! `mean_or_nan` (the general closure path; numpy's pairwise mean). Both give the same
//! interval bit for bit, which the example checks before timing.
//! The Python counterpart is `bench/stats_bootstrap.py` (scipy.stats.bootstrap, same data).
//!
//! Run: `cargo run --release -p specgap-stats --example bootstrap_bench`

use specgap_stats::{BootstrapConfig, BootstrapInterval, IntervalMethod, StatsError, bootstrap_case, bootstrap_mean, mean_or_nan};
use std::hint::black_box;
use std::time::Instant;

const CASES: usize = 49;
const RESAMPLES: usize = 2000;
const RUNS: usize = 51;

/// The benchmark data, defined identically in bench/stats_bootstrap.py.
fn cases() -> Vec<f64> {
    (0..CASES).map(|i| ((i * 7919) % 101) as f64 / 100.0).collect()
}

/// Median wall time of `RUNS` calls of `run`, in microseconds, after one warm-up call.
fn median_micros(mut run: impl FnMut() -> Result<BootstrapInterval, StatsError>) -> Result<f64, StatsError> {
    black_box(run()?);
    let mut samples = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        black_box(run()?);
        samples.push(start.elapsed().as_secs_f64() * 1e6);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = cases();
    for (name, method) in [("percentile", IntervalMethod::Percentile), ("BCa", IntervalMethod::Bca)] {
        let config = BootstrapConfig { confidence_level: 0.95, n_resamples: RESAMPLES, method, seed: 12345 };
        let interval = bootstrap_mean(&data, &config)?;
        if interval != bootstrap_case(&data, mean_or_nan, &config)? {
            return Err("bootstrap_mean and bootstrap_case(mean_or_nan) disagree".into());
        }
        let fast = median_micros(|| bootstrap_mean(black_box(&data), &config))?;
        let general = median_micros(|| bootstrap_case(black_box(&data), mean_or_nan, &config))?;
        for (entry, micros) in [("bootstrap_mean", fast), ("bootstrap_case", general)] {
            println!(
                "rust specgap-stats {name:<10} {entry:<14} cases={CASES} resamples={RESAMPLES} runs={RUNS} median_us={micros:.1} interval=[{:.4}, {:.4}]",
                interval.low, interval.high
            );
        }
    }
    Ok(())
}
