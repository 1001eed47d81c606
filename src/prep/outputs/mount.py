"""``--out`` on a mount point: staging inside it, publishing file by file.

A directory rename cannot replace a mount point, so when ``--out`` is one (an empty
filesystem mounted for the dataset), staging is ``OUT/.prep-staging`` (on the same
filesystem) and publishing puts each of its files into ``OUT``, ``_MANIFEST.json`` last:
the manifest's arrival is the commit point (a dataset is a directory with a manifest).

Files go from one directory to the other as hard links first: every file is linked into
``OUT``, ``OUT`` is fsynced, the manifest is linked (and ``OUT`` fsynced again), and only
then are the old names removed from staging. A rename between two directories would be
two directory changes that a power cut may keep one of, the removal from staging without
the name in ``OUT`` (the file lost); with links, a file is in staging, or in ``OUT``, or
both, at every instant and after any cut. A filesystem without hard links gets renames.

A kill (or cut) before the commit leaves some files in ``OUT`` and all of them, with the
manifest, in staging; the next run (under the lock) removes them from ``OUT`` (or moves
back what an older prep had moved) and publishes again. After the commit, what is left in
staging is links of the published files, which the next run removes with the emptied
directory. ``lost+found``, which mkfs puts at the root of ext filesystems, is not counted as
content and is left alone. The lock is ``OUT.lock`` beside the mount point.

A refresh cannot swap a new version in (no rename replaces a mount point): it reports an
unchanged dataset as up to date and refuses a changed one.
"""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

from prep.errors import OutputError, PrepError
from prep.formats import get_format
from prep.fsio import (
    folders_of,
    fsync_all,
    fsync_dir,
    make_parents,
    remove_emptied,
    rename_noreplace,
    tree_files,
)
from prep.outputs.base import DATASET, EMPTY, OTHER, Seen
from prep.outputs.local import LocalDir
from prep.state.manifest import MANIFEST_NAME, PROVENANCE_NAME, read_manifest

logger = logging.getLogger(__name__)

STAGING_INSIDE = ".prep-staging"  # staging's name inside a mount point --out
IGNORED = frozenset({"lost+found"})


def _same(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file (two links of an inode)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _linked(src: Path, dst: Path, names: list[str]) -> bool:
    """Hard-link ``src/NAME`` to ``dst/NAME`` for each name (a path: a format's split
    folders are made in ``dst``), then fsync those folders and ``dst``. Raises
    ``OutputError`` when a name exists in ``dst`` (nothing is replaced); False, with
    nothing left linked, where the filesystem has no hard links."""
    done: list[str] = []
    folders = make_parents(dst, names)
    try:
        for name in names:
            os.link(src / name, dst / name)
            done.append(name)
    except FileExistsError as e:
        raise OutputError(f"{dst / e.filename} appeared while publishing; it was not "
                          "replaced", path=dst) from e
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
            raise
        for name in done:
            (dst / name).unlink()
        return False
    fsync_all(folders)
    fsync_dir(dst)
    return True


def _move(src: Path, dst: Path, names: list[str]) -> None:
    """Move ``names`` from ``src`` to ``dst`` so that each is in one of the two at every
    instant, after any power cut too: linked into ``dst`` (fsynced), then unlinked from
    ``src`` (fsynced). Renamed where the filesystem has no hard links."""
    if not names:
        return
    if _linked(src, dst, names):
        for name in names:
            (src / name).unlink()
    else:
        _renamed(src, dst, names)
    _emptied(src, names)


def _renamed(src: Path, dst: Path, names: list[str]) -> None:
    """Rename each ``src/NAME`` to ``dst/NAME`` (no hard links here), then fsync ``dst``'s
    folders and ``dst``."""
    folders = make_parents(dst, names)
    for name in names:
        rename_noreplace(src / name, dst / name)
    fsync_all(folders)
    fsync_dir(dst)


def _emptied(src: Path, names: list[str]) -> None:
    """``names`` were taken out of ``src``: fsync their folders, remove those left empty,
    fsync ``src``."""
    fsync_all([f for f in folders_of(src, names) if f.is_dir()])
    remove_emptied(src, names)
    fsync_dir(src)


def _drop_links(keep: Path, drop: Path, names: list[str]) -> list[str]:
    """Unlink each ``drop/NAME`` that is a link of ``keep/NAME``; returns the others."""
    others = []
    for name in names:
        if _same(keep / name, drop / name):
            (drop / name).unlink()
        else:
            others.append(name)
    return others


class MountPoint(LocalDir):
    """A mount point ``final``: staging inside it, on the same filesystem."""

    @property
    def staging(self) -> Path:
        return self.final / STAGING_INSIDE

    @property
    def building(self) -> Path:
        return self.final / (STAGING_INSIDE + ".new")

    def _content(self) -> list[str]:
        """The names in ``OUT`` that are neither prep's staging nor ``lost+found``, a
        folder's as the paths of its files (``train/train-00000.ds``) when it holds any."""
        own = {self.staging.name, self.building.name}
        names = []
        for n in sorted(os.listdir(self.final)):
            if n in own | IGNORED:
                continue
            inside = self.final / n
            below = tree_files(inside) if inside.is_dir() and not inside.is_symlink() else []
            names += [f"{n}/{f}" for f in below] or [n]
        return names

    def _published_early(self, names: list[str]) -> bool:
        """Whether ``names`` (in ``OUT``, which has no manifest) are files an interrupted
        publish put there: staging holds the manifest that lists each of them, and each is
        still staging's own file (a link) or gone from staging (moved by an older prep); or
        an empty folder it made for them (a format's split folder)."""
        try:
            manifest = read_manifest(self.staging)
        except (OSError, PrepError):  # no readable manifest: nothing to recognise them by
            return False
        fmt = get_format(manifest.format, manifest.dtype)
        listed = {f for e in manifest.files for f in fmt.shard_files(e.name)}
        listed.add(PROVENANCE_NAME)
        staging, final = self.staging, self.final
        folders = {f.relative_to(final).as_posix() for f in folders_of(final, sorted(listed))}
        return all(
            n in folders if (final / n).is_dir() else
            n in listed and (not (staging / n).exists() or _same(staging / n, final / n))
            for n in names
        )

    def state(self) -> Seen:
        """``DATASET`` (a manifest), ``EMPTY`` (nothing but staging and ``lost+found``, or
        the files an interrupted publish put there, which :meth:`recover` takes back), or
        ``OTHER``."""
        staged = self.staging.exists  # asked only if needed
        if (self.final / MANIFEST_NAME).is_file():
            return Seen(DATASET, staged)
        names = self._content()
        if not names or self._published_early(names):
            return Seen(EMPTY, staged)
        return Seen(OTHER, staged, "a directory that is not empty")

    def recover(self, seen: Seen) -> Seen:
        """Under the lock, undo what a kill or a power cut left: files an interrupted
        publish put in ``OUT`` go back to staging (to be verified and published again); in a
        published dataset, staging's links of its files and the emptied staging directory
        are removed."""
        staging, final = self.staging, self.final
        if not staging.is_dir():
            return seen
        if (final / MANIFEST_NAME).is_file():
            left = tree_files(staging)
            if _drop_links(final, staging, left):
                return seen  # not what a publish leaves: kept, as any unfinished staging
            _emptied(staging, left)
            for folder in sorted(os.listdir(staging)):  # a folder emptied before a kill
                (staging / folder).rmdir()
            staging.rmdir()
            fsync_dir(final)
            return Seen(seen.holds, staged=False)
        names = self._content()
        if names and self._published_early(names):
            files = [n for n in names if not (final / n).is_dir()]
            _move(final, staging, _drop_links(staging, final, files))
            for empty in sorted(set(names) - set(files)):  # made, killed before a link
                (final / empty).rmdir()
            _emptied(final, files)
            logger.info(
                "an interrupted publish had put %d files into %s; took them back into %s",
                len(names), final, staging,
            )
        return seen

    def publish(self) -> None:
        """Put every file of staging into ``OUT`` (linked, ``OUT`` fsynced), then
        ``_MANIFEST.json`` (the commit point); remove staging. Raises ``OutputError`` when
        ``OUT`` holds anything else (nothing is replaced)."""
        staging, final = self.staging, self.final
        if self._content():
            raise OutputError(
                f"{final} is no longer empty; nothing was replaced and {staging} is kept: "
                f"empty {final} (keep {staging.name}), then rerun with --resume",
                path=final,
            )
        files = [n for n in tree_files(staging) if n != MANIFEST_NAME]
        if _linked(staging, final, files):
            if not _linked(staging, final, [MANIFEST_NAME]):
                raise OutputError(f"{final}: could not link {MANIFEST_NAME} where the other "
                                  f"files were linked; {staging} is kept: rerun with --resume",
                                  path=final)
            for name in [*files, MANIFEST_NAME]:
                (staging / name).unlink()
            _emptied(staging, files)
        else:  # no hard links here: renames, the manifest last
            _renamed(staging, final, files)
            remove_emptied(staging, files)
            rename_noreplace(staging / MANIFEST_NAME, final / MANIFEST_NAME)
            fsync_dir(final)
        staging.rmdir()
        fsync_dir(final)
        logger.info("published %s", final)

    def check_swap(self) -> None:
        final = self.final
        raise OutputError(
            f"--refresh of {final}: it is a mount point, and a refresh swaps the new version "
            f"in by renaming directories, which cannot replace a mount point; {final} is kept "
            f"as it is. To rebuild it, empty it and rerun without --refresh; to refresh from "
            f"cron, give a directory inside the mount (e.g. --out {final / final.name})",
            path=final,
        )
