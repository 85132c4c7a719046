#!/usr/bin/env bash
# A real, single-node Slurm on this machine, for testing `dptune sim slurm` (`just test-slurm`)
# without systemd and without touching the machine's own configuration:
#
#   tools/slurm-local.sh start DIR   install the Debian packages when missing, write DIR/slurm.conf
#                                    (this host as the one node, every path under DIR), start
#                                    munged, slurmctld and slurmd, wait until the node is idle;
#                                    then `export SLURM_CONF=DIR/slurm.conf` and use sbatch & co.
#   tools/slurm-local.sh stop DIR    cancel the jobs of this cluster, stop the three daemons by the
#                                    process ids in their pid files (only those this script
#                                    started), remove the munge key if `start` created it.
#
# What `start` changes outside DIR: the packages slurmctld, slurmd, slurm-client and munge are
# installed when missing (apt-get, --no-install-recommends; they stay installed, as `just deps`
# leaves OpenBLAS), with a temporary /usr/sbin/policy-rc.d so that installing them starts no
# system service; /etc/munge/munge.key is created when missing (and removed by `stop`). The
# daemons listen on two free TCP ports from 16817 up (SlurmctldPort, SlurmdPort). Needs root
# (or sudo): munged runs as the munge user, slurmd as root so that jobs run as their submitter.
set -euo pipefail

die() {
    echo "slurm-local: error: $*" >&2
    exit 1
}

usage() {
    echo "usage: tools/slurm-local.sh start DIR | stop DIR" >&2
    exit 2
}

[ $# -eq 2 ] || usage
action=$1
dir=$2
case "$action" in start | stop) ;; *) usage ;; esac
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "needs root (or sudo) to run munged as munge and slurmd as root"
    sudo="sudo"
fi

PACKAGES=(slurmctld slurmd slurm-client munge)

install_packages() {
    local missing=() p
    for p in "${PACKAGES[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || die "not Debian: install Slurm (slurmctld, slurmd, client commands) and munge yourself"
    local t0=$SECONDS policy=/usr/sbin/policy-rc.d made_policy=""
    echo "slurm-local: installing ${missing[*]} (apt-get)"
    # Installing a daemon must not start it as a system service (this script runs its own).
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
        $sudo chmod 755 "$policy"
        made_policy=y
    fi
    local ok=y
    $sudo apt-get update -qq || ok=""
    if [ -n "$ok" ]; then
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null || ok=""
    fi
    [ -z "$made_policy" ] || $sudo rm -f "$policy"
    [ -n "$ok" ] || die "apt-get could not install ${missing[*]}"
    echo "slurm-local: installed ${missing[*]} in $((SECONDS - t0)) s"
}

# Whether nothing on this machine uses TCP port $1.
port_free() {
    local hex
    hex=$(printf ':%04X ' "$1")
    ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2" "}' | grep -qi -- "$hex"
}

alive() { # pid file, expected command name
    local pid
    pid=$($sudo cat "$1" 2>/dev/null) || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}

logs() {
    local f
    for f in "$dir/munge/munged.log" "$dir/log/slurmctld.log" "$dir/log/slurmd.log"; do
        [ -s "$f" ] || continue
        echo "---- last lines of $f" >&2
        tail -n 15 "$f" >&2
    done
}

stop() {
    if [ -f "$dir/slurm.conf" ] && alive "$dir/slurmctld.pid" slurmctld; then
        # Jobs of this cluster only (its slurmctld is ours): cancel them, give them a moment.
        SLURM_CONF="$dir/slurm.conf" scancel --user="$(id -un)" 2>/dev/null || true
        local i
        for i in $(seq 1 50); do
            [ -z "$(SLURM_CONF="$dir/slurm.conf" squeue --noheader 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
    # All three at once (each takes about 2 s to shut down), then wait for each.
    local f name pid i pids=()
    for f in slurmd slurmctld munge/munged; do
        name=${f#munge/}
        alive "$dir/$f.pid" "$name" || continue
        pid=$($sudo cat "$dir/$f.pid")
        $sudo kill -TERM "$pid" 2>/dev/null || true
        pids+=("$pid:$name")
    done
    for f in "${pids[@]}"; do
        pid=${f%%:*}
        name=${f#*:}
        for i in $(seq 1 100); do
            [ -d "/proc/$pid" ] || break
            sleep 0.1
        done
        if [ -d "/proc/$pid" ]; then
            $sudo kill -KILL "$pid" 2>/dev/null || true
            sleep 0.2
        fi
        [ -d "/proc/$pid" ] && echo "slurm-local: $name (process $pid) did not stop" >&2
    done
    if [ -f "$dir/created-munge-key" ]; then
        $sudo rm -f /etc/munge/munge.key
        rm -f "$dir/created-munge-key"
    fi
    return 0
}

start() {
    for f in slurmd slurmctld; do
        alive "$dir/$f.pid" "$f" && die "$f is already running from $dir (stop it first: tools/slurm-local.sh stop $dir)"
    done
    install_packages
    for cmd in munged slurmctld slurmd sbatch sinfo; do
        command -v "$cmd" >/dev/null || [ -x "/usr/sbin/$cmd" ] || die "$cmd is not installed"
    done
    local host cpus mem
    host=$(hostname -s)
    cpus=$(nproc)
    # At most what the machine has (a node with less memory than configured is drained).
    mem=$(awk '/^MemTotal:/ { m = int($2 / 1024 / 2); print (m < 1000 ? m : 1000) }' /proc/meminfo)
    mkdir -p "$dir"/{munge,state,spool,log}
    chmod 755 "$dir"
    $sudo chown munge: "$dir/munge"
    $sudo chmod 755 "$dir/munge" # munged wants its socket folder searchable by all
    if ! $sudo test -s /etc/munge/munge.key; then
        $sudo mkdir -p /etc/munge
        if command -v mungekey >/dev/null || [ -x /usr/sbin/mungekey ]; then
            $sudo env PATH="$PATH:/usr/sbin" mungekey --create --keyfile=/etc/munge/munge.key --force
        else
            $sudo dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        fi
        $sudo chown munge: /etc/munge/munge.key
        $sudo chmod 400 /etc/munge/munge.key
        touch "$dir/created-munge-key"
    fi
    local ctl_port=16817
    while ! port_free "$ctl_port" || ! port_free $((ctl_port + 1)); do
        ctl_port=$((ctl_port + 2))
        [ "$ctl_port" -lt 17817 ] || die "no two free TCP ports between 16817 and 17817"
    done
    cat >"$dir/slurm.conf" <<EOF
# Written by tools/slurm-local.sh: a one-node Slurm for tests; every path under $dir.
ClusterName=dptune-test
# By address too: a container's host name need not resolve.
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=$ctl_port
SlurmdPort=$((ctl_port + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
# Finished jobs stay visible to scontrol for 10 minutes (their state and exit code).
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF="$dir/slurm.conf"
    local munged=munged slurmctld=slurmctld slurmd=slurmd
    command -v munged >/dev/null || munged=/usr/sbin/munged
    command -v slurmctld >/dev/null || slurmctld=/usr/sbin/slurmctld
    command -v slurmd >/dev/null || slurmd=/usr/sbin/slurmd
    local fail=""
    $sudo runuser -u munge -- "$munged" --socket="$dir/munge/munge.socket" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
        --seed-file="$dir/munge/munge.seed" || fail="munged did not start"
    local i
    for i in $(seq 1 50); do
        $sudo test -S "$dir/munge/munge.socket" && break
        sleep 0.1
    done
    [ -n "$fail" ] || $sudo test -S "$dir/munge/munge.socket" || fail="munged made no socket"
    [ -n "$fail" ] || $sudo env SLURM_CONF="$SLURM_CONF" "$slurmctld" -c -i || fail="slurmctld did not start"
    [ -n "$fail" ] || $sudo env SLURM_CONF="$SLURM_CONF" "$slurmd" || fail="slurmd did not start"
    if [ -z "$fail" ]; then
        fail="the node did not become idle within 30 s"
        for i in $(seq 1 150); do
            case "$(sinfo --noheader --format=%T 2>/dev/null)" in
            idle*) fail="" && break ;;
            down* | drain*) scontrol update nodename="$host" state=resume 2>/dev/null || true ;;
            esac
            sleep 0.2
        done
    fi
    if [ -n "$fail" ]; then
        logs
        stop
        die "$fail (logs above; configuration $dir/slurm.conf)"
    fi
    echo "slurm-local: Slurm is up (node $host, $cpus CPUs, ports $ctl_port and $((ctl_port + 1))): export SLURM_CONF=$dir/slurm.conf"
}

"$action"
