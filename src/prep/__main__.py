"""``python -m prep``: the ``prep`` command (``prepare``, ``verify``, ``inspect``), for when the
console script is not on ``PATH`` (a venv not activated, ``python -m`` in a job script)."""

import sys

from prep.cli import main

if __name__ == "__main__":
    sys.exit(main())
