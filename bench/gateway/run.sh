#!/usr/bin/env bash
# Model gateway overhead per request (BENCHMARKS.md, "Model gateway").
# Usage: bench/gateway/run.sh [REQUESTS_PER_ROUND] [ROUNDS]   (defaults 200 and 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
requests="${1:-200}"
rounds="${2:-5}"
cargo build --release -q -p specgap-gateway --features mock --example gateway_bench
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
target/release/examples/gateway_bench --requests "$requests" --rounds "$rounds"
