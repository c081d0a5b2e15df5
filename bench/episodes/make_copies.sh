#!/usr/bin/env bash
# Generates N copies of task/echo as separate packages (names bench/echo-001 ...) under DIR,
# for the "N task directories" variant of the episode-throughput benchmark.
# Usage: bench/episodes/make_copies.sh DIR [N]   (default N = 200)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$1"; n="${2:-200}"
rm -rf "$dir"; mkdir -p "$dir"
for i in $(seq -f '%03g' 1 "$n"); do
  cp -r "$here/task/echo" "$dir/echo-$i"
  sed -i "s|^name = \"bench/echo\"|name = \"bench/echo-$i\"|" "$dir/echo-$i/task.toml"
done
