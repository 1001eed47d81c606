#!/usr/bin/env bash
# Every check CI runs (.ci/run), in one command: ruff over the repository, strict mypy over
# src/, then the test suite (arguments go to pytest). The suite runs last so that its summary
# line is the last line CI prints.
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
mypy
python -m pytest -q "$@"
