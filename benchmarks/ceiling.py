"""What this machine gives two processes of prep's dominant work: the scaling ceiling.

prep's workers spend most of their CPU reading Parquet and tokenizing. This measures that work
alone, without prep: one whole process that loads gigatoken and the tokenizer, then forks
``--procs`` children; child ``k`` reads every ``procs``-th row group of the corpus (in file
order, as prep deals tasks to its workers) and tokenizes its texts with gigatoken's
``encode_batch`` on its own thread. No pipes, no main process committing, nothing shared:
the best that ``--workers N`` could do if prep cost nothing beyond its workers' tokenizing.

    python benchmarks/ceiling.py [--mb 200] [--pairs 3] [--a 1] [--b 2] [--workdir D]

alternates whole processes with ``--procs A`` and ``--procs B`` and prints
``{"bench": "ceiling", "ratio": median(A) / median(B), ...}``; ``benchmarks/workers.py``
runs the same measurement between its own pairs, so prep's ratio and the ceiling come from
one run. On a machine whose cores share caches and memory bandwidth (or a VM's host), two
processes of tokenizing do not run at twice the speed of one, and a second process starts
with a cold tokenizer cache: the ratio shows how much.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import DEFAULT_TOKENIZER, reusable_corpus, run_measured


def log(msg: str) -> None:
    print(f"[ceiling] {msg}", file=sys.stderr, flush=True)


def row_groups(corpus: Path) -> list[tuple[Path, int]]:
    """Every (file, row group) of the corpus's Parquet files, in the order prep reads them."""
    import pyarrow.parquet as pq

    return [(f, i) for f in sorted(corpus.glob("*.parquet"))
            for i in range(pq.ParquetFile(f).num_row_groups)]


def group_texts(path: Path, group: int) -> list[str]:
    """The non-empty texts of one row group."""
    import pyarrow.parquet as pq

    texts = pq.ParquetFile(path).read_row_group(group, columns=["text"]).column(0)
    return [t for t in texts.to_pylist() if t]


def job(corpus: Path, tokenizer: Path, procs: int) -> int:
    """The measured process: fork ``procs`` children that read and tokenize their share of
    the row groups; prints the tokens counted."""
    import gigatoken

    tok = gigatoken.Tokenizer.from_json(tokenizer.read_text(encoding="utf-8"))
    groups = row_groups(corpus)
    children = []
    for k in range(procs):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            tokens = 0
            for f, i in groups[k::procs]:
                ids = tok.encode_batch(group_texts(f, i), parallel=False)
                tokens += len(ids.layout.content.data)  # one flat buffer, as prep takes it
            os.write(write, str(tokens).encode())
            os._exit(0)
        os.close(write)
        children.append((pid, read))
    total = 0
    for pid, read in children:
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise SystemExit(f"a tokenizing child ended with status {status}")
        with os.fdopen(read) as f:
            total += int(f.read())
    print(json.dumps({"tokens": total}))
    return 0


def ceiling_command(corpus: Path, tokenizer: Path, procs: int) -> list[str]:
    """The whole process measured for ``procs`` tokenizing processes."""
    return [sys.executable, str(Path(__file__).resolve()), "--job", "--corpus", str(corpus),
            "--tokenizer", str(tokenizer), "--procs", str(procs)]


def measure(work: Path, corpus: Path, tokenizer: Path, procs: int) -> float:
    """Wall seconds of one whole ceiling process with ``procs`` children."""
    res = run_measured(ceiling_command(corpus, tokenizer, procs), work / f"ceiling-{procs}.log")
    if res.exit_code != 0:
        raise SystemExit(f"ceiling --procs {procs} failed; see {work / f'ceiling-{procs}.log'}")
    return res.seconds


def pair_parser(doc: str, what: str) -> argparse.ArgumentParser:
    """The options of a benchmark that alternates A and B ``what`` on one corpus."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200.0)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--a", type=int, default=1, help=f"{what} of the baseline runs")
    ap.add_argument("--b", type=int, default=2, help=f"{what} of the compared runs")
    ap.add_argument("--workdir", type=Path)
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = pair_parser(__doc__, "processes")
    ap.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER)
    ap.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--procs", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.job:
        return job(args.corpus, args.tokenizer, args.procs)
    work, corpus = reusable_corpus(args.workdir, args.mb, "ceiling-")
    times: dict[int, list[float]] = {args.a: [], args.b: []}
    started = time.perf_counter()
    for i in range(args.pairs):
        for n in (args.a, args.b) if i % 2 == 0 else (args.b, args.a):
            times[n].append(measure(work, corpus, args.tokenizer, n))
            log(f"pair {i + 1}: {n} processes: {times[n][-1]:.2f} s")
    med = {n: statistics.median(v) for n, v in times.items()}
    print(json.dumps({
        "bench": "ceiling", "mb": args.mb, "a": args.a, "b": args.b,
        "a_median_s": round(med[args.a], 3), "b_median_s": round(med[args.b], 3),
        "ratio": round(med[args.a] / med[args.b], 3),
        "seconds": round(time.perf_counter() - started, 1),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
