"""Output formats. Every format implements :class:`~prep.formats.base.ShardFormat`; the
registry below is the only place that names one. Formats that differ only in constants are
rows of data (:class:`~prep.formats.layout.Layout`), not classes: ``llmc``, ``llmc-llama3``,
``npy`` and ``raw`` are one class over four layouts; ``megatron`` extends it with the ``.idx``."""

from __future__ import annotations

from collections.abc import Callable

from prep.errors import UsageError
from prep.formats.base import IdScan, ShardFormat, ShardWriter, VerifiedOpen
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
_FORMATS: dict[str, Callable[[str], ShardFormat]] = {
    "llmc": lambda dtype: FlatFormat(LLMC, dtype),
    "llmc-llama3": lambda dtype: FlatFormat(LLMC_LLAMA3, dtype),
    "megatron": MegatronFormat,
    "npy": lambda dtype: FlatFormat(NPY, dtype),
    "raw": lambda dtype: FlatFormat(RAW, dtype),
}
FORMAT_NAMES = tuple(_FORMATS)


def get_format(name: str = DEFAULT_FORMAT, dtype: str = "auto") -> ShardFormat:
    """The format called ``name`` storing ``dtype`` ids (``auto``: the narrowest that holds
    the vocabulary); raises ``UsageError`` naming the known formats or the dtypes it
    stores."""
    try:
        make = _FORMATS[name]
    except KeyError:
        raise UsageError(
            f"unknown output format {name!r}; choose one of {', '.join(sorted(_FORMATS))}"
        ) from None
    if dtype not in DTYPES:
        raise UsageError(f"unknown --dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    return make(dtype)
