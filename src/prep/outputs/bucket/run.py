"""What a bucket output does around the commit protocol, which runs in local staging: the
first remote checkpoint when staging is created, local staging restored from the bucket
before a resume, each commit's uploads (:class:`prep.outputs.bucket.mirror.Mirror`), the stop, the
publish and what is left after it. :class:`prep.outputs.bucket.output.BucketOutput` delegates
here; docs/format.md, "A dataset in a bucket", has the whole picture."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from prep.fsio import atomic_write_bytes
from prep.outputs.bucket.layout import BucketPrefix
from prep.outputs.bucket.mirror import Mirror, owner_id
from prep.outputs.local import LocalDir
from prep.state import checkpoint as ckpt
from prep.state.manifest import MANIFEST_NAME
from prep.state.remote import RemoteCheckpoint

logger = logging.getLogger(__name__)

MARKER = ".out"  # beside local staging: NAME.out holds the --out URI (for prep inspect)


def same_run(a: ckpt.Checkpoint, b: ckpt.Checkpoint) -> bool:
    """Whether two checkpoints are commit points of one run (and its resumes)."""
    return (a.run.started_at, a.recipe, a.tokenizer) == (
        b.run.started_at, b.recipe, b.tokenizer)


def ahead(a: ckpt.Checkpoint, b: ckpt.Checkpoint) -> bool:
    """Whether commit point ``a`` of a run is past ``b``."""
    return (a.progress.rows_visited, a.progress.finished) > (
        b.progress.rows_visited, b.progress.finished)


def compare(known: RemoteCheckpoint | None, local: ckpt.Checkpoint | None,
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


@dataclass
class BucketRun:
    """One bucket output's local staging (``local``: a directory output never published,
    whose staging and lock are the run's) and bucket side (``prefix``)."""

    uri: str
    local: LocalDir
    prefix: BucketPrefix
    mirror: Mirror | None = None

    @property
    def staging(self) -> Path:
        return self.local.staging

    @property
    def marker(self) -> Path:
        return self.local.final.with_name(self.local.name + MARKER)

    def _mirror(self, known: RemoteCheckpoint | None, seq: int = 0) -> Mirror:
        self.mirror = Mirror(self.prefix.remote, self.staging, known, owner_id(), seq)
        return self.mirror

    def create(self, populate: Callable[[Path], None]) -> None:
        """Create local staging, then write the first remote checkpoint before anything
        else goes into the bucket: from then on every object in ``NAME/`` belongs to a run a
        resume finds. A failure to write it (no permission) removes the new staging:
        nothing was committed."""
        self.local.create_staging(populate)
        logger.info("staging %s locally in %s (--staging PATH to choose another place)",
                    self.uri, self.staging)
        try:
            mirror = self._mirror(None)
            mirror.committed(ckpt.load(self.staging), force=True)
            mirror.drain()
        except BaseException:
            self.settle(graceful=False)
            shutil.rmtree(self.staging, ignore_errors=True)
            raise
        atomic_write_bytes(self.marker, self.uri.encode())

    def localize(self) -> None:
        """Before a resume: restore local staging from the remote checkpoint when it is not
        here (another machine, another directory) or is behind it (another machine went
        on); otherwise keep it, and learn what the bucket already holds."""
        saved = self.staging / ckpt.CHECKPOINT_NAME
        local = ckpt.load(self.staging) if saved.exists() else None
        newest = self.prefix.checkpoint()
        known, why = compare(newest, local, self.staging.exists())
        if why is not None and known is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            logger.info(
                "local staging %s %s: restoring it from the remote checkpoint of %s at row %s "
                "(written by %s)", self.staging, why, self.uri,
                f"{known.local.progress.rows_visited:,}", known.owner,
            )
            self.local.create_staging(lambda into: self.prefix.restore_into(into, known))
            atomic_write_bytes(self.marker, self.uri.encode())
        mirror = self._mirror(known, 0 if newest is None else newest.seq)
        if why is None and known is not None and local is not None:
            mirror.trust_segments(local)

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
        remote and local staging. Once the manifest is there, a remote checkpoint not
        written yet is of no use: it is dropped (one being written ends first, so nothing
        is written into ``NAME.incomplete/`` after its removal). A publish that fails lets
        it be written, for the resume."""
        mirror = self.mirror or self._mirror(self.prefix.checkpoint())
        self.mirror = None
        try:
            self.prefix.publish(self.staging, mirror)
        except BaseException:
            mirror.close()
            raise
        mirror.close(published=True)
        self.clean_up()

    def recover(self) -> None:
        """A kill after the manifest was written leaves the run's remote and local
        staging: remove them (the dataset is complete; another run's staging is kept)."""
        if MANIFEST_NAME not in self.prefix.objects():
            return
        if self.staging.exists() and not self.prefix.staged_is_published(self.staging):
            return  # another run's staging: the pipeline warns about it
        self.clean_up()

    def clean_up(self) -> None:
        """Remove the run's remote and local staging, the two at once."""
        with ThreadPoolExecutor(1, thread_name_prefix="prep-clean-up") as side:
            local = side.submit(shutil.rmtree, self.staging, ignore_errors=True)
            self.prefix.drop_incomplete()
            local.result()
        self.marker.unlink(missing_ok=True)
