"""The figures docs/scale.md is built on: per-core throughput, the cost of cutting a run
into parts, and the cost of the merge, each against a baseline measured in the same run.

It builds an ``--mb`` MB corpus of real text (``make_corpus.py``), rewrites it as ``--files``
Parquet files (parts are ranges of whole files), then runs as real child processes, with
``--threads 1`` so that one run is one core's work:

- **single**: ``scripts/prepare.py`` over the whole corpus;
- **parts**: ``scripts/prepare.py --part I/N`` for I = 0..N-1, one after another;
- **merge**: ``prep merge`` of those parts.

Each child is reaped with ``os.wait4``, so its CPU time (user + system, all its threads) is
exact whatever else runs on the machine: ``tokens / CPU seconds`` is the per-core rate that
core-hours scale with, and wall time is reported beside it. It also checks that the merged
split streams equal the single run's (same bytes, or the figures would mean nothing).

    python benchmarks/scale.py [--mb 50] [--files 8] [--parts 4] [--workdir D]

Prints one JSON line on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import DEFAULT_TOKENIZER, REPO, manifest_tokens, prepare_command, reusable_corpus


def log(msg: str) -> None:
    print(f"[scale] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Timed:
    wall: float
    cpu: float


def run_timed(cmd: list[str], log_path: Path) -> Timed:
    """Run ``cmd`` to completion; its wall time and exact CPU time (wait4 rusage)."""
    start = time.perf_counter()
    with log_path.open("wb") as sink:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = log_path.read_text(errors="replace")[-2000:]
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{tail}")
    return Timed(time.perf_counter() - start, usage.ru_utime + usage.ru_stime)


def split_files(corpus: Path, dest: Path, files: int) -> Path:
    """Rewrite the corpus's rows, in order, as ``files`` Parquet files of equal row counts."""
    if dest.exists():
        return dest
    table = pa.concat_tables(pq.read_table(p) for p in sorted(corpus.rglob("*.parquet")))
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    step = -(-table.num_rows // files)
    for i in range(files):
        pq.write_table(table.slice(i * step, step), tmp / f"part-{i:05d}.parquet",
                       compression="zstd")
    tmp.rename(dest)
    return dest


def stream_digest(out: Path, split: str) -> str:
    """SHA-256 of a split's ids over its files in order (headers excluded)."""
    h = hashlib.sha256()
    for path in sorted(out.glob(f"{split}-*.bin")):
        h.update(path.read_bytes()[1024:])
    return h.hexdigest()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=float, default=50.0)
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--parts", type=int, default=4)
    p.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER)
    p.add_argument("--workdir", type=Path, default=None, help="kept; the corpus is reused")
    a = p.parse_args()
    work, corpus = reusable_corpus(a.workdir, a.mb, "prep-scale-")
    source = split_files(corpus, work / f"corpus-{a.mb:g}mb-{a.files}files", a.files)
    runs = work / "scale-runs"
    shutil.rmtree(runs, ignore_errors=True)
    runs.mkdir()
    common = ("--threads", "1", "--dataset", "bench", "--quiet")

    log("single run, 1 thread")
    single = run_timed(prepare_command(source, a.tokenizer, runs / "single", *common),
                       runs / "single.log")
    tokens = manifest_tokens(runs / "single")
    parts = []
    for i in range(a.parts):
        log(f"part {i}/{a.parts}, 1 thread")
        cmd = prepare_command(source, a.tokenizer, runs / "merged", *common,
                              "--part", f"{i}/{a.parts}")
        parts.append(run_timed(cmd, runs / f"part-{i}.log"))
    log("merge")
    prep = [
        sys.executable, "-c", "import sys; from prep.cli.commands import main; sys.exit(main())"
    ]
    merge = run_timed([*prep, "merge", str(runs / "merged")], runs / "merge.log")
    same = all(stream_digest(runs / "single", s) == stream_digest(runs / "merged", s)
               for s in ("train", "val"))
    out_bytes = sum(f.stat().st_size for f in (runs / "merged").glob("*.bin"))
    parts_cpu = sum(t.cpu for t in parts)
    print(json.dumps({
        "text_mb": a.mb, "files": a.files, "parts": a.parts, "tokens": tokens,
        "single_wall_s": round(single.wall, 2), "single_cpu_s": round(single.cpu, 2),
        "tokens_per_cpu_second": round(tokens / single.cpu),
        "tokens_per_wall_second_1_thread": round(tokens / single.wall),
        "parts_cpu_s": round(parts_cpu, 2),
        "parts_cpu_over_single": round(parts_cpu / single.cpu, 3),
        "parts_max_wall_s": round(max(t.wall for t in parts), 2),
        "merge_wall_s": round(merge.wall, 2), "merge_cpu_s": round(merge.cpu, 2),
        "merge_over_single_cpu": round(merge.cpu / single.cpu, 4),
        "output_mb": round(out_bytes / 1e6, 1),
        "merge_mb_per_cpu_second": round(out_bytes / 1e6 / merge.cpu, 1),
        "streams_identical": same,
    }))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
