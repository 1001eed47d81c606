#!/usr/bin/env bash
# The merge job of examples/slurm/submit.sh: verify every part and publish OUT.
#   merge.sh OUT
set -euo pipefail
echo "merge $1: start on $(hostname) at $(date -u +%FT%TZ)"
exec "${PREP:-prep}" merge "$1"
