"""Megatron-LM's indexed dataset: each shard is a pair ``<split>-NNNNN.bin`` (headerless
ids) + ``<split>-NNNNN.idx`` (``MMIDIDX``, see :mod:`prep.formats.mmidx`), which
``megatron.core.datasets.indexed_dataset.IndexedDataset(prefix)`` reads (as do NeMo and
GPT-NeoX). Each document, its separator included, is one sequence. The ``.idx`` is written
on seal from the lengths the checkpoint keeps (:mod:`prep.formats.indexed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy.typing as npt

from prep.formats import mmidx
from prep.formats.indexed import IndexedFormat
from prep.formats.layout import Layout
from prep.formats.onefile import FlatFormat

# Megatron has no uint32 code: wide ids are int32 (code 4), enough for any V < 2**31.
LAYOUT = Layout("megatron", {"uint16": None, "int32": None}, version=mmidx.VERSION)


def idx_name(name: str) -> str:
    """The index file of shard ``name`` (``train-00000.bin`` -> ``train-00000.idx``)."""
    return name.removesuffix(".bin") + ".idx"


class MegatronIndex:
    """The ``.idx`` beside each ``.bin`` (a :class:`~prep.formats.indexed.DocIndex`)."""

    def companions(self, name: str) -> tuple[str, ...]:
        return (idx_name(name),)

    def pack(self, lengths: Sequence[int], dtype_name: str, label: str) -> tuple[bytes, ...]:
        return (mmidx.pack(lengths, dtype_name),)

    def parse(self, raw: Sequence[bytes], dtype_name: str, where: str) -> tuple[list[int], str]:
        return [int(n) for n in mmidx.parse(raw[0], where=where).lengths], ""


class MegatronFormat(IndexedFormat):
    """``.bin`` + ``.idx`` pairs; see the module docstring."""

    def __init__(self, dtype: str = "auto", label: str = "") -> None:
        super().__init__(LAYOUT, MegatronIndex(), dtype, label)

    def owns_file(self, filename: str) -> bool:
        return "/" not in filename and filename.endswith((".bin", ".idx"))

    def describe(self, path: Path, dtype_name: str | None) -> tuple[str, npt.NDArray[Any]]:
        """The pair of ``path`` (its ``.bin`` or ``.idx``); the dtype comes from the index."""
        data = path.with_name(path.name.removesuffix(".idx").removesuffix(".bin") + ".bin")
        idx = mmidx.parse(data.with_name(idx_name(data.name)).read_bytes(), where=path.name)
        line, ids = FlatFormat.describe(self, data, idx.dtype.name)
        return f"{line}; index: {idx.n_docs:,} documents, MMIDIDX code " \
               f"{mmidx.code_for(idx.dtype.name)}", ids
