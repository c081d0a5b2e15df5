#!/usr/bin/env bash
# Joins the published shards of a study once every array task has ended (docs/scale-out.md);
# slurm-submit.sh queues it with --dependency=afterok on the array.
#SBATCH --job-name=specgap-merge
#SBATCH --cpus-per-task=1
#SBATCH --mem=4G
#SBATCH --time=01:00:00
#SBATCH --output=specgap-merge-%j.log
set -euo pipefail
: "${STUDY:?set STUDY to the study directory on shared storage}"
specgap=${SPECGAP:-specgap}

# Refuses a missing shard, a shard published twice with different results, or shards of
# different plans, naming them; an identical retried copy is merged once.
"$specgap" merge "$STUDY/shards" --out "$STUDY/merged"
"$specgap" report "$STUDY/merged" --format md --out "$STUDY/merged/report.md"
