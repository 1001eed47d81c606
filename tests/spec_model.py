"""The spec's order and split rules, transcribed from docs/format.md (the stream) for use as
test oracles: written from the spec text, never by calling prep. One copy, shared by the
unit, property and end-to-end tests."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


def spec_file_order(files: list[T], shuffle: bool, seed: int) -> list[T]:
    """Stream step 2: the sorted list, or its PCG64(SeedSequence([seed, 0])) permutation."""
    if not shuffle:
        return list(files)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 0])))
    return [files[int(i)] for i in rng.permutation(len(files))]


def spec_shuffle(rows: list[Any], buffer: int, seed: int) -> list[Any]:
    """Stream step 4: the bounded-buffer document shuffle."""
    if buffer <= 0:
        return list(rows)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 1])))
    out: list[Any] = []
    buf: list[Any] = []
    for t in rows:
        if len(buf) < buffer:
            buf.append(t)
        else:
            i = int(rng.integers(0, len(buf)))
            out.append(buf[i])
            buf[i] = t
    rng.shuffle(buf)
    return out + buf


def spec_is_val(text: str, seed: int, fraction: float) -> bool:
    """Stream step 6: the content-hash rule."""
    top = int.from_bytes(hashlib.sha256(f"{seed}\0{text}".encode()).digest()[:8], "big")
    return top < int(fraction * 2**64)


def spec_prefix_digest(texts: Iterable[str]) -> str:
    """The prefix digest (manifest v4): a chain from 32 zero bytes, each visited row's link
    SHA-256(previous link + SHA-256 of the row's UTF-8)."""
    link = bytes(32)
    for text in texts:
        link = hashlib.sha256(link + hashlib.sha256(text.encode("utf-8")).digest()).digest()
    return link.hex()
