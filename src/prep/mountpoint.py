"""``--out`` on a mount point: staging inside it, publishing file by file.

A directory rename cannot replace a mount point, so when ``--out`` is one (an empty
filesystem mounted for the dataset), staging is ``OUT/.prep-staging`` (on the same
filesystem) and publishing renames each of its files into ``OUT``, ``_MANIFEST.json``
last: that rename is the commit point (a dataset is a directory with a manifest), and
``OUT`` is fsynced before and after it. A kill before the commit leaves some files in
``OUT`` and the rest, with the manifest, in staging; the next run moves them back (under
the lock) and publishes again. The empty staging directory is removed after the commit
(or by the next run). ``lost+found``, which mkfs puts at the root of ext filesystems, is
not counted as content and is left alone.
"""

from __future__ import annotations

import logging
import os

from prep.errors import OutputError, PrepError
from prep.formats import get_format
from prep.fsio import fsync_dir, rename_noreplace
from prep.publish import OutputPaths
from prep.state.manifest import MANIFEST_NAME, PROVENANCE_NAME, read_manifest

logger = logging.getLogger(__name__)

IGNORED = frozenset({"lost+found"})


def _content(paths: OutputPaths) -> list[str]:
    """The names in ``OUT`` that are neither prep's staging nor ``lost+found``."""
    own = {paths.staging.name, paths.building.name}
    return sorted(n for n in os.listdir(paths.final) if n not in own | IGNORED)


def _published_early(paths: OutputPaths, names: list[str]) -> bool:
    """Whether ``names`` (in ``OUT``, which has no manifest) are files an interrupted
    publish moved out of staging: staging holds the manifest that lists each of them, and
    none of them is still in staging."""
    try:
        manifest = read_manifest(paths.staging)
    except (OSError, PrepError):  # no readable manifest: nothing to recognise them by
        return False
    fmt = get_format(manifest.format, manifest.dtype)
    listed = {f for e in manifest.files for f in fmt.shard_files(e.name)} | {PROVENANCE_NAME}
    return all(n in listed and not (paths.staging / n).exists() for n in names)


def mount_state(paths: OutputPaths) -> str:
    """What a mount point ``--out`` holds: ``dataset`` (a manifest), ``empty`` (nothing but
    staging and ``lost+found``, or the files an interrupted publish moved, which
    :func:`recover` moves back), or ``other``."""
    if (paths.final / MANIFEST_NAME).is_file():
        return "dataset"
    names = _content(paths)
    return "empty" if not names or _published_early(paths, names) else "other"


def recover(paths: OutputPaths) -> None:
    """Under the lock, undo what a kill left: the files of an interrupted publish go back
    into staging (to be verified and published again); an empty staging directory left in
    a published dataset is removed."""
    staging, final = paths.staging, paths.final
    if not staging.is_dir():
        return
    if (final / MANIFEST_NAME).is_file():
        if not any(staging.iterdir()):
            staging.rmdir()
            fsync_dir(final)
        return
    names = _content(paths)
    if names and _published_early(paths, names):
        for name in names:
            rename_noreplace(final / name, staging / name)
        fsync_dir(staging)
        fsync_dir(final)
        logger.info(
            "an interrupted publish had moved %d files into %s; moved them back to %s",
            len(names), final, staging,
        )


def publish_into(paths: OutputPaths) -> None:
    """Rename every file of staging into ``OUT``, then ``_MANIFEST.json`` (the commit
    point), fsyncing ``OUT`` before and after; remove the emptied staging directory.
    Raises ``OutputError`` when ``OUT`` holds anything else (nothing is replaced)."""
    staging, final = paths.staging, paths.final
    if _content(paths):
        raise OutputError(
            f"{final} is no longer empty; nothing was replaced and {staging} is kept: "
            f"empty {final} (keep {staging.name}), then rerun with --resume",
            path=final,
        )
    for name in sorted(os.listdir(staging)):
        if name != MANIFEST_NAME:
            rename_noreplace(staging / name, final / name)
    fsync_dir(final)
    rename_noreplace(staging / MANIFEST_NAME, final / MANIFEST_NAME)
    fsync_dir(final)
    staging.rmdir()
    fsync_dir(final)
