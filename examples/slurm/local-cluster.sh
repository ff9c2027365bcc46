#!/bin/bash
# A real single-machine Slurm cluster for trying the recipes in this directory: munge,
# slurmctld and slurmd started directly (no systemd), from a generated slurm.conf in a
# state directory of their own. One node (this machine, its CPUs and memory as slurmd
# detects them), one default partition, no accounting database.
#
#   examples/slurm/local-cluster.sh start    # installs slurm-wlm and munge if missing
#   eval "$(examples/slurm/local-cluster.sh env)"   # SLURM_CONF for sbatch, squeue, sinfo
#   examples/slurm/local-cluster.sh status
#   examples/slurm/local-cluster.sh stop     # kills the daemons, removes the state
#
# Needs root (the daemons run as root, and the packages come from apt-get). Every
# command is idempotent: start on a running cluster only checks it, stop on a stopped one
# does nothing. FAULTLINE_SLURM_DIR chooses the state directory; FAULTLINE_SLURM_PORT the
# first of the two ports (slurmctld, then slurmd).
set -euo pipefail

dir=${FAULTLINE_SLURM_DIR:-/tmp/faultline-slurm}
port=${FAULTLINE_SLURM_PORT:-6817}
conf=$dir/slurm.conf
export SLURM_CONF=$conf

log() { echo "local-cluster: $*" >&2; }

install_missing() {
    local missing=()
    command -v slurmctld >/dev/null || missing+=(slurmctld)
    command -v slurmd >/dev/null || missing+=(slurmd)
    command -v sbatch >/dev/null || missing+=(slurm-client)
    command -v munged >/dev/null || missing+=(munge)
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]} (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
}

# The pid in a daemon's pid file, when that process is alive.
alive() {
    local pid
    pid=$(cat "$dir/$1.pid" 2>/dev/null) || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

write_conf() {
    local host node
    host=$(hostname -s)
    # slurmd -C prints this machine's node line (CPUs, sockets, cores, RealMemory).
    node=$(slurmd -C | grep '^NodeName=' | sed "s/^NodeName=[^ ]*/NodeName=$host/")
    node=${node/ UpTime=*/}
    cat >"$conf" <<EOF
ClusterName=faultline
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/slurmd
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=5
MpiDefault=none
ReturnToService=2
# No slurmdbd: sacct has no history to read. Finished jobs stay in slurmctld's memory
# for MinJobAge seconds (scontrol show job) and are appended to the completion log.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.log
MinJobAge=600
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
    install_missing
    mkdir -p "$dir/ctld" "$dir/slurmd" "$dir/munge"
    [ -f "$conf" ] || write_conf
    if ! alive munged >/dev/null; then
        if [ ! -s "$dir/munge.key" ]; then
            (umask 077 && dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none)
        fi
        chmod 700 "$dir/munge"
        munged --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" \
            --pid-file="$dir/munged.pid" --log-file="$dir/munge/munged.log" \
            --seed-file="$dir/munge/munged.seed"
    fi
    alive slurmctld >/dev/null || slurmctld -c -f "$conf"
    alive slurmd >/dev/null || slurmd -f "$conf"
    local host state=""
    host=$(hostname -s)
    for _ in $(seq 60); do
        state=$(sinfo -h -N -n "$host" -o '%T' 2>/dev/null || true)
        case "$state" in idle* | mixed* | allocated*) break ;; esac
        sleep 1
    done
    case "$state" in
        idle* | mixed* | allocated*) ;;
        *)
            log "node $host is not up after 60 s (state: ${state:-none}); logs in $dir"
            tail -n 5 "$dir"/slurmctld.log "$dir"/slurmd.log >&2 || true
            exit 1
            ;;
    esac
    log "up: SLURM_CONF=$conf"
    sinfo
}

stop() {
    local name pid
    # Jobs still queued or running are cancelled while slurmctld and slurmd can still
    # end them (and their processes); then the daemons go.
    if alive slurmctld >/dev/null && alive slurmd >/dev/null; then
        scancel --quiet --user="$(id -un)" 2>/dev/null || true
        for _ in $(seq 30); do
            [ -z "$(squeue -h -t pending,running,completing,suspended 2>/dev/null)" ] && break
            sleep 1
        done
    fi
    for name in slurmd slurmctld munged; do
        pid=$(alive "$name") || continue
        kill "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
    done
    rm -rf "$dir"
    log "stopped, $dir removed"
}

status() {
    local name pid up=0
    for name in munged slurmctld slurmd; do
        if pid=$(alive "$name"); then echo "$name: running (pid $pid)"; up=$((up + 1)); else echo "$name: not running"; fi
    done
    [ "$up" -eq 3 ] || exit 1
    sinfo
    squeue
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    env) echo "export SLURM_CONF=$conf" ;;
    *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
