"""``--out s3://BUCKET/PREFIX/NAME`` (or ``gs://``): a dataset in a bucket, built in local
staging and durable in the bucket as it goes.

Local: staging is a directory on local disk (``--staging PATH``, by default under the
user's cache directory, see :func:`default_staging_root`), with the lock beside it; the
commit protocol runs there unchanged, and it holds the whole dataset until publish.

Remote (:mod:`prep.outputs.bucket.layout` says where each object lives): every sealed shard is
uploaded to its final name in ``NAME/`` as soon as a commit names it, then a remote
checkpoint follows (:mod:`prep.outputs.bucket.mirror`). A run that finds no local staging but a
remote checkpoint restores staging from it (:meth:`BucketOutput.localize`): the sealed
shards are downloaded and checked against their SHA-256, the open shards rebuilt from their
segments, the checkpoint written back, and the ordinary resume goes on from there.

Publish: the shards not uploaded yet (the last ones, sealed at the end), then
``_PROVENANCE.json``, then ``_MANIFEST.json``: its write is the commit point, and a prefix
without it is no dataset for any prep reader. Objects in ``NAME/`` the manifest does not
list are deleted before it; ``NAME.incomplete/`` and local staging after it (or by the next
run, if a kill came first).

A bucket has no rename, so there is no atomic swap: ``--refresh`` is refused (build the new
version under a new NAME and point readers at it). Two runs on one bucket ``--out`` on
different machines are not excluded by the local lock: the later one takes over (it writes
the next remote checkpoint) and the earlier one stops at its next remote checkpoint
(:meth:`prep.outputs.bucket.mirror.Mirror`); both write the same bytes to the same names, so what
is published is still one run's output.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from prep.buckets.connect import open_store
from prep.buckets.uri import BucketPath, parse_bucket_uri
from prep.errors import OutputError, UsageError
from prep.fsio import cache_home
from prep.outputs.base import ABSENT, DATASET, EMPTY, OTHER, Output, Seen
from prep.outputs.bucket.layout import BucketLayout, parts_root
from prep.outputs.bucket.run import MARKER, BucketRun
from prep.outputs.bucket.store import Remote
from prep.outputs.local import SHARED_CHECK, LocalDir
from prep.outputs.lock import LockPaths
from prep.partition import PARTS_SUFFIX, Part
from prep.state import checkpoint as ckpt
from prep.state.manifest import MANIFEST_NAME, PROVENANCE_NAME, Manifest
from prep.state.shards import FileRecord

logger = logging.getLogger(__name__)

COPY_LIMIT = 5 << 30  # bytes S3's CopyObject (pyarrow's copy_file) copies in one request


def default_staging_root(where: BucketPath) -> Path:
    """``$XDG_CACHE_HOME/prep/staging/SCHEME/BUCKET/PREFIX`` (``~/.cache`` by default):
    where the local staging of ``--out SCHEME://BUCKET/PREFIX/NAME`` lives unless
    ``--staging`` says otherwise."""
    parent = where.key.rpartition("/")[0]
    below = parent.split("/") if parent else []
    return Path(cache_home(), "staging", where.scheme, where.bucket, *below)


def _in_use(out: BucketOutput, seen: Seen) -> OutputError:
    return OutputError(
        f"{out}/ holds {seen.instead} and no {MANIFEST_NAME}, and no "
        f"unfinished run of it was found (no remote checkpoint in "
        f"{out.layout.incomplete.uri}/, no local staging {out.staging}); prep writes "
        "only into an empty "
        f"prefix and never overwrites objects. Choose another --out, or delete the objects "
        f"under {out}/",
        path=str(out),
    )


def _no_refresh(out: BucketOutput) -> OutputError:
    return OutputError(
        f"--refresh of {out}: a bucket has no rename, so a new version cannot replace the "
        "published one atomically (readers would see a mix of two versions); nothing was "
        f"changed. Build the new version under a new name (e.g. --out {out}-v2, without "
        f"--refresh) and point readers at it once its {MANIFEST_NAME} exists, or refresh a "
        "dataset on a local disk",
        path=str(out),
    )


def made_here(files: Sequence[tuple[Output, str, str]]
              ) -> tuple[list[tuple[Output, str, str]], list[tuple[Path, str]]]:
    """``files`` of a merge split into those of parts in the store and the local ones the
    merge wrote (:meth:`prep.outputs.base.Parted.local_parts_root`): ``(path, new_name)``."""
    stored, local = [], []
    for part, name, new in files:
        if isinstance(part, LocalDir):
            local.append((part.final / name, new))
        else:
            stored.append((part, name, new))
    return stored, local


def _same_store(out: BucketOutput, part: Output) -> BucketOutput:
    """``part`` as a part of ``out`` in the same store (a merge copies between them)."""
    if not isinstance(part, BucketOutput) or part.where.scheme != out.where.scheme:
        raise OutputError(f"{part} is not in {out.where.scheme}:// beside {out}; a merge copies "
                          "parts within one store", path=str(part))
    return part


def copy_merge(into: BucketLayout, files: Sequence[tuple[BucketLayout, str, str]],
               provenance: bytes, manifest: bytes, made: Sequence[tuple[Path, str]] = ()
               ) -> None:
    """Publish a merge into ``into`` by server-side copies (CopyObject: no byte passes
    through this process) and uploads of the files ``made`` (local, with their new names),
    objects no file of it names deleted, then ``_PROVENANCE.json``, then
    ``_MANIFEST.json``. Refuses an object over S3's 5 GiB copy limit before copying."""
    remote = into.remote
    for part, name, _ in files:
        s3 = isinstance(remote, Remote) and remote.store.s3
        size = part.objects().get(name, 0) if s3 else 0
        if size > COPY_LIMIT:
            raise OutputError(
                f"{part.uri}/{name} is {size:,} bytes, more than the 5 GiB S3 copies "
                "in one request; nothing was published. Build the parts with a smaller "
                "--max-file-tokens",
                path=f"{part.uri}/{name}",
            )
    for part, name, new_name in files:
        remote.copy(part.in_dataset(name), into.in_dataset(new_name))
    for local, new_name in made:
        remote.upload(local, into.in_dataset(new_name), None)
    wanted = {new for _, _, new in files} | {new for _, new in made}
    strays = sorted(n for n in into.objects() if n not in wanted)
    remote.delete(into.in_dataset(n) for n in strays)
    remote.write(into.in_dataset(PROVENANCE_NAME), provenance)
    remote.write(into.in_dataset(MANIFEST_NAME), manifest)


def recorded_uri(local: Path) -> str | None:
    """The bucket URI recorded beside the local staging of ``local`` (``NAME.out``), or
    None for a directory output."""
    try:
        return local.with_name(local.name + MARKER).read_text().strip() or None
    except OSError:
        return None


class BucketOutput(Output):
    """A dataset ``NAME/`` in a bucket (see the module docstring)."""

    commit_on_seal = True  # a sealed shard goes up at the next commit, not a minute later

    def __init__(self, where: BucketPath, staging_root: Path | None = None) -> None:
        if not where.key:
            raise UsageError(
                f"--out {where.uri}: name a dataset under the bucket, e.g. "
                f"--out {where.uri}/datasets/NAME",
                path=where.uri,
            )
        self.where = where
        self.chosen_root = staging_root  # --staging, when given
        self.local = LocalDir(Path(os.path.abspath(staging_root or self.default_root()))
                              / self.name)
        self._run: BucketRun | None = None

    def default_root(self) -> Path:
        """Where local staging lives unless ``--staging`` says otherwise
        (:func:`default_staging_root`)."""
        return default_staging_root(self.where)

    @classmethod
    def parse(cls, uri: str, staging_root: Path | None = None) -> BucketOutput:
        return cls(parse_bucket_uri(uri, "--out"), staging_root)

    def __str__(self) -> str:
        return self.where.uri

    @property
    def location(self) -> str:
        return self.where.uri

    @property
    def name(self) -> str:
        return self.where.key.rpartition("/")[2]

    @property
    def staging(self) -> Path:
        return self.local.staging

    @property
    def building(self) -> Path:
        return self.local.building

    @property
    def lock_paths(self) -> LockPaths:
        return LockPaths(self.local.lock_paths.lock, self.staging, self.where.uri)

    def resume_args(self) -> list[str]:
        """``--out URI``, and ``--staging`` only when the staging is not where a resume
        would look by default (a run given --staging elsewhere): a command suggested to the
        user holds no option it does not need."""
        default = Path(os.path.abspath(self.default_root()))
        if self.chosen_root is None or self.staging.parent == default:
            return super().resume_args()
        return [*super().resume_args(), "--staging", str(self.staging.parent)]

    def resume_why(self) -> str:
        if "--staging" not in self.resume_args():
            return ""
        return (f"--staging: this run stages in {self.staging.parent}, not in the default "
                f"{self.default_root()}")

    @property
    def run(self) -> BucketRun:
        """The run's sides (opens the client at first use: resolving an output does not)."""
        if self._run is None:
            remote = Remote(open_store(self.where.scheme, self.where.bucket))
            self._run = BucketRun(self.where.uri, self.local, BucketLayout(self.where, remote))
        return self._run

    @property
    def layout(self) -> BucketLayout:
        return self.run.layout

    # -- staged and published ---------------------------------------------------------------

    def staging_exists(self) -> bool:
        return self.staging.exists() or self.layout.checkpoint() is not None

    def state(self) -> Seen:
        """One listing of ``NAME/`` and (without local staging) one of ``NAME.incomplete/``."""
        objects = self.layout.objects()
        if MANIFEST_NAME in objects:
            return Seen(DATASET, self.staging_exists)  # asked only if needed
        if not objects:
            return Seen(ABSENT, self.staging_exists)
        staged = self.staging_exists()
        return Seen(EMPTY if staged else OTHER, staged, f"{len(objects):,} objects")

    def check_options(self, *, resume: bool, refresh: bool) -> None:
        if refresh:
            raise _no_refresh(self)

    def check_out(self, seen: Seen, *, resume: bool, refresh: bool) -> None:
        # --refresh was refused already, before any look (check_options)
        if seen.holds is OTHER:
            raise _in_use(self, seen)
        if seen.holds is DATASET and not resume:
            raise OutputError(
                f"{self} already exists (it holds {MANIFEST_NAME}); prep never overwrites a "
                "dataset. Choose another --out, or delete its objects to rebuild it",
                path=str(self),
            )

    def create_staging(self, populate: Callable[[Path], None]) -> None:
        self.run.create(populate)

    def publish(self) -> None:
        self.run.publish()

    def recover(self, seen: Seen) -> Seen:
        return self.run.recover(seen)

    # -- the run's commits ------------------------------------------------------------------

    def localize(self) -> None:
        self.run.localize()

    def committed(self, cp: ckpt.Checkpoint) -> None:
        if self.run.mirror is not None:
            self.run.mirror.committed(cp)

    def sealed(self, record: FileRecord) -> None:
        mirror = self.run.mirror  # read once: a stop may clear it meanwhile
        if mirror is not None:
            mirror.sealed(record)

    def settle(self, graceful: bool) -> None:
        self.run.settle(graceful)

    # -- no swap ----------------------------------------------------------------------------

    def refresh_base(self) -> Path:
        raise _no_refresh(self)

    def swap_in(self) -> None:
        raise _no_refresh(self)

    # -- reading ----------------------------------------------------------------------------

    def published_manifest(self) -> Manifest:
        return self.layout.manifest()

    def published_names(self) -> list[str]:
        return sorted(self.layout.objects())

    def reading(self, files: Mapping[str, str | None], keep: Path | None = None
                ) -> AbstractContextManager[Path]:
        return self.layout.reading(files, keep)

    # -- parts and merges -------------------------------------------------------------------

    def part_out(self, part: Part) -> str:
        return f"{self.where.uri}{PARTS_SUFFIX}/{part.name}"

    def parts_listing(self) -> dict[str, bool]:
        return self.layout.parts_listing()

    def part_at(self, name: str) -> BucketOutput:
        root = parts_root(self.where)
        return BucketOutput(BucketPath(root.scheme, root.bucket, f"{root.key}/{name}"))

    def local_parts_root(self) -> Path:
        return self.local.local_parts_root()

    def check_for_merge(self, verify: Callable[[], list[str]]) -> list[str]:
        return self.layout.listed_missing()  # re-hashing would download every shard

    def publish_merge(self, files: Sequence[tuple[Output, str, str]], provenance: bytes,
                      manifest: bytes) -> None:
        stored, made = made_here(files)
        parts = [(_same_store(self, part).layout, name, new) for part, name, new in stored]
        copy_merge(self.layout, parts, provenance, manifest, made)

    def mark_parts(self, token: str | None) -> None:
        where = f"{parts_root(self.where).fs_path}/{SHARED_CHECK}"
        remote = self.layout.remote
        remote.delete([where]) if token is None else remote.write(where, token.encode())

    def parts_mark(self) -> str | None:
        raw = self.layout.remote.read(f"{parts_root(self.where).fs_path}/{SHARED_CHECK}")
        return None if raw is None else raw.decode()
