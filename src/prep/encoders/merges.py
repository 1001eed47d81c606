"""prep's own exact engine, ``bpe``: a byte-level BPE without pre-tokenization (what ``prep
train-tokenizer`` writes with ``--pre-tokenizer none``), encoded by merge rank in C
(``_merges.c``), else by :func:`apply_merges`, its pure-Python twin (the same ids, slower).

For such a file ``tokenizers`` makes each document one word and applies the merges to its
bytes by rank, the lowest first, leftmost among equals; the engine does exactly that, so it
is used only where the file says nothing else (:func:`gate`): a ``BPE`` model whose ids
``0..255`` are the raw bytes and whose merge ``k`` makes id ``256 + k``; a ``ByteLevel``
pre-tokenizer without its regex or a prefix space; no normalizer, dropout, unknown token,
byte fallback, word prefix or suffix, ``ignore_merges``; every added token special (their
text is ordinary text inside a document, docs/format.md's stream step 7). Otherwise it
*declines* with a reason. Like the fast engine it is cross-checked against ``hf`` at run
time; probes against the reference run when it is built in the main process.
"""

from __future__ import annotations

import heapq
import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from prep.encoders.flatids import FlatIds
from prep.encoders.gigatoken import PROBES, Declined

ENGINE = "bpe"

Reference = Callable[[list[str], list[bytes]], FlatIds]


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's table: printable Latin-1 bytes stand for themselves, the others for the
    code points from 256 up, in byte order (the names of byte-level BPE vocabularies)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _halves(line: object) -> tuple[str, str] | None:
    """A merge line's two names: ``"left right"`` or ``["left", "right"]``."""
    if isinstance(line, str) and " " in line:
        left, right = line.split(" ", 1)
        return left, right
    if isinstance(line, list) and len(line) == 2 and all(isinstance(x, str) for x in line):
        return line[0], line[1]
    return None


def merge_table(vocab: dict[str, Any], lines: Sequence[object]) -> list[tuple[int, int]]:
    """The merges ``(left, right)`` of a byte-level BPE's ``vocab`` and ``merges`` laid out
    as prep writes them: ids ``0..255`` the raw bytes, merge ``k`` making id ``256 + k``;
    ``ValueError`` saying which is not so."""
    names = byte_to_unicode()
    if any(vocab.get(names[b]) != b for b in range(256)):
        raise ValueError("ids 0..255 are not the raw bytes (not written by prep)")
    merges: list[tuple[int, int]] = []
    for k, line in enumerate(lines):
        halves = _halves(line)
        ids = (None, None, None) if halves is None else (
            vocab.get(halves[0]), vocab.get(halves[1]), vocab.get("".join(halves)))
        if ids[0] is None or ids[1] is None or ids[2] != 256 + k:
            raise ValueError(f"merge {k} {line!r} does not make id {256 + k}")
        merges.append((int(ids[0]), int(ids[1])))
    return merges


def gate(config: dict[str, Any]) -> list[tuple[int, int]]:
    """The merge table of ``config`` (a parsed tokenizer.json) when this engine reproduces
    it exactly (module docstring), else ``Declined`` saying why."""
    model = config.get("model") or {}
    if model.get("type") != "BPE":
        raise Declined(f"model {model.get('type')!r} is not a BPE")
    for key in ("dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
                "byte_fallback", "ignore_merges"):
        if model.get(key):
            raise Declined(f"BPE option {key}={model[key]!r} is not supported")
    if config.get("normalizer") is not None:
        raise Declined("a normalizer is not supported")
    pre = config.get("pre_tokenizer") or {}
    if pre.get("type") != "ByteLevel" or pre.get("use_regex", True) or pre.get(
            "add_prefix_space"):
        raise Declined("only a ByteLevel pre-tokenizer without its regex or a prefix space "
                       "(each document one word) is supported")
    if any(not t.get("special") for t in config.get("added_tokens") or []):
        raise Declined("an added token that is not special is not supported")
    try:
        merges = merge_table(model.get("vocab") or {}, model.get("merges") or [])
    except ValueError as e:
        raise Declined(str(e)) from None
    if len(set(merges)) != len(merges):
        raise Declined("a pair is merged twice")
    return merges


def apply_merges(
    seq: list[int], merges: Sequence[tuple[int, int]], rank: dict[tuple[int, int], int]
) -> list[int]:
    """Merges in training order, each left to right without overlap, in O(n log n): a heap
    of (rank, position) over the adjacent pairs that have a merge, the lowest first. A merge
    only creates pairs holding its new id, whose ranks are higher, so every occurrence of
    rank ``r`` is merged before any of a higher rank, leftmost first; an entry whose tokens
    have changed since (an overlap, as in ``aaa``) is skipped."""
    n = len(seq)
    tok = list(seq)
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    heap = [(rank[p], i) for i, p in enumerate(itertools.pairwise(tok)) if p in rank]
    heapq.heapify(heap)
    while heap:
        r, i = heapq.heappop(heap)
        j = nxt[i] if tok[i] >= 0 else n
        if j >= n or (tok[i], tok[j]) != merges[r]:
            continue
        tok[i], tok[j] = 256 + r, -1
        nxt[i] = nxt[j]
        if nxt[i] < n:
            prv[nxt[i]] = i
            k = rank.get((tok[i], tok[nxt[i]]))
            if k is not None:
                heapq.heappush(heap, (k, i))
        if prv[i] >= 0:
            k = rank.get((tok[prv[i]], tok[i]))
            if k is not None:
                heapq.heappush(heap, (k, prv[i]))
    return [t for t in tok if t >= 0]


def _compiled() -> Any:  # Any: the extension's Encoder type, or None
    try:
        from prep.encoders import _merges  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _merges.Encoder


COMPILED = _compiled()


class MergesEncoder:
    """The ``bpe`` engine over a merge table; ``reference`` is what it is checked against."""

    name = ENGINE

    def __init__(self, merges: Sequence[tuple[int, int]], reference: Reference) -> None:
        self._merges = list(merges)
        self._rank = {pair: k for k, pair in enumerate(self._merges)}
        table = np.array(self._merges, dtype=np.uint32).reshape(-1)
        self._compiled = COMPILED(table.tobytes()) if COMPILED is not None else None
        self.reference = reference

    def encode_fast(self, utf8: Sequence[bytes]) -> FlatIds:
        if self._compiled is None:
            return FlatIds.of([np.array(apply_merges(list(d), self._merges, self._rank),
                                        dtype=np.uint32) for d in utf8])
        ids, offsets = self._compiled.encode_batch(list(utf8))
        return FlatIds(np.frombuffer(ids, dtype=np.uint32),
                       np.frombuffer(offsets, dtype=np.int64))

    def encode_flat(self, texts: list[str], utf8: list[bytes]) -> FlatIds:
        return self.encode_fast(utf8)


def load_merges_engine(raw: bytes, reference: Reference, *, probe: bool = True
                       ) -> MergesEncoder:
    """The ``bpe`` engine for the tokenizer.json bytes ``raw``; ``Declined`` (with the
    reason) when :func:`gate` refuses the file or (``probe``) a probe text encodes
    differently from ``reference``."""
    try:
        config = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise Declined(f"tokenizer.json is not JSON ({e})") from e
    engine = MergesEncoder(gate(config), reference)
    if probe:
        utf8 = [p.encode("utf-8") for p in PROBES]
        got, want = engine.encode_fast(utf8), reference(list(PROBES), utf8)
        if not (np.array_equal(got.ids, want.ids)
                and np.array_equal(got.offsets, want.offsets)):
            raise Declined("prep's encoder's ids differ from tokenizers' on a probe text")
    return engine
