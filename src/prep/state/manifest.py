"""``_MANIFEST.json`` (deterministic: same inputs and recipe, same bytes) and
``_PROVENANCE.json`` (this run's facts that may differ between runs), as typed records.

The manifest is a plain function of the recipe, the source and tokenizer identities, the
stream's final counts and the sealed files; it holds nothing that varies between runs. Its
key order is docs/format.md's; :meth:`Manifest.to_json` keeps it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prep.errors import IntegrityError, UsageError
from prep.fsio import atomic_write_bytes
from prep.recipe import Recipe
from prep.split import SPLITS
from prep.state.identity import FileIdentity, SourceIdentity, TokenizerIdentity
from prep.state.parts import MergedPart, PartOf
from prep.state.shards import (
    Companion,
    FileRecord,
    companions_from_json,
    companions_to_json,
    first_doc_to_json,
)
from prep.state.versions import installed_version

MANIFEST_NAME = "_MANIFEST.json"
PROVENANCE_NAME = "_PROVENANCE.json"
# v2 added ``format`` and ``dtype`` (and ``companions`` on a shard of several files); a v1
# manifest is llm.c .bin with the dtype its bin_version says, and still reads and verifies.
# v3 made the prefix digest a per-row chain, which a refresh can continue from the manifest;
# v1 and v2 datasets still read and verify (a refresh rebuilds them once).
# v4 links each row's own SHA-256 into the chain instead of its bytes (the rows are hashed
# where they are read, in parallel); v1-v3 datasets read and verify, a refresh rebuilds.
# v5 records each source file's fingerprint (a local file's mtime, ctime and inode; an
# object's ETag and version), which a refresh trusts instead of reading the file again; v4
# and v5 stream digests are the same chain, so a refresh continues either.
MANIFEST_VERSION = "v5"
READABLE_VERSIONS = ("v1", "v2", "v3", "v4", MANIFEST_VERSION)
CONTINUABLE_VERSIONS = ("v4", MANIFEST_VERSION)
_V1_DTYPES = {1: "uint16", 2: "uint32"}


def canonical_json(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def corpus_manifest_sha256(source: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the source's kind, revision and files (path, size,
    SHA-256)."""
    # A file's fingerprint says how its version was recognized, not what was read: left out.
    files = [{k: f[k] for k in ("path", "size", "sha256")} for f in source["files"]]
    ident = {"kind": source["kind"], "revision": source["revision"], "files": files}
    return hashlib.sha256(canonical_json(ident)).hexdigest()


def listing_sha256(kind: str, revision: str | None, files: Sequence[FileIdentity]) -> str:
    """SHA-256 of the canonical JSON of ``{"kind", "revision", "files": [{"path", "size"}]}``
    over a whole listing in read order: what every part of one partitioned run records."""
    ident = {
        "kind": kind,
        "revision": revision,
        "files": [{"path": f.path, "size": f.size} for f in files],
    }
    return hashlib.sha256(canonical_json(ident)).hexdigest()


@dataclass(frozen=True)
class ManifestSource:
    """The manifest's ``source``: the identity (files in read order) and the stream's counts."""

    kind: str
    uri: str
    revision: str | None
    text_column: str
    split_column: str | None
    files: tuple[FileIdentity, ...]
    rows_visited: int
    empty_rows_skipped: int
    prefix_sha256: str | None  # None in a merged dataset: each part's is in ``parts``

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "uri": self.uri,
            "revision": self.revision,
            "text_column": self.text_column,
            "split_column": self.split_column,
            "files": [f.to_json() for f in self.files],
            "rows_visited": self.rows_visited,
            "empty_rows_skipped": self.empty_rows_skipped,
            "prefix_sha256": self.prefix_sha256,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ManifestSource:
        return cls(
            kind=str(d["kind"]),
            uri=str(d["uri"]),
            revision=d["revision"],
            text_column=d["text_column"],
            split_column=d["split_column"],
            files=tuple(FileIdentity.from_json(f) for f in d["files"]),
            rows_visited=int(d["rows_visited"]),
            empty_rows_skipped=int(d["empty_rows_skipped"]),
            prefix_sha256=None if d["prefix_sha256"] is None else str(d["prefix_sha256"]),
        )

    def identity(self) -> SourceIdentity:
        """The listing part, comparable with a current source's identity."""
        return SourceIdentity(self.kind, self.uri, "", "", self.revision, self.files)


@dataclass(frozen=True)
class ManifestFile:
    """One entry of the manifest's ``files``."""

    name: str
    split: str
    n_tokens: int
    n_docs: int
    sha256: str
    companions: tuple[Companion, ...] = ()
    first_doc_at: int | None = None  # --pack fixed only (FileRecord's)

    def to_json(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "split": self.split,
            "n_tokens": self.n_tokens,
            "n_docs": self.n_docs,
            "sha256": self.sha256,
        }
        return first_doc_to_json(companions_to_json(out, self.companions), self.first_doc_at)

    @property
    def first_doc(self) -> int:
        """Ids before the first document that starts in this file (0 under ``whole``)."""
        return self.first_doc_at or 0

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ManifestFile:
        return cls(
            name=str(d["name"]),
            split=str(d["split"]),
            n_tokens=int(d["n_tokens"]),
            n_docs=int(d["n_docs"]),
            sha256=str(d["sha256"]),
            companions=companions_from_json(d),
            first_doc_at=None if d.get("first_doc_at") is None else int(d["first_doc_at"]),
        )


@dataclass(frozen=True)
class SplitSummary:
    """One split of the manifest's ``totals``."""

    n_tokens: int
    n_docs: int
    n_files: int

    def to_json(self) -> dict[str, Any]:
        return {"n_tokens": self.n_tokens, "n_docs": self.n_docs, "n_files": self.n_files}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SplitSummary:
        return cls(int(d["n_tokens"]), int(d["n_docs"]), int(d["n_files"]))


@dataclass(frozen=True)
class Manifest:
    """``_MANIFEST.json``. ``recipe`` is :meth:`Recipe.manifest_recipe` (its keys depend on
    the split rule); ``format`` and ``dtype`` name the container and its ids;
    ``bin_version`` is the container's layout version (null for headerless raw shards)."""

    dataset: str
    tokenizer_id: str
    tokenizer_sha256: str
    vocab_size: int
    doc_sep_id: int | None
    sep_position: str
    format: str
    dtype: str
    bin_version: int | None
    max_file_tokens: int
    corpus_manifest_sha256: str
    source: ManifestSource
    recipe: dict[str, Any]
    val_bytes_per_token: float | None
    totals: dict[str, SplitSummary]
    files: tuple[ManifestFile, ...]
    version: str = MANIFEST_VERSION
    part: PartOf | None = None  # a part of a partitioned run (--part I/N)
    parts: tuple[MergedPart, ...] | None = None  # a merged dataset (prep merge)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "dataset": self.dataset,
            "tokenizer_id": self.tokenizer_id,
            "tokenizer_sha256": self.tokenizer_sha256,
            "vocab_size": self.vocab_size,
            "doc_sep_id": self.doc_sep_id,
            "sep_position": self.sep_position,
            "format": self.format,
            "dtype": self.dtype,
            "bin_version": self.bin_version,
            "max_file_tokens": self.max_file_tokens,
            "corpus_manifest_sha256": self.corpus_manifest_sha256,
            "source": self.source.to_json(),
            "recipe": self.recipe,
            "val_bytes_per_token": self.val_bytes_per_token,
            "totals": {split: t.to_json() for split, t in self.totals.items()},
            "files": [f.to_json() for f in self.files],
            **({"part": self.part.to_json()} if self.part is not None else {}),
            **({"parts": [p.to_json() for p in self.parts]} if self.parts is not None else {}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Manifest:
        v1 = d["version"] == "v1"
        return cls(
            version=str(d["version"]),
            dataset=str(d["dataset"]),
            tokenizer_id=str(d["tokenizer_id"]),
            tokenizer_sha256=str(d["tokenizer_sha256"]),
            vocab_size=int(d["vocab_size"]),
            doc_sep_id=d["doc_sep_id"],
            sep_position=str(d["sep_position"]),
            format="llmc" if v1 else str(d["format"]),
            dtype=_V1_DTYPES[int(d["bin_version"])] if v1 else str(d["dtype"]),
            bin_version=None if d["bin_version"] is None else int(d["bin_version"]),
            max_file_tokens=int(d["max_file_tokens"]),
            corpus_manifest_sha256=str(d["corpus_manifest_sha256"]),
            source=ManifestSource.from_json(d["source"]),
            # v1 had neither setting: it was llm.c .bin with the narrowest dtype, so an
            # unchanged source still refreshes as unchanged after the upgrade.
            recipe={**d["recipe"], "format": "llmc", "dtype": "auto"} if v1 else dict(d["recipe"]),
            val_bytes_per_token=d["val_bytes_per_token"],
            totals={str(k): SplitSummary.from_json(v) for k, v in d["totals"].items()},
            files=tuple(ManifestFile.from_json(f) for f in d["files"]),
            part=PartOf.from_json(d["part"]) if "part" in d else None,
            parts=tuple(MergedPart.from_json(p) for p in d["parts"]) if "parts" in d else None,
        )

    @classmethod
    def load(cls, location: str | os.PathLike[str]) -> Manifest:
        """The ``_MANIFEST.json`` of the dataset at ``location`` (a directory, a staging
        directory, or a URI such as ``s3://BUCKET/PREFIX``), typed, read through the one
        resolution of a place every reader uses (:func:`prep.outputs.published_at`). Raises
        ``IntegrityError`` naming ``location`` as given when it holds no dataset."""
        if _read_published is None:
            raise UsageError(
                f"Manifest.load({location!r}): the readers of a location are not loaded; "
                "use prep.Manifest (import prep), not prep.state.manifest alone"
            )
        return _read_published(location)

    @property
    def pack(self) -> str:
        """``--pack``: ``whole`` (files hold whole documents; what a manifest without the
        setting means) or ``fixed`` (each file but a split's last holds exactly
        ``max_file_tokens`` ids, and documents run on into the next file)."""
        return str(self.recipe.get("pack", "whole"))

    def to_bytes(self) -> bytes:
        """The manifest's exact serialization (docs/format.md)."""
        return (json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")


@dataclass(frozen=True)
class SplitTotals:
    """A finished split, as the manifest builder takes it."""

    n_tokens: int
    n_docs: int
    text_bytes: int
    text_tokens: int
    files: tuple[FileRecord, ...]


def build_manifest(
    *,
    recipe: Recipe,
    dataset: str,
    tokenizer: TokenizerIdentity,
    layout: tuple[str, str, int | None],
    source: ManifestSource,
    totals: dict[str, SplitTotals],
    part: PartOf | None = None,
) -> Manifest:
    """The manifest of a finished run (pure). ``layout`` is the output's (format, dtype,
    bin_version); ``part`` is set for a part of a partitioned run."""
    val = totals["val"]
    beta = val.text_bytes / val.text_tokens if val.text_tokens else None
    files = sorted(
        (
            ManifestFile(r.name, split, r.n_tokens, r.n_docs, r.sha256, r.companions,
                         r.first_doc_at)
            for split in SPLITS
            for r in totals[split].files
        ),
        key=lambda f: f.name,
    )
    return Manifest(
        dataset=dataset,
        tokenizer_id=tokenizer.tokenizer_id,
        tokenizer_sha256=tokenizer.sha256,
        vocab_size=tokenizer.vocab_size,
        doc_sep_id=tokenizer.doc_sep_id,
        sep_position=recipe.sep_position,
        format=layout[0],
        dtype=layout[1],
        bin_version=layout[2],
        max_file_tokens=recipe.max_file_tokens,
        corpus_manifest_sha256=corpus_manifest_sha256(source.to_json()),
        source=source,
        recipe=recipe.manifest_recipe(),
        val_bytes_per_token=beta,
        totals={
            split: SplitSummary(
                totals[split].n_tokens, totals[split].n_docs, len(totals[split].files)
            )
            for split in SPLITS
        },
        files=tuple(files),
        part=part,
    )


def write_manifest(directory: Path, manifest: Manifest) -> None:
    atomic_write_bytes(directory / MANIFEST_NAME, manifest.to_bytes())


# How a location is read (a local directory or a bucket URI): prep.outputs registers it
# when imported, since it stands above this room; prep.Manifest is loaded with it.
_read_published: Callable[[str | os.PathLike[str]], Manifest] | None = None


def register_reader(reader: Callable[[str | os.PathLike[str]], Manifest]) -> None:
    """Make ``reader`` the way :meth:`Manifest.load` reads a location (prep.outputs')."""
    global _read_published
    _read_published = reader


def read_manifest(directory: Path) -> Manifest:
    """Parse ``_MANIFEST.json``; raises ``IntegrityError`` if missing, unparseable, of an
    unknown version or missing a field."""
    path = directory / MANIFEST_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError as e:
        raise IntegrityError(f"{path} is missing; this is not a prep dataset", path=path) from e
    return parse_manifest(raw, str(path))


def parse_manifest(raw: bytes, path: str) -> Manifest:
    """A manifest's bytes, read from ``path`` (a file or an object), parsed; raises
    ``IntegrityError`` naming it when unparseable, of an unknown version or incomplete."""
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise IntegrityError(f"{path} is not valid JSON ({e})", path=path) from e
    if not isinstance(data, dict) or data.get("version") not in READABLE_VERSIONS:
        raise IntegrityError(
            f"{path}: manifest version {data.get('version') if isinstance(data, dict) else None!r}"
            f" is not one of {', '.join(READABLE_VERSIONS)}; read it with the prep that wrote it",
            path=path,
        )
    try:
        return Manifest.from_json(data)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise IntegrityError(
            f"{path}: not a complete manifest ({type(e).__name__}: {e})", path=path
        ) from e


def package_versions() -> dict[str, str]:
    """Installed versions of the packages prep's output depends on or reads with."""
    names = ("prep", "tokenizers", "numpy", "pyarrow", "huggingface-hub", "filelock")
    return {name: installed_version(name) or "not installed" for name in names}
