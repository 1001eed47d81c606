"""The throughput baseline: the least any preparer must do with the same tokenizer.

Reads every text of the Parquet files under SOURCE into memory, loads the tokenizer, and
runs ``Tokenizer.encode_batch_fast`` over the texts in batches of ``--batch-size``,
collecting each document's ids as a numpy array; nothing else (no splitting, hashing,
writing or checkpointing). Threads come from ``RAYON_NUM_THREADS`` as for prep.

    python benchmarks/baseline_tokenize.py SOURCE TOKENIZER_JSON [--batch-size N]

Prints one JSON line: {"tokens": ..., "read_s": ..., "tokenize_s": ...}.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from tokenizers import Tokenizer


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", type=Path)
    p.add_argument("tokenizer", type=Path)
    p.add_argument("--batch-size", type=int, default=512)
    args = p.parse_args()
    t0 = time.perf_counter()
    texts: list[str] = []
    for f in sorted(args.source.rglob("*.parquet")):
        texts += pq.read_table(f, columns=["text"]).column(0).to_pylist()
    t1 = time.perf_counter()
    tok = Tokenizer.from_file(str(args.tokenizer))
    tok.encode_special_tokens = True
    tokens = 0
    for i in range(0, len(texts), args.batch_size):
        encs = tok.encode_batch_fast(texts[i : i + args.batch_size], add_special_tokens=False)
        arrays = [np.array(e.ids, dtype=np.uint32) for e in encs]
        tokens += sum(a.size for a in arrays)
    t2 = time.perf_counter()
    print(json.dumps({"tokens": tokens, "read_s": t1 - t0, "tokenize_s": t2 - t1}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
