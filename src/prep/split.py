"""Split assignment: pure functions of a document and the recipe.

Content-hash rule: a document is val iff the first 8 bytes (big-endian) of
``SHA-256(f"{seed}\\0{text}".encode())`` are ``< int(val_fraction * 2**64)``. The column rule
takes ``train``/``val`` from a column; any other value is an error.
"""

from __future__ import annotations

import hashlib
from typing import Protocol


class Seeded(Protocol):
    """A hash already fed the seed prefix (``hashlib.sha256``'s kind), copied per text."""

    def copy(self) -> Seeded: ...

    def update(self, data: bytes, /) -> None: ...

    def digest(self) -> bytes: ...

TRAIN = 0
VAL = 1
SPLITS = ("train", "val")
_COLUMN_VALUES = {"train": TRAIN, "val": VAL}


def val_threshold(val_fraction: float) -> int:
    """The 64-bit threshold below which a document's hash makes it val."""
    return int(val_fraction * 2**64)


def hash_split(utf8: bytes, seed_prefix: bytes, threshold: int) -> int:
    """``VAL`` or ``TRAIN`` by the content-hash rule. ``seed_prefix`` is
    ``f"{seed}\\0".encode()`` (see :func:`seed_prefix`), ``utf8`` the text's UTF-8 bytes."""
    return hash_split_seeded(utf8, hashlib.sha256(seed_prefix), threshold)


def seeded_hash(seed: int) -> Seeded:
    """A SHA-256 already fed ``f"{seed}\\0"``: :func:`hash_split_seeded` copies it for each
    document instead of hashing the prefix again (or copying the text behind it)."""
    return hashlib.sha256(seed_prefix(seed))


def hash_split_seeded(utf8: bytes, seeded: Seeded, threshold: int) -> int:
    """The content-hash rule with the seed prefix already hashed (:func:`seeded_hash`)."""
    h = seeded.copy()
    h.update(utf8)
    return VAL if int.from_bytes(h.digest()[:8], "big") < threshold else TRAIN


def seed_prefix(seed: int) -> bytes:
    return f"{seed}\0".encode()


def column_split(value: object) -> int | None:
    """``TRAIN``/``VAL`` for the column values ``"train"``/``"val"``; None for anything else."""
    return _COLUMN_VALUES.get(value) if isinstance(value, str) else None
