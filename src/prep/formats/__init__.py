"""Output formats. Every format implements :class:`~prep.formats.base.ShardFormat`; the
registry below is the only place that names one. Formats that differ only in constants are
rows of data (:class:`~prep.formats.layout.Layout`), not classes: ``llmc``, ``llmc-llama3``,
``npy`` and ``raw`` are one class over four layouts; ``megatron``, ``datatrove`` and ``olmo``
are one class (:class:`~prep.formats.indexed.IndexedFormat`) over a layout and the companions
that index its documents."""

from __future__ import annotations

from collections.abc import Callable

from prep.errors import UsageError
from prep.formats import datatrove, olmo
from prep.formats.base import IdScan, ShardFormat, ShardWriter, VerifiedOpen
from prep.formats.indexed import IndexedFormat
from prep.formats.layout import Layout
from prep.formats.llmc import LLMC, LLMC_LLAMA3
from prep.formats.megatron import MegatronFormat
from prep.formats.npy import NPY
from prep.formats.onefile import FlatFormat

__all__ = [
    "DEFAULT_FORMAT",
    "DTYPES",
    "FORMAT_NAMES",
    "IdScan",
    "ShardFormat",
    "ShardWriter",
    "VerifiedOpen",
    "get_format",
]

DEFAULT_FORMAT = "llmc"
DTYPES = ("auto", "uint16", "uint32", "int32")
# Headerless little-endian ids; the manifest records the dtype (a PretrainDataset's shards).
RAW = Layout("raw", {"uint16": None, "uint32": None})
# Each maker takes the dtype and the tokenizer's name (written by layouts that record it).
_FORMATS: dict[str, Callable[[str, str], ShardFormat]] = {
    "datatrove": lambda dtype, label: IndexedFormat(
        datatrove.LAYOUT, datatrove.DatatroveIndex(), dtype, label
    ),
    "llmc": lambda dtype, label: FlatFormat(LLMC, dtype),
    "llmc-llama3": lambda dtype, label: FlatFormat(LLMC_LLAMA3, dtype),
    "megatron": MegatronFormat,
    "npy": lambda dtype, label: FlatFormat(NPY, dtype),
    "olmo": lambda dtype, label: IndexedFormat(olmo.LAYOUT, olmo.OlmoIndex(), dtype, label),
    "raw": lambda dtype, label: FlatFormat(RAW, dtype),
}
FORMAT_NAMES = tuple(_FORMATS)


def get_format(name: str = DEFAULT_FORMAT, dtype: str = "auto", label: str = "") -> ShardFormat:
    """The format called ``name`` storing ``dtype`` ids (``auto``: the narrowest that holds
    the vocabulary), writing ``label`` as the tokenizer's name where its layout records one
    (readers need not pass it: they read it back); raises ``UsageError`` naming the known
    formats or the dtypes it stores."""
    try:
        make = _FORMATS[name]
    except KeyError:
        raise UsageError(
            f"unknown output format {name!r}; choose one of {', '.join(sorted(_FORMATS))}"
        ) from None
    if dtype not in DTYPES:
        raise UsageError(f"unknown --dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    return make(dtype, label)
