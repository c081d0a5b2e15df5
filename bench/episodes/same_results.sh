#!/usr/bin/env bash
# Same results before and after a speed-up (issue 32): runs one seeded run with each of two
# specgap binaries — the benchmark task with --repeats 4 plus four generated task dirs (equal
# workspaces, different names), replay agent, --jobs 4 — and compares the two stores with
# compare_stores.py (every row and episode file, clock readings aside).
# Usage: bench/episodes/same_results.sh BEFORE_BINARY AFTER_BINARY
set -euo pipefail
cd "$(dirname "$0")/../.."
before="$1"; after="$2"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bench/episodes/make_copies.sh "$out/copies" 4
for side in before after; do
  bin="$before"; [ "$side" = after ] && bin="$after"
  "$bin" run bench/episodes/task "$out/copies" --agent replay:bench/episodes/replay.jsonl \
    --condition hidden --repeats 4 --jobs 4 --seed 32 --no-report --out "$out/$side" >/dev/null 2>&1
done
python3 bench/episodes/compare_stores.py "$out/before" "$out/after"
