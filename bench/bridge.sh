#!/usr/bin/env bash
# Bridge round-trip benchmark (BENCHMARKS.md, "Bridge: ask_user round trips").
# Usage: bench/bridge.sh [RUNS]   (default 200 runs per measurement, interleaved; medians printed)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-200}"
cargo build --release -q -p specgap-cli --bins --example bridge_bench
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r), $(bwrap --version), $(/usr/bin/python3 --version)"
target/release/examples/bridge_bench --runs "$runs"
