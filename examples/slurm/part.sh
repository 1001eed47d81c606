#!/usr/bin/env bash
# One Slurm array task of examples/slurm/submit.sh: part $SLURM_ARRAY_TASK_ID of N.
#   part.sh N OUT PREPARE_OPTIONS...
# SIGTERM (the time-limit warning, preemption, `scontrol requeue`) is passed to prep, which
# checkpoints and exits 75; the task then requeues itself and resumes when it runs again.
set -uo pipefail
n=$1; out=$2; shift 2
part="$SLURM_ARRAY_TASK_ID/$n"
echo "part $part: start (restart ${SLURM_RESTART_COUNT:-0}) on $(hostname) at $(date -u +%FT%TZ)"
workers=()   # one worker process per CPU Slurm gave this task, unless --workers says otherwise
case " $* " in *" --workers "*|*" --workers="*) ;; *)
    [ -n "${SLURM_CPUS_PER_TASK:-}" ] && workers=(--workers "$SLURM_CPUS_PER_TASK") ;;
esac
"${PREP:-prep}" prepare --part "$part" --out "$out" --resume "${workers[@]}" "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
wait "$child"; rc=$?
while [ "$rc" -gt 128 ]; do   # a trapped signal may have interrupted wait before prep ended
    wait "$child"; again=$?
    [ "$again" = 127 ] && break   # prep had already been reaped: rc is its own status
    rc=$again
done
echo "part $part: prep exited $rc"
if [ "$rc" = 75 ]; then
    echo "part $part: stopped resumably; requeueing ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
    scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}" || true
fi
exit "$rc"
