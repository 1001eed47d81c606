"""What a manifest records about partitioned runs: in a part, which part of which listing it
is (:class:`PartOf`); in a merged dataset, each part it was joined from (:class:`MergedPart`).
docs/format.md, "Partitioned runs", describes both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PartOf:
    """A part's place: part ``index`` of ``count``, cut from the listing ``listing_sha256``."""

    index: int
    count: int
    listing_sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "count": self.count, "listing_sha256": self.listing_sha256}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PartOf:
        return cls(int(d["index"]), int(d["count"]), str(d["listing_sha256"]))


@dataclass(frozen=True)
class MergedPart:
    """One part of a merged dataset: its name (``I-of-N``), the SHA-256 of its manifest, its
    range of the merged ``source.files``, its stream's counts and prefix digest, and which of
    its files became which merged file."""

    name: str
    manifest_sha256: str
    first_source_file: int
    n_source_files: int
    rows_visited: int
    empty_rows_skipped: int
    prefix_sha256: str | None
    files: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "manifest_sha256": self.manifest_sha256,
            "first_source_file": self.first_source_file,
            "n_source_files": self.n_source_files,
            "rows_visited": self.rows_visited,
            "empty_rows_skipped": self.empty_rows_skipped,
            "prefix_sha256": self.prefix_sha256,
            "files": dict(self.files),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> MergedPart:
        return cls(
            name=str(d["name"]),
            manifest_sha256=str(d["manifest_sha256"]),
            first_source_file=int(d["first_source_file"]),
            n_source_files=int(d["n_source_files"]),
            rows_visited=int(d["rows_visited"]),
            empty_rows_skipped=int(d["empty_rows_skipped"]),
            prefix_sha256=d["prefix_sha256"],
            files={str(k): str(v) for k, v in d["files"].items()},
        )
