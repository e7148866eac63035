#!/usr/bin/env bash
# tests/research/slurm-node.sh up DIR | down DIR — a one-node Slurm cluster
# (Debian 12's slurm-wlm with munge) whose config, state, logs and sockets all
# live in DIR, for tests/node/research.test.mjs. `up` prints the SLURM_CONF
# path once the node is idle (within 60 s) and exits non-zero otherwise;
# `down` stops the daemons. Runs as root (CI) with no system services.
set -euo pipefail
cmd=${1:?usage: slurm-node.sh up|down DIR}
D=${2:?usage: slurm-node.sh up|down DIR}
mkdir -p "$D"
D=$(cd "$D" && pwd)
stop() {
    local pids=""
    for p in slurmd slurmctld munged; do
        [ -f "$D/$p.pid" ] && pids="$pids $(cat "$D/$p.pid" 2>/dev/null)"
    done
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    for i in $(seq 50); do
        alive=0
        for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ $alive = 0 ] && break
        sleep 0.1
    done
    for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
}
if [ "$cmd" = down ]; then stop; exit 0; fi
[ "$cmd" = up ] || { echo "slurm-node.sh: up or down" >&2; exit 2; }
for t in munged slurmctld slurmd sbatch sinfo; do
    command -v "$t" > /dev/null || [ -x "/usr/sbin/$t" ] || { echo "slurm-node.sh: $t missing (tools/setup installs slurm-wlm and munge)" >&2; exit 1; }
done
export PATH="$PATH:/usr/sbin"
mkdir -p "$D/munge" "$D/state" "$D/spool"
chmod 700 "$D/munge"
head -c 1024 /dev/urandom > "$D/munge/munge.key"
chmod 400 "$D/munge/munge.key"
# ports from the directory name's hash, so parallel test runs do not collide
h=$(printf '%s' "$D" | cksum | cut -d' ' -f1)
port=$((20000 + h % 20000))
munged --force --key-file="$D/munge/munge.key" --socket="$D/munge/munge.sock" \
       --pid-file="$D/munged.pid" --log-file="$D/munged.log" --seed-file="$D/munge/munge.seed"
host=$(hostname -s)
cat > "$D/slurm.conf" <<CONF
ClusterName=atometest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.sock
CredType=cred/munge
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host CPUs=$(nproc) RealMemory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 9 / 10 )) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$D/slurm.conf"
slurmctld -c -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for i in $(seq 120); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qx idle; then echo "$SLURM_CONF"; exit 0; fi
    sleep 0.5
done
echo "slurm-node.sh: the node did not come up within 60 s (logs in $D)" >&2
stop
exit 1
