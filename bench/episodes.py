#!/usr/bin/env python3
"""Episode throughput of `specgap run` (BENCHMARKS.md, "Episode throughput").

Makes N copies of a small reward-scored task (one workspace file; an evaluator that runs one
shell command), and a replay agent that runs two shell commands, writes one file and submits.
Then measures, with the release binary:

  * episodes per second for the N tasks at --jobs J (median of R runs, wall clock);
  * startup time of `specgap --version` (median of 50);
  * peak RSS of the runner at --jobs 64 (largest resident set of the process tree, from
    getrusage(RUSAGE_CHILDREN)).

Usage: python3 bench/episodes.py [--copies 200] [--jobs 8] [--runs 3] [--no-build]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BINARY = REPO / "target" / "release" / "specgap"

TASK_TOML = """format = 1

[task]
name = "bench/echo-{n:03d}"
version = "1.0.0"
description = "Write a greeting; the evaluator checks it with one shell command"
family = "terminal"

[evaluator]
command = "sh score.sh"
timeout_sec = 60
"""

# The scorer runs one shell command (grep) on the submitted workspace.
SCORE_SH = """if grep -q '^hello$' "$SPECGAP_WORKSPACE/hello.txt" 2>/dev/null; then r=1.0; else r=0.0; fi
printf '{"version": 1, "reward": %s}\\n' "$r" > "$SPECGAP_OUT/result.json"
"""

SCRIPT = [
    {"tool": "run_experiment", "arguments": {"command": "ls -la"}},
    {"tool": "run_experiment", "arguments": {"command": "cat README.md"}},
    {"tool": "write_text", "arguments": {"path": "hello.txt", "content": "hello\n"}},
    {"tool": "submit", "arguments": {}},
]


def make_suite(root: Path, copies: int) -> Path:
    suite = root / "suite"
    for n in range(copies):
        task = suite / f"echo-{n:03d}"
        (task / "workspace").mkdir(parents=True)
        (task / "evaluator").mkdir()
        (task / "task.toml").write_text(TASK_TOML.format(n=n))
        (task / "instruction.md").write_text("Say hello.\n")
        (task / "instruction.full.md").write_text("Write the line `hello` into hello.txt.\n")
        (task / "workspace" / "README.md").write_text("A tiny workspace.\n")
        (task / "evaluator" / "score.sh").write_text(SCORE_SH)
    script = root / "agent.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in SCRIPT))
    return suite


def run_once(suite: Path, script: Path, out: Path, jobs: int) -> float:
    cmd = [str(BINARY), "run", str(suite), "--agent", f"replay:{script}", "--condition", "full",
           "--jobs", str(jobs), "--out", str(out), "--no-report"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def check_run(out: Path, copies: int) -> None:
    report = subprocess.run([str(BINARY), "report", str(out), "--format", "json"], check=True,
                            capture_output=True, text=True)
    groups = json.loads(report.stdout)["groups"]
    scored = sum(g["outcomes"]["scored"] for g in groups)
    success = [g["outcomes"]["success_at"][0] for g in groups]
    if scored != copies or success != [1.0]:
        sys.exit(f"unexpected run result: {scored} scored, Success@1 {success}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "specgap-cli"], cwd=REPO, check=True)
    print(f"machine: {os.cpu_count()} cores, {subprocess.run(['uname', '-r'], capture_output=True, text=True).stdout.strip()}, "
          f"{subprocess.run(['bwrap', '--version'], capture_output=True, text=True).stdout.strip()}")
    with tempfile.TemporaryDirectory(prefix="specgap-bench-") as tmp:
        root = Path(tmp)
        suite = make_suite(root, args.copies)
        script = root / "agent.jsonl"

        times = []
        for i in range(args.runs):
            out = root / f"run-{i}"
            times.append(run_once(suite, script, out, args.jobs))
            check_run(out, args.copies)
            shutil.rmtree(out)
        median = statistics.median(times)
        print(f"throughput: {args.copies} episodes at --jobs {args.jobs}: median {median:.2f} s "
              f"({args.copies / median:.1f} episodes/s; runs {', '.join(f'{t:.2f}' for t in times)})")

        starts = []
        for _ in range(50):
            t = time.perf_counter()
            subprocess.run([str(BINARY), "--version"], check=True, stdout=subprocess.DEVNULL)
            starts.append(time.perf_counter() - t)
        print(f"startup: specgap --version median {statistics.median(starts) * 1000:.2f} ms")

        # A fresh Python process waits for the run alone, so its RUSAGE_CHILDREN peak is the
        # largest resident set of the runner's process tree during that run.
        out = root / "rss"
        probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
                 "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
                 "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        cmd = [str(BINARY), "run", str(suite), "--agent", f"replay:{script}", "--condition", "full",
               "--jobs", "64", "--out", str(out), "--no-report"]
        kib = int(subprocess.run([sys.executable, "-c", probe, *cmd], check=True, capture_output=True, text=True).stdout)
        print(f"peak RSS at --jobs 64: {kib / 1024:.1f} MiB (largest process of the run's tree)")


if __name__ == "__main__":
    main()
