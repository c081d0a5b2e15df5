#!/usr/bin/env bash
# Image environments (issue 25; BENCHMARKS.md "Image environments"): episode time on a cached
# rootfs beside the same episode on the host's commands, a second `specgap env build` of an
# unchanged environment, and the cold build / unpack beside `podman run` doing the same work.
# Usage: bench/images/run.sh [ROUNDS] [REPEATS]   (defaults 7 rounds, 10 episodes per run)
# SPECGAP=path/to/specgap picks the binary (default: target/release/specgap, built here).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-7}"
repeats="${2:-10}"
if [ -z "${SPECGAP:-}" ]; then
  cargo build --release -q -p specgap-cli
  SPECGAP="$PWD/target/release/specgap"
fi
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD), binary $SPECGAP"
python3 bench/images/measure.py --specgap "$SPECGAP" --rounds "$rounds" --repeats "$repeats"
