#!/usr/bin/env bash
# Every check CI runs (.ci/run), in one command: the test suite (arguments go to pytest),
# ruff over the repository, and strict mypy over src/.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pytest -q "$@"
ruff check .
mypy
