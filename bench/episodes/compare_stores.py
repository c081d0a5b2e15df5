#!/usr/bin/env python3
"""Checks that two run stores hold the same results, timestamps aside (issue 32: a speed-up
must leave results identical).

Usage: compare_stores.py STORE_A STORE_B
Exit status 0 and "identical" when they agree; 1 and the first differences otherwise.

Compared:
- every table of results.sqlite, all rows sorted, with the columns that hold clock readings
  left out (`started_ts`, `ended_ts`, `wall_ms`, and any column named `*_ts`);
- run.toml, as text;
- every file under episodes/ (the same set of paths on both sides): trajectories decompressed
  (needs the `zstd` program) with each event's `ts_ms` and `elapsed_ms` left out, every other
  file byte for byte.

A seeded run made twice with scripted or replay agents must compare identical; the bench
makes one store with the build before a change and one after (bench/episodes/same_results.sh).
"""

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

CLOCK_COLUMNS = {"started_ts", "ended_ts", "wall_ms"}
CLOCK_FIELDS = {"ts_ms", "elapsed_ms"}


def is_clock_column(name):
    return name in CLOCK_COLUMNS or name.endswith("_ts")


def table_rows(db_path):
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    out = {}
    for table in tables:
        columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
        kept = [c for c in columns if not is_clock_column(c)]
        select = ", ".join(f'"{c}"' for c in kept) or "1"
        rows = sorted(db.execute(f'SELECT {select} FROM "{table}"').fetchall(), key=repr)
        out[table] = (kept, rows)
    return out


def trajectory(path):
    text = subprocess.run(["zstd", "-qdc", str(path)], check=True, capture_output=True).stdout
    events = []
    for line in text.splitlines():
        if line.strip():
            event = json.loads(line)
            events.append({k: v for k, v in event.items() if k not in CLOCK_FIELDS})
    return events


def episode_files(store):
    root = store / "episodes"
    return {p.relative_to(store): p for p in sorted(root.rglob("*")) if p.is_file()} if root.is_dir() else {}


def compare(a, b):
    problems = []
    rows_a, rows_b = table_rows(a / "results.sqlite"), table_rows(b / "results.sqlite")
    if rows_a.keys() != rows_b.keys():
        problems.append(f"tables differ: {sorted(rows_a.keys() ^ rows_b.keys())}")
    for table in sorted(rows_a.keys() & rows_b.keys()):
        (cols_a, ra), (cols_b, rb) = rows_a[table], rows_b[table]
        if cols_a != cols_b:
            problems.append(f"{table}: columns differ: {cols_a} / {cols_b}")
        elif ra != rb:
            only_a = [r for r in ra if r not in rb][:3]
            only_b = [r for r in rb if r not in ra][:3]
            problems.append(f"{table}: {len(ra)} / {len(rb)} rows; only in A: {only_a}; only in B: {only_b}")
    if (a / "run.toml").read_text() != (b / "run.toml").read_text():
        problems.append("run.toml differs")
    files_a, files_b = episode_files(a), episode_files(b)
    if files_a.keys() != files_b.keys():
        problems.append(f"episode files differ: {sorted(map(str, files_a.keys() ^ files_b.keys()))[:10]}")
    for rel in sorted(files_a.keys() & files_b.keys()):
        if rel.name.endswith(".jsonl.zst"):
            ta, tb = trajectory(files_a[rel]), trajectory(files_b[rel])
            if ta != tb:
                first = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))
                problems.append(f"{rel}: events differ from event {first}")
        elif files_a[rel].read_bytes() != files_b[rel].read_bytes():
            problems.append(f"{rel}: bytes differ")
    return problems, len(files_a), sum(len(r) for _, r in rows_a.values())


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = Path(sys.argv[1]), Path(sys.argv[2])
    problems, files, rows = compare(a, b)
    if problems:
        print(f"DIFFERENT ({len(problems)} problems):")
        for p in problems[:20]:
            print(f"- {p}")
        sys.exit(1)
    print(f"identical: {rows} rows, {files} episode files (clock readings aside)")


if __name__ == "__main__":
    main()
