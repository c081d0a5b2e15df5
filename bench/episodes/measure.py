#!/usr/bin/env python3
"""Episode-throughput measurement: specgap vs inspect_ai, runs interleaved.

Usage (run.sh calls this; paths relative to the repository root):
    measure.py --runs 5 --out bench/out/episodes [--jobs 8] [--quiet-wait 120] [--only SUBSTRING]...

Variants: specgap on one task with --repeats 200; specgap on 200 generated task dirs (OUT/copies,
made by make_copies.sh); inspect_ai with 200 samples; and, only when asked for with
`--only no-sandbox`, specgap --no-sandbox (harness cost without bubblewrap).

Each round runs every variant once, in turn (A B C, A B C, ...), so a neighbour's load on this
shared machine hits all variants alike. For every run it records wall time, the CPU time of the
command and its children (wait4 rusage), and how busy the whole machine was meanwhile (from
/proc/stat), so runs disturbed by other tenants can be told apart. Before each run it waits (at
most --quiet-wait seconds) until the machine has been at least 90 % idle for one second.
Every run is checked: 200 episodes/samples, all scored successful.

Prints a Markdown table per variant and the medians, and writes all rows to OUT/runs.json.
"""

import argparse
import json
import shutil
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

EPISODES = 200
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def cpu_ticks():
    """(busy, total) jiffies over all CPUs, from the first line of /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])
    return total - idle, total


def wait_for_quiet(limit_s):
    """Waits until one second passes with the machine ≥ 90 % idle; returns the seconds waited."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        b0, t0 = cpu_ticks()
        time.sleep(1)
        b1, t1 = cpu_ticks()
        if t1 > t0 and (b1 - b0) / (t1 - t0) <= 0.10:
            break
    return time.monotonic() - start


def timed(argv, cwd, stdout_path):
    """Runs argv; returns wall seconds, rusage and the machine's busy cores during the run."""
    ncpu = os.cpu_count() or 1
    b0, t0 = cpu_ticks()
    start = time.perf_counter()
    with open(stdout_path, "wb") as out:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.PIPE)
        stderr = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    b1, t1 = cpu_ticks()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed ({status}): {' '.join(map(str, argv))}\n{stderr.decode()[-2000:]}")
    machine_busy_cores = (b1 - b0) / (t1 - t0) * ncpu if t1 > t0 else 0.0
    own_cpu = usage.ru_utime + usage.ru_stime
    return {
        "wall_s": wall,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "max_rss_kb": usage.ru_maxrss,
        "machine_busy_cores": machine_busy_cores,
        # CPU the rest of the machine used meanwhile, in cores (other tenants' builds).
        "others_cores": max(0.0, machine_busy_cores - own_cpu / wall),
    }


def check_specgap(run_dir):
    db = sqlite3.connect(Path(run_dir) / "results.sqlite")
    finished, succeeded = db.execute(
        "SELECT COUNT(*), COALESCE(SUM(final_success), 0) FROM episodes WHERE status = 'finished'"
    ).fetchone()
    if (finished, succeeded) != (EPISODES, EPISODES):
        sys.exit(f"{run_dir}: expected {EPISODES} finished, successful episodes, got {finished} / {succeeded}")
    return {}


def check_inspect(stdout_path):
    report = json.loads(Path(stdout_path).read_text().strip().splitlines()[-1])
    if report["status"] != "success" or report["samples"] != EPISODES or report["accuracy"] != 1.0:
        sys.exit(f"inspect_ai run failed its check: {report}")
    return {"import_s": report["import_s"], "eval_s": report["eval_s"]}


def variants(args, out):
    specgap = str(ROOT / "target/release/specgap")
    replay = f"replay:{HERE / 'replay.jsonl'}"
    common = ["--agent", replay, "--condition", "hidden", "--jobs", str(args.jobs), "--no-report"]
    python = str(ROOT / "bench/.venv/bin/python")
    found = {
        "specgap, 1 task x --repeats 200": lambda i: (
            [specgap, "run", str(HERE / "task"), *common, "--repeats", str(EPISODES), "--out", str(out / f"ours-{i}")],
            lambda _: check_specgap(out / f"ours-{i}"),
        ),
        "specgap, 200 task dirs": lambda i: (
            [specgap, "run", str(out / "copies"), *common, "--out", str(out / f"dirs-{i}")],
            lambda _: check_specgap(out / f"dirs-{i}"),
        ),
        "specgap --no-sandbox, 1 task x --repeats 200": lambda i: (
            [specgap, "run", str(HERE / "task"), *common, "--no-sandbox", "--repeats", str(EPISODES),
             "--out", str(out / f"nosandbox-{i}")],
            lambda _: check_specgap(out / f"nosandbox-{i}"),
        ),
        "inspect_ai, 200 samples (local)": lambda i: (
            [python, str(HERE / "inspect_run.py"), str(out / f"inspect-{i}"), "--max-samples", str(args.jobs)],
            check_inspect,
        ),
    }
    if not args.only:
        return {name: make for name, make in found.items() if "--no-sandbox" not in name}
    return {name: make for name, make in found.items() if any(s in name for s in args.only)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/out/episodes")
    parser.add_argument("--quiet-wait", type=float, default=120.0)
    parser.add_argument("--only", action="append",
                        help="substring of a variant name (repeatable); default: all but --no-sandbox")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    # A run directory left by an earlier invocation would make specgap resume it.
    for prefix in ("ours", "dirs", "nosandbox", "inspect", "stdout"):
        for stale in out.glob(f"{prefix}-*"):
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    rows = []
    chosen = variants(args, out)
    if any("task dirs" in name for name in chosen) and not (out / "copies").is_dir():
        subprocess.run([str(HERE / "make_copies.sh"), str(out / "copies"), str(EPISODES)], check=True)
    for i in range(1, args.runs + 1):
        for name, make in chosen.items():
            argv, check = make(i)
            waited = wait_for_quiet(args.quiet_wait)
            stdout_path = out / f"stdout-{i}-{len(rows)}.txt"
            row = {"variant": name, "round": i, "waited_s": round(waited, 1), **timed(argv, ROOT, stdout_path)}
            row.update(check(stdout_path))
            row["per_s"] = EPISODES / row["wall_s"]
            rows.append(row)
            print(f"round {i} {name}: {row['wall_s']:.2f} s, {row['per_s']:.1f}/s, "
                  f"cpu {row['user_s'] + row['sys_s']:.2f} s, others {row['others_cores']:.2f} cores",
                  file=sys.stderr, flush=True)
    (out / "runs.json").write_text(json.dumps(rows, indent=1))
    print("| variant | runs | median wall (s) | median episodes/s | min–max wall (s) | median CPU s (user+sys) | CPU ms per episode | median max RSS (MB) | median others' load (cores) |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    medians = {}
    for name in chosen:
        mine = [r for r in rows if r["variant"] == name]
        walls = [r["wall_s"] for r in mine]
        cpu = statistics.median(r["user_s"] + r["sys_s"] for r in mine)
        medians[name] = statistics.median(walls)
        print(f"| {name} | {len(mine)} | {medians[name]:.2f} | {EPISODES / medians[name]:.1f} | "
              f"{min(walls):.2f}–{max(walls):.2f} | {cpu:.2f} | {cpu / EPISODES * 1000:.0f} | "
              f"{statistics.median(r['max_rss_kb'] for r in mine) / 1024:.0f} | "
              f"{statistics.median(r['others_cores'] for r in mine):.2f} |")
    inspect = [r for r in rows if r["variant"].startswith("inspect_ai")]
    if inspect:
        print(f"\ninspect_ai: median import {statistics.median(r['import_s'] for r in inspect):.2f} s, "
              f"median eval() alone {statistics.median(r['eval_s'] for r in inspect):.2f} s "
              f"({EPISODES / statistics.median(r['eval_s'] for r in inspect):.1f} samples/s)")
        base = medians[inspect[0]["variant"]]
        for name, wall in medians.items():
            if not name.startswith("inspect_ai"):
                print(f"ratio {name} / inspect_ai (episodes per second, whole commands): {base / wall:.2f}x")


if __name__ == "__main__":
    main()
