"""``python -m prep``: the ``prep`` command (``prepare``, ``verify``, ``inspect``), for when the
console script is not on ``PATH`` (a venv not activated, ``python -m`` in a job script). The
console script calls :func:`main` too.

Signals are guarded first (``prep.startup``), before the CLI's heavy imports (numpy,
pyarrow, tokenizers): a SIGTERM during them still ends with exit 75; and settled last: a
signal while the interpreter exits cannot change the exit code."""

import sys


def main() -> None:
    from prep.startup import guard, settle

    guard()
    from prep.cli import main as cli_main

    code = cli_main()
    settle()
    sys.exit(code)


if __name__ == "__main__":
    main()
