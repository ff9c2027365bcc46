#!/bin/sh
# Runs the suite on a cluster: the volume, the Indexed Job of shards, then (once every
# index completed) the merge-and-gate Job. Exits with the gate's status.
set -eu
here=$(dirname "$0")
kubectl apply -f "$here/volume.yaml"
kubectl apply -f "$here/shards-job.yaml"
kubectl wait --for=condition=complete job/faultline-shards --timeout=6h
kubectl apply -f "$here/merge-job.yaml"
kubectl wait --for=condition=complete job/faultline-merge --timeout=1h || {
  kubectl logs job/faultline-merge
  exit 1
}
kubectl logs job/faultline-merge
