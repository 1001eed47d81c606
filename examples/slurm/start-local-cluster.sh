#!/usr/bin/env bash
# Start a real one-node Slurm cluster on this machine, for trying examples/slurm/submit.sh
# and for the opt-in Slurm test. Needs root and Debian/Ubuntu (apt). Idempotent: a second
# run finds the daemons up and does nothing. Stop it with examples/slurm/stop-local-cluster.sh.
#
# What it does: installs Debian's slurmctld, slurmd, slurm-client and munge if missing;
# writes /etc/slurm/slurm.conf for this host with the cores and memory `slurmd -C` reports
# (refusing to replace a slurm.conf it did not write); starts munged, slurmctld and slurmd
# in the background with pid files under /run/prep-slurm; waits until the node is idle.
set -euo pipefail

MARK="# written by prep examples/slurm/start-local-cluster.sh"
CONF=/etc/slurm/slurm.conf
RUN=/run/prep-slurm
LOG=/var/log/prep-slurm

die() { echo "start-local-cluster: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts system daemons)"

alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
    || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    command -v apt-get >/dev/null || die "slurm and munge are missing and there is no apt-get"
    echo "installing slurmctld slurmd slurm-client munge (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi

mkdir -p "$RUN" "$LOG" /var/spool/slurmctld /var/spool/slurmd /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=128 count=1 status=none; }
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key

if [ -f "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
    die "$CONF exists and was not written by this script; not replacing a real cluster's configuration"
fi
host=$(hostname -s)
node=$(slurmd -C | head -n 1)   # NodeName=HOST CPUs=... RealMemory=... as this machine has them
[ -n "$node" ] || die "slurmd -C printed nothing"
new=$(cat <<CONFEOF
$MARK
ClusterName=prep-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobRequeue=1
KillWait=30
MinJobAge=3600
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG/jobcomp.log
$node State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONFEOF
)
if [ "$(cat "$CONF" 2>/dev/null)" != "$new" ]; then
    printf '%s\n' "$new" > "$CONF"
    echo "wrote $CONF for $host: ${node#NodeName=$host }"
fi

if ! alive munged; then
    runuser -u munge -- /usr/sbin/munged || die "munged did not start: see /var/log/munge/munged.log"
    cp /run/munge/munged.pid "$RUN/munged.pid"
fi
munge -n | unmunge >/dev/null || die "munge does not work: see /var/log/munge/munged.log"

if ! alive slurmctld; then
    /usr/sbin/slurmctld    # daemonizes and writes $RUN/slurmctld.pid
fi
if ! alive slurmd; then
    /usr/sbin/slurmd
fi

for _ in $(seq 1 60); do
    state=$(sinfo -h -n "$host" -o '%T' 2>/dev/null || true)
    case "$state" in
        idle*|mixed*|allocated*) break ;;
        down*|drain*) scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    sleep 1
done
case "$state" in
    idle*|mixed*|allocated*) ;;
    *) die "node $host is '$state' after 60 s; see $LOG/slurmctld.log and $LOG/slurmd.log" ;;
esac
echo "slurm is up: node $host $state; logs in $LOG"
echo "stop it with: $(dirname "$0")/stop-local-cluster.sh   (kills the pids in $RUN)"
