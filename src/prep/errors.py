"""The error hierarchy: one base, a few kinds, each carrying the exit code the CLI maps it to.

Every message answers what failed, where (file, row, shard) and how to fix it. Library code
raises these; only ``prep.cli.commands`` turns them into a message and an exit code.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from pathlib import Path

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_TEMPFAIL = 75  # EX_TEMPFAIL: stopped early, resumable


class PrepError(Exception):
    """Base of every error prep reports to a user; ``exit_code`` is what the CLI exits with."""

    exit_code: int = EXIT_ERROR

    def __init__(
        self, message: str, *, path: str | Path | None = None, row: int | None = None
    ) -> None:
        super().__init__(message)
        self.path = str(path) if path is not None else None
        self.row = row

    def with_hint(self, hint: str) -> PrepError:
        """The same kind of error, same context, with ``hint`` on a line of its own: how
        prep adds what a caller knows. Raise it ``from`` this one."""
        return type(self)(f"{self}\n{hint}", path=self.path, row=self.row)


class UsageError(PrepError, ValueError):
    """A malformed or out-of-range option: exit 2."""

    exit_code = EXIT_USAGE


class InputError(PrepError, ValueError):
    """Bad input data: a missing column, a null or non-string value, corrupt Parquet, a bad
    tokenizer, an id outside the vocabulary."""


class FormatError(InputError):
    """A ``.bin`` file that breaks the format (docs/format.md, llmc)."""


class OutputError(PrepError, OSError):
    """The output location is not usable: it exists, a staging directory is in the way, or a
    write failed (disk full)."""


class MissingRecipe(PrepError, ValueError):
    """A run must start from the typed recipe (``--resume`` found nothing to resume, or a
    refresh must compare with it) and ``--source`` or ``--tokenizer`` was not typed. Exit 1:
    the request is well-formed, but prep never substitutes a default dataset."""


class IntegrityError(PrepError, ValueError):
    """Committed state disagrees with what it should be: a tampered file, a changed source,
    a checkpoint that does not match. Nothing was changed."""


def lost_file(path: Path, what: str, staging: Path) -> IntegrityError:
    """The refusal of a staging file that is missing or shorter than its checkpoint says
    (``what``): the two causes it can have, and the way out."""
    return IntegrityError(
        f"{path} {what}. A power loss on a disk or filesystem that does not honour fsync "
        "(a write cache without power-loss protection, a mount with barriers off), or a "
        f"change made by hand, can cause this; staging cannot be resumed. Delete {staging} "
        "to start over (rerun the command without --resume; the work committed so far is "
        "lost); if the machine lost power, check that its disks honour fsync first",
        path=path,
    )


class LockedError(PrepError, TimeoutError):
    """Another run holds the output's lock: exit 75, try again later."""

    exit_code = EXIT_TEMPFAIL


class TransientError(PrepError, ConnectionError):
    """A network failure that outlasted the retries: exit 75, rerun with ``--resume``."""

    exit_code = EXIT_TEMPFAIL


class Interrupted(PrepError):
    """Stopped on request (a signal, or the API's ``stop=`` callback) after writing a
    checkpoint: exit 75, rerun with ``--resume``. ``reason`` says what stopped and what was
    kept; ``resume``, when given, holds the ``prep prepare`` arguments that continue the run,
    and the message ends with that command (``Resume with: prep prepare ARGS``)."""

    exit_code = EXIT_TEMPFAIL

    def __init__(
        self,
        reason: str,
        *,
        resume: Sequence[str] | None = None,
        path: str | Path | None = None,
        row: int | None = None,
    ) -> None:
        self.reason = reason
        self.resume = None if resume is None else tuple(resume)
        command = "" if resume is None else f" Resume with: prep prepare {' '.join(resume)}"
        super().__init__(reason + command, path=path, row=row)


def never() -> bool:
    """The stop request of a caller that never asks to stop (the default ``stop=`` of every
    job that polls one, raising :class:`Interrupted` when it returns True)."""
    return False


def os_failure(
    e: OSError, final: Path | str | None = None, staging: Path | None = None
) -> PrepError:
    """The one translation of an OS error no layer below turned into a ``PrepError``: a
    read or a write that failed (disk full, I/O error, a directory where a file belongs).
    With ``final`` and ``staging`` (a prepare run's ``--out`` and its staging directory),
    say what survives and how to continue."""
    where = e.filename or (staging if staging is not None and staging.exists() else final)
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        what = f"no space left on the device writing {where} ({e.strerror})"
        fix = "free some space, then rerun"
    else:  # the errno alone does not say whether it was a read or a write
        what = f"{where}: {e.strerror or e}" if where else f"{e.strerror or e}"
        fix = "fix the cause, then rerun"
    if final is None or staging is None:
        return OutputError(f"{what}; {fix}", path=where)
    if staging.exists():
        state = f"the last checkpoint in {staging} is intact"
        fix += f" with --resume (prep prepare --out {final} --resume)"
    else:
        state = "nothing was committed yet"
        fix += " the same command"
    return OutputError(f"{what}; {state}: {fix}", path=where)
