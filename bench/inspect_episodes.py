#!/usr/bin/env python3
"""The peer side of "Episode throughput" (BENCHMARKS.md): inspect_ai doing the same work per
sample as bench/episodes.py does per episode — two shell commands, one file write, and a
scorer that runs one shell command — with `mockllm/model` (no model is called) and
`sandbox="local"` (no isolation at all; specgap runs every command under bubblewrap).

Run it with a Python that has inspect_ai installed, e.g.
  python3 -m venv /tmp/inspect-venv && /tmp/inspect-venv/bin/pip install inspect_ai
  /tmp/inspect-venv/bin/python bench/inspect_episodes.py --samples 200 --jobs 8 --runs 3

Each run is a fresh `python` process (startup and imports count, as they do for specgap);
the wall clock of the whole process is reported.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import sys
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import sandbox

samples, jobs, log_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

@solver
def scripted():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await sandbox().exec(["sh", "-c", "ls -la"])
        await sandbox().exec(["sh", "-c", "cat README.md"])
        await sandbox().write_file("hello.txt", "hello\n")
        return state
    return solve

@scorer(metrics=[accuracy()])
def greeting():
    async def score(state: TaskState, target: Target) -> Score:
        result = await sandbox().exec(["sh", "-c", "grep -q '^hello$' hello.txt"])
        return Score(value=1.0 if result.success else 0.0)
    return score

task = Task(
    dataset=[Sample(id=i, input="Say hello.", target="hello", files={"README.md": "A tiny workspace.\n"})
             for i in range(samples)],
    solver=scripted(),
    scorer=greeting(),
    sandbox="local",
)
logs = eval(task, model="mockllm/model", max_samples=jobs, max_sandboxes=jobs, log_dir=log_dir,
            display="none", log_level="warning")
accuracy_value = logs[0].results.scores[0].metrics["accuracy"].value
assert logs[0].status == "success" and accuracy_value == 1.0, (logs[0].status, accuracy_value)
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    import inspect_ai  # noqa: F401  (fail early without it)

    times = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="inspect-bench-") as logs:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", CHILD, str(args.samples), str(args.jobs), logs], check=True)
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"inspect_ai {inspect_ai.__version__}: {args.samples} samples at max_samples {args.jobs}: median {median:.2f} s "
          f"({args.samples / median:.1f} samples/s; runs {', '.join(f'{t:.2f}' for t in times)})")
    with tempfile.TemporaryDirectory(prefix="inspect-bench-") as logs:
        probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
                 "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        child = [sys.executable, "-c", CHILD, str(args.samples), "64", logs]
        kib = int(subprocess.run([sys.executable, "-c", probe, *child], check=True, capture_output=True, text=True).stdout)
    print(f"peak RSS at max_samples 64: {kib / 1024:.1f} MiB (largest process of the tree)")
    starts = []
    for _ in range(10):
        t = time.perf_counter()
        subprocess.run(["inspect", "--version"], check=True, stdout=subprocess.DEVNULL)
        starts.append(time.perf_counter() - t)
    print(f"startup: inspect --version median {statistics.median(starts) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
