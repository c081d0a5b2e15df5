#!/usr/bin/env bash
# The harness's time per cli: episode beyond the agent program's own run (BENCHMARKS.md,
# "cli: agents"). Usage: bench/cli/run.sh [EPISODES_PER_ROUND] [ROUNDS]   (defaults 20 and 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
episodes="${1:-20}"
rounds="${2:-5}"
cargo build --release -q -p specgap-cli
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
python3 bench/cli/measure.py --episodes "$episodes" --rounds "$rounds"
