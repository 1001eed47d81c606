"""``--out s3://BUCKET/PREFIX/NAME`` (or ``gs://``): a dataset in a bucket, built in local
staging and durable in the bucket as it goes.

Local: staging is a directory on local disk (``--staging PATH``, by default under the
user's cache directory, see :func:`default_staging_root`), with the lock beside it; the
commit protocol runs there unchanged, and it holds the whole dataset until publish.

Remote (:mod:`prep.outputs.remote` says where each object lives): every sealed shard is
uploaded to its final name in ``NAME/`` as soon as a commit names it, then a remote
checkpoint follows (:mod:`prep.outputs.mirror`). A run that finds no local staging but a
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
(:meth:`prep.outputs.mirror.Mirror`); both write the same bytes to the same names, so what
is published is still one run's output.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path

from prep.buckets.client import open_store
from prep.buckets.uri import BucketPath, parse_bucket_uri
from prep.errors import OutputError, UsageError
from prep.fsio import atomic_write_bytes
from prep.outputs.base import ABSENT, DATASET, EMPTY, OTHER, Output
from prep.outputs.local import LocalDir
from prep.outputs.lock import LockPaths
from prep.outputs.mirror import Mirror, owner_id
from prep.outputs.prefix import BucketPrefix
from prep.outputs.remote import Remote
from prep.partition import PARTS_SUFFIX, Part
from prep.state import checkpoint as ckpt
from prep.state.manifest import MANIFEST_NAME, Manifest
from prep.state.remote import RemoteCheckpoint

logger = logging.getLogger(__name__)

MARKER = ".out"  # beside local staging: NAME.out holds the --out URI (for prep inspect)


def default_staging_root(where: BucketPath) -> Path:
    """``$XDG_CACHE_HOME/prep/staging/SCHEME/BUCKET/PREFIX`` (``~/.cache`` by default):
    where the local staging of ``--out SCHEME://BUCKET/PREFIX/NAME`` lives unless
    ``--staging`` says otherwise."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    parent = where.key.rpartition("/")[0]
    below = parent.split("/") if parent else []
    return Path(base, "prep", "staging", where.scheme, where.bucket, *below)


def same_run(a: ckpt.Checkpoint, b: ckpt.Checkpoint) -> bool:
    """Whether two checkpoints are commit points of one run (and its resumes)."""
    return (a.run.started_at, a.recipe, a.tokenizer) == (
        b.run.started_at, b.recipe, b.tokenizer)


def ahead(a: ckpt.Checkpoint, b: ckpt.Checkpoint) -> bool:
    """Whether commit point ``a`` of a run is past ``b``."""
    return (a.progress.rows_visited, a.progress.finished) > (
        b.progress.rows_visited, b.progress.finished)


def _compare(known: RemoteCheckpoint | None, local: ckpt.Checkpoint | None,
             staged: bool) -> tuple[RemoteCheckpoint | None, str | None]:
    """Which remote checkpoint a resume can trust (None: another run's, or none), and why
    local staging must be restored from it (None: keep local staging, as today)."""
    if known is None:
        return None, None
    if not staged:
        return known, "is missing"
    if local is None:
        return known, None  # ready to publish (its manifest is written): keep it
    if not same_run(known.local, local):
        return None, None  # nothing the bucket's checkpoint names is this run's
    if ahead(known.local, local):
        return known, (f"is behind it (row {local.progress.rows_visited:,}: another machine "
                       "went on)")
    return known, None


def _in_use(out: BucketOutput) -> OutputError:
    return OutputError(
        f"{out}/ holds {len(out.prefix.objects()):,} objects and no {MANIFEST_NAME}, and no "
        f"unfinished run of it was found (no remote checkpoint in "
        f"{out.prefix.remote.incomplete.uri}/, no local staging {out.staging}); prep writes "
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
        root = Path(os.path.abspath(staging_root or default_staging_root(where)))
        self.local = LocalDir(root / self.name)
        self._prefix: BucketPrefix | None = None
        self.mirror: Mirror | None = None

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
    def marker(self) -> Path:
        return self.local.final.with_name(self.name + MARKER)

    @property
    def lock_paths(self) -> LockPaths:
        return LockPaths(self.local.lock_paths.lock, self.staging, self.where.uri)

    def resume_args(self) -> list[str]:
        chosen = [] if self.chosen_root is None else ["--staging", str(self.staging.parent)]
        return [*super().resume_args(), *chosen]

    @property
    def prefix(self) -> BucketPrefix:
        """The bucket side (opens the client at first use: resolving an output does not)."""
        if self._prefix is None:
            store = open_store(self.where.scheme, self.where.bucket)
            self._prefix = BucketPrefix(Remote(self.where, store))
        return self._prefix

    # -- what the bucket holds -------------------------------------------------------------

    def staging_exists(self) -> bool:
        return self.staging.exists() or self.prefix.checkpoint() is not None

    def state(self) -> str:
        objects = self.prefix.objects()
        if MANIFEST_NAME in objects:
            return DATASET
        if not objects:
            return ABSENT
        return EMPTY if self.staging_exists() else OTHER

    def not_a_dataset(self) -> str:
        return f"a prefix holding {len(self.prefix.objects()):,} objects"

    def check_out(self, *, resume: bool, refresh: bool) -> None:
        if refresh:
            raise _no_refresh(self)
        state = self.state()
        if state == OTHER:
            raise _in_use(self)
        if state == DATASET and not resume:
            raise OutputError(
                f"{self} already exists (it holds {MANIFEST_NAME}); prep never overwrites a "
                "dataset. Choose another --out, or delete its objects to rebuild it",
                path=str(self),
            )

    def refresh_base(self) -> Path:
        raise _no_refresh(self)

    def swap_in(self) -> None:
        raise _no_refresh(self)

    def part_out(self, part: Part) -> str:
        return f"{self.where.uri}{PARTS_SUFFIX}/{part.name}"

    def published_manifest(self) -> Manifest:
        return self.prefix.manifest()

    def published_names(self) -> list[str]:
        return sorted(self.prefix.objects())

    def reading(self, files: Mapping[str, str | None], keep: Path | None = None
                ) -> AbstractContextManager[Path]:
        return self.prefix.reading(files, keep)

    # -- the run ----------------------------------------------------------------------------

    def create_staging(self, populate: Callable[[Path], None]) -> None:
        """Create local staging (see :meth:`Output.create_staging`), then write the first
        remote checkpoint before anything else goes into the bucket: from then on every
        object in ``NAME/`` belongs to a run a resume finds. A failure to write it (no
        permission) removes the new staging: nothing was committed."""
        super().create_staging(populate)
        logger.info("staging %s locally in %s (--staging PATH to choose another place)",
                    self, self.staging)
        try:
            self.mirror = Mirror(self.prefix.remote, self.staging, None, owner_id())
            self.mirror.committed(ckpt.load(self.staging), force=True)
            self.mirror.drain()
        except BaseException:
            self.settle(graceful=False)
            shutil.rmtree(self.staging, ignore_errors=True)
            raise
        atomic_write_bytes(self.marker, self.where.uri.encode())

    def localize(self) -> None:
        """Before a resume: restore local staging from the remote checkpoint when it is not
        here (another machine, another directory) or is behind it (another machine went
        on); otherwise keep it, and learn what the bucket already holds."""
        known = self.prefix.checkpoint()
        saved = self.staging / ckpt.CHECKPOINT_NAME
        local = ckpt.load(self.staging) if saved.exists() else None
        known, why = _compare(known, local, self.staging.exists())
        if why is not None and known is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self._restore(known, why)
        self.mirror = Mirror(self.prefix.remote, self.staging, known, owner_id())
        if why is None and known is not None and local is not None:
            self.mirror.trust_segments(local)

    def _restore(self, known: RemoteCheckpoint, why: str) -> None:
        logger.info(
            "local staging %s %s: restoring it from the remote checkpoint of %s at row %s "
            "(written by %s)",
            self.staging, why, self, f"{known.local.progress.rows_visited:,}", known.owner,
        )
        super().create_staging(lambda building: self.prefix.restore_into(building, known))
        atomic_write_bytes(self.marker, self.where.uri.encode())

    def committed(self, cp: ckpt.Checkpoint) -> None:
        if self.mirror is not None:
            self.mirror.committed(cp)

    def settle(self, graceful: bool) -> None:
        """The run stopped: on a stop request, let the uploads and remote checkpoint of the
        last commit finish (a replacement machine then loses nothing); on an error, drop
        what has not started."""
        mirror, self.mirror = self.mirror, None
        if mirror is None:
            return
        try:
            if graceful and mirror.last is not None:
                mirror.committed(mirror.last, force=True)
                mirror.drain()
        except Exception as e:  # the stop is what gets reported; the bucket keeps its last
            logger.warning("uploads after the stop request failed: %s", e)
        finally:
            mirror.close(wait=graceful)

    def publish(self) -> None:
        """Publish (:meth:`BucketPrefix.publish`: the manifest last), then remove the run's
        remote and local staging."""
        mirror = self.mirror or Mirror(self.prefix.remote, self.staging, self.prefix.checkpoint(),
                                       owner_id())
        try:
            self.prefix.publish(self.staging, mirror)
        finally:
            mirror.close()
            self.mirror = None
        self._clean_up()

    def recover(self) -> None:
        """A kill after the manifest was written leaves the run's remote and local
        staging: remove them (the dataset is complete; another run's staging is kept)."""
        if MANIFEST_NAME not in self.prefix.objects():
            return
        if self.staging.exists() and not self.prefix.staged_is_published(self.staging):
            return  # another run's staging: the pipeline warns about it
        self._clean_up()

    def _clean_up(self) -> None:
        self.prefix.drop_incomplete()
        shutil.rmtree(self.staging, ignore_errors=True)
        self.marker.unlink(missing_ok=True)
