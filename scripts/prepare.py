#!/usr/bin/env python3
"""Prepare a dataset: ``python scripts/prepare.py --out tokens/x [options]``; see --help."""

import sys
from pathlib import Path

try:
    from prep.cli import run_prepare
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from prep.cli import run_prepare

if __name__ == "__main__":
    sys.exit(run_prepare(sys.argv[1:]))
