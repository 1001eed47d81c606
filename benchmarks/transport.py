"""What receiving worker results costs the main process: ids through the pipe or the arena.

Two forked workers (``prep.procs.pool.OrderedPool``) each send batches shaped like prep's: a
uint16 id buffer of ``--ids`` ids (default 700,000, about what a 512-document batch of
GPT-2 ids weighs on the benchmark corpus) and 512 document lengths. The main process
receives them and drops them, as the committing loop does after each batch's flush. Runs
alternate between ``arena_bytes=0`` (every buffer through the result queue's pipe) and the
default arena (``prep.procs.arena``), ``--reps`` times each, and report the main process's CPU
seconds per GB of ids received (``time.process_time``: all its threads).

    python benchmarks/transport.py [--batches 300] [--ids 700000] [--reps 5]

Prints ``{"bench": "transport", "pipe_cpu_s_per_gb_ids", "arena_cpu_s_per_gb_ids",
"ratio", ...}`` on stdout (medians; ratio = pipe / arena); progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from prep.procs.arena import DEFAULT_BYTES
from prep.procs.pool import OrderedPool

IDS = 700_000


def batch(task: int) -> Iterator[dict[str, Any]]:
    """One batch for task ``task``: its ids (all ``task``) and 512 lengths."""
    yield {"ids": np.full(IDS, task % 50_000, dtype=np.uint16),
           "lengths": np.ones(512, dtype=np.int64)}


def measure(batches: int, arena_bytes: int) -> float:
    """Main-process CPU seconds per GB of ids over ``batches`` batches (after a warm-up)."""
    with OrderedPool(batch, workers=2, depth=4, arena_bytes=arena_bytes) as pool:
        for _ in pool.map(range(8)):
            pass
        cpu, received = time.process_time(), 0
        for result in pool.map(range(batches)):
            received += result["ids"].nbytes
        return (time.process_time() - cpu) / (received / 1e9)


def main(argv: list[str] | None = None) -> int:
    global IDS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--ids", type=int, default=IDS)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    IDS = args.ids  # read by the forked workers
    runs: dict[str, list[float]] = {"pipe": [], "arena": []}
    for rep in range(args.reps):
        for name, size in (("pipe", 0), ("arena", DEFAULT_BYTES)):
            runs[name].append(measure(args.batches, size))
            print(f"[transport] rep {rep + 1}: {name} {runs[name][-1]:.3f} CPU s/GB of ids",
                  file=sys.stderr, flush=True)
    med = {name: statistics.median(v) for name, v in runs.items()}
    print(json.dumps({
        "bench": "transport", "batches": args.batches, "ids": args.ids, "reps": args.reps,
        "pipe_cpu_s_per_gb_ids": round(med["pipe"], 3),
        "arena_cpu_s_per_gb_ids": round(med["arena"], 3),
        "ratio": round(med["pipe"] / med["arena"], 2),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
