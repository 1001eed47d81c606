"""A benchmark's work directory, one rule for every script that uses it: ``--workdir DIR``
is the caller's and is never removed; without it a temporary directory is made, and
removed at the end unless ``--keep``."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path


def work_directory(given: Path | None, prefix: str) -> Path:
    """``given`` (created if missing), else a new temporary directory named ``prefix*``."""
    work = given or Path(tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    return work


def remove_made(work: Path, given: Path | None, keep: bool) -> None:
    """Remove ``work`` when the benchmark made it (no ``given``) and ``keep`` is not set."""
    if given is None and not keep:
        shutil.rmtree(work, ignore_errors=True)
