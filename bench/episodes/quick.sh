#!/usr/bin/env bash
# One quick throughput sample while optimizing (BENCHMARKS.md, "Before and after"): runs
# 200 episodes of the benchmark task at --jobs 8 and prints the wall time and the machine's
# busy CPU per episode (all CPUs, /proc/stat, including 1 s after the exit for kernel work
# that lands late). Not a substitute for run.sh's interleaved rounds.
# Usage: bench/episodes/quick.sh [RUNS]   (default 3; uses target/release/specgap as built)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-3}"
busy() { awk 'NR == 1 { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
for i in $(seq "$runs"); do
  out=$(mktemp -d)
  before=$(busy); t0=$(date +%s%N)
  target/release/specgap run bench/episodes/task --agent replay:bench/episodes/replay.jsonl \
    --condition hidden --jobs 8 --no-report --repeats 200 --out "$out/run" >/dev/null 2>&1
  t1=$(date +%s%N); sleep 1; after=$(busy)
  ticks=$(getconf CLK_TCK)
  echo "run $i: wall $(( (t1 - t0) / 1000000 )) ms; machine CPU per episode $(( (after - before) * 1000 / ticks / 200 )) ms"
  rm -rf "$out"
done
