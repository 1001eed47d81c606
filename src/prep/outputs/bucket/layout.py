"""What a bucket output's prefixes hold, read and written whole: the dataset's objects and
manifest, the remote checkpoint, local staging restored from it, a publish (the manifest
last), and copies of published files for a reader. Object calls go through
:class:`prep.outputs.bucket.store.Remote` (retries, messages); uploads during a run through
:class:`prep.outputs.bucket.mirror.Mirror`."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from prep.buckets.uri import BucketPath
from prep.errors import IntegrityError, OutputError
from prep.formats import get_format
from prep.fsio import make_dirs
from prep.outputs.bucket.mirror import Mirror, shard_files
from prep.outputs.bucket.store import Remote
from prep.state import checkpoint as ckpt
from prep.state.manifest import (
    MANIFEST_NAME,
    PROVENANCE_NAME,
    Manifest,
    parse_manifest,
    read_manifest,
)
from prep.state.remote import RemoteCheckpoint

logger = logging.getLogger(__name__)

COPY_LIMIT = 5 << 30  # bytes S3's CopyObject (pyarrow's copy_file) copies in one request


@dataclass
class BucketPrefix:
    """``NAME/`` and ``NAME.incomplete/`` of one bucket output (see
    :mod:`prep.outputs.bucket.store` for what lives where)."""

    remote: Remote

    @property
    def uri(self) -> str:
        return self.remote.dataset.uri

    def objects(self) -> dict[str, int]:
        """The dataset prefix's objects: name below ``NAME/`` -> size."""
        head = self.remote.dataset.fs_path + "/"
        return {i.path[len(head):]: i.size for i in self.remote.listing(self.remote.dataset)}

    def checkpoint(self) -> RemoteCheckpoint | None:
        """The newest remote checkpoint, or None when there is none."""
        return self.remote.newest_checkpoint()

    # -- reading the published dataset ------------------------------------------------------

    def manifest(self) -> Manifest:
        """The published manifest; ``IntegrityError`` saying why the prefix is no dataset
        when there is none (it is never read as one)."""
        where = self.remote.in_dataset(MANIFEST_NAME)
        raw = self.remote.read(where)
        if raw is None:
            raise self.incomplete()
        return parse_manifest(raw, self.remote.uri(where))

    def incomplete(self) -> IntegrityError:
        """The refusal to read a prefix without its manifest as a dataset."""
        known = self.checkpoint()
        if known is not None:
            rows = known.local.progress.rows_visited
            why = (f"an unfinished run (its remote checkpoint, at row {rows:,}, is in "
                   f"{self.remote.incomplete.uri}/): resume it with prep prepare --out "
                   f"{self.uri} --resume")
        else:
            n = len(self.objects())
            why = (f"it holds {n:,} objects, not a dataset prep published" if n else
                   "nothing is there; check the URI")
        return IntegrityError(
            f"{self.uri} is incomplete: no {MANIFEST_NAME}, so it is not read as a dataset "
            f"({why})",
            path=self.uri,
        )

    @contextlib.contextmanager
    def reading(self, files: Mapping[str, str | None], keep: Path | None) -> Iterator[Path]:
        """See :meth:`prep.outputs.base.Output.reading`."""
        if keep is not None:
            make_dirs(keep)
            self.fetch(files, keep)
            yield keep
            return
        with tempfile.TemporaryDirectory(prefix="prep-read-") as tmp:
            self.fetch(files, Path(tmp))
            yield Path(tmp)

    def fetch(self, files: Mapping[str, str | None], into: Path) -> None:
        """Download what ``into`` does not hold yet, each file checked against its
        SHA-256 (when given) before it takes its name there: a file there is whole."""
        got = 0
        for name, sha in files.items():
            dest = into / name
            if dest.exists():
                continue
            part = dest.with_name(f".{name}.{os.getpid()}.part")
            try:
                self.remote.download(self.remote.in_dataset(name), part, sha)
                got += part.stat().st_size
                os.replace(part, dest)
            except FileNotFoundError:
                continue  # not there: the reader reports the file missing
            finally:
                part.unlink(missing_ok=True)
        if got:
            logger.info("copied %s bytes of %s into %s", f"{got:,}", self.uri, into)

    # -- a run ----------------------------------------------------------------------------

    def restore_into(self, building: Path, known: RemoteCheckpoint) -> None:
        """Local staging as the remote checkpoint left it, in ``building``: every sealed
        file downloaded and checked against its SHA-256, each open shard rebuilt from its
        segments (each checked), the checkpoint written back as it was."""
        cp = known.local
        for split in cp.splits.values():
            for rec in split.sealed:
                for name, sha in shard_files(rec):
                    self.remote.download(self.remote.in_dataset(name), building / name, sha)
            if split.open is not None:
                target = building / split.open.name
                target.touch()
                for seg in known.segments.get(split.open.name, ()):
                    self.remote.download(seg.key, target, seg.sha256, append=True)
        ckpt.save_content(building, known.checkpoint)

    def publish(self, staging: Path, mirror: Mirror) -> None:
        """Upload what the bucket lacks of the dataset in ``staging``, delete what its
        manifest does not list, then write ``_PROVENANCE.json`` and ``_MANIFEST.json``
        (the commit point: before it the prefix is no dataset). The remote checkpoint of
        the last commit may still be written meanwhile: it is of no use once the manifest
        is there, and the caller waits for it before removing ``NAME.incomplete/``."""
        remote = self.remote
        mirror.uploaded()
        mirror.check_owner()  # another machine took the run over: it publishes, not this
        manifest = read_manifest(staging)
        wanted = {n: sha for e in manifest.files for n, sha in shard_files(e)}
        present = self.objects()
        missing = [(name, sha) for name, sha in sorted(wanted.items())
                   if mirror.sent.get(name) != sha
                   or present.get(name) != (staging / name).stat().st_size]
        mirror.send(missing)  # again, if sent: the bucket does not hold it as staged
        mirror.uploaded()
        strays = sorted(n for n in present if n not in wanted and n != PROVENANCE_NAME)
        if strays:
            logger.info("deleting %d objects of %s no manifest entry names", len(strays),
                        self.uri)
            remote.delete(remote.in_dataset(n) for n in strays)
        remote.upload(staging / PROVENANCE_NAME, remote.in_dataset(PROVENANCE_NAME), None)
        remote.upload(staging / MANIFEST_NAME, remote.in_dataset(MANIFEST_NAME), None)
        logger.info("published %s", self.uri)

    def staged_is_published(self, staging: Path) -> bool:
        """Whether local ``staging`` holds the very manifest that is published."""
        try:
            return read_manifest(staging).to_bytes() == self.manifest().to_bytes()
        except (OSError, IntegrityError):
            return False

    # -- parts and merges ------------------------------------------------------------------

    def parts_listing(self, root: BucketPath) -> dict[str, bool]:
        """What ``NAME.parts/`` holds (see :meth:`prep.outputs.Output.parts_listing`): a
        part's prefix is published once its ``_MANIFEST.json`` is there."""
        head = root.fs_path + "/"
        found: dict[str, bool] = {}
        for info in self.remote.listing(root):
            name, _, rest = info.path[len(head):].partition("/")
            found[name] = found.get(name, False) or rest == MANIFEST_NAME
        return found

    def listed_missing(self) -> list[str]:
        """Files the published manifest lists that are not in ``NAME/`` (a merge's check of
        a part in a bucket: its shards' SHA-256 were checked as they were uploaded)."""
        try:
            manifest = self.manifest()
        except IntegrityError as e:
            return [str(e)]
        present = self.objects()
        fmt = get_format(manifest.format, manifest.dtype)
        return [f"{n}: missing" for e in manifest.files for n in fmt.shard_files(e.name)
                if n not in present]

    def copy_merge(self, files: Sequence[tuple[BucketPrefix, str, str]], provenance: bytes,
                   manifest: bytes) -> None:
        """Publish a merge by server-side copies (CopyObject: no byte passes through this
        process), objects no file of it names deleted, then ``_PROVENANCE.json``, then
        ``_MANIFEST.json``. Refuses an object over S3's 5 GiB copy limit before copying."""
        remote = self.remote
        for part, name, _ in files:
            size = part.objects().get(name, 0) if remote.store.s3 else 0
            if size > COPY_LIMIT:
                raise OutputError(
                    f"{part.uri}/{name} is {size:,} bytes, more than the 5 GiB S3 copies "
                    "in one request; nothing was published. Build the parts with a smaller "
                    "--max-file-tokens",
                    path=f"{part.uri}/{name}",
                )
        for part, name, new_name in files:
            remote.copy(part.remote.in_dataset(name), remote.in_dataset(new_name))
        wanted = {new for _, _, new in files}
        strays = sorted(n for n in self.objects() if n not in wanted)
        remote.delete(remote.in_dataset(n) for n in strays)
        remote.write(remote.in_dataset(PROVENANCE_NAME), provenance)
        remote.write(remote.in_dataset(MANIFEST_NAME), manifest)

    def drop_incomplete(self) -> None:
        """Delete the run's remote state (``NAME.incomplete/``)."""
        self.remote.delete_prefix(self.remote.incomplete)
