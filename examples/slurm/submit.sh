#!/bin/bash
# Submits the array of shards and the merge job that waits for all of them. Run from the
# repository root (the paths in the config are relative to it):
#   SHARDS=8 examples/slurm/submit.sh
set -euo pipefail
SHARDS=${SHARDS:-4}
export RESULTS=${RESULTS:-results/cluster} SHARDS
here=$(dirname "$0")
array=$(sbatch --parsable --export=ALL --array=0-$((SHARDS - 1)) "$here/shards.sbatch")
sbatch --export=ALL --dependency=afterok:"$array" "$here/merge.sbatch"
