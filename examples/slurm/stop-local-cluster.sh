#!/usr/bin/env bash
# Stop the daemons examples/slurm/start-local-cluster.sh started (by the pids it recorded).
# Jobs still queued are kept in /var/spool/slurmctld and come back with the next start.
set -uo pipefail
RUN=/run/prep-slurm
for d in slurmd slurmctld munged; do
    f="$RUN/$d.pid"
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
        echo "stopped $d ($pid)"
    fi
    rm -f "$f"
done
