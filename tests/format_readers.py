"""Independent readers for every container prep writes, from the published layouts only.

Nothing here imports prep: each reader is a second implementation, written with ``struct``
from the layouts (llm.c's ``dev/data/data_common.py`` and ``llmc/dataloader.h``; Megatron's
``megatron/core/datasets/indexed_dataset.py``; the headerless shards of a
``PretrainDataset``), or is the layout's own reader (NumPy's ``np.load`` for seed 003's
``.npy`` shards), so a test that compares prep's output with these compares two routes.
Each reader raises ``AssertionError`` on anything the layout does not allow (tests only).
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import struct
from pathlib import Path
from typing import Any

# (magic, version) -> struct code of one id
LLMC_KINDS = {(20240520, 1): "H", (20240520, 2): "I", (20240801, 7): "I"}
MEGATRON_CODES = {8: "H", 4: "i"}  # the two dtypes prep may write: uint16, int32


def read_llmc(path: Path, *, magic: int | None = None) -> list[int]:
    """Ids of an llm.c token file (GPT-2 v1, prep's v2, or Llama-3 v7); checks the size."""
    raw = path.read_bytes()
    ints = struct.unpack("<256i", raw[:1024])
    assert magic is None or ints[0] == magic, f"{path.name}: magic {ints[0]} is not {magic}"
    code = LLMC_KINDS[(ints[0], ints[1])]
    n = ints[2]
    width = struct.calcsize(code)
    assert len(raw) == 1024 + n * width, f"{path.name}: size {len(raw)} does not match n = {n}"
    assert all(v == 0 for v in ints[4:]), f"{path.name}: header ints [4:] are not zero"
    return list(struct.unpack(f"<{n}{code}", raw[1024:]))


def read_megatron_index(path: Path) -> dict[str, Any]:
    """The fields of an ``MMIDIDX`` ``.idx`` file, in layout order."""
    raw = path.read_bytes()
    assert raw[:9] == b"MMIDIDX\x00\x00", f"{path.name}: bad magic {raw[:9]!r}"
    (version,) = struct.unpack_from("<Q", raw, 9)
    (code,) = struct.unpack_from("<B", raw, 17)
    n_seq, n_doc = struct.unpack_from("<QQ", raw, 18)
    assert version == 1
    lengths = list(struct.unpack_from(f"<{n_seq}i", raw, 34))
    pointers = list(struct.unpack_from(f"<{n_seq}q", raw, 34 + 4 * n_seq))
    doc_index = list(struct.unpack_from(f"<{n_doc}q", raw, 34 + 12 * n_seq))
    assert len(raw) == 34 + 12 * n_seq + 8 * n_doc, f"{path.name}: trailing or missing bytes"
    return {"code": code, "lengths": lengths, "pointers": pointers, "doc_index": doc_index}


def read_megatron_docs(prefix: Path) -> list[list[int]]:
    """The documents of a ``prefix.bin`` / ``prefix.idx`` pair, read through the index."""
    idx = read_megatron_index(prefix.with_suffix(".idx"))
    data = prefix.with_suffix(".bin").read_bytes()
    code = MEGATRON_CODES[idx["code"]]
    width = struct.calcsize(code)
    assert len(data) == sum(idx["lengths"]) * width, f"{prefix.name}: .bin size disagrees"
    sequences = []
    for ptr, length in zip(idx["pointers"], idx["lengths"], strict=True):
        sequences.append(list(struct.unpack_from(f"<{length}{code}", data, ptr)))
    bounds = idx["doc_index"]
    assert bounds[0] == 0 and bounds[-1] == len(sequences)
    return [[i for s in sequences[a:b] for i in s] for a, b in itertools.pairwise(bounds)]


def read_raw(path: Path, dtype: str) -> list[int]:
    """Ids of a headerless shard of ``uint16`` or ``uint32``."""
    code = {"uint16": "H", "uint32": "I"}[dtype]
    raw = path.read_bytes()
    width = struct.calcsize(code)
    assert len(raw) % width == 0, f"{path.name}: {len(raw)} bytes is not a whole number of ids"
    return list(struct.unpack(f"<{len(raw) // width}{code}", raw))


def read_npy(path: Path) -> list[int]:
    """Ids of a ``.npy`` shard as seed 003's loader reads it: ``np.load``, memory-mapped and
    not, which must agree; a 1-D little-endian uint16 or uint32 array."""
    import numpy as np

    mapped = np.load(path, mmap_mode="r")
    loaded = np.load(path)
    assert mapped.ndim == 1 and mapped.dtype.str in ("<u2", "<u4"), (path.name, mapped.dtype)
    assert np.array_equal(mapped, loaded) and mapped.dtype == loaded.dtype
    return [int(i) for i in loaded]


def manifest_of(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "_MANIFEST.json").read_bytes()))


def split_files(out: Path, split: str) -> list[Path]:
    """A split's token files in stream order (``<split>-NNNNN.bin``, OLMo-core's ``.npy``
    or seed 003's ``<split>_NNNNN.npy``; the indexes are companions). datatrove's are found
    as nanotron's ``Nanoset`` finds them in the folder it is given (``<split>/``): every
    ``*.ds`` in it, sorted (``DatatroveFolderDataset``)."""
    fmt = manifest_of(out).get("format", "")
    if fmt == "datatrove":
        return sorted(Path(p) for p in glob.glob(os.path.join(out / split, "*.ds")))
    stem = {"olmo": "-*.npy", "npy": "_*.npy"}
    return sorted(out.glob(split + stem.get(fmt, "-*.bin")))


def read_file(out: Path, path: Path) -> list[int]:
    """Ids of one token file of a published dataset, by the route its format needs."""
    m = manifest_of(out)
    fmt = m.get("format", "llmc")
    if fmt == "llmc":
        return read_llmc(path, magic=20240520)
    if fmt == "llmc-llama3":
        return read_llmc(path, magic=20240801)
    if fmt == "megatron":
        return [i for doc in read_megatron_docs(path.with_suffix("")) for i in doc]
    if fmt == "raw":
        return read_raw(path, m["dtype"])
    if fmt == "npy":
        return read_npy(path)
    if fmt == "datatrove":
        return read_datatrove(path)[0]
    if fmt == "olmo":
        return [i for doc in read_olmo(path, m["dtype"]) for i in doc]
    raise AssertionError(f"unknown format {fmt!r}")


def split_stream(out: Path, split: str) -> list[int]:
    """A split's whole token stream: its files' ids, concatenated in name order."""
    ids: list[int] = []
    for path in split_files(out, split):
        ids += read_file(out, path)
    return ids


def segment_chain(*segments: bytes, width: int = 2) -> tuple[str, tuple[int, ...]]:
    """An open shard's checkpoint record of its ids, from docs/architecture.md's definition:
    each appended segment's bytes hashed, and linked ``c = SHA-256(c || n || d)`` from 32
    zero bytes (``n``: the segment's ids, 8 bytes little-endian); (the chain's hex, the
    lengths)."""
    import hashlib

    chain = bytes(32)
    for seg in segments:
        n = len(seg) // width
        chain = hashlib.sha256(chain + n.to_bytes(8, "little") + hashlib.sha256(seg).digest())\
            .digest()
    return chain.hex(), tuple(len(seg) // width for seg in segments)


def read_datatrove(path: Path) -> tuple[list[int], list[int], list[str]]:
    """(ids, document ends, metadata lines) of a datatrove ``.ds`` set, as datatrove's
    ``DatatroveFileDataset`` reads it (``utils/dataset.py``: ``token_size`` 2 -> uint16, 4 ->
    uint32; ``.ds.index`` of uint64 ends) and ``TokenizedFile.write_final_metadata`` writes the
    metadata (``name|token_size``, the count, its ``humanize.metric``)."""
    meta = path.with_name(path.name + ".metadata").read_text().split("\n")
    assert len(meta) == 3, f"{path.name}.metadata: {meta!r}"
    size = int(meta[0].rsplit("|", 1)[1])
    code = {2: "H", 4: "I"}[size]
    raw = path.read_bytes()
    assert len(raw) % size == 0
    ids = list(struct.unpack(f"<{len(raw) // size}{code}", raw))
    index = path.with_name(path.name + ".index").read_bytes()
    ends = list(struct.unpack(f"<{len(index) // 8}Q", index))
    assert len(index) == 8 * len(ends) and ends == sorted(ends)
    assert (ends[-1] if ends else 0) == len(ids) == int(meta[1])
    return ids, ends, meta


def read_olmo(path: Path, dtype: str) -> list[list[int]]:
    """The documents of an OLMo-core ``.npy`` (a headerless ``np.memmap`` of ``dtype``) cut
    by its ``.csv.gz`` (``iter_document_indices``: ``start,end,...`` per line, gzip text;
    the name is the array's with ``.npy`` replaced by ``.csv.gz``)."""
    import gzip

    ids = read_raw(path, dtype)
    meta = path.with_name(path.name.replace(".npy", ".csv.gz"))
    docs, at = [], 0
    with gzip.open(meta, "rt") as f:
        for line in f:
            start, end, *_ = line.split(",")
            assert int(start) == at and at <= int(end) <= len(ids), line
            docs.append(ids[int(start) : int(end)])
            at = int(end)
    assert at == len(ids), f"{meta.name} covers {at} of {len(ids)} ids"
    return docs
