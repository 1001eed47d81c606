"""``python -m prep``: the ``prep`` command (``prepare``, ``verify``, ``inspect``), for when the
console script is not on ``PATH`` (a venv not activated, ``python -m`` in a job script). The
console script calls :func:`main` too.

Signals are guarded first (``prep.startup``), before the CLI's heavy imports (numpy,
pyarrow, tokenizers): a SIGTERM during them still ends with exit 75."""

import sys


def main() -> None:
    from prep.startup import guard

    guard()
    from prep.cli import main as cli_main

    sys.exit(cli_main())


if __name__ == "__main__":
    main()
