"""datatrove's tokenized files, which nanotron's ``Nanoset`` reads (through datatrove's
``DatatroveFolderDataset``): per shard ``<split>/<split>-NNNNN.ds``, each split in a folder of
its own (headerless little-endian ids, ``uint16`` when V <= 65,536, else ``uint32``:
datatrove's ``token_size`` 2 or 4), ``.ds.index`` (each document's end offset in ids,
``uint64``) and ``.ds.metadata`` beside it, the text
``f"{tokenizer}|{token_size}\\n{n}\\n{humanize.metric(n, unit='T')}"`` (no final newline), as
datatrove's ``TokenizedFile.close`` and ``write_final_metadata`` write them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from prep.errors import FormatError
from prep.formats.layout import Layout

# One folder per split: nanotron's Nanoset reads every ``*.ds`` of each folder it is given.
LAYOUT = Layout("datatrove", {"uint16": None, "uint32": None}, suffix=".ds", folders=True)
_ENDS = np.dtype("<u8")


def metric(value: int, unit: str) -> str:
    """``humanize.metric(value, unit)`` (humanize 4.x, precision 3) for a count >= 0."""
    exponent = math.floor(math.log10(value)) if value else 0
    bucket = exponent // 3 * 3
    scaled = value / 10**bucket
    digits = max(0, 3 - exponent % 3 - 1)
    if round(scaled, digits) >= 10 ** (exponent % 3 + 1):  # 999,999 -> 1.00 M, not 1000 k
        exponent += 1
        scaled /= 10 ** (exponent // 3 * 3 - bucket)
        digits = max(0, 3 - exponent % 3 - 1)
    prefix = "kMGTPEZYRQ"[exponent // 3 - 1] if exponent >= 3 else ""
    return f"{scaled:.{digits}f} {prefix}{unit}"


class DatatroveIndex:
    """``.ds.index`` and ``.ds.metadata`` (a :class:`~prep.formats.indexed.DocIndex`)."""

    def companions(self, name: str) -> tuple[str, ...]:
        return (f"{name}.index", f"{name}.metadata")

    def pack(self, lengths: Sequence[int], dtype_name: str, label: str) -> tuple[bytes, ...]:
        ends = np.cumsum(np.asarray(lengths, dtype=np.int64), dtype=np.int64)
        n = int(ends[-1]) if ends.size else 0
        size = np.dtype(dtype_name).itemsize
        meta = f"{label or 'Unknown Tokenizer|' + str(size)}|{size}\n{n}\n{metric(n, 'T')}"
        return ends.astype(_ENDS).tobytes(), meta.encode()

    def parse(self, raw: Sequence[bytes], dtype_name: str, where: str) -> tuple[list[int], str]:
        index, meta = raw
        if len(index) % _ENDS.itemsize:
            raise FormatError(f"{where}: {len(index):,} bytes is not a whole number of uint64 "
                              "document ends; the file is truncated", path=where)
        ends = np.frombuffer(index, dtype=_ENDS).astype(np.int64)
        lengths = np.diff(ends, prepend=0)
        if lengths.size and int(lengths.min()) < 0:
            raise FormatError(f"{where}: its document ends go backwards", path=where)
        first = meta.decode("utf-8", errors="replace").split("\n", 1)[0]
        label = first.rsplit("|", 1)[0]
        if label == f"Unknown Tokenizer|{np.dtype(dtype_name).itemsize}":
            label = ""
        return [int(n) for n in lengths], label

