"""OLMo-core's token files (the layout dolma's ``tokens`` writes): per shard
``<split>-NNNNN.npy``, a headerless little-endian array (``np.memmap`` of ``uint16`` when
V <= 65,536, else ``uint32``; the name says ``.npy`` but there is no ``np.save`` header),
and ``<split>-NNNNN.csv.gz``, one line ``start,end\\n`` per document (ids, end exclusive),
as OLMo-core's ``write_document_indices`` writes it and ``iter_document_indices`` reads it
(``.npy`` replaced by ``.csv.gz``). The gzip stream is deterministic: no file name and an
mtime of 0 in its header, so the same documents give the same bytes.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Sequence

from prep.errors import FormatError
from prep.formats.layout import Layout

LAYOUT = Layout("olmo", {"uint16": None, "uint32": None}, suffix=".npy")


def deterministic_gzip(data: bytes) -> bytes:
    """A gzip member of ``data`` whose header holds no name, mtime 0 and OS 255 (unknown),
    so its bytes depend on ``data`` alone (and zlib's deflate at level 9)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflate.compress(data) + deflate.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + body + trailer


class OlmoIndex:
    """``.csv.gz`` of document start/end offsets (a
    :class:`~prep.formats.indexed.DocIndex`)."""

    def companions(self, name: str) -> tuple[str, ...]:
        return (name.removesuffix(".npy") + ".csv.gz",)

    def pack(self, lengths: Sequence[int], dtype_name: str, label: str) -> tuple[bytes, ...]:
        rows, start = [], 0
        for n in lengths:
            rows.append(f"{start},{start + n}\n")
            start += n
        return (deterministic_gzip("".join(rows).encode()),)

    def parse(self, raw: Sequence[bytes], dtype_name: str, where: str) -> tuple[list[int], str]:
        try:
            text = gzip.decompress(raw[0]).decode("ascii")
        except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
            raise FormatError(f"{where}: not a gzip of ASCII text ({e})", path=where) from e
        lengths, at = [], 0
        for row, line in enumerate(text.splitlines()):
            try:
                start, end = (int(v) for v in line.split(",")[:2])
            except ValueError:
                raise FormatError(f"{where} line {row + 1}: {line!r} is not 'start,end'",
                                  path=where) from None
            if start != at or end < start:
                raise FormatError(f"{where} line {row + 1}: document [{start}, {end}) does "
                                  f"not follow the one ending at {at}", path=where)
            lengths.append(end - start)
            at = end
        return lengths, ""

