#!/usr/bin/env bash
# A throw-away single-node Slurm for the dataset tests (python/tests/test_dataset_slurm.py):
# munged with a fresh key, slurmctld and slurmd, all state, sockets and logs under DIR, on ports
# 16817/16818. Usage: slurm_local.sh start DIR | stop DIR. Needs root (slurmd) and Debian's
# slurm-wlm and munge (scripts/setup.sh installs them).
set -euo pipefail
cmd=$1
D=$2
if [ "$cmd" = stop ]; then
  for p in "$D/slurmd.pid" "$D/slurmctld.pid" "$D/munge/munged.pid"; do
    [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null || true
  done
  exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
mkdir -p $D/state $D/spool $D/log $D/munge
chmod 700 $D/munge
dd if=/dev/urandom of=$D/munge/munge.key bs=1024 count=1 status=none
chmod 400 $D/munge/munge.key
/usr/sbin/munged --key-file=$D/munge/munge.key --socket=$D/munge/munge.sock --pid-file=$D/munge/munged.pid --log-file=$D/log/munged.log --seed-file=$D/munge/seed --force
H=$(hostname -s)
CPUS=$(nproc)
# the node's memory (MiB, a little under the machine's: slurmd refuses a node that claims more),
# so that the dataset tool's `#SBATCH --mem` (sized from the shard) fits
MEM=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.95 }' /proc/meminfo)
cat > $D/slurm.conf <<CONF
ClusterName=nbtest
SlurmctldHost=$H
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldPort=16817
SlurmdPort=16818
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SlurmctldParameters=enable_configless
NodeName=$H CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=local Nodes=$H Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$D/slurm.conf
/usr/sbin/slurmctld -f $D/slurm.conf
/usr/sbin/slurmd -f $D/slurm.conf
# ready when the node is idle
for _ in $(seq 100); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && exit 0
  sleep 0.2
done
echo "slurm_local.sh: the node did not come up (logs in $D/log)" >&2
exit 1
