#!/usr/bin/env bash
# Submit a partitioned prep run to Slurm: an array job of N parts, then a merge job.
#
#   examples/slurm/submit.sh N OUT -- PREPARE_OPTIONS...
#
# Part I runs `prep prepare --part I/N --out OUT --resume PREPARE_OPTIONS...` and writes
# OUT.parts/I-of-N/; the merge job (afterok on the whole array) runs `prep merge OUT` and
# publishes OUT. OUT and the source must be on a filesystem every node sees.
#
# Each part is submitted with --requeue and --signal=B:TERM@PREP_SIGNAL_SECS: before its time
# limit (or when preempted) the part gets SIGTERM, checkpoints, exits 75, and part.sh requeues
# it; the requeued task resumes from its checkpoint, so the bytes do not change.
#
# Environment (all optional):
#   PREP              the prep command on the compute nodes (default: `prep` found on PATH here)
#   PREP_TIME         time limit of one part (default 12:00:00)
#   PREP_SIGNAL_SECS  SIGTERM this many seconds before the limit (default 300)
#   PREP_CPUS         CPUs per part (default 2: prep tokenizes on all CPUs it is given)
#   SBATCH_OPTIONS    extra sbatch options for both jobs, e.g. "--partition=spot --account=x"
set -euo pipefail

usage() {
    echo "usage: $0 N OUT -- PREPARE_OPTIONS..." >&2
    echo "  e.g. $0 8 /shared/tok/fineweb -- --source /shared/fineweb --tokenizer gpt2/" >&2
    exit 2
}
[ $# -ge 3 ] || usage
n=$1; out=$2; shift 2
[ "$1" = "--" ] || usage
shift
case "$n" in ''|*[!0-9]*) echo "submit.sh: N must be a positive integer, not '$n'" >&2; exit 2 ;; esac
[ "$n" -ge 1 ] || { echo "submit.sh: N must be >= 1" >&2; exit 2; }
for arg in "$@"; do
    case "$arg" in
        --out|--out=*|--part|--part=*|--parts|--parts=*|--executor|--executor=*)
            echo "submit.sh: do not pass $arg after --: submit.sh sets it" >&2; exit 2 ;;
    esac
done

here=$(cd "$(dirname "$0")" && pwd)
prep=${PREP:-$(command -v prep || true)}
[ -n "$prep" ] || { echo "submit.sh: no prep on PATH; set PREP=/path/to/prep" >&2; exit 1; }
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
logs="$out.parts/logs"
mkdir -p "$logs"
export PREP="$prep"

# shellcheck disable=SC2086  # SBATCH_OPTIONS is a list of options
array=$(sbatch --parsable ${SBATCH_OPTIONS:-} \
    --job-name=prep-parts --array="0-$((n - 1))" --requeue \
    --time="${PREP_TIME:-12:00:00}" --signal="B:TERM@${PREP_SIGNAL_SECS:-300}" \
    --cpus-per-task="${PREP_CPUS:-2}" --output="$logs/part-%a.out" --open-mode=append \
    --export=ALL "$here/part.sh" "$n" "$out" "$@")
array=${array%%;*}
# shellcheck disable=SC2086
merge=$(sbatch --parsable ${SBATCH_OPTIONS:-} \
    --job-name=prep-merge --dependency="afterok:$array" --kill-on-invalid-dep=yes \
    --output="$logs/merge.out" --open-mode=append --export=ALL "$here/merge.sh" "$out")
merge=${merge%%;*}
echo "parts: array job $array (${n} tasks), logs in $logs/part-I.out"
echo "merge: job $merge, runs after every part succeeds; log $logs/merge.out"
echo "watch: squeue -j $array,$merge    find a failed part: sacct -j $array -X -o JobID,State,ExitCode"
echo "retry a failed part I after fixing its cause: scontrol requeue ${array}_I (it resumes)"
echo "$array $merge" > "$out.parts/slurm-jobs"
