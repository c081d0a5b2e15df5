#!/usr/bin/env python3
"""Episode-throughput measurement: specgap vs inspect_ai, runs interleaved.

Usage (run.sh calls this; paths relative to the repository root):
    measure.py --runs 5 --out bench/out/episodes [--jobs 8] [--quiet-wait 120]
               [--idle-tail 0.5] [--only SUBSTRING]...

Variants (each 200 episodes / samples at --jobs / max_samples 8):
- specgap on one task with --repeats 200;
- specgap on 200 generated task dirs (OUT/copies, made by make_copies.sh);
- inspect_ai, agent loop: the work as tool calls of a scripted mockllm model, run by
  generate(tool_calls="loop") (inspect_task.py `episodes_agent`; the like-for-like peer of
  specgap's replay agent, whose calls also go through the harness's tool dispatch);
- inspect_ai, direct sandbox calls: the same commands issued by a solver itself, no model turn
  (inspect_task.py `episodes_direct`; a lower bound of inspect's cost for the work);
- only when asked for with `--only no-sandbox`: specgap --no-sandbox (harness cost without
  bubblewrap).

Each round runs every variant once, in turn (A B C D, A B C D, ...), so a neighbour's load on
this shared machine hits all variants alike. Before each run it waits (at most --quiet-wait
seconds) until the machine has been at least 90 % idle for one second, and records that
second's busy cores as the background. For every run it records:

- wall time, start to exit of the command;
- CPU of the command and its children (user + sys from wait4's rusage);
- machine CPU: busy jiffies of all CPUs from /proc/stat (user + nice + system + irq + softirq
  + steal) from just before the start to --idle-tail seconds (default 0.5) after the exit. A
  sandboxed episode's kernel work partly runs in kernel worker threads (network-namespace
  teardown, cgroup release, deferred frees) that wait4 does not charge to the command, and some
  of it lands after the command exits, hence the tail. It also includes whatever other tenants
  ran meanwhile: compare it with the background column, and read it from quiet runs.

Every run is checked: specgap's store holds 200 finished, successful episodes; inspect_ai's log
is a success with 200 samples at accuracy 1 and the counted work (model turns, shell commands,
file writes) equals what 200 samples of the variant must do.

Prints one line per run to stderr, then Markdown tables of the medians and of the ratios
specgap / inspect_ai, and writes all rows to OUT/runs.json.
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


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_ticks():
    """(busy, total) jiffies summed over all CPUs, from the first line of /proc/stat.

    The first eight fields are user, nice, system, idle, iowait, irq, softirq, steal (guest time
    is already inside user and nice); busy = all of them but idle and iowait.
    """
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])
    return total - idle, total


def wait_for_quiet(limit_s):
    """Waits until one second passes with the machine ≥ 90 % idle (or limit_s runs out).

    Returns (seconds waited, busy cores during the last one-second sample): the background load
    just before the run.
    """
    ncpu = os.cpu_count() or 1
    start = time.monotonic()
    busy_share = 0.0
    while True:
        b0, t0 = cpu_ticks()
        time.sleep(1)
        b1, t1 = cpu_ticks()
        busy_share = (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0
        if busy_share <= 0.10 or time.monotonic() - start >= limit_s:
            break
    return time.monotonic() - start, busy_share * ncpu


def timed(argv, cwd, stdout_path, idle_tail_s):
    """Runs argv; returns wall seconds, its rusage and the machine's busy CPU around the run.

    Machine CPU counts from just before the start to idle_tail_s after the exit (kernel work the
    run left to worker threads finishes there); the wall time ends at the exit.
    """
    ncpu = os.cpu_count() or 1
    b0, t0 = cpu_ticks()
    start = time.perf_counter()
    with open(stdout_path, "wb") as out:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.PIPE)
        stderr = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    time.sleep(idle_tail_s)
    b1, t1 = cpu_ticks()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed ({status}): {' '.join(map(str, argv))}\n{stderr.decode()[-2000:]}")
    machine_cpu_s = (b1 - b0) / CLOCK_TICKS
    own_cpu = usage.ru_utime + usage.ru_stime
    return {
        "wall_s": wall,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "max_rss_kb": usage.ru_maxrss,
        "idle_tail_s": idle_tail_s,
        # Busy CPU seconds of the whole machine over the run and its tail (all tenants).
        "machine_cpu_s": machine_cpu_s,
        "machine_busy_cores": (b1 - b0) / (t1 - t0) * ncpu if t1 > t0 else 0.0,
        # Machine CPU not charged to the command by wait4: kernel worker threads plus other tenants.
        "unattributed_cpu_s": max(0.0, machine_cpu_s - own_cpu),
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
    work = {k: report["work"].get(k, 0) for k in report["expected_work"]}
    if (report["status"] != "success" or report["samples"] != EPISODES or report["accuracy"] != 1.0
            or work != report["expected_work"]):
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
        "inspect_ai agent loop, 200 samples (local)": lambda i: (
            [python, str(HERE / "inspect_run.py"), str(out / f"inspect-agent-{i}"), "--variant", "agent",
             "--max-samples", str(args.jobs)],
            check_inspect,
        ),
        "inspect_ai direct sandbox calls, 200 samples (local)": lambda i: (
            [python, str(HERE / "inspect_run.py"), str(out / f"inspect-direct-{i}"), "--variant", "direct",
             "--max-samples", str(args.jobs)],
            check_inspect,
        ),
    }
    if not args.only:
        return {name: make for name, make in found.items() if "--no-sandbox" not in name}
    return {name: make for name, make in found.items() if any(s in name for s in args.only)}


def median_of(rows, key):
    return statistics.median(key(r) for r in rows)


def print_tables(rows, chosen):
    """Markdown table of per-variant medians, then the specgap / inspect_ai ratios."""
    print("| variant | runs | median wall (s) | episodes/s | min–max wall (s) "
          "| CPU ms / episode (children, wait4) | machine CPU ms / episode | max RSS (MB) "
          "| background before run (cores) |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    summary = {}
    for name in chosen:
        mine = [r for r in rows if r["variant"] == name]
        walls = [r["wall_s"] for r in mine]
        wall = statistics.median(walls)
        children_ms = median_of(mine, lambda r: r["user_s"] + r["sys_s"]) / EPISODES * 1000
        machine_ms = median_of(mine, lambda r: r["machine_cpu_s"]) / EPISODES * 1000
        summary[name] = {"wall": wall, "children_ms": children_ms, "machine_ms": machine_ms}
        print(f"| {name} | {len(mine)} | {wall:.2f} | {EPISODES / wall:.1f} | "
              f"{min(walls):.2f}–{max(walls):.2f} | {children_ms:.0f} | {machine_ms:.0f} | "
              f"{median_of(mine, lambda r: r['max_rss_kb']) / 1024:.0f} | "
              f"{median_of(mine, lambda r: r['background_cores']):.2f} |")
    tail = rows[0]["idle_tail_s"] if rows else 0
    print(f"\nMachine CPU = busy CPU of the whole machine (/proc/stat: user+nice+system+irq+softirq+steal, "
          f"all CPUs) from the start to {tail:g} s after the exit, divided by {EPISODES} episodes; unlike "
          "wait4's children CPU it includes kernel worker threads (namespace teardown, cgroup release), "
          "and also any other tenant's work (see the background column).")

    inspect = [r for r in rows if r["variant"].startswith("inspect_ai")]
    for name in dict.fromkeys(r["variant"] for r in inspect):
        mine = [r for r in inspect if r["variant"] == name]
        eval_s = median_of(mine, lambda r: r["eval_s"])
        print(f"{name}: median import {median_of(mine, lambda r: r['import_s']):.2f} s, "
              f"median eval() alone {eval_s:.2f} s ({EPISODES / eval_s:.1f} samples/s)")

    peers = [n for n in summary if n.startswith("inspect_ai")]
    ours = [n for n in summary if not n.startswith("inspect_ai")]
    if peers and ours:
        print("\n| specgap variant | inspect_ai variant | episodes/s, specgap / inspect_ai "
              "| CPU per episode (children), specgap / inspect_ai "
              "| machine CPU per episode, specgap / inspect_ai |")
        print("| --- | --- | ---: | ---: | ---: |")
        for mine in ours:
            for peer in peers:
                a, b = summary[mine], summary[peer]
                print(f"| {mine} | {peer} | {b['wall'] / a['wall']:.2f}x | "
                      f"{a['children_ms'] / b['children_ms']:.2f}x | {a['machine_ms'] / b['machine_ms']:.2f}x |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/out/episodes")
    parser.add_argument("--quiet-wait", type=float, default=120.0)
    parser.add_argument("--idle-tail", type=float, default=0.5,
                        help="seconds after each run's exit still counted in its machine CPU")
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
            waited, background = wait_for_quiet(args.quiet_wait)
            stdout_path = out / f"stdout-{i}-{len(rows)}.txt"
            row = {"variant": name, "round": i, "waited_s": round(waited, 1),
                   "background_cores": background, **timed(argv, ROOT, stdout_path, args.idle_tail)}
            row.update(check(stdout_path))
            row["per_s"] = EPISODES / row["wall_s"]
            rows.append(row)
            print(f"round {i} {name}: {row['wall_s']:.2f} s, {row['per_s']:.1f}/s, "
                  f"cpu (children) {row['user_s'] + row['sys_s']:.2f} s, "
                  f"machine cpu {row['machine_cpu_s']:.2f} s, background {background:.2f} cores",
                  file=sys.stderr, flush=True)
    (out / "runs.json").write_text(json.dumps(rows, indent=1))
    print_tables(rows, chosen)


if __name__ == "__main__":
    main()
