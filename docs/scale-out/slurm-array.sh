#!/usr/bin/env bash
# One shard of a specgap study per Slurm array task (docs/scale-out.md). Submit with
# slurm-submit.sh, which also queues the merge; or by hand:
#   sbatch --array=0-3 --export=ALL,STUDY=/shared/study slurm-array.sh
# The array size is the shard count: `--shard auto` reads SLURM_ARRAY_TASK_ID, _MIN, _STEP
# and _COUNT, so any --array=A-B[:S] works and nothing here repeats it.
#SBATCH --job-name=specgap-shard
#SBATCH --array=0-3
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --time=24:00:00
#SBATCH --output=specgap-shard-%A_%a.log
set -euo pipefail

# STUDY: a directory on shared storage holding study.toml (docs/run-config.md); the shards
# are published into $STUDY/shards. SPECGAP: the specgap binary (default: the one on PATH).
: "${STUDY:?set STUDY to the study directory on shared storage (it holds study.toml)}"
specgap=${SPECGAP:-specgap}

# The run store stays on the node's local disk while the shard runs (SQLite over NFS is
# unsafe); --publish copies it, finished, to shared storage in one rename.
local_dir=${SPECGAP_LOCAL_DIR:-${TMPDIR:-/tmp}}/specgap-$SLURM_ARRAY_JOB_ID-$SLURM_ARRAY_TASK_ID
trap 'rm -rf "$local_dir"' EXIT

# A retried task (requeue, node failure) continues its own local run when it is still there.
if [ -f "$local_dir/run.toml" ]; then
  "$specgap" run --resume "$local_dir" --jobs "${SLURM_CPUS_PER_TASK:-1}" \
    --publish "$STUDY/shards" --no-report
else
  "$specgap" run --config "$STUDY/study.toml" --shard auto \
    --jobs "${SLURM_CPUS_PER_TASK:-1}" ${SPECGAP_MAX_COST:+--max-cost "$SPECGAP_MAX_COST"} \
    --out "$local_dir" --publish "$STUDY/shards" --no-report
fi
