#!/usr/bin/env bash
# Viewer benchmark (BENCHMARKS.md, "Viewer"): time to first paint, in headless Chromium, of the
# episode page of a 10,000-event episode with 64 KiB outputs and of the episode list of the
# report benchmark's 100,000-episode store.
#
#   bench/view/run.sh [REPEATS]     (default 9)
#
# Needs the 100,000-episode store of crates/specgap-report/examples/bench_report.rs under
# /tmp/specgap-bench/run-100000 (its first call writes it), /usr/bin/chromium, node and npm.
set -euo pipefail
cd "$(dirname "$0")/../.."
repeats="${1:-9}"
big=/tmp/specgap-bench/run-100000
[ -f "$big/run.toml" ] || cargo run --release -p specgap-report --example bench_report -- /tmp/specgap-bench 100000
node_dir=target/view-browser
mkdir -p "$node_dir"
cp crates/specgap-view/tests/browser/package.json crates/specgap-view/tests/browser/package-lock.json bench/view/first_paint.mjs "$node_dir/"
[ -d "$node_dir/node_modules/playwright-core" ] || (cd "$node_dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
cargo build --release -p specgap-view --example bench_view
fifo=$(mktemp -u); mkfifo "$fifo"
exec 3<>"$fifo"
./target/release/examples/bench_view /tmp/specgap-view-bench "$big" <&3 > /tmp/specgap-view-bench.log &
server=$!
until grep -q '^episode ' /tmp/specgap-view-bench.log 2>/dev/null; do sleep 0.2; done
url=$(sed -n 's/^url //p' /tmp/specgap-view-bench.log)
episode=$(sed -n 's/^episode //p' /tmp/specgap-view-bench.log)
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load $(cut -d' ' -f1-3 /proc/loadavg); $(/usr/bin/chromium --version 2>/dev/null | head -1)"
(cd "$node_dir" && node first_paint.mjs "$url" "$episode" "$repeats")
# The server's stdin is the fifo opened read-write, so closing fd 3 alone never gives it an
# end of file: stop it.
exec 3>&-
kill "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
rm -f "$fifo"
