#!/usr/bin/env bash
# Workspaces in shared memory or on disk (issue 31 item 1; BENCHMARKS.md "Workspaces: /dev/shm
# or disk"): the throughput benchmark's 200 episodes (--repeats 200 of the benchmark task,
# --jobs 8, the replay agent) with `--work-dir` on /dev/shm (tmpfs, the default when it has
# room) and on a disk directory, interleaved RUNS times; prints each run's wall time and the
# machine's busy CPU per episode, then the medians of each variant.
# Usage: bench/episodes/workdir.sh [RUNS] [SPECGAP] [DISK_DIR]
#        (defaults: 5, target/release/specgap, /var/tmp/specgap-bench-disk)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-5}"
specgap="${2:-target/release/specgap}"
disk="${3:-/var/tmp/specgap-bench-disk}"
shm=/dev/shm/specgap-bench-shm
busy() { awk 'NR == 1 { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
ticks=$(getconf CLK_TCK)
results=$(mktemp)
one_run() {
  local variant=$1 work=$2 out
  out=$(mktemp -d)
  mkdir -p "$work"
  local before t0 t1 after
  before=$(busy); t0=$(date +%s%N)
  "$specgap" run bench/episodes/task --agent replay:bench/episodes/replay.jsonl \
    --condition hidden --jobs 8 --no-report --repeats 200 --work-dir "$work" --out "$out/run" >/dev/null 2>&1
  t1=$(date +%s%N); sleep 1; after=$(busy)
  local wall=$(( (t1 - t0) / 1000000 )) cpu=$(( (after - before) * 1000 / ticks / 200 ))
  echo "$variant $wall $cpu" >> "$results"
  echo "$variant: wall $wall ms; machine CPU per episode $cpu ms"
  rm -rf "$out" "$work"
}
for i in $(seq "$runs"); do
  one_run shm "$shm"
  one_run disk "$disk"
done
echo "## medians over $runs runs"
python3 - "$results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for variant in ("shm", "disk"):
    wall = statistics.median(int(r[1]) for r in rows if r[0] == variant)
    cpu = statistics.median(int(r[2]) for r in rows if r[0] == variant)
    print(f"{variant}: median wall {wall:.0f} ms ({200000 / wall:.1f} episodes/s); median machine CPU per episode {cpu:.0f} ms")
PY
rm -f "$results"
