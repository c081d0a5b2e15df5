#!/usr/bin/env bash
# Submits a study as a Slurm array of N shards and its merge (docs/scale-out.md):
#   STUDY=/shared/study docs/scale-out/slurm-submit.sh 16
# N (default 4) is the array size and so the shard count. Prints the two job ids.
set -euo pipefail
: "${STUDY:?set STUDY to the study directory on shared storage (it holds study.toml)}"
shards=${1:-4}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$STUDY/shards"
array=$(sbatch --parsable --array="0-$((shards - 1))" --export=ALL "$here/slurm-array.sh")
merge=$(sbatch --parsable --dependency="afterok:$array" --export=ALL "$here/slurm-merge.sh")
echo "array $array merge $merge"
