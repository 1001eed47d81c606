"""Where a dataset goes: the roles every kind of ``--out`` plays, one small protocol each.

A run writes into a *staging* directory on local disk, always: shards are appended and
fsynced there and checkpoints replace each other there, as the commit protocol says
(docs/architecture.md). An output adds what differs between kinds around it, in five roles:

- :class:`Staged`: where staging lives and where it is assembled before it exists
  (``building``: staging is created whole, with its first checkpoint, by one rename, so it
  always holds one), what the output holds now (:meth:`Staged.state`, a :class:`Seen`), and
  the publish that turns a finished staging directory (one holding ``_MANIFEST.json``) into
  the dataset readers see;
- :class:`Commits`: what the output does around each commit of a run (a bucket uploads);
- :class:`Guarded`: the lock that keeps one run on the output (a local ``flock``, see
  :mod:`prep.outputs.lock`) and what a kill during a publish leaves (:meth:`Guarded.recover`);
- :class:`Swappable`: the refresh swap (``--refresh`` builds the new version in staging and
  swaps it in whole; a kind that cannot swap refuses it with its reason);
- :class:`Parted`: the parts of a ``--parts`` run and their merge;
- :class:`Readable`: a published dataset, read.

A dataset exists where its ``_MANIFEST.json`` is: every kind publishes the manifest last, so
a reader never takes a half-published dataset for one. :class:`Output` is every role at
once: each kind (:mod:`~prep.outputs.local`, :mod:`~prep.outputs.mount`,
:mod:`~prep.outputs.bucket.output`) is one, and a caller names the role it needs. Nothing
outside ``outputs/`` asks which kind it holds; a new kind is one module here and one line in
:func:`prep.outputs.resolve_output`.
"""

from __future__ import annotations

import enum
import shutil
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from prep.errors import OutputError, never
from prep.fsio import fsync_dir, fsync_tree, make_dirs, rename_noreplace
from prep.outputs.lock import HeldLock, LockPaths, hold_lock
from prep.partition import Part
from prep.state.checkpoint import Checkpoint
from prep.state.manifest import MANIFEST_NAME, Manifest
from prep.state.shards import FileRecord


class Holds(enum.Enum):
    """What an output holds: nothing there (``ABSENT``); nothing of anyone's (``EMPTY``: a
    run may publish into it); a published manifest (``DATASET``); or something prep may
    not touch (``OTHER``)."""

    ABSENT = "absent"
    EMPTY = "empty"
    DATASET = "dataset"
    OTHER = "other"


ABSENT, EMPTY, DATASET, OTHER = Holds.ABSENT, Holds.EMPTY, Holds.DATASET, Holds.OTHER


class Seen:
    """One look at an output (:meth:`Staged.state`): what it holds, whether a run of it can
    be resumed (its staging is here, or can be restored: :meth:`Staged.staging_exists`),
    and, for ``OTHER``, what it holds instead, as the refusal names it. A caller keeps it
    for as long as the answer cannot change (while it holds the lock) and passes it on: a
    look at a bucket lists its prefixes. ``staged`` may be given as the question to ask
    (``staging_exists``): it is then asked once, when a caller first needs the answer, so
    a look that is refused on what it holds never looks for a run's staging."""

    __slots__ = ("_ask", "_staged", "holds", "instead")

    def __init__(self, holds: Holds, staged: bool | Callable[[], bool], instead: str = ""
                 ) -> None:
        self.holds, self.instead = holds, instead
        self._staged: bool | None = staged if isinstance(staged, bool) else None
        self._ask: Callable[[], bool] = staged if callable(staged) else bool

    @property
    def staged(self) -> bool:
        if self._staged is None:
            self._staged = self._ask()
        return self._staged

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Seen):
            return NotImplemented
        return (self.holds, self.staged, self.instead) == (other.holds, other.staged,
                                                           other.instead)

    def __repr__(self) -> str:
        return f"Seen({self.holds}, staged={self.staged}, instead={self.instead!r})"


class Staged(Protocol):
    """Where a run of the output stages it, and its publish. ``str(output)`` is the output
    as messages name it (an absolute path, or a URI)."""

    @property
    @abstractmethod
    def location(self) -> Path | str:
        """The output as a run's outcome reports it: a local path, or a URI."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The dataset's name when the recipe gives none (the last component of ``--out``)."""

    @property
    @abstractmethod
    def staging(self) -> Path:
        """The local directory a run writes and checkpoints into."""

    @property
    @abstractmethod
    def building(self) -> Path:
        """Where a new staging directory is assembled before it is renamed into place."""

    @abstractmethod
    def state(self) -> Seen:
        """What the output holds now (one look: for a bucket, a listing of its prefixes)."""

    @abstractmethod
    def publish(self) -> None:
        """Make the finished staging directory the dataset, ``_MANIFEST.json`` last; never
        replaces anything. Raises ``OutputError`` (staging kept) when the output changed."""

    def resume_args(self) -> list[str]:
        """The options a ``prep prepare ... --resume`` of this output needs besides it."""
        return ["--out", str(self)]

    def resume_why(self) -> str:
        """Why :meth:`resume_args` holds an option besides ``--out`` (empty: it holds none)."""
        return ""

    def staging_exists(self) -> bool:
        """Whether a run of this output can be resumed: its staging directory is here (or,
        for a kind that keeps one elsewhere, can be restored: :meth:`Commits.localize`)."""
        return self.staging.exists()

    def check_options(self, *, resume: bool, refresh: bool) -> None:
        """Refuse, before anything is looked at, what this kind of output never does (a
        bucket has no ``--refresh``): no listing, no connection, no lock file."""
        return None

    def check_out(self, seen: Seen, *, resume: bool, refresh: bool) -> None:
        """Refuse an output no run can use (``seen``: it, looked at now), each with the way
        out: something that is not a prep dataset (``--refresh`` cannot help there), or
        (without ``--resume`` or ``--refresh``) a dataset. Read-only: called before the
        lock is taken, so a refused run leaves no lock file, and again under it."""
        if seen.holds is OTHER:
            raise OutputError(
                f"{self} exists and is not a prep dataset ({seen.instead}, no "
                f"{MANIFEST_NAME}); prep writes only into a new or an empty directory. "
                f"Choose another --out, or move {self} away",
                path=str(self),
            )
        if seen.holds is DATASET and not (resume or refresh):
            raise OutputError(
                f"{self} already exists; prep never overwrites a dataset. Choose another "
                "--out, delete it to rebuild, or use --refresh to update it",
                path=str(self),
            )

    def create_staging(self, populate: Callable[[Path], None]) -> None:
        """Build staging in :attr:`building`, let ``populate`` write its first files and
        checkpoint, then rename it into place: staging never exists without a checkpoint."""
        building, staging = self.building, self.staging
        if building.exists():
            shutil.rmtree(building)  # a crash mid-creation: nothing in it was committed
        make_dirs(building)
        try:
            populate(building)
            fsync_tree(building)  # and the folders a format puts its shards in
            rename_noreplace(building, staging)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        fsync_dir(staging.parent)


class Commits(Protocol):
    """What the output does around the commits of a run in its staging. ``commit_on_seal``:
    the run commits as soon as a shard is sealed (not only every
    ``--checkpoint-interval``), because the output does something with each commit."""

    commit_on_seal: bool = False

    def localize(self) -> None:
        """Under the lock, before a resume reads staging: bring it here if it is kept
        elsewhere too (a bucket's remote checkpoint)."""
        return None

    def committed(self, cp: Checkpoint) -> None:
        """The run wrote checkpoint ``cp`` in staging (its commit point). Raises what went
        wrong with what the output did with earlier commits (the run then stops)."""
        return None

    def sealed(self, record: FileRecord) -> None:
        """A shard is sealed (``record``), told in its sealing thread."""
        return None

    def settle(self, graceful: bool) -> None:
        """The run stopped before publishing: on a stop request (``graceful``) finish what
        the commits started; on an error, drop it."""
        return None


class Guarded(Protocol):
    """The output's lock, and what a kill during a publish left."""

    @property
    @abstractmethod
    def lock_paths(self) -> LockPaths:
        """The local lock file of this output (and what its messages name)."""

    def hold_lock(
        self, wait: float, stop: Callable[[], bool] = never
    ) -> AbstractContextManager[HeldLock]:
        """Hold the output's lock for a ``with`` block (``LockedError`` when busy after
        ``wait`` seconds, ``Interrupted`` when ``stop()`` says so before it is taken); see
        :func:`prep.outputs.lock.hold_lock`."""
        return hold_lock(self.lock_paths, wait, stop)

    def recover(self, seen: Seen) -> Seen:
        """Under the lock, before anything else: undo what a kill during a publish left.
        ``seen``: the output, looked at under the lock; returns it as it is now (what it
        holds is unchanged: a recovery only takes back or removes staging's files)."""
        return seen  # a kind whose publish is one atomic step leaves nothing


class Swappable(Protocol):
    """The refresh swap: the published version replaced by a new one, whole."""

    @abstractmethod
    def refresh_base(self) -> Path:
        """The published version as a local directory, which a refresh compares with and
        continues; raises ``OutputError`` for a kind that cannot be refreshed."""

    @abstractmethod
    def swap_in(self) -> None:
        """Replace the published version with the finished staging directory (a refresh),
        so that readers see one version or the other, never a mix."""

    def recover_swap(self, seen: Seen) -> Seen:
        """Under the lock, before a refresh: finish a swap a kill interrupted. Returns the
        output as it is now (``seen``: as it was)."""
        return seen  # a kind that never swaps has none to finish

    def check_swap(self) -> None:
        """Raise ``OutputError`` (saying why, and what to do instead) when a refresh of
        this output cannot swap a new version in; nothing is changed."""
        return None


class Readable(Protocol):
    """A published dataset, read (``prep verify``, ``prep inspect``, ``TokenStream``)."""

    @abstractmethod
    def published_manifest(self) -> Manifest:
        """The published dataset's manifest (call when it holds ``DATASET``)."""

    @abstractmethod
    def published_names(self) -> list[str]:
        """Every file where the published dataset lives (``prep verify`` names extras)."""

    @abstractmethod
    def reading(
        self, files: Mapping[str, str | None], keep: Path | None = None
    ) -> AbstractContextManager[Path]:
        """For a ``with`` block, a local directory holding ``files`` of the published
        dataset (name -> the SHA-256 a copy must have, or None): the dataset's own
        directory for a local kind. A kind that must copy them copies into ``keep`` and
        leaves them there (a reader's cache: a copy already there is reused), or into a
        temporary directory removed after the block."""


class Parted(Protocol):
    """The parts of a ``--parts`` run of the output (``DIR.parts/I-of-N``) and their merge."""

    @abstractmethod
    def part_out(self, part: Part) -> Path | str:
        """Where part ``part`` of a ``--parts`` run of this output goes (its own ``--out``:
        ``DIR.parts/I-of-N``)."""

    @abstractmethod
    def parts_listing(self) -> dict[str, bool]:
        """What the parts root (``DIR.parts/``) holds: each name in it (``I-of-N``, or a
        part's staging ``I-of-N.incomplete``) and whether it holds a published dataset."""

    @abstractmethod
    def part_at(self, name: str) -> Output:
        """The part called ``name`` (``I-of-N``) of this output, to read."""

    @abstractmethod
    def local_parts_root(self) -> Path:
        """The local directory for the files a merge of these parts writes itself (those of
        parts packed ``--pack fixed``, cut again), which :meth:`publish_merge` then takes
        as a part's (a ``LocalDir``): ``DIR.parts/`` for a directory; for a bucket or the
        Hub, ``NAME.parts/`` beside local staging, whose files the merge uploads."""

    @abstractmethod
    def check_for_merge(self, verify: Callable[[], list[str]]) -> list[str]:
        """Problems of this published part before a merge takes its files: ``verify()``
        (``prep verify``: every file re-hashed) where the files are read in place; a kind
        whose files must be copied to be read may check less, saying so."""

    @abstractmethod
    def publish_merge(self, files: Sequence[tuple[Output, str, str]], provenance: bytes,
                      manifest: bytes) -> None:
        """Publish the merge of parts: each ``(part, name, new_name)`` file of a part under
        its new name, without copying its bytes through this process (but the files in
        :meth:`local_parts_root`, which a bucket or the Hub uploads), then
        ``_PROVENANCE.json`` and ``_MANIFEST.json`` (given as their bytes), the manifest
        last. Never replaces a dataset."""

    @abstractmethod
    def mark_parts(self, token: str | None) -> None:
        """Leave ``token`` in the parts root for :meth:`parts_mark` (None: remove it): how
        the driver of ``--parts`` checks that every node sees the parts where it does."""

    @abstractmethod
    def parts_mark(self) -> str | None:
        """The token :meth:`mark_parts` left, as this process sees it (None: none)."""


class Output(Staged, Commits, Guarded, Swappable, Readable, Parted, Protocol):
    """Every role at once: what :func:`prep.outputs.resolve_output` gives, and what each
    kind of output is."""
