"""What a bucket output's run does around the commit protocol, which runs in local staging:
the first remote checkpoint when staging is created, local staging restored from the bucket
before a resume, each commit's uploads (:class:`prep.outputs.bucket.mirror.Mirror`), the stop,
the publish (what the bucket lacks uploaded, strays deleted, the manifest last) and what is
left after it. :class:`prep.outputs.bucket.output.BucketOutput` delegates
here; docs/format.md, "A dataset in a bucket", has the whole picture."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from prep.fsio import atomic_write_bytes, make_parents
from prep.outputs.base import DATASET, Seen
from prep.outputs.bucket.layout import BucketLayout
from prep.outputs.bucket.mirror import Mirror, owner_id, shard_files
from prep.outputs.local import LocalDir
from prep.state import checkpoint as ckpt
from prep.state.manifest import MANIFEST_NAME, PROVENANCE_NAME, Manifest, read_manifest
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
    whose staging and lock are the run's) and bucket side (``layout``)."""

    uri: str
    local: LocalDir
    layout: BucketLayout
    mirror: Mirror | None = None
    mirror_kind: ClassVar[type[Mirror]] = Mirror

    @property
    def staging(self) -> Path:
        return self.local.staging

    @property
    def marker(self) -> Path:
        return self.local.final.with_name(self.local.name + MARKER)

    def _mirror(self, known: RemoteCheckpoint | None, seq: int = 0) -> Mirror:
        self.mirror = self.mirror_kind(self.layout, self.staging, known, owner_id(), seq)
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
        newest = self.layout.checkpoint()
        known, why = compare(newest, local, self.staging.exists())
        if why is not None and known is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            logger.info(
                "local staging %s %s: restoring it from the remote checkpoint of %s at row %s "
                "(written by %s)", self.staging, why, self.uri,
                f"{known.local.progress.rows_visited:,}", known.owner,
            )
            self.local.create_staging(lambda into: self.restore_into(into, known))
            atomic_write_bytes(self.marker, self.uri.encode())
        mirror = self._mirror(known, 0 if newest is None else newest.seq)
        if why is None and known is not None and local is not None:
            mirror.trust_segments(local)

    def restore_into(self, building: Path, known: RemoteCheckpoint) -> None:
        """Local staging as the remote checkpoint left it, in ``building``: every sealed
        file downloaded and checked against its SHA-256, each open shard rebuilt from its
        segments (each checked), the checkpoint written back as it was."""
        remote, cp = self.layout.remote, known.local
        make_parents(building, [n for s in cp.splits.values() for n in s.names()])
        for split in cp.splits.values():
            for rec in split.sealed:
                for name, sha in shard_files(rec):
                    remote.download(self.layout.in_dataset(name), building / name, sha)
            if split.open is not None:
                target = building / split.open.name
                target.touch()
                for seg in known.segments.get(split.open.name, ()):
                    remote.download(seg.key, target, seg.sha256, append=True)
        ckpt.save_content(building, known.checkpoint)

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
        """Publish (:meth:`publish_objects`: the manifest last), then remove the run's
        remote and local staging. Once the manifest is there, a remote checkpoint not
        written yet is of no use: it is dropped (one being written ends first, so nothing
        is written into ``NAME.incomplete/`` after its removal). A publish that fails lets
        it be written, for the resume."""
        mirror = self.mirror or self._mirror(self.layout.checkpoint())
        self.mirror = None
        try:
            self.publish_objects(mirror)
        except BaseException:
            mirror.close()
            raise
        mirror.close(published=True)  # a remote checkpoint being written ends (and logs)
        self.clean_up()
        # Last: every line before it names places that still existed when it was written.
        logger.info("published %s", self.uri)

    def publish_objects(self, mirror: Mirror) -> None:
        """Upload what the bucket lacks of the dataset in staging, delete what its
        manifest does not list, then write ``_PROVENANCE.json`` and ``_MANIFEST.json``
        (the commit point: before it the prefix is no dataset). The remote checkpoint of
        the last commit may still be written meanwhile: it is of no use once the manifest
        is there, and the caller waits for it before removing ``NAME.incomplete/``."""
        layout, remote, staging = self.layout, self.layout.remote, self.staging
        _, wanted, present = self.upload_missing(mirror)
        strays = sorted(n for n in present if n not in wanted and n != PROVENANCE_NAME)
        if strays:
            logger.info("deleting %d objects of %s no manifest entry names", len(strays),
                        self.uri)
            remote.delete(layout.in_dataset(n) for n in strays)
        remote.upload(staging / PROVENANCE_NAME, layout.in_dataset(PROVENANCE_NAME), None)
        remote.upload(staging / MANIFEST_NAME, layout.in_dataset(MANIFEST_NAME), None)

    def upload_missing(self, mirror: Mirror, waiting: Callable[[str], bool] = lambda name: False
                       ) -> tuple[Manifest, dict[str, str], dict[str, int]]:
        """Wait for the uploads started, check the run is still this process's, then upload
        every file of the staged manifest the store does not hold as staged and wait for
        those too (``waiting``: a file uploaded that the store shows only later, which is
        not sent again). Returns the manifest, its files (name -> SHA-256) and the dataset's
        objects as listed before (name -> size)."""
        layout, staging = self.layout, self.staging
        mirror.uploaded()
        mirror.check_owner()  # another machine took the run over: it publishes, not this
        manifest = read_manifest(staging)
        wanted = {n: sha for e in manifest.files for n, sha in shard_files(e)}
        present = layout.objects()
        missing = [(name, sha) for name, sha in sorted(wanted.items()) if not waiting(name)
                   and (mirror.sent.get(name) != sha
                        or present.get(name) != (staging / name).stat().st_size)]
        mirror.send(missing)  # again, if sent: the store does not hold it as staged
        mirror.uploaded()
        return manifest, wanted, present

    def recover(self, seen: Seen) -> Seen:
        """A kill after the manifest was written leaves the run's remote and local
        staging: remove them (the dataset is complete; another run's staging is kept)."""
        if seen.holds is not DATASET:
            return seen
        if self.staging.exists() and not self.layout.staged_is_published(self.staging):
            return seen  # another run's staging: the pipeline warns about it
        self.clean_up()
        return Seen(DATASET, staged=False)

    def clean_up(self) -> None:
        """Remove the run's remote and local staging, the two at once."""
        with ThreadPoolExecutor(1, thread_name_prefix="prep-clean-up") as side:
            local = side.submit(shutil.rmtree, self.staging, ignore_errors=True)
            self.layout.remote.delete_prefix(self.layout.incomplete.fs_path)
            local.result()
        self.marker.unlink(missing_ok=True)
