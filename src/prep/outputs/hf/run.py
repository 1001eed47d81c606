"""A Hub output's run: the bucket's run (:class:`prep.outputs.bucket.run.BucketRun`) on a
repository (:class:`prep.outputs.hf.store.HubObjects`), with what a repository changes:

- creation: the repository (``--create-repo``) and the branch exist before the first commit,
  which holds the first remote checkpoint (so a token that cannot write fails before any
  work);
- commits: a remote checkpoint is a commit, so they are gathered (:class:`HubMirror`): one
  when :data:`prep.outputs.hf.store.COMMIT_FILES` sealed files wait, or
  :data:`COMMIT_SECONDS` after the last one (``N`` times that for one of ``N`` parts:
  :func:`commit_interval`), never more often (the Hub limits commits an hour);
- publish: every upload and remote checkpoint first, then one last commit holding what is
  still pending, ``_PROVENANCE.json``, the dataset card ``README.md`` and ``_MANIFEST.json``,
  and deleting ``NAME.incomplete/``: before it, no revision holds the manifest.
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, cast

from huggingface_hub import CommitOperationAdd, CommitOperationDelete

from prep.errors import PrepError
from prep.outputs.bucket.layout import BucketLayout
from prep.outputs.bucket.mirror import Mirror
from prep.outputs.bucket.run import BucketRun
from prep.outputs.hf.card import (
    CardOptions,
    SourceCard,
    dataset_card,
    hub_repo_of,
    split_front_matter,
)
from prep.outputs.hf.store import COMMIT_FILES, HubObjects
from prep.partition import part_at
from prep.state.manifest import MANIFEST_NAME, PROVENANCE_NAME, Manifest
from prep.state.remote import RemoteCheckpoint

logger = logging.getLogger(__name__)

FOLDER_FILES = 10_000  # the Hub recommends fewer entries a folder
# At most one remote checkpoint commit a minute a dataset, well below the Hub's quota of
# commits an hour a repository (its 429 names 128); the N parts of one dataset share the
# repository, so a part commits at most once in N minutes.
COMMIT_SECONDS = 60.0


def commit_interval(key: str) -> float:
    """Seconds between remote checkpoint commits of the dataset at ``key``: a part
    (``NAME.parts/I-of-N``) takes ``N`` times :data:`COMMIT_SECONDS` (see above)."""
    part = part_at(key)
    return COMMIT_SECONDS * (1 if part is None else part[1])


class HubMirror(Mirror):
    """The bucket's mirror, whose remote checkpoints (commits) are gathered: see the module
    docstring."""

    def __init__(self, layout: BucketLayout, staging: Path, known: RemoteCheckpoint | None,
                 owner: str, seq: int = 0) -> None:
        super().__init__(layout, staging, known, owner, seq)
        self._waiting = 0  # sealed files named since the last remote checkpoint asked for
        self._asked_at = time.monotonic()

    def wants_checkpoint(self, new: int, force: bool) -> bool:
        self._waiting += new
        due = self._waiting >= COMMIT_FILES or (
            self._waiting and time.monotonic() - self._asked_at
            >= commit_interval(self.layout.dataset.key))
        if not (force or due):
            return False
        self._waiting, self._asked_at = 0, time.monotonic()
        return True


@dataclass
class HubRun(BucketRun):
    """One Hub output's run (see the module docstring)."""

    create_repo: bool = False
    card: CardOptions = field(default_factory=CardOptions)
    card_path: str = "README.md"
    mirror_kind: ClassVar[type[Mirror]] = HubMirror

    @property
    def objects(self) -> HubObjects:
        return cast(HubObjects, self.layout.remote)  # HubOutput builds it so

    def create(self, populate: Callable[[Path], None]) -> None:
        self.objects.ensure_repo(self.create_repo)
        super().create(populate)

    def publish_objects(self, mirror: Mirror) -> None:
        """The last commit (see the module docstring); a kill before it leaves no
        manifest on the branch, and the resume makes it."""
        layout, objects, staging = self.layout, self.objects, self.staging
        mirror.drain()  # commits go one after another: the remote checkpoints first
        waiting = objects.pending_names()  # uploaded, shown once the next commit names them
        manifest, wanted, _ = self.upload_missing(
            mirror, lambda name: objects.in_repo(layout.in_dataset(name)) in waiting)
        mirror.drain()
        folders = Counter(posixpath.dirname(name) for name in wanted)  # datatrove: a split's
        folder, most = max(folders.items(), key=lambda kv: kv[1], default=("", 0))
        if most >= FOLDER_FILES:
            logger.warning(
                "%s holds %s files in one folder; the Hub recommends fewer than %s a folder "
                "(listing and browsing it slow down): a larger --max-file-tokens makes fewer",
                f"{self.uri}/{folder}" if folder else self.uri, f"{most:,}",
                f"{FOLDER_FILES:,}")
        incomplete = layout.incomplete.fs_path
        objects.drop_pending(incomplete)
        ops: list[CommitOperationAdd | CommitOperationDelete] = []
        if objects.listing(incomplete):
            ops.append(CommitOperationDelete(objects.in_repo(incomplete), is_folder=True))
        first = manifest.files[0].name if manifest.files else None
        sizes = {} if first is None else {first: (staging / first).stat().st_size}
        known = layout.checkpoint()  # the run's last remote checkpoint: the tokenizer's origin
        card = dataset_card(manifest, self.uri, self.card, sizes, self.source_card(manifest),
                            None if known is None else known.local.tokenizer)
        manifest_bytes = (staging / MANIFEST_NAME).read_bytes()
        path = objects.in_repo(layout.in_dataset(MANIFEST_NAME))
        ops += [
            CommitOperationAdd(objects.in_repo(layout.in_dataset(PROVENANCE_NAME)),
                               (staging / PROVENANCE_NAME).read_bytes()),
            CommitOperationAdd(self.card_path, card.encode()),
            CommitOperationAdd(path, manifest_bytes),
        ]
        objects.commit(ops, f"prep: publish {manifest.dataset}", marker=(path, manifest_bytes))

    def source_card(self, manifest: Manifest) -> SourceCard:
        """The source dataset's card at the commit read, when the source is on the Hub and
        has one (its license and languages go into this card); else an empty one."""
        repo = hub_repo_of(manifest.source.uri)
        if repo is None or (self.card.license and not manifest.source.revision):
            return SourceCard()
        source = HubObjects(repo, manifest.source.revision or "main", writer=False,
                            token=self.objects.token, options=self.objects.options)
        try:
            local = source.local_copy(f"{source.root}/README.md")
            if local is None:
                return SourceCard()
            meta, _ = split_front_matter(local.read_text(encoding="utf-8", errors="replace"),
                                         f"{source.repo_url}/README.md")
        except PrepError as e:  # the card is a courtesy: the publish goes on without it
            logger.warning("the source's dataset card was not read (%s)", e)
            return SourceCard()
        return SourceCard(meta)
