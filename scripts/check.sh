#!/usr/bin/env bash
# Every check CI runs (.ci/run), in one command: ruff over the repository, strict mypy over
# src/, then the test suite (arguments go to pytest). The suite runs last so that its summary
# line is the last line CI prints.
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
mypy
# Two pytest processes (PREP_TEST_JOBS to change it; 0 runs the tests in this process): most
# tests wait on a real prepare.py subprocess, its start-up and its signals, so two keep 2
# cores busier than one (7.3 against 10.5 minutes on a 2-core VM).
python -m pytest -q -n "${PREP_TEST_JOBS:-2}" "$@"
