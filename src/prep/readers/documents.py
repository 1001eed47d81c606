"""Where a split's documents start, for ``TokenStream(..., documents=True)``: from each
shard's document index where its format has one (``megatron``, ``datatrove``, ``olmo``),
else from its separators, which are exact when a shard holds exactly one separator per
document (the manifest's count): each document has its own, so none occurs inside a
document. Under ``--pack fixed`` a document may run across shards: it starts once, in the
shard the manifest counts it in, at ``first_doc_at`` for a shard's first (its index lists
the piece before as a piece; its separator may sit in the shard before or after).

A shard with more (an ordinary-token separator that also occurs in text) or a
dataset without separators (``--no-doc-sep``) in a format without an index cannot be cut
into documents: that is refused, naming the shard and what to rebuild with.

Per window of ``T`` tokens at stream offset ``s``, the boundaries are ``cu_seqlens``-style
offsets ``[0, ..., T]`` (int32): 0, every document start inside the window, and ``T``; the
position ids count from 0 at each of them (a document the window cuts into counts from 0
at the window's start, as datatrove's ``return_positions`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.errors import IntegrityError
from prep.formats import ShardFormat
from prep.formats.base import starts_at_separators
from prep.state.manifest import Manifest, ManifestFile

_CHUNK = 1 << 22
INDEXED = "megatron, datatrove or olmo"  # the formats that index their documents


def separator_starts(
    ids: npt.NDArray[Any], entry: ManifestFile, manifest: Manifest
) -> npt.NDArray[np.int64]:
    """The offsets in a shard where its documents start, from its separators (before each
    document, or after the one before); ``IntegrityError`` when they do not tell the
    documents apart exactly (see the module docstring)."""
    sep, n = manifest.doc_sep_id, int(ids.size)
    if sep is None:
        raise IntegrityError(
            f"{entry.name}: this {manifest.format} dataset was built with --no-doc-sep, so "
            "nothing in it marks where documents end; rebuild with a separator or with "
            f"--format {INDEXED} (which index documents) to read it with documents=True",
            path=entry.name,
        )
    at = [np.flatnonzero(ids[i : i + _CHUNK] == sep) + i for i in range(0, n, _CHUNK)]
    pos = np.concatenate([np.zeros(0, dtype=np.int64), *at]).astype(np.int64)
    append, first = manifest.sep_position == "append", entry.first_doc
    # append: a document that starts at 0 follows the end of the file before
    starts = starts_at_separators(pos, n, append, bool(first == 0 and n and entry.n_docs))
    # append, whole: the shard ends where its last document does, with its separator
    edge_ok = not append or entry.first_doc_at is not None or not n or bool(
        pos.size and pos[-1] == n - 1)
    if starts.size != entry.n_docs or (starts.size and starts[0] != first) or not edge_ok:
        raise IntegrityError(
            f"{entry.name}: {pos.size:,} separators ({sep}) for {entry.n_docs:,} documents"
            + ("" if entry.first_doc_at is None else f" (starting in it, the first at {first:,})")
            + ": the separator also occurs inside documents, so they cannot be told apart; "
            f"rebuild with --format {INDEXED} (which index documents) to read it with "
            "documents=True",
            path=entry.name,
        )
    return starts


def file_starts(fmt: ShardFormat, directory: Path, entry: ManifestFile,
                ids: npt.NDArray[Any], manifest: Manifest) -> npt.NDArray[np.int64]:
    """The offsets in a shard where its documents start: from its index where the format
    has one (each piece's start but a first piece that ends a document begun in an earlier
    shard, ``--pack fixed``), else from its separators."""
    lengths = fmt.doc_lengths(directory, entry, manifest)
    if lengths is None:
        return separator_starts(ids, entry, manifest)
    starts: npt.NDArray[np.int64] = np.cumsum(lengths, dtype=np.int64) - lengths
    return starts[1:] if entry.first_doc else starts


def doc_starts(
    fmt: ShardFormat,
    directory: Path,
    entries: Sequence[ManifestFile],
    shards: Sequence[npt.NDArray[Any]],
    manifest: Manifest,
) -> npt.NDArray[np.int64]:
    """Every document's first offset in the split's stream (the concatenation of
    ``shards``, the ids of ``entries``), ascending; a document that runs across shards
    (``--pack fixed``) is one document, starting once."""
    starts, at = [], 0
    for entry, ids in zip(entries, shards, strict=True):
        starts.append(file_starts(fmt, directory, entry, ids, manifest) + at)
        at += int(ids.size)
    return np.concatenate([np.zeros(0, dtype=np.int64), *starts])


def window(starts: npt.NDArray[np.int64], s: int, width: int
           ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """(cu_seqlens, position ids) of the window of ``width`` tokens at offset ``s``."""
    lo = int(np.searchsorted(starts, s, side="right"))
    hi = int(np.searchsorted(starts, s + width, side="left"))
    cu = np.concatenate(([0], starts[lo:hi] - s, [width])).astype(np.int32)
    positions = np.arange(width, dtype=np.int64) - np.repeat(cu[:-1], np.diff(cu))
    return cu, positions


def batch(starts: npt.NDArray[np.int64], offsets: npt.NDArray[Any], width: int
          ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """(cu_seqlens over the flattened batch, position ids ``(rows, width)``) of windows of
    ``width`` tokens at ``offsets``: each row's offsets shifted by ``row * width``, so a
    row's end is always a boundary (``flash_attn_varlen_func``'s packed layout)."""
    cus, rows = [np.zeros(1, dtype=np.int32)], []
    for r, s in enumerate(offsets):
        cu, positions = window(starts, int(s), width)
        cus.append(cu[1:] + np.int32(r * width))
        rows.append(positions)
    return np.concatenate(cus), np.stack(rows) if rows else np.zeros((0, width), np.int64)
