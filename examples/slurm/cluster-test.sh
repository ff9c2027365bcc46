#!/bin/bash
# The Slurm recipe end to end on a real scheduler (`just cluster-test`): starts the local
# cluster (local-cluster.sh), submits `SHARDS=3 submit.sh` unchanged, waits for the array
# job and its afterok merge-and-gate job, then compares every CSV table of the merged run
# with an unsharded run of the same config, byte for byte. Exits non-zero when a job did
# not complete or a table differs. Stops the cluster afterwards unless it was already
# running. Needs root (see local-cluster.sh).
#
#   examples/slurm/cluster-test.sh [FAULTLINE_BINARY]
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$repo/target/release/faultline}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
[ -x "$bin" ] || { echo "no faultline binary at $bin (cargo build --release --bin faultline)" >&2; exit 2; }
cluster=$repo/examples/slurm/local-cluster.sh
shards=${SHARDS:-3}
config=${CONFIG:-examples/ci/ci.toml}
started=$EPOCHREALTIME

work=$(mktemp -d -t faultline-cluster-XXXXXX)
# Browser profiles of this check's runs, in a directory of its own.
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR" "$work/bin"
ours=0
cleanup() {
    if [ "$ours" = 1 ]; then "$cluster" stop || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

if "$cluster" status >/dev/null 2>&1; then
    echo "using the running local cluster"
else
    ours=1
    "$cluster" start
fi
eval "$("$cluster" env)"

# A submission directory as the recipe expects (run from the repository root: the
# config's paths are relative to it), with faultline on PATH for the jobs
# (submit.sh passes --export=ALL).
ln -s "$repo/examples" "$work/examples"
ln -s "$bin" "$work/bin/faultline"
export PATH=$work/bin:$PATH

cd "$work"
# The unsharded reference, on the login side, while the cluster runs the shards.
(faultline run --config "$config" --out "$work/whole" >"$work/whole.log" 2>&1; echo $? >"$work/whole.rc") &
reference=$!

submitted=$(SHARDS=$shards RESULTS=$work/cluster bash examples/slurm/submit.sh)
merge=${submitted##* }
array=$(scontrol show job "$merge" | sed -n 's/.*Dependency=afterok:\([0-9]*\).*/\1/p')
echo "submitted: array job $array (shards), merge job $merge ($submitted)"
echo "--- squeue right after submission:"
squeue -o '%.10i %.16j %.8T %.10M %.20R %E'

# Wait for the array and the merge job to leave the queue (30 minutes at most).
last=""
for _ in $(seq 1800); do
    now=$(squeue -h -j "$array,$merge" -o '%i %T %R' 2>/dev/null | sort | tr '\n' ';')
    [ -z "$now" ] && break
    if [ "$now" != "$last" ]; then echo "squeue: $now"; last=$now; fi
    sleep 1
done
[ -z "$now" ] || { echo "jobs still queued after 30 minutes: $now" >&2; exit 1; }
wait "$reference"

echo "--- final states (scontrol show job):"
fail=0
for id in $(seq 0 $((shards - 1)) | sed "s/^/${array}_/") "$merge"; do
    line=$(scontrol show job "$id" | tr -s ' \n' ' ')
    state=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$line")
    exit_code=$(sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p' <<<"$line")
    start=$(sed -n 's/.*StartTime=\([^ ]*\).*/\1/p' <<<"$line")
    end=$(sed -n 's/.*EndTime=\([^ ]*\).*/\1/p' <<<"$line")
    echo "JobId=$id JobState=$state ExitCode=$exit_code StartTime=$start EndTime=$end"
    [ "$state" = COMPLETED ] || fail=1
done
echo "--- completion log (jobcomp/filetxt):"
cut -d' ' -f1,5,9-10 "$(dirname "$SLURM_CONF")/jobcomp.log" | tail -n $((shards + 1))
if [ "$fail" = 1 ]; then
    echo "a job did not complete; logs:" >&2
    tail -n 20 "$work"/faultline-*.log >&2 || true
    exit 1
fi
[ "$(cat "$work/whole.rc")" = 0 ] || { cat "$work/whole.log" >&2; exit 1; }
grep -h '^merged' "$work/faultline-merge.log"
grep -h '^## faultline gate' "$work/cluster/gate.md"

# Every table of the unsharded run, and no other, in the merged run, byte for byte.
differ=0
tables=$(cd "$work/whole" && ls -- *.csv)
[ "$tables" = "$(cd "$work/cluster/merged" && ls -- *.csv)" ] || { echo "the merged run has other tables than the unsharded run" >&2; differ=1; }
for t in $tables; do
    if cmp "$work/whole/$t" "$work/cluster/merged/$t"; then echo "cmp $t: identical"; else differ=1; fi
done
[ "$differ" = 0 ] || exit 1
echo "cluster test passed: $shards shards on Slurm merged into tables byte-identical to the unsharded run ($(wc -w <<<"$tables") CSV files), $(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s wall"
