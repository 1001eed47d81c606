"""``--out DIR``: a dataset directory on a local (or any POSIX) filesystem.

``DIR`` is the dataset, ``DIR.incomplete/`` the staging directory (assembled as
``.DIR.incomplete.new/``), ``DIR.lock`` the lock. Publishing renames staging to ``DIR``
without ever replacing an existing ``DIR`` (an empty directory excepted).

A refresh swaps the new version in: it exchanges ``DIR.incomplete`` (the new version) with
``DIR`` in one ``renameat2(RENAME_EXCHANGE)``, then moves the old version to
``DIR.previous``. A journal (``DIR.swap.json``, written first, naming the new manifest's
SHA-256) lets the next run finish an interrupted swap forward; it never swaps the old
version back in. Where the exchange is unavailable (not Linux, or a filesystem without it)
the swap is two renames and ``DIR`` is missing for the instant between them.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from prep.errors import IntegrityError, OutputError
from prep.fsio import (
    atomic_write_bytes,
    exchange,
    file_sha256,
    fsync_dir,
    fsync_tree,
    make_dirs,
    make_parents,
    rename_noreplace,
    stray_temps,
    tree_files,
)
from prep.outputs.base import ABSENT, DATASET, EMPTY, OTHER, Output, Seen
from prep.outputs.lock import LockPaths
from prep.partition import Part, part_out, parts_root
from prep.state.manifest import MANIFEST_NAME, PROVENANCE_NAME, Manifest, read_manifest

logger = logging.getLogger(__name__)


def is_empty_dir(path: Path) -> bool:
    """A real (not symlinked) empty directory: what ``publish`` may rename onto."""
    return path.is_dir() and not path.is_symlink() and not any(path.iterdir())


SHARED_CHECK = ".shared-fs-check"  # in DIR.parts/: the --parts driver's token


def link_merge(final: Path, files: Sequence[tuple[Output, str, str]], provenance: bytes,
               manifest: bytes) -> None:
    """Build ``DIR.merging/`` from hard links to the parts' files (token data is never
    copied) and the two small files, then rename it to ``DIR`` (never replacing one). A
    killed merge's ``DIR.merging/`` held only links and small files: it is built again."""
    merging = final.with_name(final.name + ".merging")
    if merging.exists():
        shutil.rmtree(merging)
    merging.mkdir()
    make_parents(merging, [new_name for _, _, new_name in files])  # a format's split folders
    for part, name, new_name in files:
        with part.reading({name: None}) as directory:
            os.link(directory / name, merging / new_name)
    atomic_write_bytes(merging / PROVENANCE_NAME, provenance)
    atomic_write_bytes(merging / MANIFEST_NAME, manifest)
    fsync_tree(merging)
    rename_noreplace(merging, final)
    fsync_dir(final.parent)


def _manifest_sha(directory: Path) -> str | None:
    try:
        return file_sha256(directory / MANIFEST_NAME)
    except FileNotFoundError:
        return None


class LocalDir(Output):
    """A dataset directory ``final`` (absolute) and its siblings."""

    def __init__(self, final: Path) -> None:
        self.final = final

    def __str__(self) -> str:
        return str(self.final)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.final)!r})"

    def _sibling(self, suffix: str, prefix: str = "") -> Path:
        return self.final.with_name(prefix + self.final.name + suffix)

    @property
    def location(self) -> Path:
        return self.final

    @property
    def name(self) -> str:
        return self.final.name

    @property
    def staging(self) -> Path:
        return self._sibling(".incomplete")

    @property
    def building(self) -> Path:
        return self._sibling(".incomplete.new", prefix=".")

    @property
    def previous(self) -> Path:
        """The version a refresh replaced."""
        return self._sibling(".previous")

    @property
    def journal(self) -> Path:
        """Written before a refresh's swap; lets the next run finish it forward."""
        return self._sibling(".swap.json")

    @property
    def lock_paths(self) -> LockPaths:
        return LockPaths(self._sibling(".lock"), self.staging, str(self.final))

    def state(self) -> Seen:
        final, staged = self.final, self.staging.exists  # asked only if needed
        if not final.exists() and not final.is_symlink():
            return Seen(ABSENT, staged)
        if final.is_dir() and (final / MANIFEST_NAME).is_file():
            return Seen(DATASET, staged)
        if is_empty_dir(final):
            return Seen(EMPTY, staged)
        if final.is_symlink():
            return Seen(OTHER, staged, "a symbolic link")
        return Seen(OTHER, staged, "a directory that is not empty" if final.is_dir() else
                    "not a directory")

    def part_out(self, part: Part) -> Path:
        return part_out(self.final, part)

    def parts_listing(self) -> dict[str, bool]:
        root = parts_root(self.final)  # a part's directory exists once it is published
        return {e.name: True for e in root.iterdir() if e.is_dir()} if root.is_dir() else {}

    def part_at(self, name: str) -> Output:
        return LocalDir(parts_root(self.final) / name)

    def local_parts_root(self) -> Path:
        return parts_root(self.final)

    def check_for_merge(self, verify: Callable[[], list[str]]) -> list[str]:
        return verify()

    def publish_merge(self, files: Sequence[tuple[Output, str, str]], provenance: bytes,
                      manifest: bytes) -> None:
        link_merge(self.final, files, provenance, manifest)

    def mark_parts(self, token: str | None) -> None:
        check = parts_root(self.final) / SHARED_CHECK
        if token is None:
            check.unlink(missing_ok=True)
            return
        make_dirs(check.parent)  # each new directory fsynced into its parent
        check.write_text(token, encoding="utf-8")

    def parts_mark(self) -> str | None:
        try:
            return (parts_root(self.final) / SHARED_CHECK).read_text(encoding="utf-8")
        except OSError:
            return None

    def published_manifest(self) -> Manifest:
        return read_manifest(self.final)

    def published_names(self) -> list[str]:
        return tree_files(self.final)  # a bucket's listing holds every key below too

    @contextlib.contextmanager
    def reading(self, files: Mapping[str, str | None], keep: Path | None = None
                ) -> Iterator[Path]:
        yield self.final  # read in place: the readers check what they read

    def refresh_base(self) -> Path:
        return self.final

    def publish(self) -> None:
        """Rename staging to ``DIR``, then fsync the parent. ``DIR`` may be an empty
        directory (created beforehand, e.g. by a provisioning script): ``rename(2)``
        replaces an empty directory atomically and fails on a non-empty one. Anything else
        at ``DIR`` is never replaced."""
        staging, final = self.staging, self.final
        if is_empty_dir(final):
            try:
                os.rename(staging, final)
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                raise OutputError(
                    f"{final} is no longer empty; nothing was replaced and {staging} is "
                    f"kept: empty {final} (or choose another --out), then rerun with --resume",
                    path=final,
                ) from e
        else:
            rename_noreplace(staging, final)
        fsync_dir(final.parent)
        logger.info("published %s", final)

    def _retire(self) -> None:
        """Move the old version (now at the staging name) to ``DIR.previous``."""
        if self.previous.exists():
            shutil.rmtree(self.previous)
        rename_noreplace(self.staging, self.previous)
        fsync_dir(self.final.parent)

    def recover_swap(self, seen: Seen) -> Seen:
        """Finish forward a swap that a crash interrupted (the journal says which way)."""
        final, staging, journal = self.final, self.staging, self.journal
        for stray in stray_temps(final.parent, journal.name):
            stray.unlink()  # a journal write that a crash interrupted; never took effect
        if not journal.exists():
            return seen
        try:
            new_sha = json.loads(journal.read_bytes())["new_manifest_sha256"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise IntegrityError(
                f"{journal} is unreadable ({e}); inspect {final} and {staging}, keep the "
                f"newer one as {final}, then delete the journal",
                path=journal,
            ) from e
        if _manifest_sha(final) == new_sha:
            if staging.exists() and _manifest_sha(staging) != new_sha:
                logger.info("finishing an interrupted swap: moving the old version aside")
                self._retire()
        elif not final.exists() and _manifest_sha(staging) == new_sha:
            logger.info("finishing an interrupted swap: publishing the new version")
            rename_noreplace(staging, final)
            fsync_dir(final.parent)
        journal.unlink()
        fsync_dir(final.parent)
        return self.state()

    def swap_in(self) -> None:
        """Replace ``DIR`` with the finished staging directory; keep the old as
        ``DIR.previous``."""
        final, staging, journal = self.final, self.staging, self.journal
        new_sha = _manifest_sha(staging)
        atomic_write_bytes(journal, json.dumps({"new_manifest_sha256": new_sha}).encode())
        if exchange(staging, final):
            fsync_dir(final.parent)
            self._retire()
        else:
            if self.previous.exists():
                shutil.rmtree(self.previous)
            rename_noreplace(final, self.previous)
            rename_noreplace(staging, final)
            fsync_dir(final.parent)
        journal.unlink()
        fsync_dir(final.parent)
        logger.info(
            "swapped in the new version of %s (previous kept as %s)", final, self.previous.name
        )
