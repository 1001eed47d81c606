"""Where a dataset goes. :func:`resolve_output` picks the kind of output for ``--out`` (a
bucket URI, a mount point, else a directory); every kind is an
:class:`~prep.outputs.base.Output`, which plays every role (:class:`Staged`, :class:`Commits`,
:class:`Guarded`, :class:`Swappable`, :class:`Readable`, :class:`Parted`): a caller names the
one it needs. A new kind of output is one module here and one line in
:func:`resolve_output`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from prep.errors import OutputError, UsageError
from prep.fsio import is_mount_point
from prep.outputs.base import (
    ABSENT,
    DATASET,
    EMPTY,
    OTHER,
    Commits,
    Guarded,
    Holds,
    Output,
    Parted,
    Readable,
    Seen,
    Staged,
    Swappable,
)
from prep.outputs.local import LocalDir
from prep.outputs.lock import HeldLock, LockPaths, describe_holder, lock_holder
from prep.outputs.mount import STAGING_INSIDE, MountPoint
from prep.state.manifest import Manifest, register_reader

if TYPE_CHECKING:
    from prep.outputs.hf.output import HubSettings

HUB_SCHEME = "hf://"

__all__ = [
    "ABSENT",
    "DATASET",
    "EMPTY",
    "OTHER",
    "Commits",
    "Guarded",
    "HeldLock",
    "Holds",
    "LocalDir",
    "LockPaths",
    "MountPoint",
    "Output",
    "Parted",
    "Readable",
    "Seen",
    "Staged",
    "Swappable",
    "describe_holder",
    "is_uri",
    "location",
    "lock_holder",
    "output_of_staging",
    "published_at",
    "resolve_output",
]


def is_uri(location: object) -> TypeGuard[str]:
    """Whether ``location`` is a URI (``scheme://...``, kept as typed), not a local path:
    the one test of which kind of place a command was given."""
    return isinstance(location, str) and "://" in location


def location(text: str | os.PathLike[str]) -> str | Path:
    """A place as the user typed it: a URI (``scheme://...``) kept as typed, anything else a
    local path."""
    return text if is_uri(text) else Path(text)


def resolve_output(out: str | os.PathLike[str], staging: Path | None = None,
                   hub: HubSettings | None = None) -> Output:
    """The output ``--out`` names: a Hub dataset URI (``hf://datasets/...``, written as
    ``hub`` says) or a bucket URI (staged locally in ``staging``, or under the cache
    directory), a mount point (staging inside it), else a directory (staging beside it).
    Opens no connection. Raises ``OutputError`` when a path names no directory to create,
    ``UsageError`` for a malformed URI or ``staging`` given for a local ``--out``."""
    if is_uri(out):
        if out.startswith(HUB_SCHEME):
            from prep.outputs.hf.output import HubOutput  # huggingface_hub's upload side

            return HubOutput.parse(out, staging, hub)
        from prep.outputs.bucket.output import BucketOutput  # pyarrow's S3 client only when used

        return BucketOutput.parse(out, staging)
    final = Path(os.path.abspath(out))
    if staging is not None:
        raise UsageError(
            f"--staging {staging}: a directory --out is staged beside itself "
            f"({final.name}.incomplete), so that publishing it is one rename; --staging is "
            "for a bucket --out only"
        )
    if final.name in ("", ".", ".."):
        raise OutputError(f"--out {final} must name a directory to create", path=final)
    if is_mount_point(final):  # False for a symlink or a missing path
        return MountPoint(final)
    return LocalDir(final)


def published_at(location: str | os.PathLike[str]) -> Readable:
    """The published dataset at ``location``, to read: a Hub dataset URI (``@REV`` pinned to
    its commit), a bucket URI, else a directory as given (any existing one, ``.`` included:
    reading creates nothing)."""
    if is_uri(location):
        if location.startswith(HUB_SCHEME):
            from prep.outputs.hf.output import HubOutput

            return HubOutput.parse(location, reader=True)
        return resolve_output(location)
    return LocalDir(Path(location))


def _published_manifest(location: str | os.PathLike[str]) -> Manifest:
    return published_at(location).published_manifest()


register_reader(_published_manifest)  # Manifest.load reads every location as readers do


def output_of_staging(staging: Path) -> Output:
    """The output a staging directory belongs to: ``DIR`` for ``DIR.incomplete``, the
    mount point for ``MOUNT/.prep-staging``, the bucket URI recorded beside a bucket
    output's local staging."""
    staging = Path(os.path.abspath(staging))
    if staging.name == STAGING_INSIDE and is_mount_point(staging.parent):
        return resolve_output(staging.parent)
    final = staging.with_name(staging.name.removesuffix(".incomplete"))
    from prep.outputs.bucket.output import recorded_uri

    uri = recorded_uri(final)
    if uri is not None:
        return resolve_output(uri, final.parent)
    return resolve_output(final)
