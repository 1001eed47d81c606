"""Where a bucket output's objects live, and what its prefixes hold.

``--out s3://BUCKET/PREFIX/NAME`` owns two prefixes (and ``NAME.parts/`` for a ``--parts``
run, one prefix per part):

- ``NAME/``: the dataset. Sealed shards are uploaded here under their final names while the
  run goes on; ``_PROVENANCE.json`` and then ``_MANIFEST.json`` are written last, and the
  manifest is the commit point: a prefix without it is no dataset.
- ``NAME.incomplete/``: the unfinished run's remote state, never read as a dataset: its
  remote checkpoints (``checkpoint-SEQ.json``, the newest and the one before) and the
  segments of its open shards (``open/``). Deleted once the manifest is written.

:class:`BucketLayout` names them and reads what they hold: the dataset's objects and
manifest, the newest remote checkpoint, copies of published files for a reader. Its object
calls go through a :class:`prep.outputs.bucket.store.ObjectCalls` (retries, messages); what a run
writes there, through :mod:`prep.outputs.bucket.run` and :mod:`prep.outputs.bucket.mirror`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from prep.buckets.uri import BucketPath
from prep.errors import IntegrityError
from prep.formats import get_format
from prep.fsio import make_dirs
from prep.outputs.bucket.store import ObjectCalls
from prep.partition import PARTS_SUFFIX
from prep.state.manifest import MANIFEST_NAME, Manifest, parse_manifest, read_manifest
from prep.state.remote import RemoteCheckpoint

logger = logging.getLogger(__name__)

INCOMPLETE = ".incomplete"
OPEN_DIR = "open"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)\.json$")


def parts_root(dataset: BucketPath) -> BucketPath:
    """``NAME.parts/``: the parts of a ``--parts`` run of ``dataset``."""
    return BucketPath(dataset.scheme, dataset.bucket, dataset.key + PARTS_SUFFIX)


def checkpoint_key(seq: int) -> str:
    """The name of remote checkpoint ``seq`` under ``NAME.incomplete/``."""
    return f"checkpoint-{seq:08d}.json"


@dataclass
class BucketLayout:
    """The prefixes of the bucket output ``dataset`` (``NAME/``), on ``remote``'s store."""

    dataset: BucketPath
    remote: ObjectCalls

    @property
    def uri(self) -> str:
        return self.dataset.uri

    @property
    def incomplete(self) -> BucketPath:
        """``NAME.incomplete/``: the unfinished run's remote state."""
        return BucketPath(self.dataset.scheme, self.dataset.bucket, self.dataset.key + INCOMPLETE)

    def in_dataset(self, name: str) -> str:
        """``BUCKET/KEY/name``: a file of the dataset, as pyarrow names it."""
        return f"{self.dataset.fs_path}/{name}"

    def in_incomplete(self, name: str) -> str:
        return f"{self.incomplete.fs_path}/{name}"

    # -- what the prefixes hold -------------------------------------------------------------

    def objects(self) -> dict[str, int]:
        """The dataset prefix's objects: name below ``NAME/`` -> size."""
        head = self.dataset.fs_path + "/"
        return {i.path[len(head):]: i.size for i in self.remote.listing(self.dataset.fs_path)}

    def checkpoint(self) -> RemoteCheckpoint | None:
        """The newest remote checkpoint that parses and checks (None: there is none). One
        that does not (a store showing an object half-replaced) is passed over, saying so."""
        head = self.incomplete.fs_path + "/"
        found = []
        for info in self.remote.listing(self.incomplete.fs_path):
            m = _CHECKPOINT.match(info.path[len(head):])
            if m:
                found.append((int(m[1]), info.path))
        for seq, path in sorted(found, reverse=True):
            raw = self.remote.read(path)
            if raw is None:
                continue
            try:
                record = RemoteCheckpoint.from_bytes(raw, self.remote.uri(path))
            except IntegrityError as e:
                logger.warning("%s; taking the one before it", e)
                continue
            if record.seq == seq:
                return record
        return None

    def parts_listing(self) -> dict[str, bool]:
        """What ``NAME.parts/`` holds (see :meth:`prep.outputs.base.Parted.parts_listing`):
        a part's prefix is published once its ``_MANIFEST.json`` is there."""
        root = parts_root(self.dataset).fs_path
        head = root + "/"
        found: dict[str, bool] = {}
        for info in self.remote.listing(root):
            name, _, rest = info.path[len(head):].partition("/")
            found[name] = found.get(name, False) or rest == MANIFEST_NAME
        return found

    # -- reading the published dataset ------------------------------------------------------

    def manifest(self) -> Manifest:
        """The published manifest; ``IntegrityError`` saying why the prefix is no dataset
        when there is none (it is never read as one)."""
        where = self.in_dataset(MANIFEST_NAME)
        raw = self.remote.read(where)
        if raw is None:
            raise self.unpublished()
        return parse_manifest(raw, self.remote.uri(where))

    def unpublished(self) -> IntegrityError:
        """The refusal to read a prefix without its manifest as a dataset."""
        known = self.checkpoint()
        if known is not None:
            rows = known.local.progress.rows_visited
            why = (f"an unfinished run (its remote checkpoint, at row {rows:,}, is in "
                   f"{self.incomplete.uri}/): resume it with prep prepare --out "
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

    def staged_is_published(self, staging: Path) -> bool:
        """Whether local ``staging`` holds the very manifest that is published."""
        try:
            return read_manifest(staging).to_bytes() == self.manifest().to_bytes()
        except (OSError, IntegrityError):
            return False

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

    @contextlib.contextmanager
    def reading(self, files: Mapping[str, str | None], keep: Path | None) -> Iterator[Path]:
        """See :meth:`prep.outputs.base.Readable.reading`."""
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
            dest.parent.mkdir(parents=True, exist_ok=True)  # a format's split folder
            part = dest.with_name(f".{dest.name}.{os.getpid()}.part")
            try:
                self.remote.download(self.in_dataset(name), part, sha)
                got += part.stat().st_size
                os.replace(part, dest)
            except FileNotFoundError:
                continue  # not there: the reader reports the file missing
            finally:
                part.unlink(missing_ok=True)
        if got:
            logger.info("copied %s bytes of %s into %s", f"{got:,}", self.uri, into)
