"""What gigatoken's pretoken cache costs in memory, and what dropping it costs in CPU.

A worker keeps one gigatoken tokenizer for the whole run, and gigatoken keeps every
distinct short pretoken it has encoded in a table that only grows. This benchmark encodes a
corpus row group by row group, as a worker does, in a fresh process per configuration:
``--every 0`` keeps one tokenizer (prep's default), ``--every K`` builds a new one after
every K row groups (dropping the cache).
Each process reports its CPU seconds (loading included) and its RSS after every row group.
Configurations alternate, ``--rounds`` times; medians are reported, with ratios against
``every=0`` of the same run. A rebuild happens inside the same process, so what the
allocators keep of the dropped cache stays in its RSS: the memory figures are what dropping
the cache alone returns (``--recycle-workers`` starts a new process instead, which returns
everything; its cost is measured by ``throughput.py --recycle``).

    python benchmarks/engine_cache.py --corpus DIR [--tokenizer PATH] [--every 0,8,4]
                                      [--rounds 3]

``DIR``: Parquet files with a ``text`` column (``make_corpus.py``). Prints one JSON line
``{"bench": "engine_cache", "configs": {K: {"cpu_s", "cpu_ratio", "peak_rss_mib",
"rss_mib_after_group": [...]}}, ...}`` on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from multiprocessing import get_context
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import DEFAULT_TOKENIZER


def _status_mib(field: str) -> int:
    """``VmRSS`` (now) or ``VmHWM`` (the process's peak so far) in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) >> 10
    return 0


def encode_corpus(corpus: str, tokenizer: str, every: int) -> dict[str, Any]:
    """In a fresh process: encode every row group of ``corpus`` with gigatoken, built as a
    prep worker builds it, a new one after every ``every`` groups (0: never)."""
    from ceiling import group_texts, row_groups

    from prep.encoders.engine import Reference
    from prep.encoders.gigatoken import load_gigatoken

    raw = Path(tokenizer).read_bytes()
    start = time.process_time()
    engine = load_gigatoken(raw, Reference(tokenizer), probe=False)
    rss = []
    for groups, (path, group) in enumerate(row_groups(Path(corpus)), 1):
        engine.encode_fast([t.encode() for t in group_texts(path, group)])
        rss.append(_status_mib("VmRSS"))  # before a rebuild, with this group's cache
        if every and groups % every == 0:
            del engine
            engine = load_gigatoken(raw, Reference(tokenizer), probe=False)
    return {"cpu_s": time.process_time() - start, "rss": rss, "peak": _status_mib("VmHWM")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--tokenizer", default=str(DEFAULT_TOKENIZER))
    ap.add_argument("--every", default="0,8,4")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if not sorted(Path(args.corpus).glob("*.parquet")):
        print(f"engine_cache: no .parquet files in {args.corpus}", file=sys.stderr)
        return 2
    everies = [int(x) for x in args.every.split(",")]
    if 0 not in everies:
        everies.insert(0, 0)
    runs: dict[int, list[dict[str, Any]]] = {k: [] for k in everies}
    spawn = get_context("spawn")
    for r in range(args.rounds):
        for k in everies:
            with spawn.Pool(1) as pool:
                out = pool.apply(encode_corpus, (args.corpus, args.tokenizer, k))
            runs[k].append(out)
            print(f"engine_cache: round {r + 1} every={k}: {out['cpu_s']:.2f} CPU s, "
                  f"peak RSS {out['peak']} MiB", file=sys.stderr)
    base = statistics.median(o["cpu_s"] for o in runs[0])
    configs = {}
    for k, outs in runs.items():
        cpu = statistics.median(o["cpu_s"] for o in outs)
        configs[str(k)] = {
            "cpu_s": round(cpu, 3),
            "cpu_ratio": round(cpu / base, 3),
            "peak_rss_mib": statistics.median(o["peak"] for o in outs),
            "rss_mib_after_group": [statistics.median(v) for v in
                                    zip(*(o["rss"] for o in outs), strict=True)],
        }
    print(json.dumps({"bench": "engine_cache", "corpus": args.corpus,
                      "rounds": args.rounds, "configs": configs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
