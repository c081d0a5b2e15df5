#!/usr/bin/env bash
# Sandbox and materialization benchmark (BENCHMARKS.md, "Sandbox and materialization").
# Usage: bench/sandbox.sh [RUNS]   (default 30 runs per measurement; medians are printed)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"
cargo build --release -q -p specgap-sandbox --example sandbox_bench
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r), $(bwrap --version), $(git --version)"
target/release/examples/sandbox_bench --runs "$runs"
