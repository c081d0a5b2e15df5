#!/usr/bin/env bash
# Episode-throughput benchmark, the only one (BENCHMARKS.md, "Episode throughput: interleaved
# runs, startup and memory").
#
# Usage: bench/episodes/run.sh [RUNS]        (default 5 interleaved rounds)
#
# 1. builds target/release/specgap and the inspect_ai venv (bench/.venv, gitignored);
# 2. checks the benchmark task package (bench/episodes/task/echo);
# 3. runs 200 episodes of it with specgap (--repeats 200, and 200 generated task dirs) and 200
#    samples with inspect_ai in two variants (bench/episodes/inspect_task.py, sandbox "local":
#    the work as tool calls through inspect's agent loop with a scripted mockllm model, and the
#    same work as direct sandbox calls), interleaved, RUNS times each, and prints medians of
#    wall time, episodes/s, wait4 CPU and machine-wide CPU per episode, and the ratios
#    (bench/episodes/measure.py);
# 4. where an episode's time goes (phases from the trajectories, --jobs 8 and --jobs 1);
# 5. startup time of `specgap --version` (hyperfine) and peak RSS of `specgap run` at --jobs 64
#    (/usr/bin/time -v: the largest single process of the tree, i.e. specgap itself).
#
# Everything it writes goes to bench/out/episodes (gitignored). The machine is shared: the
# measurement waits for a quiet moment before each run and reports the background load it saw.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-5}"
out=bench/out/episodes
inspect_version="${INSPECT_AI_VERSION:-0.3.285}"
mkdir -p "$out"

cargo build --release -q -p specgap-cli
specgap=target/release/specgap
if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv
fi
if ! bench/.venv/bin/python -c "import inspect_ai, sys; sys.exit(inspect_ai.__version__ != '$inspect_version')" 2>/dev/null; then
  bench/.venv/bin/pip install -q "inspect_ai==$inspect_version"
fi
command -v hyperfine >/dev/null || { echo "hyperfine is missing: apt-get install -y hyperfine" >&2; exit 1; }

echo "## machine"
echo "nproc: $(nproc); memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); kernel $(uname -r)"
lscpu | grep -E '^(Architecture|CPU\(s\)|Model name|Thread\(s\) per core|Core\(s\) per socket|Hypervisor vendor):' | tr -s ' '
echo "specgap $($specgap --version | awk '{print $2}') at commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ' (+ uncommitted changes in crates/)')"
echo "inspect_ai $(bench/.venv/bin/python -c 'import inspect_ai; print(inspect_ai.__version__)'), $(bench/.venv/bin/python --version)"
echo "$(bwrap --version), $(git --version), $(hyperfine --version)"

echo; echo "## task package"
$specgap check bench/episodes/task

echo; echo "## throughput: 200 episodes at --jobs 8, $runs interleaved rounds"
bench/episodes/make_copies.sh "$out/copies" 200
python3 bench/episodes/measure.py --runs "$runs" --jobs 8 --out "$out"

echo; echo "## startup: specgap --version"
median_ms() { python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(f\"median {r['median']*1000:.1f} ms (mean {r['mean']*1000:.1f} ms, min {r['min']*1000:.1f} ms, max {r['max']*1000:.1f} ms, {len(r['times'])} runs)\")" "$1"; }
hyperfine -N --warmup 20 --runs 300 --export-json "$out/startup.json" "$specgap --version" >/dev/null 2>&1
echo "specgap --version: $(median_ms "$out/startup.json")"
hyperfine -N --warmup 1 --runs 5 --export-json "$out/startup-inspect.json" "bench/.venv/bin/inspect --version" >/dev/null 2>&1
echo "inspect --version (for scale): $(median_ms "$out/startup-inspect.json")"

echo; echo "## where an episode's time goes: phases (bench/episodes/phases.py)"
echo "### --jobs 8, round 1 of the throughput measurement"
python3 bench/episodes/phases.py "$out/ours-1"
echo "### --jobs 1, 50 episodes"
rm -rf "$out/jobs1"
$specgap run bench/episodes/task --agent replay:bench/episodes/replay.jsonl --condition hidden \
  --repeats 50 --jobs 1 --no-report --out "$out/jobs1" 2>/dev/null
python3 bench/episodes/phases.py "$out/jobs1"

echo; echo "## peak RSS: specgap run, 200 episodes at --jobs 64 (/usr/bin/time -v, 3 runs)"
for i in 1 2 3; do
  rm -rf "$out/rss-$i"
  /usr/bin/time -v "$specgap" run bench/episodes/task --agent replay:bench/episodes/replay.jsonl \
    --condition hidden --repeats 200 --jobs 64 --no-report --out "$out/rss-$i" 2>&1 \
    | grep -E 'Maximum resident|Elapsed' | tr -s ' \t' ' ' | sed "s/^/run $i:/"
done
