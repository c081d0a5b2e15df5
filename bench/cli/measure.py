"""Time per episode of a cli: agent against the same work done by a built-in replay agent.

Both variants run bench/episodes/task (one input file, one answer file) with --jobs 1:

* replay: bench/episodes/replay.jsonl — `ls`, `cat input.txt` through the episode's command
  sandbox, write_text answer.txt, submit;
* cli: `cli:command=sh -c '...'` — the agent program itself runs `ls`, `cat input.txt` and
  writes answer.txt, recording its own start and end (date +%s%N) in the workspace, then exits;
  the episode ends agent_exit with the automatic submission of the changed workspace. No model
  request is made, so the gateway only starts and stops.

For each cli episode the harness's time is the episode's wall time (episodes.wall_ms) minus the
program's own run (end - start from its timing file in the submitted diff). Rounds alternate
the variants; the figures are medians over all episodes, with the per-round medians.
"""

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPECGAP = os.path.join(ROOT, "target", "release", "specgap")
TASK = os.path.join(ROOT, "bench", "episodes", "task")
REPLAY = os.path.join(ROOT, "bench", "episodes", "replay.jsonl")
AGENT = (
    "cli:command=sh -c 't0=$(date +%s%N); ls >/dev/null; cat input.txt >/dev/null; echo hello > answer.txt; "
    "t1=$(date +%s%N); echo \"$t0 $t1\" > timing.txt'"
)


def run(variant, episodes, out):
    agent = AGENT if variant == "cli" else "replay:" + REPLAY
    args = [SPECGAP, "run", TASK, "--agent", agent, "--condition", "hidden", "--repeats", str(episodes), "--jobs", "1",
            "--no-report", "--out", out]
    if variant == "cli":
        args += ["--model", "bench", "--base-url", "http://127.0.0.1:9/v1"]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = sqlite3.connect(os.path.join(out, "results.sqlite"))
    rows = db.execute("SELECT id, wall_ms, end_reason FROM episodes").fetchall()
    assert len(rows) == episodes, rows
    out_ms = []
    for episode, wall_ms, end_reason in rows:
        if variant == "replay":
            assert end_reason == "accepted", end_reason
            out_ms.append((wall_ms, 0.0))
            continue
        assert end_reason == "agent_exit", end_reason
        diff = open(os.path.join(out, "episodes", episode, "submissions", "1", "workspace.diff")).read()
        t0, t1 = map(int, re.search(r"\+(\d+) (\d+)", diff).groups())
        out_ms.append((wall_ms, (t1 - t0) / 1e6))
    return out_ms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = {"replay": [], "cli": []}
    rounds = {"replay": [], "cli": []}
    work = tempfile.mkdtemp(prefix="specgap-bench-cli-")
    try:
        for r in range(args.rounds):
            for variant in ("replay", "cli"):
                got = run(variant, args.episodes, os.path.join(work, f"{variant}-{r}"))
                results[variant] += got
                rounds[variant].append(statistics.median(w - p for w, p in got))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for variant in ("replay", "cli"):
        wall = statistics.median(w for w, _ in results[variant])
        own = statistics.median(p for _, p in results[variant])
        harness = statistics.median(w - p for w, p in results[variant])
        per_round = " / ".join(f"{m:.0f}" for m in rounds[variant])
        print(json.dumps({"variant": variant, "episodes": len(results[variant]), "wall_ms_median": wall,
                          "program_ms_median": round(own, 2), "harness_ms_median": harness, "per_round": per_round}))


main()
