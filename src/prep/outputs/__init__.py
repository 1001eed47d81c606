"""Where a dataset goes. :func:`resolve_output` picks the kind of output for ``--out`` (a
mount point, else a directory); every kind is an :class:`~prep.outputs.base.Output`. A new
kind of output is one module here and one line in :func:`resolve_output`."""

from __future__ import annotations

import os
from pathlib import Path

from prep.errors import OutputError
from prep.fsio import is_mount_point
from prep.outputs.base import ABSENT, DATASET, EMPTY, OTHER, Output
from prep.outputs.local import LocalDir
from prep.outputs.lock import HeldLock, LockPaths, describe_holder, lock_holder
from prep.outputs.mount import STAGING_INSIDE, MountPoint

__all__ = [
    "ABSENT",
    "DATASET",
    "EMPTY",
    "OTHER",
    "HeldLock",
    "LocalDir",
    "LockPaths",
    "MountPoint",
    "Output",
    "describe_holder",
    "lock_holder",
    "output_of_staging",
    "resolve_output",
]


def resolve_output(out: str | os.PathLike[str]) -> Output:
    """The output ``--out`` names: a mount point (staging inside it), else a directory
    (staging beside it). Raises ``OutputError`` when it names no directory to create."""
    final = Path(os.path.abspath(out))
    if final.name in ("", ".", ".."):
        raise OutputError(f"--out {final} must name a directory to create", path=final)
    if is_mount_point(final):  # False for a symlink or a missing path
        return MountPoint(final)
    return LocalDir(final)


def output_of_staging(staging: Path) -> Output:
    """The output a staging directory belongs to: ``DIR`` for ``DIR.incomplete``, the
    mount point for ``MOUNT/.prep-staging``."""
    staging = Path(os.path.abspath(staging))
    if staging.name == STAGING_INSIDE and is_mount_point(staging.parent):
        return resolve_output(staging.parent)
    return resolve_output(staging.with_name(staging.name.removesuffix(".incomplete")))
