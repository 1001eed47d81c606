"""What ``prep merge`` publishes, as a pure function of the parts' manifests.

Given the manifests of parts ``0..N-1`` (each a verified, published part run), it checks
that they are parts of one run — the same recipe, dataset, source (kind, URI, revision,
columns), tokenizer and format, the same listing, and the ranges the partition rule gives —
then returns the merged manifest and the links: each split's shards renumbered in part
order, file by file as the format lays a shard out.

A part's empty ``-00000`` shard (a split it wrote nothing to) is left out unless the whole
split is empty, so no empty shard precedes a non-empty one. The merged manifest lists every
source file in read order, sums the counts, and records each part (:class:`MergedPart`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prep.errors import IntegrityError
from prep.formats import ShardFormat
from prep.partition import boundaries
from prep.state.manifest import (
    Manifest,
    ManifestFile,
    SplitSummary,
    corpus_manifest_sha256,
    listing_sha256,
)
from prep.state.parts import MergedPart
from prep.state.shards import Companion

# Fields that differ between the parts of one run; every other field must be equal.
_PER_PART = ("files", "totals", "corpus_manifest_sha256", "val_bytes_per_token", "part", "parts")
_PER_PART_SOURCE = ("files", "rows_visited", "empty_rows_skipped", "prefix_sha256")


@dataclass(frozen=True)
class PartManifest:
    """A published part: its directory name (``I-of-N``), its manifest, and the SHA-256 of
    the manifest's exact bytes."""

    name: str
    manifest: Manifest
    manifest_sha256: str


@dataclass(frozen=True)
class Link:
    """Publish the file ``name`` of part ``part`` as ``new_name``."""

    part: str
    name: str
    new_name: str


@dataclass(frozen=True)
class MergePlan:
    manifest: Manifest
    links: tuple[Link, ...]


def _shared(m: Manifest) -> dict[str, Any]:
    out = {k: v for k, v in m.to_json().items() if k not in _PER_PART}
    out["source"] = {k: v for k, v in out["source"].items() if k not in _PER_PART_SOURCE}
    if m.part is not None:
        out["part"] = {"count": m.part.count, "listing_sha256": m.part.listing_sha256}
    return out


def _differences(a: object, b: object, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in [*a, *(k for k in b if k not in a)]:
            out += _differences(a.get(key), b.get(key), f"{prefix}{key}.")
        return out
    return [] if a == b else [f"{prefix[:-1]}: {a!r} vs {b!r}"]


def check_compatible(parts: Sequence[PartManifest]) -> None:
    """Raise ``IntegrityError`` unless part ``I`` sits at position ``I`` and every part
    shares part 0's recipe, dataset, source, tokenizer, format and listing."""
    first = _shared(parts[0].manifest)
    for position, p in enumerate(parts):
        info = p.manifest.part
        if info is None or info.index != position or info.count != len(parts):
            raise IntegrityError(
                f"{p.name} is not part {position} of {len(parts)} (its manifest says "
                f"{'no part' if info is None else f'{info.index}/{info.count}'}); rebuild it "
                f"with prep prepare --part {position}/{len(parts)}"
            )
        diff = _differences(first, _shared(p.manifest))
        if diff:
            more = f"; and {len(diff) - 6} more" if len(diff) > 6 else ""
            raise IntegrityError(
                f"{p.name} and {parts[0].name} are not parts of the same run: "
                f"{'; '.join(diff[:6])}{more}. Rebuild {p.name} with the options of the others"
            )


def _check_listing(parts: Sequence[PartManifest]) -> None:
    """The parts' files, joined, must be the listing each recorded, cut by the rule."""
    files = [f for p in parts for f in p.manifest.source.files]
    first = parts[0].manifest
    recorded = first.part.listing_sha256 if first.part else ""
    if listing_sha256(first.source.kind, first.source.revision, files) != recorded:
        raise IntegrityError(
            "the parts' source files together are not the listing they were cut from "
            f"({recorded[:12]}…): a part was built from another listing; rebuild the parts "
            "whose source differs"
        )
    b = boundaries([f.size for f in files], len(parts))
    for i, p in enumerate(parts):
        if len(p.manifest.source.files) != b[i + 1] - b[i]:
            raise IntegrityError(
                f"{p.name} read {len(p.manifest.source.files)} source files but the partition "
                f"rule gives it {b[i + 1] - b[i]}; rebuild it with prep prepare --part "
                f"{i}/{len(parts)}"
            )


def kept_shards(parts: Sequence[PartManifest], split: str
                ) -> list[tuple[PartManifest, ManifestFile]]:
    """The split's shards in merged order: part by part, each part's in name order, the
    empty ones left out unless the whole split is empty (then its first is kept)."""
    shards = [
        (p, e) for p in parts for e in sorted(p.manifest.files, key=lambda e: e.name)
        if e.split == split
    ]
    return [(p, e) for p, e in shards if e.n_tokens > 0] or shards[:1]


Recut = Mapping[str, tuple[int, tuple[ManifestFile, ...]]]  # per split: (kept, written anew)
RECUT = "recut"  # the directory in DIR.parts that holds the files written anew


def _renumber(
    parts: Sequence[PartManifest], fmt: ShardFormat, recut: Recut | None = None
) -> tuple[list[Link], list[ManifestFile], dict[str, MergedPart]]:
    """Links, merged file entries, and per part the renames of its shards; with ``recut``
    (``--pack fixed``), only each split's first ``kept`` shards are renamed, and the files
    written anew follow them."""
    links: list[Link] = []
    entries: list[ManifestFile] = []
    renamed: dict[str, dict[str, str]] = {p.name: {} for p in parts}
    for split in parts[0].manifest.totals:
        kept = kept_shards(parts, split)
        recut_files: tuple[ManifestFile, ...] = ()
        if recut is not None:
            keep, recut_files = recut[split]
            kept = kept[:keep]
        for f in recut_files:  # written anew into DIR.parts/recut (prep.merge.recut)
            entries.append(f)
            links.extend(Link(RECUT, n, n) for n in fmt.shard_files(f.name))
        for number, (p, e) in enumerate(kept):
            new = fmt.shard_name(split, number)
            renamed[p.name][e.name] = new
            old_files, new_files = fmt.shard_files(e.name), fmt.shard_files(new)
            # A shard's further files (Megatron's .idx) are its companions, in the format's
            # order: they keep their hashes under their new names.
            by_name = {c.name: c.sha256 for c in e.companions}
            companions = tuple(
                Companion(n, by_name[o]) for o, n in zip(old_files[1:], new_files[1:], strict=True)
            )
            entries.append(dataclasses.replace(e, name=new, companions=companions))
            for old_file, new_file in zip(old_files, new_files, strict=True):
                links.append(Link(p.name, old_file, new_file))
    entries.sort(key=lambda e: e.name)
    at, recorded = 0, {}
    for p in parts:
        s = p.manifest.source
        recorded[p.name] = MergedPart(
            p.name, p.manifest_sha256, at, len(s.files), s.rows_visited, s.empty_rows_skipped,
            s.prefix_sha256, renamed[p.name],
        )
        at += len(s.files)
    return links, entries, recorded


def _val_bytes_per_token(parts: Sequence[PartManifest]) -> float | None:
    """β over the union. A part's val bytes are β·tokens, an integer far below 2**53, so
    rounding recovers it exactly and the result equals a single run's division."""
    text_bytes = text_tokens = 0
    for p in parts:
        m = p.manifest
        val = m.totals["val"]
        tokens = val.n_tokens - (val.n_docs if m.doc_sep_id is not None else 0)
        if tokens and m.val_bytes_per_token is not None:
            text_bytes += round(m.val_bytes_per_token * tokens)
            text_tokens += tokens
    return text_bytes / text_tokens if text_tokens else None


def plan_merge(parts: Sequence[PartManifest], fmt: ShardFormat, recut: Recut | None = None
               ) -> MergePlan:
    """The merged manifest and the links, for parts ``0..N-1`` in order (``recut``: the
    files :func:`prep.merge.recut.recut` wrote for parts packed ``--pack fixed``, which it
    needs). Raises ``IntegrityError`` (naming the part and the fix) when they are not parts
    of one run."""
    if not parts:
        raise IntegrityError("no parts to merge")
    check_compatible(parts)
    if (parts[0].manifest.pack == "fixed") != (recut is not None):
        raise ValueError("parts packed --pack fixed are merged with their re-cut files only")
    _check_listing(parts)
    links, entries, recorded = _renumber(parts, fmt, recut)
    first = parts[0].manifest
    source = dataclasses.replace(
        first.source,
        files=tuple(f for p in parts for f in p.manifest.source.files),
        rows_visited=sum(p.manifest.source.rows_visited for p in parts),
        empty_rows_skipped=sum(p.manifest.source.empty_rows_skipped for p in parts),
        prefix_sha256=None,
    )
    totals = {
        split: SplitSummary(
            sum(p.manifest.totals[split].n_tokens for p in parts),
            sum(p.manifest.totals[split].n_docs for p in parts),
            sum(1 for e in entries if e.split == split),
        )
        for split in first.totals
    }
    manifest = dataclasses.replace(
        first,
        corpus_manifest_sha256=corpus_manifest_sha256(source.to_json()),
        source=source,
        val_bytes_per_token=_val_bytes_per_token(parts),
        totals=totals,
        files=tuple(entries),
        part=None,
        parts=tuple(recorded[p.name] for p in parts),
    )
    return MergePlan(manifest, tuple(links))
