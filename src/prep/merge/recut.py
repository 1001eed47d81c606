"""``prep merge`` of parts packed ``--pack fixed``: the split's files cut again.

Each part's split is a stream cut every ``max_file_tokens`` ids, its last file partial, so
linking the parts' files as they are would leave partial files mid-split. The merged split
is the parts' streams joined, cut as one ``fixed`` run cuts it: every file but the last
holds exactly ``max_file_tokens`` ids. The leading files that already sit where that cut
puts them (full, at a multiple of the limit: part 0's files but its last, at least) are
linked as they are; from the first one that does not, every file is written anew, with
the format's own writer, into ``DIR.parts/recut/``, and linked from there like a part's
file. So the merged files are byte for byte what one ``fixed`` run of the same recipe over
the whole source writes (the parts' streams joined are its stream).

Where documents start in each part file comes from its index or its separators
(:func:`prep.readers.documents.file_starts`); a part whose documents cannot be told apart
(``--no-doc-sep`` in a format without an index) cannot be re-cut and is refused. The new
files are written one at a time; memory holds at most one document piece that crosses a
part file (up to ``max_file_tokens`` ids).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.errors import IntegrityError
from prep.formats import ShardFormat
from prep.formats.base import ShardWriter
from prep.merge.plan import PartManifest, Recut, kept_shards
from prep.readers.documents import file_starts
from prep.state.manifest import ManifestFile
from prep.state.shards import piece_lengths

logger = logging.getLogger(__name__)


def linkable(kept: Sequence[tuple[PartManifest, ManifestFile]], limit: int) -> int:
    """How many leading shards already sit where the merged cut puts them: each starts at
    a multiple of ``limit`` and is full, or is the split's last."""
    at = 0
    for k, (_, e) in enumerate(kept):
        if at % limit or (e.n_tokens != limit and k != len(kept) - 1):
            return k
        at += e.n_tokens
    return len(kept)


def files_to_recut(parts: Sequence[PartManifest], fmt: ShardFormat
                   ) -> dict[str, dict[str, str | None]]:
    """Per part, the files :func:`recut` reads (those of the shards after each split's
    linkable ones) with their SHA-256: what a part that must be copied to be read copies."""
    limit = parts[0].manifest.max_file_tokens
    out: dict[str, dict[str, str | None]] = {p.name: {} for p in parts}
    for split in parts[0].manifest.totals:
        kept = kept_shards(parts, split)
        for p, e in kept[linkable(kept, limit):]:
            shas = {e.name: e.sha256, **{c.name: c.sha256 for c in e.companions}}
            out[p.name].update({n: shas.get(n) for n in fmt.shard_files(e.name)})
    return out


class _Source:
    """The ids and document starts of the shards to re-cut, joined as one stream."""

    def __init__(self, shards: Sequence[tuple[PartManifest, ManifestFile, Path]],
                 fmt: ShardFormat) -> None:
        self.ids: list[npt.NDArray[Any]] = []
        starts, at = [], 0
        for p, e, directory in shards:
            ids = fmt.map_ids(directory, e, p.manifest)
            try:
                here = file_starts(fmt, directory, e, ids, p.manifest)
            except IntegrityError as err:
                raise IntegrityError(
                    f"part {p.name}: {err}; merge must know where its documents start to cut "
                    "--pack fixed files again: rebuild the parts with a separator or with "
                    "--format megatron, datatrove or olmo", path=str(directory / e.name),
                ) from err
            self.ids.append(ids)
            starts.append(here + at)
            at += int(ids.size)
        self.offsets = np.cumsum([0, *(int(a.size) for a in self.ids)])
        self.starts = np.concatenate([np.zeros(0, dtype=np.int64), *starts])  # ascending
        self.total = at

    def shard_of(self, at: int) -> int:
        """The shard holding the stream's id ``at``."""
        return int(np.searchsorted(self.offsets, at, side="right")) - 1

    def write(self, writer: ShardWriter, bounds: list[int]) -> None:
        """Append the document pieces between consecutive ``bounds`` to ``writer``, each
        run of pieces inside one shard in one call (a view, no copy), a piece that crosses
        shards joined alone."""
        i = 0
        while i < len(bounds) - 1:
            k = self.shard_of(bounds[i])
            lo, end = int(self.offsets[k]), int(self.offsets[k + 1])
            j = i
            while j < len(bounds) - 1 and bounds[j + 1] <= end:
                j += 1
            if j > i:  # pieces i..j-1 lie in shard k
                lengths = [bounds[m + 1] - bounds[m] for m in range(i, j)]
                writer.append(self.ids[k][bounds[i] - lo : bounds[j] - lo], lengths)
                i = j
                continue
            a, b = bounds[i], bounds[i + 1]  # one piece over several shards
            parts, at = [], a
            while at < b:
                k = self.shard_of(at)
                lo, end = int(self.offsets[k]), int(self.offsets[k + 1])
                parts.append(self.ids[k][at - lo : min(b, end) - lo])
                at = min(b, end)
            writer.append(np.concatenate(parts), [b - a])
            i += 1


def recut_split(
    split: str, shards: Sequence[tuple[PartManifest, ManifestFile, Path]], first_index: int,
    fmt: ShardFormat, directory: Path, limit: int, vocab_size: int,
) -> tuple[ManifestFile, ...]:
    """Write the stream of ``shards`` (in order) into ``directory`` as files of exactly
    ``limit`` ids but the last, named from ``first_index`` on; their manifest entries."""
    src, out = _Source(shards, fmt), []
    for number, a in enumerate(range(0, src.total, limit), start=first_index):
        b = min(src.total, a + limit)
        inside = src.starts[np.searchsorted(src.starts, a) : np.searchsorted(src.starts, b)]
        bounds = [a, *(a + np.cumsum(piece_lengths(inside, a, b))).tolist()]
        name = fmt.shard_name(split, number)
        writer = fmt.create(directory, name, vocab_size)
        try:
            src.write(writer, bounds)
            sha, companions = writer.seal()
        except BaseException:
            writer.close()
            raise
        first = int(inside[0]) - a if inside.size else b - a
        out.append(ManifestFile(name, split, b - a, int(inside.size), sha, companions, first))
        logger.info("re-cut %s: %s tokens, %s documents start in it", name, f"{b - a:,}",
                    f"{inside.size:,}")
    return tuple(out)


def recut(parts: Sequence[PartManifest], dirs: Sequence[Path], fmt: ShardFormat,
          directory: Path) -> Recut:
    """Per split: how many leading shards merge links as they are, and the files written
    anew into ``directory`` (made afresh: a killed merge's are written again)."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    first = parts[0].manifest
    where = {p.name: d for p, d in zip(parts, dirs, strict=True)}
    plan: dict[str, tuple[int, tuple[ManifestFile, ...]]] = {}
    for split in first.totals:
        kept = kept_shards(parts, split)
        keep = linkable(kept, first.max_file_tokens)
        rest = [(p, e, where[p.name]) for p, e in kept[keep:]]
        plan[split] = (keep, recut_split(split, rest, keep, fmt, directory,
                                         first.max_file_tokens, first.vocab_size))
    return plan
