#!/usr/bin/env python3
"""Prepare a dataset: ``python scripts/prepare.py --out tokens/x [options]``; see --help."""

import sys

if __name__ == "__main__":
    try:  # the first statement: nothing but the interpreter runs before the signal guard
        from prep.startup import guard, imported, leave
    except ImportError:  # running from a checkout without `pip install -e .`
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
        from prep.startup import guard, imported, leave

    guard()  # before the heavy imports: a SIGTERM during them still ends with exit 75
    from prep.cli.commands import run_prepare

    imported()
    leave(run_prepare(sys.argv[1:]))  # flushed, then exits: nothing at exit can hang it
