"""``python -m prep``: the ``prep`` command (``prepare``, ``verify``, ``inspect``), for when the
console script is not on ``PATH`` (a venv not activated, ``python -m`` in a job script). The
console script calls :func:`main` too.

Signals are guarded first (``prep.startup``), before the CLI's heavy imports (numpy,
pyarrow, tokenizers): a SIGTERM during them still ends with exit 75; and left last
(``prep.startup.leave``): flushed, then ended with the command's exit code, so that neither
a signal nor anything still running can change it or hold up the exit."""


def main() -> None:
    from prep.startup import guard, imported, leave

    guard()
    from prep.cli.commands import main as cli_main

    imported()
    leave(cli_main())


if __name__ == "__main__":
    main()
