#!/usr/bin/env bash
# Episode-throughput benchmark (BENCHMARKS.md, "Episode throughput").
#
# Usage: bench/episodes/run.sh [RUNS]        (default 5 interleaved rounds)
#
# 1. builds target/release/specgap and the inspect_ai venv (bench/.venv, gitignored);
# 2. checks the benchmark task package (bench/episodes/task/echo);
# 3. runs 200 episodes of it with specgap (--repeats 200, and 200 generated task dirs) and 200
#    samples with inspect_ai (bench/episodes/inspect_task.py, sandbox "local"), interleaved,
#    RUNS times each, and prints medians (bench/episodes/measure.py);
# 4. startup time of `specgap --version` (hyperfine) and peak RSS of `specgap run` at --jobs 64.
#
# Everything it writes goes to bench/out/episodes (gitignored). The machine is shared: the
# measurement waits for a quiet moment before each run and reports the load of other tenants.
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
lscpu | head -8 | sed -n '1p;5p;6p;8p'
lscpu | grep -E '^(Model name|Hypervisor vendor)'
echo "specgap $($specgap --version | awk '{print $2}') at commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ' (+ uncommitted changes in crates/)')"
echo "inspect_ai $(bench/.venv/bin/python -c 'import inspect_ai; print(inspect_ai.__version__)'), $(bench/.venv/bin/python --version)"
echo "$(bwrap --version), $(git --version), $(hyperfine --version)"

echo; echo "## task package"
$specgap check bench/episodes/task

echo; echo "## throughput: 200 episodes at --jobs 8, $runs interleaved rounds"
bench/episodes/make_copies.sh "$out/copies" 200
python3 bench/episodes/measure.py --runs "$runs" --jobs 8 --out "$out"

echo; echo "## startup: specgap --version"
hyperfine -N --warmup 20 --runs 300 --export-json "$out/startup.json" "$specgap --version" 2>&1 | grep -E 'Time|Range'
hyperfine -N --warmup 1 --runs 5 "bench/.venv/bin/inspect --version" 2>&1 | grep -E 'Time|Range' | sed 's/^/inspect --version: /'

echo; echo "## peak RSS: specgap run, 200 episodes at --jobs 64 (/usr/bin/time -v, 3 runs)"
for i in 1 2 3; do
  rm -rf "$out/rss-$i"
  /usr/bin/time -v "$specgap" run bench/episodes/task --agent replay:bench/episodes/replay.jsonl \
    --condition hidden --repeats 200 --jobs 64 --no-report --out "$out/rss-$i" 2>&1 \
    | grep -E 'Maximum resident|Elapsed' | tr -s ' \t' ' ' | sed "s/^/run $i:/"
done
