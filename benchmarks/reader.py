"""Reading speed of ``prep.TokenStream`` against a plain ``np.memmap`` slice.

It prepares one corpus twice with the byte tokenizer (ids are UTF-8 bytes, so tokenizing
is cheap): once into a single train file, once with ``--max-file-tokens`` set so the train
split spans about 16 files (many windows cross a file boundary). Then, alternating A/B in
one process with the page cache warm, it draws ``--batches`` batches of B windows of T
tokens in the same shuffled order three ways:

- ``baseline``: the least a loader does, on the single file: ``mm = np.memmap(...)``, and
  per window ``buf[row] = mm[s : s + T + 1]`` into a preallocated int64 ``(B, T + 1)`` array;
- ``view``: the same on ``mm.view(np.ndarray)`` (slicing skips np.memmap's subclass hooks,
  which is what TokenStream does; the fairer baseline);
- ``single``: ``TokenStream(single).batches(B, seed=0)``;
- ``sharded``: ``TokenStream(sharded).batches(B, seed=0)``.

    python benchmarks/reader.py [--mb 20] [--seq-len 1024] [--batch-size 16]
        [--batches 400] [--rounds 5] [--workdir DIR]

Stdout gets one JSON line ``{"bench": "reader", ..., "single_ratio", "sharded_ratio"}``:
``*_ratio`` is median baseline time / median TokenStream time and ``*_vs_view`` the same
against ``view`` (1.0 = no overhead; below 1.0 = slower). Tokens/s of each are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import prepare_command, reusable_corpus

from prep.readers.tokenstream import TokenStream


def prepare(corpus: Path, out: Path, *extra: str) -> None:
    if out.exists():
        return
    cmd = prepare_command(corpus, "byte", out, "--quiet", "--dataset", "reader", *extra)
    subprocess.run(cmd, check=True)


def baseline(path: Path, starts: np.ndarray, batch: int, seq_len: int, view: bool) -> float:
    t0 = time.perf_counter()
    mm = np.memmap(path, dtype=np.uint16, mode="r", offset=1024)
    if view:
        mm = mm.view(np.ndarray)  # slicing a plain ndarray skips np.memmap's subclass hooks
    buf = np.empty((batch, seq_len + 1), dtype=np.int64)
    total = 0
    for b in range(len(starts) // batch):
        for row, s in enumerate(starts[b * batch : (b + 1) * batch]):
            buf[row] = mm[s : s + seq_len + 1]
        total += int(buf[0, 0])  # touch the batch, as a training step would
    return time.perf_counter() - t0


def via_stream(ts: TokenStream, n_batches: int, batch: int) -> float:
    t0 = time.perf_counter()
    total = 0
    for k, (x, _) in enumerate(ts.batches(batch, seed=0)):
        total += int(x[0, 0])
        if k + 1 == n_batches:
            break
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=20)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--batches", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args(argv)
    work, corpus = reusable_corpus(args.workdir, args.mb, "prep-reader-")
    single, sharded = work / "single", work / "sharded"
    prepare(corpus, single, "--max-file-tokens", str(2**31 - 1))
    n_train = TokenStream(single, seq_len=1).n_tokens
    prepare(corpus, sharded, "--max-file-tokens", str(n_train // 16 + 1))
    ts_single = TokenStream(single, seq_len=args.seq_len)
    ts_sharded = TokenStream(sharded, seq_len=args.seq_len)
    if ts_sharded.n_tokens != n_train:
        raise SystemExit("the two preparations differ in train tokens; delete the workdir")
    n_batches = min(args.batches, ts_single.n_batches(args.batch_size))
    windows = ts_single.order(seed=0)[: n_batches * args.batch_size]
    starts = windows * args.seq_len
    files = sorted(single.glob("train-*.bin"))
    times: dict[str, list[float]] = {"baseline": [], "view": [], "single": [], "sharded": []}
    for _ in range(args.rounds):
        for name in ("baseline", "view"):
            times[name].append(
                baseline(files[0], starts, args.batch_size, args.seq_len, name == "view")
            )
        times["single"].append(via_stream(ts_single, n_batches, args.batch_size))
        times["sharded"].append(via_stream(ts_sharded, n_batches, args.batch_size))
    med = {k: statistics.median(v) for k, v in times.items()}
    tokens = n_batches * args.batch_size * args.seq_len
    for k, v in med.items():
        print(f"{k}: {tokens / v / 1e6:,.1f} M tokens/s (median of {args.rounds})",
              file=sys.stderr)
    print(json.dumps({
        "bench": "reader",
        "train_tokens": n_train,
        "files_sharded": len(list(sharded.glob("train-*.bin"))),
        "seq_len": args.seq_len,
        "batch_size": args.batch_size,
        "batches": n_batches,
        "baseline_mtok_s": round(tokens / med["baseline"] / 1e6, 1),
        "view_mtok_s": round(tokens / med["view"] / 1e6, 1),
        "single_mtok_s": round(tokens / med["single"] / 1e6, 1),
        "sharded_mtok_s": round(tokens / med["sharded"] / 1e6, 1),
        "single_ratio": round(med["baseline"] / med["single"], 3),
        "sharded_ratio": round(med["baseline"] / med["sharded"], 3),
        "single_vs_view": round(med["view"] / med["single"], 3),
        "sharded_vs_view": round(med["view"] / med["sharded"], 3),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
