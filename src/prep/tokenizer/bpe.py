"""The exact BPE trainer of docs/tokenizer.md: compiled (``_bpe.c``) when it was built at
install, else this module's pure-Python twin, which gives the same merges, only slower.

The algorithm is incremental (docs/tokenizer.md, "How it trains"):

- the corpus is one flat sequence of ids, documents separated by :data:`SEP`, each with a
  weight (the times it counts: a pre-tokenized corpus is its distinct pieces, each once,
  weighted by its multiplicity; 1 without pre-tokenization). A live token
  starts at a position holding its id; the positions it covers after the first hold
  :data:`DEAD`; ``span`` holds its length at its first and last positions, so the next token
  starts at ``i + span[i]`` and the previous one at ``i - span[i - 1]``;
- every pair has a 64-bit count (the sum of its occurrences' weights) and the positions
  where it was counted, ascending (a pair is created during one pass, which visits
  positions in order). An entry is checked when
  used: the pair may have gone from there since;
- a max-heap of ``(count, pair)`` with lazy deletion: an entry's count is an upper bound of
  the pair's current one (only pairs holding the newest id ever gain), so the first entry
  popped whose count is exact is the winner, ties to the smaller ``(left, right)``;
- merging ``(a, b)`` into ``c`` visits its positions left to right, skips those no longer
  holding ``a`` followed by ``b`` (overlaps included: in ``aaa`` the second one is gone), and
  moves the counts of the neighbouring pairs ``(p, a) -> (p, c)`` and ``(b, n) -> (c, n)``.
"""

from __future__ import annotations

import heapq
import logging
from array import array
from collections.abc import Callable, Iterable
from typing import Any, Protocol

logger = logging.getLogger(__name__)

SEP = 0xFFFF_FFFF
DEAD = 0xFFFF_FFFE
MAX_POSITIONS = 0xFFFF_FFFF - 1024
Merge = tuple[int, int, int]  # (left id, right id, count when merged)


class Trainer(Protocol):
    """What both implementations offer."""

    def step(self, n: int, /) -> list[Merge]:
        """Up to ``n`` more merges (fewer when no pair reaches the minimum frequency)."""
        ...

    def sequence(self) -> bytes:
        """The live ids as native uint32, documents separated by :data:`SEP`: with the merges
        so far, all that a resumed training needs."""
        ...

    def memory(self) -> int:
        """Bytes held, roughly."""
        ...


class PyTrainer:
    """The pure-Python trainer (the fallback when the extension is not built)."""

    # a buffer of native uint32 (bytes or a numpy array): typing has no Buffer before 3.12
    def __init__(self, sequence: Any, next_id: int, min_freq: int,  # Any: a buffer
                 weights: Any = None) -> None:
        ids = array("I")
        ids.frombytes(memoryview(sequence).cast("B"))  # bytes, or a numpy array of uint32
        if len(ids) > MAX_POSITIONS or min_freq < 1:
            raise ValueError("corpus too large for 32-bit positions, or min_freq < 1")
        self.tok = list(ids)
        self.weight = _spread(self.tok, weights)
        self.span = [1] * len(ids)
        self.next_id = next_id
        self.min_freq = min_freq
        self.counts: dict[tuple[int, int], int] = {}
        self.where: dict[tuple[int, int], list[int]] = {}
        tok = self.tok
        for i in range(len(tok) - 1):
            a, b = tok[i], tok[i + 1]
            if a == SEP or b == SEP:
                continue
            if a >= next_id or b >= next_id:
                raise ValueError(f"id {max(a, b)} at {i} is not below next_id")
            key = (a, b)
            self.counts[key] = self.counts.get(key, 0) + self.weight[i]
            self.where.setdefault(key, []).append(i)
        self.heap = [(-c, k) for k, c in self.counts.items() if c >= min_freq]
        heapq.heapify(self.heap)

    def _winner(self) -> tuple[int, int] | None:
        while self.heap:
            negative, key = heapq.heappop(self.heap)
            now = self.counts.get(key, 0)
            if now == -negative:
                return key
            if now >= self.min_freq:
                heapq.heappush(self.heap, (-now, key))
        return None

    def step(self, n: int) -> list[Merge]:
        out: list[Merge] = []
        for _ in range(n):
            key = self._winner()
            if key is None:
                break
            out.append((key[0], key[1], self.counts[key]))
            self._merge(key)
            self.next_id += 1
        return out

    def _merge(self, key: tuple[int, int]) -> None:
        tok, span, counts, c = self.tok, self.span, self.counts, self.next_id
        a, b = key
        n = len(tok)
        touched: set[tuple[int, int]] = set()

        def move(old: tuple[int, int], new: tuple[int, int], at: int, w: int) -> None:
            counts[old] -= w
            counts[new] = counts.get(new, 0) + w
            self.where.setdefault(new, []).append(at)
            touched.add(new)

        last = -1
        for i in self.where.pop(key):
            if i == last or tok[i] != a:
                continue
            last = i
            j = i + span[i]
            if j >= n or tok[j] != b:
                continue
            after = j + span[j]
            w = self.weight[i]
            if i > 0 and tok[i - 1] != SEP:
                p = i - span[i - 1]
                move((tok[p], a), (tok[p], c), p, w)
            counts[key] -= w
            if after < n and tok[after] != SEP:
                move((b, tok[after]), (c, tok[after]), i, w)
            span[i] = span[after - 1] = span[i] + span[j]
            tok[j] = DEAD
            tok[i] = c
        if counts.pop(key) != 0:
            raise RuntimeError("BPE counts disagree with the sequence (a bug in prep)")
        for new in sorted(touched):
            if counts[new] >= self.min_freq:
                heapq.heappush(self.heap, (-counts[new], new))

    def sequence(self) -> bytes:
        return array("I", (t for t in self.tok if t != DEAD)).tobytes()

    def memory(self) -> int:
        return 8 * len(self.tok) + 100 * len(self.counts)


def _spread(tok: list[int], weights: Any) -> list[int]:  # Any: a buffer or None
    """Each position's weight: its document's (one uint32 per document), or 1."""
    if weights is None:
        return [1] * len(tok)
    per_doc = array("I")
    per_doc.frombytes(memoryview(weights).cast("B"))
    out, d = [], 0
    for t in tok:
        if d >= len(per_doc) or per_doc[d] == 0:
            raise ValueError("weights: one positive uint32 per document")
        out.append(per_doc[d])
        d += t == SEP
    if d != len(per_doc):
        raise ValueError("weights: one positive uint32 per document")
    return out


def _compiled() -> Callable[..., Any] | None:
    try:
        from prep.tokenizer import _bpe  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _bpe.Trainer  # type: ignore[no-any-return]


COMPILED = _compiled()
IMPLEMENTATION = "c" if COMPILED is not None else "python"


def make_trainer(sequence: Any, next_id: int, min_freq: int,  # Any: buffers
                 weights: Any = None) -> Trainer:
    """The compiled trainer when built, else :class:`PyTrainer` (same merges), over
    ``sequence`` (any buffer of native uint32 ids, documents separated by :data:`SEP`),
    each document counting ``weights[d]`` times (a buffer of native uint32, one per
    document; None: once each)."""
    if COMPILED is not None:
        return COMPILED(sequence, next_id, min_freq, weights)  # type: ignore[no-any-return]
    return PyTrainer(sequence, next_id, min_freq, weights)


def flat_sequence(documents: Iterable[bytes]) -> bytes:
    """Documents' bytes as one uint32 sequence, each followed by :data:`SEP`."""
    out = array("I")
    for doc in documents:
        out.extend(doc)
        out.append(SEP)
    return out.tobytes()
