"""The guard: the code points on which the fast engine's character classes differ from
``tokenizers'``, so that a document holding one is encoded by the reference.

gigatoken and ``tokenizers`` classify characters with different Unicode tables, so their
split regexes (``\\p{L}``, ``\\p{N}``, ``\\s``) put some characters (mostly letters and
ideographs of recent Unicode versions) in different classes, and a document holding one
may get different ids. The set of such code points is a function of the engine's version
and of the split pattern; :mod:`prep.encoders.guard_derive` (``scripts/derive_guard.py``)
derives it by encoding every code point in several contexts with both engines, and the
result ships in ``guards/<engine>-<version>.json``, keyed by the SHA-256 of the pattern.
A pair with no shipped set has no guard, and the fast engine is declined for it.

The scan keeps the fast path fast (``benchmarks/guard.py``): ``str.isascii()`` is O(1) in
CPython (a flag of the string), so a plain ASCII document costs nothing more; any other is
first cleared by ``bytes.translate`` (deleting every byte that cannot lead a guarded UTF-8
sequence leaves nothing), and the documents left with such a byte are decoded at those
bytes only, together, with numpy. A ``re`` character class over the code points was about
100 times slower on real non-ASCII text (its ranges above U+FFFF are tried one by one at
every character), a regex over the UTF-8 bytes 15 times.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any

import numpy as np

# The regex of tokenizers' ByteLevel pre-tokenizer with use_regex (GPT-2's), which gigatoken
# identifies by the pre-tokenizer's type; a Split pre-tokenizer names its own.
BYTE_LEVEL_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"

FORMAT = 1


def split_pattern(config: dict[str, Any]) -> str | None:
    """The split regex of a parsed tokenizer.json that ``gigatoken.gate`` accepted (a
    ByteLevel pre-tokenizer with its regex, or a Split regex before one), or None when the
    Split pattern is a plain string, not a regex."""
    pre = config.get("pre_tokenizer") or {}
    if pre.get("type") == "Sequence":
        pattern = pre["pretokenizers"][0].get("pattern") or {}
        regex = pattern.get("Regex")
        return None if regex is None else str(regex)
    return BYTE_LEVEL_PATTERN


def pattern_key(pattern: str) -> str:
    """What a shipped set is keyed by: the SHA-256 of the pattern's UTF-8 bytes."""
    return hashlib.sha256(pattern.encode("utf-8")).hexdigest()


def format_ranges(code_points: Iterable[int]) -> list[str]:
    """Sorted code points as compact ranges: ``["0C5C", "32000-33FFF", ...]`` (hex)."""
    out: list[list[int]] = []
    for c in sorted(set(code_points)):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return [f"{lo:04X}" if lo == hi else f"{lo:04X}-{hi:04X}" for lo, hi in out]


def parse_ranges(ranges: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """The inverse of :func:`format_ranges`: ``(first, last)`` pairs."""
    out = []
    for r in ranges:
        lo, _, hi = r.partition("-")
        out.append((int(lo, 16), int(hi or lo, 16)))
    return tuple(out)


class Guard:
    """The guarded code points of one engine version and pattern, as ``(first, last)``
    ranges, and the scan over documents."""

    def __init__(self, ranges: Sequence[tuple[int, int]]) -> None:
        self.ranges = tuple(sorted(ranges))
        self._starts = np.array([lo for lo, _ in self.ranges], dtype=np.int64)
        self._ends = np.array([hi for _, hi in self.ranges], dtype=np.int64)
        leads = {chr(c).encode("utf-8", "surrogatepass")[0] for lo, hi in self.ranges
                 for c in (lo, hi, *range(lo - lo % 64, hi + 1, 64)) if lo <= c <= hi}
        self._leads = np.zeros(256, dtype=bool)
        self._leads[sorted(leads)] = True
        # Bytes that cannot start a guarded sequence: deleting them from a document that
        # holds no guarded code point leaves nothing (bytes.translate: one C loop).
        self._others = bytes(b for b in range(256) if b not in leads)

    def hits(self, texts: Sequence[str], utf8: Sequence[bytes]) -> list[int]:
        """Indices of the documents holding a guarded code point (``utf8``: the same
        texts' UTF-8). An ASCII text is never scanned: ``str.isascii`` reads a flag of
        the string; any other is cleared by one ``bytes.translate`` unless it holds a lead
        byte of a guarded code point, and those left are decoded at their lead bytes
        only, all at once (numpy)."""
        if not self.ranges:
            return []
        others = self._others
        left = [i for i, (t, data) in enumerate(zip(texts, utf8, strict=True))
                if not t.isascii() and data.translate(None, others)]
        if not left:
            return []
        return [left[k] for k in self._scan([utf8[i] for i in left])]

    def _scan(self, docs: list[bytes]) -> list[int]:
        """Indices of ``docs`` (valid UTF-8) holding a guarded code point."""
        buf = np.frombuffer(b"".join(docs), dtype=np.uint8)
        pos = np.flatnonzero(self._leads[buf])
        last = buf.size - 1
        b = [buf[np.minimum(pos + k, last)].astype(np.int64) for k in range(4)]
        cp = np.where(b[0] >= 0xF0,
                      (b[0] & 7) << 18 | (b[1] & 63) << 12 | (b[2] & 63) << 6 | (b[3] & 63),
                      np.where(b[0] >= 0xE0, (b[0] & 15) << 12 | (b[1] & 63) << 6 | (b[2] & 63),
                               (b[0] & 31) << 6 | (b[1] & 63)))
        k = np.searchsorted(self._starts, cp, side="right") - 1
        hit = (k >= 0) & (cp <= self._ends[np.maximum(k, 0)])
        ends = np.cumsum([len(d) for d in docs])
        return np.unique(np.searchsorted(ends, pos[hit], side="right")).tolist()  # type: ignore[no-any-return]

    def __contains__(self, code_point: object) -> bool:
        return isinstance(code_point, int) and any(
            lo <= code_point <= hi for lo, hi in self.ranges)


def _shipped_file(engine: str, version: str) -> str:
    return f"{engine}-{version}.json"


def shipped(engine: str, version: str) -> dict[str, Any]:
    """The shipped sets of ``engine`` at ``version`` (``guards/<engine>-<version>.json``),
    by pattern key; empty when none ship for that version."""
    path = resources.files("prep.encoders") / "guards" / _shipped_file(engine, version)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    if data.get("format") != FORMAT:
        return {}
    patterns: dict[str, Any] = data["patterns"]
    return patterns


def guard_for(engine: str, version: str, pattern: str | None) -> Guard | str:
    """The guard of ``engine`` at ``version`` for the split ``pattern``, or why there is
    none (a reason the caller declines the engine with)."""
    if pattern is None:
        return "its Split pattern is a plain string, which has no derived guard"
    entry = shipped(engine, version).get(pattern_key(pattern))
    if entry is None:
        return (f"no guard set ships for {engine} {version} and the split pattern "
                f"{pattern[:48]!r}... (sha256 {pattern_key(pattern)[:12]}); derive one with "
                "scripts/derive_guard.py")
    if entry.get("pattern") != pattern:
        return f"the guard set for sha256 {pattern_key(pattern)[:12]} names another pattern"
    return Guard(parse_ranges(entry["ranges"]))
