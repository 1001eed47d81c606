"""The recipe of llm.c's ``dev/data/fineweb.py``, reimplemented as the speed peer of prep.

What llm.c does: tiktoken's GPT-2 ``encode_ordinary`` on every document in a
``multiprocessing.Pool`` (``imap``, ``chunksize=16``, results in order), each document's ids
prefixed by ``<|endoftext|>`` (50256) as ``uint16``, packed into shards of ``--shard-size``
tokens (a document that does not fit is cut and continues in the next shard), the first
shard named ``val`` and the rest ``train``, each written as a llm.c ``.bin``: a 256 x int32
header (magic 20240520, version 1, token count) and the ids.

Where this differs, it favours the recipe: the pool has one process per core (llm.c keeps
``cpu_count() - 2``, which is one process on a 2-core machine); a shard is written straight
from its numpy buffer (llm.c converts it to a Python list and back); it reads the same
local Parquet files as prep (llm.c reads a ``datasets`` cache) in row-group batches. It
writes no checkpoint, manifest or fsync, and cannot resume.

    python benchmarks/fineweb_recipe.py --source DIR --out DIR [--ranks gpt2.tiktoken]
                                        [--procs N] [--shard-size 100000000]

Prints one JSON line: ``{"recipe": "fineweb", "seconds", "tokens", "docs", "files"}``.
"""

from __future__ import annotations

import argparse
import base64
import json
import multiprocessing as mp
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parent.parent
RANKS = REPO / "tests" / "fixtures" / "gpt2" / "gpt2.tiktoken"
GPT2_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = 50256
MAGIC, VERSION = 20240520, 1

_encoding = None  # one tiktoken Encoding per pool process, built by _init


def gpt2_encoding(ranks_path: Path) -> object:
    """GPT-2 as a ``tiktoken.Encoding`` from a rank file (no download)."""
    import tiktoken

    ranks = {}
    for line in ranks_path.read_text(encoding="ascii").splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding("gpt2", pat_str=GPT2_PAT, mergeable_ranks=ranks,
                             special_tokens={"<|endoftext|>": EOT})


def _init(ranks_path: str) -> None:
    global _encoding
    _encoding = gpt2_encoding(Path(ranks_path))


def tokenize(text: str) -> npt.NDArray[np.uint16]:
    """``[EOT] + encode_ordinary(text)`` as uint16, as llm.c's ``tokenize_gpt2``."""
    ids = [EOT]
    ids.extend(_encoding.encode_ordinary(text))  # type: ignore[attr-defined]
    return np.array(ids, dtype=np.uint16)


def texts(source: Path) -> Iterator[str]:
    import pyarrow.parquet as pq

    for path in sorted(source.glob("*.parquet")):
        for batch in pq.ParquetFile(path).iter_batches(columns=["text"]):
            yield from batch.column(0).to_pylist()


def write_shard(path: Path, tokens: npt.NDArray[np.uint16]) -> None:
    header = np.zeros(256, dtype=np.int32)
    header[:3] = (MAGIC, VERSION, len(tokens))
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.tobytes())


def run(source: Path, out: Path, ranks: Path, procs: int, shard_size: int) -> dict[str, object]:
    out.mkdir(parents=True, exist_ok=True)
    buf = np.empty(shard_size, dtype=np.uint16)
    count = shard = docs = total = 0

    def flush(n: int) -> None:
        nonlocal shard
        split = "val" if shard == 0 else "train"
        write_shard(out / f"fineweb_{split}_{shard:06d}.bin", buf[:n])
        shard += 1

    with mp.Pool(procs, initializer=_init, initargs=(str(ranks),)) as pool:
        for ids in pool.imap(tokenize, texts(source), chunksize=16):
            docs += 1
            total += len(ids)
            while count + len(ids) >= shard_size:
                room = shard_size - count
                buf[count:] = ids[:room]
                flush(shard_size)
                ids, count = ids[room:], 0
            buf[count : count + len(ids)] = ids
            count += len(ids)
    if count:
        flush(count)
    return {"tokens": total, "docs": docs, "files": shard}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ranks", type=Path, default=RANKS)
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--shard-size", type=int, default=10**8)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    stats = run(args.source, args.out, args.ranks, args.procs, args.shard_size)
    seconds = time.perf_counter() - start
    print(json.dumps({"recipe": "fineweb", "seconds": round(seconds, 3), **stats}))
    print(f"[fineweb] {stats['tokens']:,} tokens, {stats['docs']:,} docs in {seconds:.1f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
