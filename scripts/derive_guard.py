#!/usr/bin/env python3
"""Derive the fast engine's guard sets: ``python scripts/derive_guard.py TOKENIZER.json
[--name gpt2] [--first 80 --last 10FFFF] [--check]``; see prep.encoders.guard_derive."""

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from prep.encoders.guard_derive import main

    sys.exit(main())
