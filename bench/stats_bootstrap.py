#!/usr/bin/env python3
"""Time scipy.stats.bootstrap on the "Statistics" benchmark of BENCHMARKS.md.

The mean of 49 cases, 2,000 resamples, percentile and BCa, 95%; the median of 51 timed runs
after one warm-up run. The Rust counterpart is
`cargo run --release -p specgap-stats --example bootstrap_bench` (same data, same settings).

Setup (versions pinned with the statistics reference):
    python3 -m venv bench/.venv
    bench/.venv/bin/pip install -r scripts/stats-reference/requirements.txt
    bench/.venv/bin/python bench/stats_bootstrap.py
"""

import statistics
import time

import numpy as np
import scipy
from scipy import stats

CASES = 49
RESAMPLES = 2000
RUNS = 51


def cases():
    """The benchmark data, defined identically in examples/bootstrap_bench.rs."""
    return np.array([((i * 7919) % 101) / 100.0 for i in range(CASES)])


def main():
    data = cases()
    for method in ["percentile", "BCa"]:
        def run():
            return stats.bootstrap((data,), np.mean, n_resamples=RESAMPLES, method=method,
                                   confidence_level=0.95, rng=12345)

        warm_up = run()
        times = []
        for _ in range(RUNS):
            start = time.perf_counter()
            run()
            times.append((time.perf_counter() - start) * 1e6)
        ci = warm_up.confidence_interval
        print(f"python scipy {scipy.__version__} {method:<10} cases={CASES} resamples={RESAMPLES} "
              f"runs={RUNS} median_us={statistics.median(times):.1f} "
              f"interval=[{ci.low:.4f}, {ci.high:.4f}]")


if __name__ == "__main__":
    main()
