#!/usr/bin/env python3
"""Where an episode's wall time goes, from the trajectories of a specgap run of the benchmark.

Usage: phases.py RUN_DIR
Reads RUN_DIR/episodes/*/trajectory.jsonl.zst (needs the `zstd` program) and prints, as a
Markdown table, the median and 90th percentile of each phase over all episodes:

- open: from `episode_start` to the first agent turn (host view, materialization, initial diff);
- each tool call: from the agent turn to its tool result (a `run_experiment` is one sandboxed
  command; `submit` is freeze, diff, evaluator in its sandbox, and the result written to the store);
- close: from the last tool result to the `end` event.
"""

import json
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path


def events(path):
    text = subprocess.run(["zstd", "-qdc", str(path)], check=True, capture_output=True).stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def phases(evs):
    out = {}
    start = evs[0]["elapsed_ms"]
    first_turn = next(e for e in evs if e["type"] == "agent_turn")
    out["open"] = first_turn["elapsed_ms"] - start
    pending = {}
    counts = defaultdict(int)
    last = first_turn["elapsed_ms"]
    for e in evs:
        if e["type"] == "agent_turn":
            for call in e.get("tool_calls", []):
                pending[call["id"]] = (call["tool"], e["elapsed_ms"])
        elif e["type"] == "tool_result" and e["call_id"] in pending:
            tool, t0 = pending.pop(e["call_id"])
            counts[tool] += 1
            out[f"{tool} #{counts[tool]}"] = e["elapsed_ms"] - t0
            last = e["elapsed_ms"]
        elif e["type"] == "end":
            out["close"] = e["elapsed_ms"] - last
            out["episode total"] = e["elapsed_ms"] - start
    return out


def main():
    run = Path(sys.argv[1])
    table = defaultdict(list)
    for path in sorted(run.glob("episodes/*/trajectory.jsonl.zst")):
        for name, ms in phases(events(path)).items():
            table[name].append(ms)
    n = max(len(v) for v in table.values())
    print(f"| phase ({n} episodes) | median ms | p90 ms |")
    print("| --- | ---: | ---: |")
    for name, values in table.items():
        values.sort()
        p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
        print(f"| {name} | {statistics.median(values):.0f} | {p90} |")


if __name__ == "__main__":
    main()
