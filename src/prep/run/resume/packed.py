"""The checkpoint's claims about a split packed ``--pack fixed``, re-derived for resume
(what :mod:`prep.run.resume.claims` checks for ``whole``; it calls these instead).

Under ``fixed`` a file is cut when it holds exactly ``max_file_tokens`` ids, whatever
document it is in (:mod:`prep.stream.writer`), so:

- from the records (:func:`check_fixed_records`): every sealed file holds exactly
  ``max_file_tokens`` ids and the open one at most that; each records ``first_doc_at``,
  0 in the split's first file, at most its size, its size exactly when no document starts
  in it;
- from what hashing each file saw of the separator (:func:`check_fixed_cuts`): where the
  separator can only be a separator, the documents that start in each file and where the
  first of them starts follow from the separators, before each document (``prepend``) or
  after the one before (``append``: a document also starts at a file's first id when the
  file before ends with a separator); an open file's recorded pieces (the index a format
  rebuilds from them) must be the ones those starts cut; the split's last document's
  length is where its start lies in the split's stream. Where the separator can occur in
  text only ``documents <= separators`` (and one for a document running on) holds.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from prep.errors import IntegrityError
from prep.formats import IdScan
from prep.formats.base import starts_at_separators
from prep.state.shards import first_doc_fits, piece_lengths


@dataclass(frozen=True)
class Shard:
    """A split's file as the checkpoint records it (with its documents' lengths when the
    format indexes them and the file is open), and what checking it saw."""

    name: str
    tokens: int
    docs: int
    scan: IdScan = field(default_factory=IdScan)
    lengths: tuple[int, ...] | None = None
    first: int | None = None  # first_doc_at (--pack fixed)



def _refuse(staging: Path, name: str, what: str) -> IntegrityError:
    return IntegrityError(
        f"{staging / name}: {what}; staging or its checkpoint was modified. Delete {staging} "
        "to start over",
        path=staging / name,
    )


def check_fixed_records(staging: Path, files: list[Shard], max_file_tokens: int) -> None:
    """The split's file records (sealed, then open) under the fixed packing rules."""
    for k, f in enumerate(files):
        sealed = k < len(files) - 1
        if (sealed and f.tokens != max_file_tokens) or f.tokens > max_file_tokens:
            held = "exactly" if sealed else "at most"
            raise _refuse(staging, f.name, f"holds {f.tokens:,} tokens, but --pack fixed puts "
                          f"{held} the recipe's --max-file-tokens {max_file_tokens:,} in a "
                          f"{'sealed' if sealed else 'last'} file")
        if not first_doc_fits(f.first, f.tokens, f.docs, k == 0):
            raise _refuse(staging, f.name, f"first_doc_at {f.first} does not fit its "
                          f"{f.tokens:,} ids and {f.docs:,} documents starting in it "
                          "(--pack fixed)")


def _starts(f: Shard, before: Shard | None, sep: int, append: bool) -> tuple[int, int]:
    """(documents starting in ``f``, where the first does: its size when none) from its
    exclusive separators."""
    s = f.scan
    if not append:
        return s.count, s.head[0] if s.count else f.tokens
    begins = f.tokens > 0 and (before is None or before.scan.last == sep)
    after = s.count - (s.last == sep)  # separators a document of this file follows
    first = 0 if begins else (s.head[0] + 1 if after else f.tokens)
    return after + begins, first


def separator_pieces(f: Shard, append: bool) -> tuple[int, ...]:
    """The document pieces of an open file whose every separator the check kept, what its
    index must list, under either packing (a leading piece that holds ids is the end of a
    document begun before, or under ``whole`` its first document)."""
    at = np.asarray(f.scan.every or (), dtype=np.int64)
    starts = starts_at_separators(at, f.tokens, append, False)
    return tuple(piece_lengths(starts, 0, f.tokens).tolist())


def check_fixed_cuts(staging: Path, files: list[Shard], sep: int | None, exclusive: bool,
                     append: bool) -> int | None:
    """The split's checked files against their separators; returns the length of the
    split's last document when the separators tell it, else None."""
    if sep is None:
        return None
    for k, f in enumerate(files):
        before = files[k - 1] if k else None
        if not exclusive:
            if f.docs > f.scan.count + append:
                raise _refuse(staging, f.name, f"holds {f.scan.count:,} separators but "
                              f"{f.docs:,} documents start in it")
            continue
        docs, first = _starts(f, before, sep, append)
        if (docs, first) != (f.docs, f.first):
            raise _refuse(staging, f.name, f"its separators start {docs:,} documents, the "
                          f"first at {first:,}, not the checkpoint's {f.docs:,} at {f.first}")
        if f.lengths is not None and f.scan.every is not None and (
                separator_pieces(f, append) != f.lengths):
            raise _refuse(staging, "checkpoint.json", f"its {f.name} document pieces "
                          "disagree with the file's separators")
    return _last_doc(files, append) if exclusive else None


def _last_doc(files: list[Shard], append: bool) -> int | None:
    """The split's last document's length (separator included), from where the last
    separators lie in the split's stream (each scan keeps a file's last two)."""
    offsets = [0, *itertools.accumulate(f.tokens for f in files)]
    total = offsets[-1]
    seps = sorted(offsets[k] + p for k, f in enumerate(files) for p in f.scan.tail)
    if not seps:
        return None
    if not append:
        return total - seps[-1]
    return total - (seps[-2] + 1 if len(seps) > 1 else 0)
