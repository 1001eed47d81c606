"""Split assignment: pure functions of a document and the recipe.

Content-hash rule: a document is val iff the first 8 bytes (big-endian) of
``SHA-256(f"{seed}\\0{text}".encode())`` are ``< int(val_fraction * 2**64)``. The column rule
takes ``train``/``val`` from a column; any other value is an error.
"""

from __future__ import annotations

import hashlib

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
    digest = hashlib.sha256(seed_prefix + utf8).digest()
    return VAL if int.from_bytes(digest[:8], "big") < threshold else TRAIN


def seed_prefix(seed: int) -> bytes:
    return f"{seed}\0".encode()


def column_split(value: object) -> int | None:
    """``TRAIN``/``VAL`` for the column values ``"train"``/``"val"``; None for anything else."""
    return _COLUMN_VALUES.get(value) if isinstance(value, str) else None
