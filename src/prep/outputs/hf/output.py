"""``--out hf://datasets/OWNER/NAME[@BRANCH][/PATH]``: a dataset in a Hugging Face Hub dataset
repository, built in local staging and durable on the Hub as it goes; and the same URI
(``@REV``: a branch, tag or commit) read by ``prep verify``, ``prep inspect``,
``prep.TokenStream`` and ``prep.Manifest.load``.

A bucket output with a repository as its store (:mod:`prep.outputs.hf.store`): staging is
local (``--staging``, by default under the user's cache directory), sealed shards are
uploaded in the background as they seal, and remote checkpoints go into ``PATH.incomplete/``
(``.incomplete/`` for the repository's root) in commits of their own, so that a
``--resume`` on another machine (another staging directory, an empty cache) restores staging
from the Hub, downloads the sealed shards the Hub holds and uploads only what it lacks.
The last commit (:mod:`prep.outputs.hf.run`) adds ``_PROVENANCE.json``, the dataset card
``README.md`` (at the repository's root for a dataset at the root; in ``PATH/`` otherwise,
where the Hub does not show it) and ``_MANIFEST.json``, and deletes ``PATH.incomplete/``:
a revision is a dataset exactly when ``PATH/_MANIFEST.json`` is there.

No overwrite: a path that holds a manifest is refused, and so is one holding files of
anything but this run. The repository must exist (``--create-repo`` creates it); a branch
that does not is created from the default branch. Reading pins the revision to its commit
once and downloads through the Hugging Face cache, so ``HF_HUB_OFFLINE=1`` reads a dataset
downloaded before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from huggingface_hub import CommitOperationAdd, CommitOperationDelete

from prep.buckets.uri import BucketPath
from prep.errors import IntegrityError, OutputError
from prep.fsio import cache_home, hash_file
from prep.hub.calls import HubOptions, offline_default
from prep.hub.paths import parse_dataset_uri
from prep.outputs.base import ABSENT, DATASET, EMPTY, OTHER, Output, Seen
from prep.outputs.bucket.layout import INCOMPLETE, BucketLayout, parts_root
from prep.outputs.bucket.output import BucketOutput, made_here
from prep.outputs.hf.card import CardOptions, dataset_card
from prep.outputs.hf.repo import missing_repo
from prep.outputs.hf.run import HubRun
from prep.outputs.hf.siblings import Siblings
from prep.outputs.hf.store import HubObjects
from prep.outputs.local import SHARED_CHECK, LocalDir
from prep.partition import PARTS_SUFFIX, Part
from prep.state.manifest import MANIFEST_NAME, PROVENANCE_NAME, parse_manifest

logger = logging.getLogger(__name__)

HUB_FILES = frozenset({".gitattributes", "README.md"})  # a repository's own, at its root


@dataclass(frozen=True)
class HubSettings:
    """How a run writes to the Hub: the token (None: huggingface_hub's own, ``HF_TOKEN`` or
    the cached login), ``--create-repo``, the card's options, and how to reach it."""

    token: str | None = None
    create_repo: bool = False
    card: CardOptions = field(default_factory=CardOptions)
    options: HubOptions = field(default_factory=HubOptions)


def default_staging_root(repo_id: str, branch: str, path: str) -> Path:
    """``$XDG_CACHE_HOME/prep/staging/hf/OWNER/NAME[@BRANCH]/PATH's parent``."""
    below = path.rpartition("/")[0]
    name = repo_id if branch == "main" else f"{repo_id}@{branch}"
    return Path(cache_home(), "staging", "hf", *name.split("/"),
                *(below.split("/") if below else []))


class HubOutput(BucketOutput):
    """A dataset at ``path`` of the Hub dataset repository ``repo_id`` (see the module
    docstring); ``reader``: only read, pinned to ``revision``'s commit."""

    def __init__(self, repo_id: str, revision: str | None, path: str,
                 staging_root: Path | None = None, settings: HubSettings | None = None, *,
                 reader: bool = False) -> None:
        self.repo_id, self.branch, self.path = repo_id, revision or "main", path
        self.settings, self.reader = settings or HubSettings(), reader
        self.where = BucketPath("hf", f"datasets/{repo_id}", path)
        self.chosen_root = staging_root
        self.local = LocalDir(Path(os.path.abspath(staging_root or self.default_root()))
                              / self.name)
        self._run = None

    def default_root(self) -> Path:
        return default_staging_root(self.repo_id, self.branch, self.path)

    @classmethod
    def parse(cls, uri: str, staging_root: Path | None = None,
              settings: HubSettings | None = None, *, reader: bool = False) -> HubOutput:
        ref = parse_dataset_uri(uri, "a dataset to read" if reader else "--out")
        return cls(ref.repo_id, ref.revision, ref.path, staging_root, settings, reader=reader)

    def __str__(self) -> str:
        at = "" if self.branch == "main" else f"@{self.branch}"
        inside = f"/{self.path}" if self.path else ""
        return f"hf://datasets/{self.repo_id}{at}{inside}"

    @property
    def location(self) -> str:
        return str(self)

    @property
    def name(self) -> str:
        return self.path.rpartition("/")[2] or self.repo_id.partition("/")[2]

    @property
    def run(self) -> HubRun:
        if self._run is None:
            s = self.settings
            options = s.options
            if self.reader and not options.offline and offline_default():
                options = dataclasses.replace(options, offline=True)
            objects = HubObjects(self.repo_id, self.branch, writer=not self.reader,
                                 token=s.token, options=options,
                                 siblings=None if self.reader else Siblings.of(self.path))
            card_path = "README.md" if not self.path else f"{self.path}/README.md"
            self._run = HubRun(str(self), self.local, BucketLayout(self.where, objects),
                               create_repo=s.create_repo, card=s.card, card_path=card_path)
        return cast(HubRun, self._run)

    @property
    def objects(self) -> HubObjects:
        return self.run.objects

    # -- staged and published ---------------------------------------------------------------

    def _own(self, name: str) -> bool:
        """Whether ``name`` (below the dataset path) is no file of the dataset: the
        repository's own files at its root, or a run's state there."""
        if self.path:
            return False
        return name in HUB_FILES or name.startswith((f"{INCOMPLETE}/", f"{PARTS_SUFFIX}/"))

    def state(self) -> Seen:
        objects = {n: s for n, s in self.layout.objects().items() if not self._own(n)}
        if MANIFEST_NAME in objects:
            return Seen(DATASET, self.staging_exists)
        if not objects:
            return Seen(ABSENT, self.staging_exists)
        staged = self.staging_exists()
        return Seen(EMPTY if staged else OTHER, staged, f"{len(objects):,} files")

    def check_out(self, seen: Seen, *, resume: bool, refresh: bool) -> None:
        if self.objects.exists is False and not self.settings.create_repo:
            raise missing_repo(self.objects.repo_url)
        if seen.holds is OTHER:
            raise OutputError(
                f"{self}/ holds {seen.instead} and no {MANIFEST_NAME}, and no unfinished run "
                f"of it was found (no remote checkpoint in {self.layout.incomplete.uri}/, no "
                f"local staging {self.staging}); prep writes only into an empty path and never "
                f"overwrites files. Choose another path (hf://datasets/{self.repo_id}/NEW) or "
                "branch (@NEW), or delete those files",
                path=str(self),
            )
        if seen.holds is DATASET and not resume:
            raise OutputError(
                f"{self} already holds a dataset ({MANIFEST_NAME}); prep never overwrites one. "
                f"Publish the new version to another path (hf://datasets/{self.repo_id}/NEW) or "
                f"branch (hf://datasets/{self.repo_id}@NEW), or delete it first",
                path=str(self),
            )

    # -- reading ----------------------------------------------------------------------------

    def published_names(self) -> list[str]:
        return sorted(n for n in self.layout.objects() if not self._own(n))

    def reading(self, files: Mapping[str, str | None], keep: Path | None = None
                ) -> AbstractContextManager[Path]:
        return self._reading(files)

    @contextlib.contextmanager
    def _reading(self, files: Mapping[str, str | None]) -> Iterator[Path]:
        """The dataset's folder in the Hugging Face cache's snapshot of the pinned commit:
        each file downloaded there (or found there) and checked against its SHA-256."""
        objects = self.objects
        manifest = objects.local_copy(self.layout.in_dataset(MANIFEST_NAME))
        if manifest is None:
            raise self.layout.unpublished()
        for name, sha in files.items():
            local = objects.local_copy(self.layout.in_dataset(name))
            if local is not None and sha is not None and hash_file(local).hexdigest() != sha:
                raise IntegrityError(
                    f"{self}/{name}: the copy in the Hugging Face cache ({local}) does not have "
                    f"the SHA-256 {sha[:12]}… the manifest names; delete it and read again",
                    path=str(local),
                )
        yield manifest.parent

    # -- parts and merges -------------------------------------------------------------------

    def part_out(self, part: Part) -> str:
        return f"{self}{'' if self.path else '/'}{PARTS_SUFFIX}/{part.name}"

    def part_at(self, name: str) -> HubOutput:
        root = parts_root(self.where)
        return HubOutput(self.repo_id, self.branch, f"{root.key}/{name}", self.chosen_root,
                         self.settings)

    def publish_merge(self, files: Sequence[tuple[Output, str, str]], provenance: bytes,
                      manifest: bytes) -> None:
        """One commit (split as every commit is: copies first) naming each part's object
        under its new name (a copy on the Hub: no byte downloaded or uploaded) and adding
        the files the merge wrote (pre-uploaded first), then ``_PROVENANCE.json``, the card
        and ``_MANIFEST.json``, the manifest last."""
        objects = self.objects
        objects.ensure_repo(create=False)
        sizes: dict[str, int] = {}
        stored, made = made_here(files)
        for local, new in made:
            objects.upload(local, self.layout.in_dataset(new), None)
        for part, name, new in stored:
            if not isinstance(part, HubOutput) or part.repo_id != self.repo_id:
                raise OutputError(f"{part} is not in {self.objects.repo_url} beside {self}; a "
                                  "merge names objects within one repository", path=str(part))
            if not sizes:  # the card's layout names the first file's size
                sizes[new] = part.layout.objects().get(name, 0)
            objects.copy(part.layout.in_dataset(name), self.layout.in_dataset(new))
        sizes.update((new, local.stat().st_size) for local, new in made)
        merged = parse_manifest(manifest, f"{self}/{MANIFEST_NAME}")
        card = dataset_card(merged, str(self), self.settings.card, sizes,
                            self.run.source_card(merged))
        where = objects.in_repo(self.layout.in_dataset(MANIFEST_NAME))
        objects.commit([
            CommitOperationAdd(objects.in_repo(self.layout.in_dataset(PROVENANCE_NAME)),
                               provenance),
            CommitOperationAdd(self.run.card_path, card.encode()),
            CommitOperationAdd(where, manifest),
        ], f"prep: merge {merged.dataset}", marker=(where, manifest))

    def mark_parts(self, token: str | None) -> None:
        """A commit adding ``token`` to ``PATH.parts/``, or (None) one removing it, made on
        the head as it is then (the parts committed meanwhile)."""
        objects = self.objects
        where = f"{parts_root(self.where).fs_path}/{SHARED_CHECK}"
        objects.parent = None
        if token is not None:
            objects.ensure_repo(self.settings.create_repo)
            objects.write(where, token.encode())
        elif objects.read(where) is not None:
            objects.commit([CommitOperationDelete(objects.in_repo(where), is_folder=False)],
                           f"prep: remove {objects.in_repo(where)}")

    def create_staging(self, populate: Callable[[Path], None]) -> None:
        self.run.create(populate)
