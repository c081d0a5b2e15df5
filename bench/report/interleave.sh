#!/usr/bin/env bash
# Interleaved before/after timing of `specgap report` on a synthetic store (BENCHMARKS.md,
# "Reports"). Usage:
#   bench/report/interleave.sh BEFORE AFTER [ROOT] [EPISODES] [ROUNDS]
# BEFORE and AFTER are two builds of `examples/bench_report` (copy them out of target/ first).
# After one untimed warm-up (which writes the store if missing and records the offline
# judgements), each round runs BEFORE then AFTER under `/usr/bin/time -v` (two report passes per process,
# store already generated under ROOT), keeps each pass's reports in OUT/<name>-r<round>, and at
# the end prints the medians and checks that every pass's reports are byte-identical.
set -euo pipefail
before=${1:?usage: interleave.sh BEFORE AFTER [ROOT] [EPISODES] [ROUNDS]}
after=${2:?usage: interleave.sh BEFORE AFTER [ROOT] [EPISODES] [ROUNDS]}
root=${3:-/tmp/rb}
episodes=${4:-1000000}
rounds=${5:-3}
out=${OUT:-bench/out/report}
mkdir -p "$out"
log="$out/interleave.log"
: > "$log"
# Untimed: generates the store if it is missing and records the offline judgements, so every
# timed pass reads the same store (a report that judges says so, and differs).
echo "== warm-up (store generated if missing, judgements recorded)"
"$before" "$root" "$episodes" > /dev/null
for round in $(seq "$rounds"); do
  for side in before after; do
    bin=$before
    [ "$side" = after ] && bin=$after
    echo "== round $round $side load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$log"
    /usr/bin/time -v "$bin" "$root" "$episodes" "$out/$side-r$round" 2>&1 \
      | grep -E "^pass|Maximum resident|Elapsed|User time|System time" | tee -a "$log"
  done
done
python3 - "$log" <<'PY'
import re, statistics, sys
runs, side, user = {}, None, 0.0
for line in open(sys.argv[1]):
    if m := re.match(r"== round \d+ (\S+)", line):
        side = runs.setdefault(m.group(1), {"load": [], "measures": [], "total": [], "peak GB": [], "cpu s": []})
    elif m := re.search(r"load ([\d.]+) s, measures ([\d.]+) s.*total ([\d.]+) s", line):
        for key, value in zip(("load", "measures", "total"), m.groups()):
            side[key].append(float(value))
    elif m := re.search(r"Maximum resident set size \(kbytes\): (\d+)", line):
        side["peak GB"].append(int(m.group(1)) * 1024 / 1e9)
    elif m := re.search(r"User time \(seconds\): ([\d.]+)", line):
        user = float(m.group(1))
    elif m := re.search(r"System time \(seconds\): ([\d.]+)", line):
        side["cpu s"].append(user + float(m.group(1)))
for name, figures in runs.items():
    print(name, "  ".join(f"{k} {statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" for k, v in figures.items() if v))
PY
first="$out/before-r1"
for dir in "$out"/before-r* "$out"/after-r*; do
  for file in report.md report.html report.json; do
    cmp -s "$first/$file" "$dir/$file" || { echo "reports differ: $first/$file $dir/$file"; exit 1; }
  done
done
echo "reports identical in every pass"
