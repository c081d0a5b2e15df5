#!/usr/bin/env bash
# Soak benchmark (issue 31 item 4; BENCHMARKS.md "Soak"): one `specgap run` of EPISODES mixed
# short episodes (scripted:gold and a replay agent that runs commands and forks, under
# `partial` and `full`, on req-basic) at --jobs JOBS, sampling every 2 s the runner's RSS, open
# files, its cgroups (`*-<pid>-*` under the group parents) and its trees in /dev/shm, and the
# episodes stored. Prints the first, middle and last samples and the store's final counts;
# the samples are in OUT/soak.csv.
# Usage: bench/soak/run.sh [EPISODES] [JOBS] [SPECGAP]  (defaults: 20000, 16, target/release/specgap)
set -euo pipefail
cd "$(dirname "$0")/../.."
episodes="${1:-20000}"
jobs="${2:-16}"
bin="${3:-target/release/specgap}"
# Four episodes per repeat: two agents under two conditions.
repeats=$(( (episodes + 3) / 4 ))
out=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
task=crates/specgap-task/tests/fixtures/req-basic
"$bin" run "$task" --agent scripted:gold,replay:bench/soak/replay.jsonl --condition partial,full \
  --repeats "$repeats" --jobs "$jobs" --no-report --out "$out/run" >"$out/stdout" 2>"$out/stderr" &
pid=$!
ran=$pid
parents=$(ls -d /sys/fs/cgroup/{pids,memory,freezer,cpu,unified} 2>/dev/null || true)
# Sampling commands may fail while trees come and go: count what is there.
count() { "$@" 2>/dev/null | wc -l || true; }
echo "elapsed_s,episodes_done,rss_kib,open_fds,cgroups,shm_trees,shm_used_kib" >"$out/soak.csv"
start=$(date +%s)
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  fds=$(count ls "/proc/$pid/fd")
  groups=$(count find $parents -maxdepth 3 -type d -name "*-$pid-*")
  shm=$(count find /dev/shm -maxdepth 1 -name "*-$pid-*")
  used=$(df -k --output=used /dev/shm | tail -1 | tr -d ' ')
  done_=$(sqlite3 -readonly "$out/run/results.sqlite" "select count(*) from episodes where status = 'finished'" 2>/dev/null || echo 0)
  echo "$(( $(date +%s) - start )),$done_,$rss,$fds,$groups,$shm,$used" >>"$out/soak.csv"
  sleep 2
done
status=0; wait "$pid" || status=$?
pid=
[ "$status" = 0 ] || { echo "run failed ($status):"; tail -5 "$out/stderr"; exit 1; }
end=$(date +%s)
echo "machine: $(nproc) cores; $episodes episodes requested ($(( repeats * 4 )) run) at --jobs $jobs in $(( end - start )) s"
echo "stored: $(sqlite3 -readonly "$out/run/results.sqlite" "select group_concat(status || ' ' || n, ', ') from (select status, count(*) as n from episodes group by status)")"
samples=$(( $(wc -l <"$out/soak.csv") - 1 ))
echo "samples: $samples (first, middle, last; then the maxima)"
sed -n "1p;2p;$(( samples / 2 + 1 ))p;\$p" "$out/soak.csv"
awk -F, 'NR > 1 { for (i = 3; i <= 7; i++) if ($i > m[i]) m[i] = $i } END { printf "max: rss_kib %d, open_fds %d, cgroups %d, shm_trees %d, shm_used_kib %d\n", m[3], m[4], m[5], m[6], m[7] }' "$out/soak.csv"
echo "left after the run: cgroups $(count find $parents -maxdepth 3 -type d -name "*-$ran-*"), /dev/shm trees $(count find /dev/shm -maxdepth 1 -name "*-$ran-*")"
cp "$out/soak.csv" "${SOAK_CSV:-/dev/null}" 2>/dev/null || true
