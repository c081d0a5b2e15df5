//! Times `bootstrap_case` on the benchmark of BENCHMARKS.md ("Statistics"): the mean of 49
//! cases (statistic: `mean_or_nan`, numpy's pairwise mean), 2,000 resamples, percentile and
//! BCa, median of 51 timed runs after one warm-up run.
//! The Python counterpart is `bench/stats_bootstrap.py` (scipy.stats.bootstrap, same data).
//!
//! Run: `cargo run --release -p specgap-stats --example bootstrap_bench`

use specgap_stats::{BootstrapConfig, IntervalMethod, bootstrap_case, mean_or_nan};
use std::hint::black_box;
use std::time::Instant;

const CASES: usize = 49;
const RESAMPLES: usize = 2000;
const RUNS: usize = 51;

/// The benchmark data, defined identically in bench/stats_bootstrap.py.
fn cases() -> Vec<f64> {
    (0..CASES)
        .map(|i| ((i * 7919) % 101) as f64 / 100.0)
        .collect()
}

fn median_micros(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() -> Result<(), specgap_stats::StatsError> {
    let data = cases();
    for (name, method) in [
        ("percentile", IntervalMethod::Percentile),
        ("BCa", IntervalMethod::Bca),
    ] {
        let config = BootstrapConfig {
            confidence_level: 0.95,
            n_resamples: RESAMPLES,
            method,
            seed: 12345,
        };
        let warm_up = bootstrap_case(&data, mean_or_nan, &config)?;
        let mut times = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let start = Instant::now();
            black_box(bootstrap_case(black_box(&data), mean_or_nan, &config)?);
            times.push(start.elapsed().as_secs_f64() * 1e6);
        }
        println!(
            "rust specgap-stats {name:<10} cases={CASES} resamples={RESAMPLES} runs={RUNS} median_us={:.1} interval=[{:.4}, {:.4}]",
            median_micros(times),
            warm_up.low,
            warm_up.high
        );
    }
    Ok(())
}
