"""Pre-tokenization: the split regexes ``--pre-tokenizer`` names, and splitting text by one
exactly as Hugging Face ``tokenizers`` does (docs/tokenizer.md, "Pre-tokenization").

Each pattern is written in the one spelling that both ``tokenizers``' ``Split``
pre-tokenizer and the fast engine (gigatoken) read: gigatoken recognises particular
spellings of these regexes and refuses equivalent others (GPT-2's ``'s|'t|'re|...`` but not
tiktoken's ``'(?:[sdmt]|ll|ve|re)|...``), and a guard set of the code points where its
character classes differ from ``tokenizers'`` ships for each (``prep.encoders.guard``).

- ``gpt2``: GPT-2's regex, in tiktoken's spelling (the same language as GPT-2's own);
- ``gpt4``: cl100k's (GPT-4's), as ``tokenizers`` converts it; Llama 3's is the same
  language (``\\s*[\\r\\n]+`` and ``\\s*[\\r\\n]`` match the same text after ``\\s*``);
- ``o200k``: o200k's (GPT-4o's);
- ``none``: no pre-tokenization, each document is one piece (seed 004's rules).

The splitter is ``tokenizers`` itself (a ``Split`` regex, isolating its matches, behind a
word-level model whose offsets give each piece): the pieces prep trains on are by
construction the ones ``tokenizers`` encodes with the trained file. For ``gpt2`` the counting
goes about twenty times faster through gigatoken's own GPT-2 pre-tokenizer, which counts in
Rust on all cores, used as ``prepare`` uses gigatoken: a document holding a code point of the
pattern's guard set (where gigatoken's character classes differ from ``tokenizers'``,
``prep.encoders.guard``) or a NUL (the separator it is given) is split by ``tokenizers``.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from prep.encoders.guard import Guard, guard_for
from prep.state.versions import installed_version

NONE = "none"
PATTERNS: dict[str, str] = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "gpt4": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"""
            r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
    "o200k": r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
             r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}"""
             r"""\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}|"""
             r""" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}
NAMES = (NONE, *PATTERNS)
BATCH = 256  # documents per call into tokenizers (its threads split a batch)


def check_name(name: object) -> str:
    """``name`` when it names a pre-tokenizer, else ``ValueError`` listing the choices."""
    if not isinstance(name, str) or name not in NAMES:
        raise ValueError(f"pre-tokenizer {name!r}: choose one of {', '.join(NAMES)}")
    return name


def pattern_of(name: str) -> str | None:
    """The split regex of ``name`` (None for ``none``)."""
    return PATTERNS.get(check_name(name))


def name_of(pattern: str | None) -> str | None:
    """The name whose regex is ``pattern`` (``none`` for None), or None when prep has no
    name for it."""
    if pattern is None:
        return NONE
    return next((k for k, v in PATTERNS.items() if v == pattern), None)


def split_json(name: str) -> dict[str, Any] | None:
    """The ``Split`` pre-tokenizer of ``tokenizer.json`` for ``name`` (None for ``none``)."""
    pattern = pattern_of(name)
    if pattern is None:
        return None
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
            "invert": False}


Counts = Callable[[bytes, bytes], list[tuple[bytes, int]]]  # gigatoken's pretokenized_counts


def _fast_gpt2() -> tuple[Counts, Guard] | None:
    """gigatoken's GPT-2 piece counter and the guard of ``gpt2``'s pattern, or None when
    gigatoken is not installed or no guard ships for its version."""
    try:
        from gigatoken.gigatoken_rs import pretokenized_counts
    except ImportError:
        return None
    guard = guard_for("gigatoken", installed_version("gigatoken") or "unknown",
                      PATTERNS["gpt2"])
    return None if isinstance(guard, str) else (pretokenized_counts, guard)


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null meanwhile: gigatoken's counter prints two lines of its
    own to stderr on every call (this phase's logging is on this thread, between calls)."""
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


class Splitter:
    """Text into pieces as ``tokenizers`` splits it by the named pattern (``none``: each
    text is one piece)."""

    def __init__(self, name: str) -> None:
        self.name = check_name(name)
        self._tok: Any = None  # Any: tokenizers' Tokenizer, untyped
        pattern = pattern_of(name)
        if pattern is not None:
            from tokenizers import Regex, Tokenizer, models, pre_tokenizers

            tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
            tok.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), "isolated")
            self._tok = tok

    @functools.cached_property
    def _fast(self) -> tuple[Counts, Guard] | None:
        """The fast counter, loaded on the first count (encoding only splits)."""
        return _fast_gpt2() if self.name == "gpt2" else None

    def split(self, texts: list[str]) -> list[list[str]]:
        """Each text's pieces, in order; they concatenate to the text."""
        if self._tok is None:
            return [[t] if t else [] for t in texts]
        out: list[list[str]] = []
        for i in range(0, len(texts), BATCH):
            batch = texts[i : i + BATCH]
            encs = self._tok.encode_batch(batch, add_special_tokens=False)
            out.extend([t[a:b] for a, b in e.offsets] for t, e in zip(batch, encs, strict=True))
        return out

    def count(self, texts: list[str], into: Counter[str]) -> None:
        """Add each piece of ``texts`` to ``into`` (its multiplicity)."""
        if self._fast is None:
            for pieces in self.split(texts):
                into.update(pieces)
            return
        counts, guard = self._fast
        utf8 = [t.encode("utf-8") for t in texts]
        slow = set(guard.hits(texts, utf8)).union(i for i, t in enumerate(texts) if "\0" in t)
        for pieces in self.split([texts[i] for i in sorted(slow)]):
            into.update(pieces)
        fast = b"\0".join(d for i, d in enumerate(utf8) if i not in slow)
        if not fast:
            return
        with _quiet_stderr():
            found = counts(fast, b"\0")
        for piece, n in found:
            into[piece.decode("utf-8")] += n


def count_pieces(texts: Iterable[str], name: str) -> Counter[str]:
    """The distinct pieces of ``texts`` with their multiplicities."""
    splitter, counts = Splitter(name), Counter[str]()
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == BATCH:
            splitter.count(batch, counts)
            batch = []
    splitter.count(batch, counts)
    return counts
